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
#include "report.h"
#include "site-args.h"
#include "util.h"

static enum lk_view arg_view = LK_VIEW_LEAKS;
static bool arg_view_set, arg_merge, arg_ascii;
static const char *arg_at, *arg_age;
static struct lk_site_args arg_sites;

#define HELP_SHOWN (-1) /* parse_args: --help was printed */

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

/* 0, HELP_SHOWN, or LK_EXIT_USAGE after printing why. */
static int parse_args(int argc, char *argv[])
{
	enum { ARG_VIEW = 0x100, ARG_AT, ARG_AGE, ARG_MERGE, ARG_ASCII };
	static const struct option options[] = {
		{ "view", required_argument, NULL, ARG_VIEW },
		{ "at", required_argument, NULL, ARG_AT },
		{ "age", required_argument, NULL, ARG_AGE },
		{ "merge", no_argument, NULL, ARG_MERGE },
		{ "ascii", no_argument, NULL, ARG_ASCII },
		{ "help", no_argument, NULL, 'h' },
		LK_SITE_OPTIONS,
		{},
	};
	int c, k;

	optind = 0;
	while ((c = getopt_long(argc, argv, SITE_SHORT_OPTIONS "h", options, NULL)) >= 0) {
		switch (c) {
		case ARG_VIEW:
			if (set_view(optarg) < 0)
				return LK_EXIT_USAGE;
			break;
		case ARG_AT:
			arg_at = optarg;
			break;
		case ARG_AGE:
			arg_age = optarg;
			break;
		case ARG_MERGE:
			arg_merge = true;
			break;
		case ARG_ASCII:
			arg_ascii = true;
			break;
		case 'h':
			return lk_cmd_usage(stdout, "report", HELP_SHOWN);
		default:
			k = lk_site_args_option(&arg_sites, "report", c, optarg);
			if (k == LK_SITE_ARGS_UNKNOWN)
				return lk_cmd_usage(stderr, "report", LK_EXIT_USAGE);
			if (k)
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

	if (k < 0) {
		lk_error_of(path, k, err);
		return LK_EXIT_FILE;
	}
	if (!r->procs[r->nprocs - 1].totals.trailer)
		lk_site_args_no_trailer(path);
	return 0;
}

/* The JSON document starts with the first report, so that a file that cannot be read leaves
 * nothing on stdout that could pass for its report. */
static int print_report(const struct lk_report *r, size_t nfiles, struct lk_json_doc **doc,
			bool *first)
{
	bool was_first = *first;

	*first = false;
	if (!arg_sites.json) {
		if (!was_first)
			putchar('\n');
		lk_text_report(stdout, r);
		return 0;
	}
	if (was_first && lk_json_begin(stdout, &r->opts, nfiles > 1 && !arg_merge, doc) < 0)
		return -ENOMEM;
	lk_json_report(*doc, r);
	return 0;
}

int lk_cmd_report(int argc, char *argv[])
{
	_cleanup_(lk_site_args_donep) struct lk_site_args *sites = &arg_sites;
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
		.top = lk_site_args_top(sites),
		.min_share = sites->min_share,
		.merge = arg_merge,
		.stacks = sites->stacks,
		.ascii = arg_ascii || strcmp(nl_langinfo(CODESET), "UTF-8") != 0,
		.filter = &sites->filter,
	};

	k = lk_site_args_symbolizer(sites, "report", &sym);
	if (k)
		return k;
	if (arg_merge && lk_report_new(&ro, &merged) < 0)
		return fail(-ENOMEM, "--merge");
	for (size_t i = 0; i < nfiles; i++) {
		_cleanup_(lk_report_freep) struct lk_report *one = NULL;
		const char *path = argv[optind + (int)i];
		if (!merged && lk_report_new(&ro, &one) < 0)
			return fail(-ENOMEM, path);
		k = add_file(merged ?: one, sym, (uint32_t)i, path, &po);
		lk_site_args_warnings(sym, &warned);
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
