/* cmd-report-frees.c: `leek report frees [OPTIONS] FILE...`: the frees of sampled blocks.
 *
 * A section a profile, read with its frees kept (profile.h, opts.frees; report/frees.c), printed
 * by report/out-frees.c: the last --last frees, and every (allocation stack, free stack) pair;
 * through the driver that `report errors` shares (cmd-report-sections.c). A profile written
 * without LEEK_FREE_STACKS has frees with no free stack: the report says so.
 *
 * Never: exit.
 */
#include <errno.h>
#include <stdlib.h>

#include "commands.h"
#include "frees.h"
#include "report-sections.h"
#include "util.h"

enum { ARG_LAST = 0x100 };
static size_t arg_last; /* --last: the recent frees shown */

static int option(int c, const char *arg)
{
	char *end;

	errno = 0;
	unsigned long long v = strtoull(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-' || v > (1u << 24)) {
		lk_msg("report frees: --last '%s': not a count from 0 to %u", arg, 1u << 24);
		return LK_EXIT_USAGE;
	}
	arg_last = (size_t)v;
	return LK_EXIT_OK;
}

static void profile_opts(struct lk_profile_opts *po)
{
	po->frees = true;
	po->frees_last = arg_last;
}

/* --top: the pairs shown; in text a screen by default, in JSON all of them. */
static size_t top_of(const struct lk_input *in, enum lk_input_format format)
{
	return in->top_set ? in->top : format == LK_FORMAT_JSON ? 0 : LK_INPUT_TOP_DEFAULT;
}

static int section_new(const char *path, const struct lk_profile *p, struct lk_symbolizer *sym,
		       uint32_t index, const struct lk_input *in, enum lk_input_format format,
		       void **ret)
{
	return lk_frees_section_new(path, p, sym, index, &in->filter, top_of(in, format),
				    (struct lk_frees_section **)ret);
}

static void section_free(void *s)
{
	lk_frees_section_free(s);
}

static void text(FILE *f, const void *s, bool stacks)
{
	lk_frees_text(f, s, stacks);
}

static void json_begin(struct lk_json *j, FILE *f, const struct lk_input *in,
		       enum lk_input_format format)
{
	lk_frees_json_begin(j, f, arg_last, top_of(in, format));
}

static void json(struct lk_json *j, const void *s)
{
	lk_frees_json(j, s);
}

static const struct option options[] = {
	{ "last", required_argument, NULL, ARG_LAST },
	{},
};

static const struct lk_report_kind frees_kind = {
	.name = "frees",
	.options = options,
	.option = option,
	.profile_opts = profile_opts,
	.section_new = section_new,
	.section_free = section_free,
	.text = text,
	.json_begin = json_begin,
	.json = json,
	.json_end = lk_frees_json_end,
};

int lk_cmd_report_frees(int argc, char *argv[])
{
	arg_last = LK_FREES_LAST_DEFAULT;
	return lk_report_sections(argc, argv, &frees_kind);
}
