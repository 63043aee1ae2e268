/* cmd-export.c: `leek export [OPTIONS] FILE...`: profiles in other tools' formats (export.h):
 * pprof's gzipped profile.proto, folded stacks for flame graphs, or the HTML report's page.
 *
 * Files are read as `leek report` reads them (input.c: the same options, symbolizer and
 * messages; export.c loads each as the report does). Outputs: one per FILE, or one for all with
 * --merge; an output named after its input FILE is FILE without .zst or .gz, plus the format's
 * suffix (leek.x.1234.lk.zst: leek.x.1234.lk.pb.gz), beside FILE or in -o DIR. pprof writes
 * such files by default; folded and html write to stdout, so several of their outputs need -o
 * DIR. A merged output of several files has no input to be named after: -o names it. --base
 * makes a pprof diff, and so one output. Each file written goes under a temporary name
 * (outfile.h), mode 0600 (an export holds the command line and the modules' load addresses, as
 * the profile does), then is renamed over OUT; "FILE -> OUT" is printed for each.
 *
 * A profile that cannot be read gets the report's "leek: FILE: offset N: ..." line and exit
 * status 2, and its output is not written; the other files are still exported (--merge: the
 * merged output holds the others, as `leek report --merge` reports them). A base that cannot be
 * read leaves its diff unwritten.
 *
 * Never: exit, write a partial output under its final name, or write pprof's binary to a
 * terminal.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "export.h"
#include "input.h"
#include "outfile.h"
#include "report.h"
#include "util.h"

#define HELP_SHOWN (-1) /* parse_args: --help was printed */

static const struct lk_export_format *arg_format;
static const char *arg_output, *arg_at, *arg_value;
static struct lk_input arg_input = { .command = "export" };

static void input_donep(struct lk_input **in)
{
	lk_input_done(*in);
}

/* 0, HELP_SHOWN, or LK_EXIT_USAGE after printing why. */
static int parse_args(int argc, char *argv[])
{
	enum { ARG_AT = 0x100, ARG_VALUE };
	static const struct option options[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "at", required_argument, NULL, ARG_AT },
		{ "value", required_argument, NULL, ARG_VALUE },
		{ "help", no_argument, NULL, 'h' },
		LK_INPUT_OPTIONS,
		LK_INPUT_MERGE_OPTION,
		LK_INPUT_BASE_OPTION,
		{},
	};
	int c, k;

	optind = 0;
	arg_format = lk_export_format_find("pprof");
	while ((c = getopt_long(argc, argv, "f:o:h", options, NULL)) >= 0) {
		switch (c) {
		case 'f':
			arg_format = lk_export_format_find(optarg);
			if (!arg_format) {
				lk_msg("export: --format: '%s' is not one of %s", optarg,
				       lk_export_format_names());
				return LK_EXIT_USAGE;
			}
			break;
		case 'o':
			arg_output = optarg;
			break;
		case ARG_AT:
			arg_at = optarg;
			break;
		case ARG_VALUE:
			arg_value = optarg;
			break;
		case 'h':
			return lk_cmd_usage(stdout, "export", HELP_SHOWN);
		default:
			if ((k = lk_input_option(&arg_input, c, optarg)))
				return k;
		}
	}
	return 0;
}

/* --at and --value into o; 0, or LK_EXIT_USAGE after printing why. */
static int parse_values(struct lk_export_opts *o)
{
	int v;

	if (arg_at && strcmp(arg_at, "peak") == 0)
		o->at = LK_EXPORT_AT_PEAK;
	else if (arg_at && lk_parse_duration(arg_at, &o->at_ns) == 0)
		o->at = LK_EXPORT_AT_TIME;
	else if (arg_at) {
		lk_msg("export: --at: '%s' is neither peak nor a time since the start (e.g. 1.5, "
		       "250ms, 2m)", arg_at);
		return LK_EXIT_USAGE;
	}
	if (!arg_value)
		return 0;
	if (!arg_format->takes_value) {
		lk_msg("export: --value belongs to --format folded (%s holds all four values)",
		       arg_format->name);
		return LK_EXIT_USAGE;
	}
	v = lk_export_value_from_name(arg_value);
	if (v < 0) {
		lk_msg("export: --value: '%s' is not one of inuse_space, alloc_space, "
		       "inuse_objects, alloc_objects", arg_value);
		return LK_EXIT_USAGE;
	}
	o->value = (enum lk_export_value)v;
	return 0;
}

static bool is_dir(const char *path)
{
	struct stat st;

	return path && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Which outputs the files make, and whether -o can name them; 0, or LK_EXIT_USAGE after
 * printing why. */
static int check_outputs(size_t nfiles)
{
	bool one = nfiles == 1 || arg_input.merge;

	if (arg_input.n_bases && !arg_format->takes_base) {
		lk_msg("export: --base belongs to --format pprof (%s)", arg_format->no_base);
		return LK_EXIT_USAGE;
	}
	if (arg_input.n_bases && !one) {
		lk_msg("export: --base makes one diff: give one FILE, or --merge");
		return LK_EXIT_USAGE;
	}
	if (!one && !arg_output && !arg_format->binary) {
		lk_msg("export: %zu profiles and one stdout: --merge makes one output of them, "
		       "-o DIR one each", nfiles);
		return LK_EXIT_USAGE;
	}
	if (!one && arg_output && !is_dir(arg_output)) {
		lk_msg("export: -o '%s': with several profiles and no --merge, -o names a directory "
		       "(one output each)", arg_output);
		return LK_EXIT_USAGE;
	}
	if (one && nfiles > 1 && ((arg_format->binary && !arg_output) || is_dir(arg_output))) {
		lk_msg("export: --merge makes one output of %zu profiles: name it with -o FILE",
		       nfiles);
		return LK_EXIT_USAGE;
	}
	if (arg_format->binary && arg_output && !strcmp(arg_output, "-") && isatty(STDOUT_FILENO)) {
		lk_msg("export: not writing %s's binary to a terminal (-o FILE, or a pipe)",
		       arg_format->name);
		return LK_EXIT_USAGE;
	}
	return 0;
}

/* The output named after input: its name without .zst or .gz, plus suffix, in dir if not
 * NULL. NULL when out of memory. */
static char *named_after(const char *input, const char *dir, const char *suffix)
{
	const char *base = dir ? (strrchr(input, '/') ? strrchr(input, '/') + 1 : input) : input;
	size_t n = strlen(base);
	char *out;

	if (n > 4 && strcmp(base + n - 4, ".zst") == 0)
		n -= 4;
	else if (n > 3 && strcmp(base + n - 3, ".gz") == 0)
		n -= 3;
	if (asprintf(&out, "%s%s%.*s%s", dir ? dir : "", dir ? "/" : "", (int)n, base, suffix) < 0)
		return NULL;
	return out;
}

static int fail_nomem(void)
{
	lk_error(-ENOMEM, "export");
	return LK_EXIT_FILE;
}

/* Writes x's output to out ("-": stdout; a file appears whole or not at all: outfile.h) for
 * input (printed as "INPUT -> OUT"); 0, or LK_EXIT_FILE after printing why. */
static int write_output(struct lk_export *x, const char *input, const char *out)
{
	_cleanup_(lk_outfile_discard) struct lk_outfile o = { 0 };
	bool stream = strcmp(out, "-") == 0; /* check_outputs: not a terminal, for a binary format */
	int k;

	k = lk_outfile_open(&o, out, 0600);
	if (k == 0)
		k = lk_export_write(x, o.f);
	if (k >= 0)
		k = lk_outfile_commit(&o);
	if (k == -ECANCELED)
		lk_msg("export: '%s' not written: a profile failed part-way", out);
	else if (k < 0 && stream)
		lk_error(k, "export: cannot write the %s output", arg_format->name);
	else if (k < 0)
		lk_error(k, "export: cannot write '%s'", out);
	if (k < 0)
		return LK_EXIT_FILE;
	if (!stream)
		printf("%s -> %s\n", input, out);
	return 0;
}

/* Loads one file into x and says what the report would say of it; 0 or LK_EXIT_FILE. */
static int add_file(struct lk_export *x, struct lk_symbolizer *sym, size_t *warned,
		    const char *path, uint32_t number, bool base)
{
	_cleanup_(freep) char *err = NULL;
	bool trailer = true;
	int k = lk_export_add_file(x, path, number, base, &trailer, &err);

	k = lk_input_loaded(path, k, err, trailer);
	lk_input_warnings(sym, warned); /* after, as the report prints them */
	return k;
}

/* The session for one output: files[0...n) and the bases; writes it unless nothing could be read
 * or a base could not. The exit status. */
static int export_one(struct lk_symbolizer *sym, size_t *warned, const struct lk_export_opts *o,
		      char *const *files, size_t n, uint32_t first, const char *out)
{
	_cleanup_(lk_export_freep) struct lk_export *x = NULL;
	int status = LK_EXIT_OK, k;
	size_t read = 0;

	k = lk_export_new(arg_format, o, sym, &x);
	if (k < 0) {
		lk_error(k, "export: %s", files[0]);
		return LK_EXIT_FILE;
	}
	for (size_t i = 0; i < n; i++) {
		if (add_file(x, sym, warned, files[i], first + (uint32_t)i, false) != 0)
			status = LK_EXIT_FILE;
		else
			read++;
	}
	for (size_t i = 0; i < arg_input.n_bases && read; i++) {
		uint32_t number = first + (uint32_t)(n + i);
		if (add_file(x, sym, warned, arg_input.bases[i], number, true) != 0)
			return LK_EXIT_FILE; /* half a diff would pass for a whole one */
	}
	if (!read)
		return status;
	k = write_output(x, files[0], out);
	return k ? k : status;
}

int lk_cmd_export(int argc, char *argv[])
{
	_cleanup_(input_donep) struct lk_input *in = &arg_input;
	_cleanup_(lk_symbolizer_freep) struct lk_symbolizer *sym = NULL;
	struct lk_export_opts o = { .at = LK_EXPORT_AT_END, .value = LK_EXPORT_INUSE_SPACE };
	size_t warned = 0, nfiles;
	int status = LK_EXIT_OK, k;

	k = parse_args(argc, argv);
	if (k == HELP_SHOWN)
		return LK_EXIT_OK;
	if (k == 0)
		k = parse_values(&o);
	if (k == 0)
		k = lk_cmd_need_operands(argc, "export", "profile");
	if (k)
		return k;
	nfiles = (size_t)(argc - optind);
	lk_input_chains(in, argv + optind, &nfiles); /* one rotated profile's segments: once */
	o.segment_only = in->segment_only;
	k = check_outputs(nfiles);
	if (k)
		return k;
	o.filter = &in->filter;
	k = lk_input_symbolizer(in, &sym);
	if (k)
		return k;

	if (nfiles == 1 || in->merge) {
		_cleanup_(freep) char *named = NULL;
		const char *out = arg_output && !is_dir(arg_output) ? arg_output : NULL;
		if (!out && !arg_format->binary && !arg_output)
			out = "-";
		if (!out)
			out = named = named_after(argv[optind], arg_output, arg_format->suffix);
		status = out ? export_one(sym, &warned, &o, argv + optind, nfiles, 0, out)
			     : fail_nomem();
	} else {
		for (size_t i = 0; i < nfiles; i++) {
			const char *path = argv[optind + (int)i];
			_cleanup_(freep) char *out = named_after(path, arg_output, arg_format->suffix);
			k = out ? export_one(sym, &warned, &o, argv + optind + i, 1, (uint32_t)i, out)
				: fail_nomem();
			if (k > status)
				status = k;
		}
	}
	return lk_cmd_end_output("export", "output", status);
}
