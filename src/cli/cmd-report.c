/* cmd-report.c: `leek report [VIEW] [OPTIONS] FILE...`: the heap by allocation site.
 *
 * Each file is aggregated by profile.c (streaming: nothing here holds a record), symbolized
 * offline by symbolize.c (one symbolizer for every file, so a library shared by a process tree
 * is parsed once), turned into ranked sites by report.c, and printed by out-text.c or
 * out-json.c: one section per file, or one for all with --merge. A profile that cannot be read
 * gets one "leek: FILE: offset N: ..." line and exit status 2; the other files are still reported.
 *
 * Never: exit, print a warning twice (the symbolizer's accumulate; this file prints each once),
 * or keep a profile loaded after its section is built.
 */
#include <errno.h>
#include <getopt.h>
#include <langinfo.h>
#include <locale.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "input.h"
#include "report.h"
#include "util.h"

#define DEFAULT_TOP 20

static enum lk_view arg_view = LK_VIEW_LEAKS;
static bool arg_view_set, arg_json, arg_stacks, arg_ascii, arg_top_set;
static const char *arg_at, *arg_age;
static size_t arg_top = DEFAULT_TOP;
static double arg_min_share;
static struct lk_input arg_input = { .command = "report" };

#define HELP_SHOWN (-1) /* parse_args: --help was printed */

static void input_donep(struct lk_input **in)
{
	lk_input_done(*in);
}

/* Out of memory, or a write that failed: one line, and the file status. */
static int fail(int r, const char *what)
{
	lk_error(r, "report: %s", what);
	return LK_EXIT_FILE;
}

static int set_view(const char *name)
{
	int v = lk_view_from_name(name);

	if (v < 0) {
		lk_msg("report: unknown view '%s' (leaks, peak, inuse, alloc, old, growth, timeline)",
		       name);
		return -EINVAL;
	}
	if (arg_view_set && (enum lk_view)v != arg_view) {
		lk_msg("report: two views given: %s and %s", lk_view_name(arg_view), name);
		return -EINVAL;
	}
	arg_view = (enum lk_view)v;
	arg_view_set = true;
	return 0;
}

static int parse_share(const char *s, double *ret)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end != s && *end == '%')
		end++;
	if (errno || end == s || *end || !(v >= 0 && v <= 100))
		return -EINVAL;
	*ret = v / 100;
	return 0;
}

/* 0, HELP_SHOWN, or LK_EXIT_USAGE after printing why. */
static int parse_args(int argc, char *argv[])
{
	enum { ARG_VIEW = 0x100, ARG_AT, ARG_AGE, ARG_MIN_SHARE, ARG_ASCII };
	static const struct option options[] = {
		{ "view", required_argument, NULL, ARG_VIEW },
		{ "top", required_argument, NULL, 'n' },
		{ "min-share", required_argument, NULL, ARG_MIN_SHARE },
		{ "at", required_argument, NULL, ARG_AT },
		{ "age", required_argument, NULL, ARG_AGE },
		{ "stacks", no_argument, NULL, 's' },
		{ "format", required_argument, NULL, 'f' },
		{ "ascii", no_argument, NULL, ARG_ASCII },
		{ "help", no_argument, NULL, 'h' },
		{ "alloc-fn", required_argument, NULL, LK_INPUT_ALLOC_FN },
		LK_INPUT_OPTIONS,
		{},
	};
	uint64_t v;
	int c, k;

	optind = 0;
	while ((c = getopt_long(argc, argv, "n:svf:h", options, NULL)) >= 0) {
		switch (c) {
		case ARG_VIEW:
			if (set_view(optarg) < 0)
				return LK_EXIT_USAGE;
			break;
		case 'n':
			if (lk_parse_u64(optarg, &v) < 0) {
				lk_msg("report: --top: '%s' is not a number", optarg);
				return LK_EXIT_USAGE;
			}
			arg_top = (size_t)v;
			arg_top_set = true;
			break;
		case ARG_MIN_SHARE:
			if (parse_share(optarg, &arg_min_share) < 0) {
				lk_msg("report: --min-share: '%s' is not a percentage", optarg);
				return LK_EXIT_USAGE;
			}
			break;
		case ARG_AT:
			arg_at = optarg;
			break;
		case ARG_AGE:
			arg_age = optarg;
			break;
		case 's':
		case 'v':
			arg_stacks = true;
			break;
		case 'f':
			if (strcmp(optarg, "json") != 0 && strcmp(optarg, "text") != 0) {
				lk_msg("report: --format: '%s' is neither text nor json", optarg);
				return LK_EXIT_USAGE;
			}
			arg_json = strcmp(optarg, "json") == 0;
			break;
		case ARG_ASCII:
			arg_ascii = true;
			break;
		case 'h':
			return lk_cmd_usage(stdout, "report", HELP_SHOWN);
		default:
			if ((k = lk_input_option(&arg_input, c, optarg)))
				return k;
		}
	}
	/* `leek report --merge timeline FILE...`: a view after the options, unless a file has
	 * that name. */
	if (!arg_view_set && optind < argc && lk_view_from_name(argv[optind]) >= 0 &&
	    access(argv[optind], F_OK) < 0)
		set_view(argv[optind++]);
	return 0;
}

/* The times the views need; 0, or LK_EXIT_USAGE after printing why. */
static int check_times(uint64_t *at_ns, uint64_t *age_ns)
{
	if ((arg_at && arg_view != LK_VIEW_INUSE) || (arg_age && arg_view != LK_VIEW_OLD)) {
		lk_msg("report: %s belongs to the %s view", arg_at ? "--at" : "--age",
		       arg_at ? "inuse" : "old");
		return LK_EXIT_USAGE;
	}
	if (arg_view == LK_VIEW_INUSE && (!arg_at || lk_parse_duration(arg_at, at_ns) < 0)) {
		lk_msg("report: inuse needs --at TIME, in seconds since the start (e.g. 1.5, 250ms, 2m)");
		return LK_EXIT_USAGE;
	}
	if (arg_view == LK_VIEW_OLD && (!arg_age || lk_parse_duration(arg_age, age_ns) < 0)) {
		lk_msg("report: old needs --age DURATION (e.g. 30s, 500ms, 5m)");
		return LK_EXIT_USAGE;
	}
	return 0;
}

/* Loads one file and adds it to r; 0, or LK_EXIT_FILE after printing why. */
static int add_file(struct lk_report *r, struct lk_symbolizer *sym, uint32_t index,
		    const char *path, const struct lk_profile_opts *po)
{
	_cleanup_(freep) char *err = NULL;
	int k = lk_report_add_file(r, sym, index, path, po, &err);

	return lk_input_loaded(path, k, err, k < 0 || r->procs[r->nprocs - 1].totals.trailer);
}

/* The JSON document starts with the first report, so that a file that cannot be read leaves
 * nothing on stdout that could pass for its report. */
static int print_report(const struct lk_report *r, size_t nfiles, struct lk_json_doc **doc,
			bool *first)
{
	bool was_first = *first;

	*first = false;
	if (!arg_json) {
		if (!was_first)
			putchar('\n');
		lk_text_report(stdout, r);
		return 0;
	}
	if (was_first && lk_json_begin(stdout, &r->opts, nfiles > 1 && !arg_input.merge, doc) < 0)
		return -ENOMEM;
	lk_json_report(*doc, r);
	return 0;
}

int lk_cmd_report(int argc, char *argv[])
{
	_cleanup_(input_donep) struct lk_input *in = &arg_input;
	_cleanup_(lk_symbolizer_freep) struct lk_symbolizer *sym = NULL;
	_cleanup_(lk_report_freep) struct lk_report *merged = NULL;
	struct lk_profile_opts po = { .at_ns = UINT64_MAX };
	struct lk_report_opts ro;
	struct lk_json_doc *doc = NULL;
	size_t warned = 0, nfiles;
	bool first = true;
	int status = LK_EXIT_OK, k;

	/* The view may come first, as a word: `leek report peak FILE`. */
	if (argc > 1 && lk_view_from_name(argv[1]) >= 0) {
		set_view(argv[1]);
		argv[1] = argv[0];
		argv++;
		argc--;
	}
	k = parse_args(argc, argv);
	if (k == HELP_SHOWN)
		return LK_EXIT_OK;
	if (k == 0)
		k = check_times(&po.at_ns, &po.age_ns);
	if (k)
		return k;
	/* Only old looks at the blocks live at the end one by one (their ages): the other views
	 * spare the list, 40 bytes a live block, and its sort. */
	po.no_live_list = arg_view != LK_VIEW_OLD;
	if (lk_cmd_need_operands(argc, "report", "profile"))
		return LK_EXIT_USAGE;
	nfiles = (size_t)(argc - optind);

	/* Block characters only where the terminal's locale can show them. */
	setlocale(LC_CTYPE, "");
	ro = (struct lk_report_opts){
		.view = arg_view,
		.at_ns = po.at_ns,
		.age_ns = po.age_ns,
		.top = arg_json && !arg_top_set ? 0 : arg_top,
		.min_share = arg_min_share,
		.merge = in->merge,
		.stacks = arg_stacks,
		.ascii = arg_ascii || strcmp(nl_langinfo(CODESET), "UTF-8") != 0,
		.filter = &in->filter,
	};

	k = lk_input_symbolizer(in, &sym);
	if (k)
		return k;
	if (in->merge && lk_report_new(&ro, &merged) < 0)
		return fail(-ENOMEM, "--merge");
	for (size_t i = 0; i < nfiles; i++) {
		_cleanup_(lk_report_freep) struct lk_report *one = NULL;
		const char *path = argv[optind + (int)i];
		if (!merged && lk_report_new(&ro, &one) < 0)
			return fail(-ENOMEM, path);
		k = add_file(merged ?: one, sym, (uint32_t)i, path, &po);
		lk_input_warnings(sym, &warned);
		if (k != 0) {
			status = LK_EXIT_FILE;
			continue;
		}
		if (one) {
			k = lk_report_finish(one);
			if (k >= 0)
				k = print_report(one, nfiles, &doc, &first);
			if (k < 0)
				return fail(k, path);
		}
	}
	if (merged && merged->nprocs > 0) {
		k = lk_report_finish(merged);
		if (k >= 0)
			k = print_report(merged, nfiles, &doc, &first);
		if (k < 0)
			return fail(k, "--merge");
	}
	if (doc)
		lk_json_end(doc);
	return lk_cmd_end_output("report", "report", status);
}
