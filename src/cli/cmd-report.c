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

#include "budget.h"
#include "commands.h"
#include "html.h"
#include "input.h"
#include "outfile.h"
#include "report.h"
#include "util.h"

#define DEFAULT_TREE_MIN_SHARE 0.005 /* pprof's default node fraction (-nodefraction) */

static enum lk_view arg_view = LK_VIEW_LEAKS;
static enum lk_input_format arg_format = LK_FORMAT_TEXT;
static const char *arg_output;
static bool arg_view_set, arg_ascii, arg_tree, arg_inverted, arg_objects;
static const char *arg_value;
static const char *arg_at, *arg_age, *arg_from, *arg_to;
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

static bool is_view(const char *name)
{
	return lk_view_from_name(name) >= 0 || strcmp(name, "tree") == 0;
}

/* A report that could not be made or written: why, unless said already (-EBADF). */
static int report_failed(int r, const char *what)
{
	if (r == -E2BIG)
		lk_msg("%s: the report needs more than %s of memory (--max-memory)", what,
		       lk_budget_format((char[32]){ 0 }, 32, lk_budget_limit()));
	else if (r != -EBADF)
		lk_error(r, "report: %s", what);
	return LK_EXIT_FILE;
}

static int set_view(const char *name)
{
	bool tree = strcmp(name, "tree") == 0;
	int v = tree ? (int)LK_VIEW_LEAKS : lk_view_from_name(name);

	if (v < 0) {
		lk_msg("report: unknown view '%s' (leaks, peak, inuse, alloc, old, growth, timeline, "
		       "tree)", name);
		return -EINVAL;
	}
	if (arg_view_set && (tree != arg_tree || (enum lk_view)v != arg_view)) {
		lk_msg("report: two views given: %s and %s", arg_tree ? "tree" : lk_view_name(arg_view),
		       name);
		return -EINVAL;
	}
	arg_view = (enum lk_view)v;
	arg_tree = tree;
	arg_view_set = true;
	return 0;
}

/* tree --value: a view's figure, or pprof's name of one (inuse_space is live at the end). 0, or
 * -EINVAL after printing why. */
static int set_value(void)
{
	static const struct {
		const char *name;
		enum lk_view view;
		bool objects;
	} values[] = {
		{ "leaks", LK_VIEW_LEAKS, false },        { "peak", LK_VIEW_PEAK, false },
		{ "inuse", LK_VIEW_INUSE, false },        { "alloc", LK_VIEW_ALLOC, false },
		{ "old", LK_VIEW_OLD, false },            { "inuse_space", LK_VIEW_LEAKS, false },
		{ "inuse_objects", LK_VIEW_LEAKS, true }, { "alloc_space", LK_VIEW_ALLOC, false },
		{ "alloc_objects", LK_VIEW_ALLOC, true },
	};

	if (!arg_tree) {
		lk_msg("report: --value, --objects and --inverted belong to the tree view");
		return -EINVAL;
	}
	if (!arg_value)
		return 0;
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++)
		if (strcmp(arg_value, values[i].name) == 0) {
			arg_view = values[i].view;
			arg_objects |= values[i].objects;
			return 0;
		}
	lk_msg("report: --value '%s': not one of leaks, peak, inuse, alloc, old, inuse_space, "
	       "inuse_objects, alloc_space, alloc_objects", arg_value);
	return -EINVAL;
}

/* 0, HELP_SHOWN, or LK_EXIT_USAGE after printing why. */
static int parse_args(int argc, char *argv[])
{
	enum { ARG_VIEW = 0x100, ARG_AT, ARG_AGE, ARG_ASCII, ARG_VALUE, ARG_OBJECTS, ARG_INVERTED,
	       ARG_FROM, ARG_TO };
	static const struct option options[] = {
		{ "view", required_argument, NULL, ARG_VIEW },
		{ "at", required_argument, NULL, ARG_AT },
		{ "from", required_argument, NULL, ARG_FROM },
		{ "to", required_argument, NULL, ARG_TO },
		{ "age", required_argument, NULL, ARG_AGE },
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "ascii", no_argument, NULL, ARG_ASCII },
		{ "value", required_argument, NULL, ARG_VALUE },
		{ "objects", no_argument, NULL, ARG_OBJECTS },
		{ "inverted", no_argument, NULL, ARG_INVERTED },
		{ "help", no_argument, NULL, 'h' },
		LK_INPUT_OPTIONS,
		LK_INPUT_MERGE_OPTION,
		LK_INPUT_SITE_OPTIONS,
		{},
	};
	int c, k;

	optind = 0;
	while ((c = getopt_long(argc, argv, LK_INPUT_SITE_SHORT "f:o:h", options, NULL)) >= 0) {
		switch (c) {
		case ARG_VIEW:
			if (set_view(optarg) < 0)
				return LK_EXIT_USAGE;
			break;
		case ARG_AT:
			arg_at = optarg;
			break;
		case ARG_FROM:
			arg_from = optarg;
			break;
		case ARG_TO:
			arg_to = optarg;
			break;
		case ARG_AGE:
			arg_age = optarg;
			break;
		case 'f':
			if (lk_input_format("report", optarg, &arg_format))
				return LK_EXIT_USAGE;
			break;
		case 'o':
			arg_output = optarg;
			break;
		case ARG_ASCII:
			arg_ascii = true;
			break;
		case ARG_VALUE:
			arg_value = optarg;
			break;
		case ARG_OBJECTS:
			arg_objects = true;
			break;
		case ARG_INVERTED:
			arg_inverted = true;
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
	if (!arg_view_set && optind < argc && is_view(argv[optind]) &&
	    access(argv[optind], F_OK) < 0)
		set_view(argv[optind++]);
	if ((arg_value || arg_objects || arg_inverted) && set_value() < 0)
		return LK_EXIT_USAGE;
	if (arg_tree && (arg_input.top_set || arg_input.stacks)) {
		lk_msg("report: %s does not apply to the tree, which --min-share prunes",
		       arg_input.top_set ? "--top" : "--stacks");
		return LK_EXIT_USAGE;
	}
	if (arg_tree && arg_format == LK_FORMAT_HTML) {
		lk_msg("report: the tree is text or json; the HTML page has it as flame graphs");
		return LK_EXIT_USAGE;
	}
	return 0;
}

/* --from and --to: the window of leaks, inuse and alloc (and the tree of their values). 0, or
 * LK_EXIT_USAGE after printing why. */
static int check_window(struct lk_profile_opts *po)
{
	if (!arg_from && !arg_to)
		return 0;
	if (arg_view != LK_VIEW_LEAKS && arg_view != LK_VIEW_INUSE && arg_view != LK_VIEW_ALLOC) {
		lk_msg("report: --from and --to belong to the leaks, inuse and alloc views (tree: "
		       "--value leaks, inuse or alloc)");
		return LK_EXIT_USAGE;
	}
	if (arg_to && arg_view == LK_VIEW_INUSE) {
		lk_msg("report: inuse ends at --at; --to is for leaks and alloc");
		return LK_EXIT_USAGE;
	}
	if (lk_input_window("report", arg_from, arg_to ? "--to" : "--at", arg_to ? arg_to : arg_at,
			    &po->from_ns, &po->from_mark, &po->at_ns, &po->at_mark))
		return LK_EXIT_USAGE;
	po->window = true;
	return 0;
}

/* The times the views need; 0, or LK_EXIT_USAGE after printing why. */
static int check_times(uint64_t *at_ns, const char **at_mark, uint64_t *age_ns)
{
	if ((arg_at && arg_view != LK_VIEW_INUSE) || (arg_age && arg_view != LK_VIEW_OLD)) {
		lk_msg("report: %s belongs to the %s view (tree: --value %s)", arg_at ? "--at" : "--age",
		       arg_at ? "inuse" : "old", arg_at ? "inuse" : "old");
		return LK_EXIT_USAGE;
	}
	if (arg_view == LK_VIEW_INUSE && arg_at && lk_parse_duration(arg_at, at_ns) < 0 &&
	    lk_mark_name_ok(arg_at)) {
		*at_mark = arg_at; /* found in each profile (profile.c) */
	} else if (arg_view == LK_VIEW_INUSE && (!arg_at || lk_parse_duration(arg_at, at_ns) < 0)) {
		lk_msg("report: inuse needs --at TIME, in seconds since the start (e.g. 1.5, 250ms, "
		       "2m), or --at MARK, a mark's name (`leek ctl PID mark NAME`)");
		return LK_EXIT_USAGE;
	}
	if (arg_view == LK_VIEW_OLD && !arg_age) {
		lk_msg("report: old needs --age DURATION (e.g. 30s, 500ms, 5m)");
		return LK_EXIT_USAGE;
	}
	if (arg_view == LK_VIEW_OLD && lk_duration_arg("report", "--age", arg_age, 0, age_ns))
		return LK_EXIT_USAGE;
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

/* Finishes a section (its sites or its tree); 0, or < 0 after printing why, naming what. */
static int finish(struct lk_report *r, const char *what)
{
	_cleanup_(freep) char *err = NULL;
	int k = lk_report_finish(r, &err);

	if (k < 0)
		lk_error_of(what, k, err);
	return k;
}

/* The output (stdout, or -o FILE's temporary file: outfile.h) and the JSON document start with
 * the first report, so that a file that cannot be read leaves nothing that could pass for its
 * report. */
static int print_report(const struct lk_report *r, size_t nfiles, struct lk_json_doc **doc,
			struct lk_outfile *out)
{
	bool was_first = !out->f;
	int k;

	if (was_first && (k = lk_outfile_open(out, arg_output, 0666)) < 0) {
		lk_error(k, "report: cannot create '%s'", arg_output);
		return -EBADF; /* said */
	}
	if (arg_format == LK_FORMAT_HTML)
		return lk_html_report(out->f, r);
	if (arg_format == LK_FORMAT_TEXT) {
		if (!was_first)
			fputc('\n', out->f);
		lk_text_report(out->f, r);
		return 0;
	}
	if (was_first && lk_json_begin(out->f, &r->opts, nfiles > 1 && !arg_input.merge, doc) < 0)
		return -ENOMEM;
	lk_json_report(*doc, r);
	return 0;
}

int lk_cmd_report(int argc, char *argv[])
{
	_cleanup_(input_donep) struct lk_input *in = &arg_input;
	_cleanup_(lk_symbolizer_freep) struct lk_symbolizer *sym = NULL;
	_cleanup_(lk_report_freep) struct lk_report *merged = NULL;
	_cleanup_(lk_outfile_discard) struct lk_outfile out = { 0 }; /* until the end: none kept */
	struct lk_profile_opts po = { .at_ns = UINT64_MAX };
	struct lk_report_opts ro;
	struct lk_json_doc *doc = NULL;
	size_t warned = 0, nfiles;
	int status = LK_EXIT_OK, k;

	/* The frees of sampled blocks are not a view of sites: a command of their own. */
	if (argc > 1 && strcmp(argv[1], "frees") == 0 && access(argv[1], F_OK) < 0) {
		argv[1] = argv[0]; /* getopt's messages name the command */
		return lk_cmd_report_frees(argc - 1, argv + 1);
	}
	/* Nor are the memory errors libleek caught. */
	if (argc > 1 && strcmp(argv[1], "errors") == 0 && access(argv[1], F_OK) < 0) {
		argv[1] = argv[0];
		return lk_cmd_report_errors(argc - 1, argv + 1);
	}
	/* The view may come first, as a word: `leek report peak FILE`. */
	if (argc > 1 && is_view(argv[1])) {
		set_view(argv[1]);
		argv[1] = argv[0];
		argv++;
		argc--;
	}
	k = parse_args(argc, argv);
	if (k == HELP_SHOWN)
		return LK_EXIT_OK;
	if (k == 0)
		k = check_times(&po.at_ns, &po.at_mark, &po.age_ns);
	if (k == 0)
		k = check_window(&po);
	if (k)
		return k;
	/* Only old looks at the blocks live at the end one by one (their ages): the other views
	 * spare the list, 40 bytes a live block, and its sort. */
	po.no_live_list = arg_view != LK_VIEW_OLD;
	if (lk_cmd_need_operands(argc, "report", "profile"))
		return LK_EXIT_USAGE;
	nfiles = (size_t)(argc - optind);
	lk_input_chains(in, argv + optind, &nfiles); /* one rotated profile's segments: once */
	po.segment_only = in->segment_only;
	if (arg_format == LK_FORMAT_HTML && nfiles > 1 && !in->merge) {
		lk_msg("report: --format html shows one profile, or several with --merge");
		return LK_EXIT_USAGE;
	}

	/* Block characters only where the terminal's locale can show them. */
	setlocale(LC_CTYPE, "");
	ro = (struct lk_report_opts){
		.view = arg_view,
		.at_ns = po.at_ns,
		.at_mark = po.at_mark,
		.age_ns = po.age_ns,
		.window = po.window,
		.from_ns = po.from_ns,
		.from_mark = po.from_mark,
		.top = in->top_set		      ? in->top
		       : arg_format == LK_FORMAT_JSON ? 0
		       : arg_format == LK_FORMAT_HTML ? LK_HTML_TOP
						      : LK_INPUT_TOP_DEFAULT,
		/* A tree in the terminal hides what is too small to read; JSON has it all. */
		.min_share = arg_tree && arg_format == LK_FORMAT_TEXT && !in->min_share_set
				     ? DEFAULT_TREE_MIN_SHARE
				     : in->min_share,
		.merge = in->merge,
		.stacks = in->stacks,
		.ascii = arg_ascii || strcmp(nl_langinfo(CODESET), "UTF-8") != 0,
		.no_auto_wrappers = in->no_auto_wrappers,
		.tree = arg_tree,
		.inverted = arg_inverted,
		.objects = arg_objects,
		.series = arg_format == LK_FORMAT_HTML, /* the flame graphs of moments */
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
			if (finish(one, path) < 0) {
				status = LK_EXIT_FILE;
				continue;
			}
			k = print_report(one, nfiles, &doc, &out);
			if (k < 0)
				return report_failed(k, path);
		}
	}
	if (merged && merged->nprocs > 0) {
		if (finish(merged, "--merge") < 0)
			status = LK_EXIT_FILE;
		else if ((k = print_report(merged, nfiles, &doc, &out)) < 0)
			return report_failed(k, "--merge");
	}
	if (doc)
		lk_json_end(doc);
	if (arg_output && (k = lk_outfile_commit(&out)) < 0)
		return lk_error(k, "report: cannot write '%s'", arg_output), LK_EXIT_FILE;
	return lk_cmd_end_output("report", "report", status);
}
