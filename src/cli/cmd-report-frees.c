/* cmd-report-frees.c: `leek report frees [OPTIONS] FILE...`: the frees of sampled blocks.
 *
 * Each file is read with its frees kept (profile.h, opts.frees), symbolized with one symbolizer
 * for every file, made into a section (report/frees.c) and printed (report/out-frees.c): the
 * last --last frees, and every (allocation stack, free stack) pair. A profile written without
 * LEEK_FREE_STACKS has frees with no free stack: the report says so. A profile that cannot be read
 * gets one "leek: FILE: offset N: ..." line and exit status 2; the other files are still reported.
 *
 * Never: exit; keep a profile loaded after its section is made.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "commands.h"
#include "frees.h"
#include "input.h"
#include "outfile.h"
#include "report.h"
#include "util.h"

static void input_donep(struct lk_input **in)
{
	lk_input_done(*in);
}

int lk_cmd_report_frees(int argc, char *argv[])
{
	enum { ARG_LAST = 0x100 };
	static const struct option options[] = {
		{ "last", required_argument, NULL, ARG_LAST },
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
	size_t last = LK_FREES_LAST_DEFAULT, top, warned = 0;
	struct lk_json j;
	int status = LK_EXIT_OK, c, k;
	bool began = false;

	optind = 0;
	while ((c = getopt_long(argc, argv, LK_INPUT_SITE_SHORT "f:o:h", options, NULL)) >= 0) {
		switch (c) {
		case ARG_LAST: {
			char *end;
			errno = 0;
			unsigned long long v = strtoull(optarg, &end, 10);
			if (errno || end == optarg || *end || optarg[0] == '-' || v > (1u << 24)) {
				lk_msg("report frees: --last '%s': not a count from 0 to %u", optarg,
				       1u << 24);
				return LK_EXIT_USAGE;
			}
			last = (size_t)v;
			break;
		}
		case 'f':
			if (lk_input_format("report", optarg, &format))
				return LK_EXIT_USAGE;
			if (format == LK_FORMAT_HTML) {
				lk_msg("report frees: the report is text or json");
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
		lk_msg("report frees: --merge does not apply: each profile is its own section");
		return LK_EXIT_USAGE;
	}
	if (lk_cmd_need_operands(argc, "report", "profile"))
		return LK_EXIT_USAGE;
	top = in->top_set ? in->top : format == LK_FORMAT_JSON ? 0 : LK_INPUT_TOP_DEFAULT;
	k = lk_input_symbolizer(in, &sym);
	if (k)
		return k;
	for (int i = optind; i < argc; i++) {
		_cleanup_(lk_profile_freep) struct lk_profile *p = NULL;
		_cleanup_(lk_frees_section_freep) struct lk_frees_section *s = NULL;
		_cleanup_(freep) char *err = NULL;
		const struct lk_profile_opts po = { .at_ns = UINT64_MAX, .no_live_list = true,
						    .frees = true, .frees_last = last,
						    .segment_only = in->segment_only };
		uint32_t index = (uint32_t)(i - optind);

		k = lk_profile_load(argv[i], &po, &p, &err);
		if (lk_input_loaded(argv[i], k, err, k < 0 || lk_profile_totals(p)->trailer)) {
			status = LK_EXIT_FILE;
			continue;
		}
		k = lk_frees_section_new(argv[i], p, sym, index, &in->filter, top, &s);
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
				lk_frees_json_begin(&j, out.f, last, top);
			lk_frees_json(&j, s);
		} else {
			if (began)
				fputc('\n', out.f);
			lk_frees_text(out.f, s, in->stacks);
		}
		began = true;
	}
	if (began && format == LK_FORMAT_JSON)
		lk_frees_json_end(&j);
	if (output && out.f && (k = lk_outfile_commit(&out)) < 0)
		return lk_error(k, "report: cannot write '%s'", output), LK_EXIT_FILE;
	return lk_cmd_end_output("report", "report", status);
}
