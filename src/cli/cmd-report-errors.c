/* cmd-report-errors.c: `leek report errors [OPTIONS] FILE...`: the memory errors that libleek
 * caught (ERROR records: double and invalid frees, guarded faults), with symbolized stacks.
 *
 * Each file is read, symbolized with one symbolizer for every file, made into a section
 * (report/errors.c) and printed (report/out-errors.c). A profile of a version before 8 has no
 * errors and says so ("no errors caught"). A profile that cannot be read gets one
 * "leek: FILE: offset N: ..." line and exit status 2; the other files are still reported. A
 * profile whose process aborted at its error has no trailer: that is not a failure here, the
 * report says it.
 *
 * Never: exit; keep a profile loaded after its section is made.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "commands.h"
#include "errors.h"
#include "input.h"
#include "outfile.h"
#include "report.h"
#include "util.h"

static void input_donep(struct lk_input **in)
{
	lk_input_done(*in);
}

int lk_cmd_report_errors(int argc, char *argv[])
{
	static const struct option options[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		LK_INPUT_OPTIONS,
		LK_INPUT_MERGE_OPTION, /* refused below, with a reason */
		LK_INPUT_SITE_OPTIONS,
		{},
	};
	static struct lk_input input = { .command = "report" };
	_cleanup_(input_donep) struct lk_input *in = &input;
	_cleanup_(lk_symbolizer_freep) struct lk_symbolizer *sym = NULL;
	_cleanup_(lk_outfile_discard) struct lk_outfile out = { 0 };
	enum lk_input_format format = LK_FORMAT_TEXT;
	const char *output = NULL;
	size_t warned = 0;
	struct lk_json j;
	int status = LK_EXIT_OK, c, k;
	bool began = false;

	optind = 0;
	while ((c = getopt_long(argc, argv, LK_INPUT_SITE_SHORT "f:o:h", options, NULL)) >= 0) {
		switch (c) {
		case 'f':
			if (lk_input_format("report", optarg, &format))
				return LK_EXIT_USAGE;
			if (format == LK_FORMAT_HTML) {
				lk_msg("report errors: the report is text or json");
				return LK_EXIT_USAGE;
			}
			break;
		case 'o':
			output = optarg;
			break;
		case 'h':
			return lk_cmd_usage(stdout, "report", LK_EXIT_OK);
		default:
			if ((k = lk_input_option(in, c, optarg)))
				return k;
		}
	}
	if (in->merge) {
		lk_msg("report errors: --merge does not apply: each profile is its own section");
		return LK_EXIT_USAGE;
	}
	if (lk_cmd_need_operands(argc, "report", "profile"))
		return LK_EXIT_USAGE;
	k = lk_input_symbolizer(in, &sym);
	if (k)
		return k;
	for (int i = optind; i < argc; i++) {
		_cleanup_(lk_profile_freep) struct lk_profile *p = NULL;
		_cleanup_(lk_errors_section_freep) struct lk_errors_section *s = NULL;
		_cleanup_(freep) char *err = NULL;
		const struct lk_profile_opts po = { .at_ns = UINT64_MAX, .no_live_list = true,
						    .segment_only = in->segment_only };
		uint32_t index = (uint32_t)(i - optind);

		k = lk_profile_load(argv[i], &po, &p, &err);
		/* No warning for a missing trailer: a process that aborted at its error has none,
		 * and the report says so. */
		if (lk_input_loaded(argv[i], k, err, true)) {
			status = LK_EXIT_FILE;
			continue;
		}
		k = lk_errors_section_new(argv[i], p, sym, index, &in->filter, &s);
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
		if (!out.f && (k = lk_outfile_open(&out, output, 0666)) < 0)
			return lk_error(k, "report: cannot create '%s'", output), LK_EXIT_FILE;
		if (format == LK_FORMAT_JSON) {
			if (!began)
				lk_errors_json_begin(&j, out.f);
			lk_errors_json(&j, s);
		} else {
			if (began)
				fputc('\n', out.f);
			lk_errors_text(out.f, s, in->stacks);
		}
		began = true;
	}
	if (began && format == LK_FORMAT_JSON)
		lk_errors_json_end(&j);
	if (output && out.f && (k = lk_outfile_commit(&out)) < 0)
		return lk_error(k, "report: cannot write '%s'", output), LK_EXIT_FILE;
	return lk_cmd_end_output("report", "report", status);
}
