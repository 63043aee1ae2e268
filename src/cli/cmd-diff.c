/* cmd-diff.c: `leek diff [OPTIONS] BASE NEW` and `leek diff --from T1 [--to T2] FILE...`: the
 * change at each allocation site, between two profiles (or groups of them) or two moments.
 *
 * Each file is read as `leek report` reads it (input.c: the same options, symbolizer and
 * messages), aggregated by profile.c and symbolized by one symbolizer for every file;
 * src/cli/diff/ matches the sites of the two sides, tests and ranks the
 * changes, and prints them. A profile that cannot be read gets one "leek: FILE: offset N: ..."
 * line and exit status 2, and then nothing is printed on stdout, nor written to -o FILE (which
 * appears whole or not at all: outfile.h): a diff with a side missing would pass for a real one.
 * The status says nothing of what changed (docs/json.md has the significant flags for scripts).
 *
 * Never: exit, print a warning twice, or keep a profile loaded after its file is added.
 */
#include <errno.h>
#include <getopt.h>
#include <string.h>

#include "budget.h"
#include "commands.h"
#include "diff.h"
#include "html.h"
#include "input.h"
#include "outfile.h"
#include "util.h"

static const char *arg_at, *arg_from, *arg_to, *arg_by, *arg_output;
static enum lk_input_format arg_format = LK_FORMAT_TEXT;
static struct lk_input arg_input = { .command = "diff" };

#define HELP_SHOWN (-1) /* parse_args: --help was printed */

static void input_donep(struct lk_input **in)
{
	lk_input_done(*in);
}

static int parse_args(int argc, char *argv[])
{
	enum { ARG_AT = 0x100, ARG_FROM, ARG_TO, ARG_BY };
	static const struct option options[] = {
		{ "at", required_argument, NULL, ARG_AT },
		{ "from", required_argument, NULL, ARG_FROM },
		{ "to", required_argument, NULL, ARG_TO },
		{ "by", required_argument, NULL, ARG_BY },
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		LK_INPUT_OPTIONS,
		LK_INPUT_BASE_OPTION,
		LK_INPUT_SITE_OPTIONS,
		{},
	};
	int c, k;

	optind = 0;
	while ((c = getopt_long(argc, argv, LK_INPUT_SITE_SHORT "f:o:h", options, NULL)) >= 0) {
		switch (c) {
		case ARG_AT:
			arg_at = optarg;
			break;
		case ARG_FROM:
			arg_from = optarg;
			break;
		case ARG_TO:
			arg_to = optarg;
			break;
		case ARG_BY:
			arg_by = optarg;
			break;
		case 'f':
			if (lk_input_format("diff", optarg, &arg_format))
				return LK_EXIT_USAGE;
			break;
		case 'o':
			arg_output = optarg;
			break;
		case 'h':
			return lk_cmd_usage(stdout, "diff", HELP_SHOWN);
		default:
			if ((k = lk_input_option(&arg_input, c, optarg)))
				return k;
		}
	}
	return 0;
}

/* A time option: 0, or LK_EXIT_USAGE after printing why. */
static int parse_time(const char *option, const char *s, uint64_t *ret)
{
	if (lk_parse_duration(s, ret) < 0) {
		lk_msg("diff: %s: '%s' is not a time since the start (e.g. 1.5, 250ms, 2m)", option,
		       s);
		return LK_EXIT_USAGE;
	}
	return 0;
}

/* The options as struct lk_diff_opts, and which operands go to which side: 0, or LK_EXIT_USAGE
 * after printing why. */
static int make_opts(int nfiles, struct lk_diff_opts *o)
{
	bool moments = arg_from || arg_to;

	*o = (struct lk_diff_opts){ .at_ns = UINT64_MAX, .by = LK_DIFF_BY_LIVE };
	if (arg_by && strcmp(arg_by, "alloc") == 0) {
		o->by = LK_DIFF_BY_ALLOC;
	} else if (arg_by && strcmp(arg_by, "live") != 0) {
		lk_msg("diff: --by: '%s' is neither live nor alloc", arg_by);
		return LK_EXIT_USAGE;
	}
	if (moments) {
		o->mode = LK_DIFF_MOMENTS;
		if (arg_at || arg_input.n_bases) {
			lk_msg("diff: %s compares two profiles, not two moments (--from, --to)",
			       arg_at ? "--at" : "--base");
			return LK_EXIT_USAGE;
		}
		if (o->by == LK_DIFF_BY_ALLOC) {
			lk_msg("diff: --by alloc compares two profiles: between two moments, what "
			       "was allocated is not a change");
			return LK_EXIT_USAGE;
		}
		return lk_input_window("diff", arg_from, "--to", arg_to, &o->from_ns,
				       &o->from_mark, &o->at_ns, &o->at_mark);
	}
	o->mode = LK_DIFF_PROFILES;
	if (!arg_input.n_bases && nfiles != 2) {
		lk_msg("diff: %s profile%s given: BASE NEW, or --base FILE... NEW..., or "
		       "--from/--to and FILE...", nfiles < 2 ? "fewer than two" : "more than two",
		       nfiles < 2 ? "" : "s");
		return LK_EXIT_USAGE;
	}
	if (!arg_at || strcmp(arg_at, "end") == 0)
		o->when = LK_DIFF_END;
	else if (strcmp(arg_at, "peak") == 0)
		o->when = LK_DIFF_PEAK;
	else if (parse_time("--at", arg_at, &o->at_ns))
		return LK_EXIT_USAGE;
	else
		o->when = LK_DIFF_AT;
	return 0;
}

/* Loads one file into a side; 0, or LK_EXIT_FILE after printing why. */
static int add_file(struct lk_diff *d, unsigned side, struct lk_symbolizer *sym, uint32_t index,
		    const char *path)
{
	_cleanup_(freep) char *err = NULL;
	struct lk_report *r = d->side[side];
	int k = lk_diff_add_file(d, side, sym, index, path, &err);

	return lk_input_loaded(path, k, err, k < 0 || r->procs[r->nprocs - 1].totals.trailer);
}

int lk_cmd_diff(int argc, char *argv[])
{
	_cleanup_(input_donep) struct lk_input *in = &arg_input;
	_cleanup_(lk_symbolizer_freep) struct lk_symbolizer *sym = NULL;
	_cleanup_(lk_diff_freep) struct lk_diff *d = NULL;
	_cleanup_(lk_outfile_discard) struct lk_outfile out = { 0 };
	_cleanup_(lk_flame_freep) struct lk_flame *flame = NULL; /* freed before d */
	struct lk_diff_opts o;
	size_t warned = 0;
	uint32_t index = 0;
	int status = LK_EXIT_OK, k, nfiles;

	k = parse_args(argc, argv);
	if (k == HELP_SHOWN)
		return LK_EXIT_OK;
	if (k)
		return k;
	if (lk_cmd_need_operands(argc, "diff", "profile"))
		return LK_EXIT_USAGE;
	nfiles = argc - optind;
	if (make_opts(nfiles, &o))
		return LK_EXIT_USAGE;
	o.top = in->top_set		       ? in->top
		: arg_format == LK_FORMAT_JSON ? 0
		: arg_format == LK_FORMAT_HTML ? LK_HTML_TOP
					       : LK_INPUT_TOP_DEFAULT;
	o.min_share = in->min_share;
	o.stacks = in->stacks;
	o.no_auto_wrappers = in->no_auto_wrappers;
	o.segment_only = in->segment_only;
	o.filter = &in->filter;

	k = lk_input_symbolizer(in, &sym);
	if (k)
		return k;
	k = lk_diff_new(&o, &d);
	if (k < 0)
		return lk_error(k, "diff"), LK_EXIT_FILE;
	/* Every file is read, so that each one that cannot be is named. */
	for (size_t i = 0; i < in->n_bases; i++, index++) {
		status |= add_file(d, 0, sym, index, in->bases[i]);
		lk_input_warnings(sym, &warned);
	}
	for (int i = 0; i < nfiles; i++, index++) {
		unsigned side = o.mode == LK_DIFF_PROFILES && (in->n_bases || i > 0);
		status |= add_file(d, side, sym, index, argv[optind + i]);
		lk_input_warnings(sym, &warned);
	}
	if (status)
		return LK_EXIT_FILE;
	k = lk_diff_finish(d);
	if (k >= 0 && arg_format == LK_FORMAT_HTML)
		k = lk_diff_flame(d, &flame);
	if (k == -E2BIG) {
		char limit[32];
		lk_msg("diff: the profiles need more than %s of memory to compare (--max-memory)",
		       lk_budget_format(limit, sizeof(limit), lk_budget_limit()));
		return LK_EXIT_FILE;
	}
	if (k < 0)
		return lk_error(k, "diff"), LK_EXIT_FILE;
	k = lk_outfile_open(&out, arg_output, 0666);
	if (k < 0)
		return lk_error(k, "diff: cannot create '%s'", arg_output), LK_EXIT_FILE;
	if (arg_format == LK_FORMAT_JSON)
		lk_diff_json(out.f, d);
	else if (arg_format == LK_FORMAT_HTML)
		lk_diff_html(out.f, d, flame);
	else
		lk_diff_text(out.f, d);
	if (arg_output && (k = lk_outfile_commit(&out)) < 0)
		return lk_error(k, "diff: cannot write '%s'", arg_output), LK_EXIT_FILE;
	return lk_cmd_end_output("diff", "diff", LK_EXIT_OK);
}
