/* cmd-report-errors.c: `leek report errors [OPTIONS] FILE...`: the memory errors that libleek
 * caught (ERROR records: double and invalid frees, guarded faults), with symbolized stacks.
 *
 * A section a profile (report/errors.c), printed by report/out-errors.c, through the driver that
 * `report frees` shares (cmd-report-sections.c). A profile of a version before 8 has no errors and
 * says so ("no errors caught"). A profile whose process aborted at its error has no trailer: that
 * is not a failure here, and no warning, the report says it.
 *
 * Never: exit.
 */
#include "commands.h"
#include "errors.h"
#include "report-sections.h"

static int section_new(const char *path, const struct lk_profile *p, struct lk_symbolizer *sym,
		       uint32_t index, const struct lk_input *in, enum lk_input_format format,
		       void **ret)
{
	return lk_errors_section_new(path, p, sym, index, &in->filter,
				     (struct lk_errors_section **)ret);
}

static void section_free(void *s)
{
	lk_errors_section_free(s);
}

static void text(FILE *f, const void *s, bool stacks)
{
	lk_errors_text(f, s, stacks);
}

static void json_begin(struct lk_json *j, FILE *f, const struct lk_input *in,
		       enum lk_input_format format)
{
	lk_errors_json_begin(j, f);
}

static void json(struct lk_json *j, const void *s)
{
	lk_errors_json(j, s);
}

static const struct lk_report_kind errors_kind = {
	.name = "errors",
	.trailer_optional = true,
	.section_new = section_new,
	.section_free = section_free,
	.text = text,
	.json_begin = json_begin,
	.json = json,
	.json_end = lk_errors_json_end,
};

int lk_cmd_report_errors(int argc, char *argv[])
{
	return lk_report_sections(argc, argv, &errors_kind);
}
