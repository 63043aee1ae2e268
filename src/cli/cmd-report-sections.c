/* cmd-report-sections.c: the driver of `leek report frees` and `leek report errors`, a section a
 * profile (report-sections.h says what it does; the kinds are in cmd-report-frees.c and
 * cmd-report-errors.c).
 *
 * Never: exit; keep a profile loaded after its section is made.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "commands.h"
#include "outfile.h"
#include "report-sections.h"
#include "report.h"
#include "util.h"

static void input_donep(struct lk_input **in)
{
	lk_input_done(*in);
}

/* The kind's options, then the driver's: getopt_long's one table. */
#define MAX_OPTIONS 64

static int options_of(const struct lk_report_kind *kind, struct option *out)
{
	static const struct option common[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		LK_INPUT_OPTIONS,
		LK_INPUT_MERGE_OPTION, /* refused below, with a reason */
		LK_INPUT_SITE_OPTIONS,
		{},
	};
	size_t n = 0;

	for (const struct option *o = kind->options; o && o->name; o++)
		out[n++] = *o;
	for (const struct option *o = common; o->name; o++) {
		if (n == MAX_OPTIONS - 1)
			return -EOVERFLOW; /* never: a kind has one or two options of its own */
		out[n++] = *o;
	}
	out[n] = (struct option){ 0 };
	return 0;
}

static bool own_option(const struct lk_report_kind *kind, int c)
{
	for (const struct option *o = kind->options; o && o->name; o++)
		if (o->val == c)
			return true;
	return false;
}

int lk_report_sections(int argc, char *argv[], const struct lk_report_kind *kind)
{
	static struct lk_input input = { .command = "report" };
	_cleanup_(input_donep) struct lk_input *in = &input;
	_cleanup_(lk_symbolizer_freep) struct lk_symbolizer *sym = NULL;
	_cleanup_(lk_outfile_discard) struct lk_outfile out = { 0 };
	struct option options[MAX_OPTIONS];
	enum lk_input_format format = LK_FORMAT_TEXT;
	const char *output = NULL;
	size_t warned = 0;
	struct lk_json j;
	int status = LK_EXIT_OK, c, k;
	bool began = false;

	if ((k = options_of(kind, options)) < 0)
		return lk_error(k, "report %s: options", kind->name), LK_EXIT_USAGE;
	optind = 0;
	while ((c = getopt_long(argc, argv, LK_INPUT_SITE_SHORT "f:o:h", options, NULL)) >= 0) {
		switch (c) {
		case 'f':
			if (lk_input_format("report", optarg, &format))
				return LK_EXIT_USAGE;
			if (format == LK_FORMAT_HTML) {
				lk_msg("report %s: the report is text or json", kind->name);
				return LK_EXIT_USAGE;
			}
			break;
		case 'o':
			output = optarg;
			break;
		case 'h':
			return lk_cmd_usage(stdout, "report", LK_EXIT_OK);
		default:
			k = own_option(kind, c) ? kind->option(c, optarg)
						: lk_input_option(in, c, optarg);
			if (k)
				return k;
		}
	}
	if (in->merge) {
		lk_msg("report %s: --merge does not apply: each profile is its own section",
		       kind->name);
		return LK_EXIT_USAGE;
	}
	if (lk_cmd_need_operands(argc, "report", "profile"))
		return LK_EXIT_USAGE;
	k = lk_input_symbolizer(in, &sym);
	if (k)
		return k;
	for (int i = optind; i < argc; i++) {
		_cleanup_(lk_profile_freep) struct lk_profile *p = NULL;
		_cleanup_(freep) char *err = NULL;
		struct lk_profile_opts po = { .at_ns = UINT64_MAX, .no_live_list = true,
					      .segment_only = in->segment_only };
		uint32_t index = (uint32_t)(i - optind);
		void *s = NULL;

		if (kind->profile_opts)
			kind->profile_opts(&po);
		k = lk_profile_load(argv[i], &po, &p, &err);
		if (lk_input_loaded(argv[i], k, err,
				    kind->trailer_optional || k < 0 || lk_profile_totals(p)->trailer)) {
			status = LK_EXIT_FILE;
			continue;
		}
		k = kind->section_new(argv[i], p, sym, index, in, format, &s);
		lk_input_warnings(sym, &warned);
		if (k == -E2BIG) {
			lk_msg("%s: the report needs more than %s of memory (--max-memory)", argv[i],
			       lk_budget_format((char[32]){ 0 }, 32, lk_budget_limit()));
			status = LK_EXIT_FILE;
			continue;
		}
		if (k < 0) {
			lk_error(k, "report: %s", argv[i]);
			status = LK_EXIT_FILE;
			continue;
		}
		if (!out.f && (k = lk_outfile_open(&out, output, 0666)) < 0) {
			kind->section_free(s);
			return lk_error(k, "report: cannot create '%s'", output), LK_EXIT_FILE;
		}
		if (format == LK_FORMAT_JSON) {
			if (!began)
				kind->json_begin(&j, out.f, in, format);
			kind->json(&j, s);
		} else {
			if (began)
				fputc('\n', out.f);
			kind->text(out.f, s, in->stacks);
		}
		kind->section_free(s);
		began = true;
	}
	if (began && format == LK_FORMAT_JSON)
		kind->json_end(&j);
	if (output && out.f && (k = lk_outfile_commit(&out)) < 0)
		return lk_error(k, "report: cannot write '%s'", output), LK_EXIT_FILE;
	return lk_cmd_end_output("report", "report", status);
}
