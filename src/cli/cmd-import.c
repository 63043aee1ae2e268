/* cmd-import.c: `leek import [OPTIONS] [FILE|-]`: leaks in a foreign malloc trace (glibc mtrace,
 * FreeBSD kdump), matched by address as glibc's mtrace script matches them.
 *
 * The trace streams through src/cli/import (import.h): lines.c reads it a line at a time,
 * detect.c tells its format from the first lines unless --format does, mtrace.c or kdump.c parse
 * each line, match.c keeps the live set, binaries.c symbolizes callers (--binary), convert.c
 * writes a profile (--convert), and out-text.c or out-json.c print the report. A malformed line
 * is reported here, with its number (the first MALFORMED_SHOWN of them), and skipped.
 *
 * Exit status: 1 if the trace leaks (as the mtrace script), 0 if not, 2 if the input or a
 * --binary cannot be read, or an output cannot be written; a usage error is 1 too, as it is for
 * every leek command (and for the script).
 *
 * Never: hold the trace (memory follows the live set), or exit.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <string.h>

#include "commands.h"
#include "import.h"
#include "outfile.h"
#include "symbolize.h"
#include "util.h"

#define MALFORMED_SHOWN 10 /* enough to see what is wrong; the summary counts the rest */
#define LEAKS_FOUND     1  /* glibc's mtrace script: exit $anything != 0 */

static enum lk_import_format arg_input_format = LK_IMPORT_AUTO;
static bool arg_json, arg_convert;
static int arg_verbose;
static const char *arg_output;
static char **arg_binaries;
static size_t arg_nbinaries;

#define HELP_SHOWN (-1)

static int set_format(const char *v, bool *input_set, bool *output_set)
{
	bool input = strcmp(v, "mtrace") == 0 || strcmp(v, "kdump") == 0;
	bool output = strcmp(v, "text") == 0 || strcmp(v, "json") == 0;

	if (!input && !output) {
		lk_msg("import: --format '%s': not one of mtrace, kdump (the input), text, json "
		       "(the report)",
		       v);
		return -EINVAL;
	}
	if ((input && *input_set) || (output && *output_set)) {
		lk_msg("import: --format '%s': the %s's format is given already", v,
		       input ? "input" : "report");
		return -EINVAL;
	}
	if (input) {
		arg_input_format = strcmp(v, "mtrace") == 0 ? LK_IMPORT_MTRACE : LK_IMPORT_KDUMP;
		*input_set = true;
	} else {
		arg_json = strcmp(v, "json") == 0;
		*output_set = true;
	}
	return 0;
}

static int parse_args(int argc, char *argv[])
{
	enum { ARG_BINARY = 0x100, ARG_CONVERT };
	static const struct option options[] = {
	    {"format", required_argument, NULL, 'f'},
	    {"output", required_argument, NULL, 'o'},
	    {"binary", required_argument, NULL, ARG_BINARY},
	    {"convert", no_argument, NULL, ARG_CONVERT},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {},
	};
	bool input_set = false, output_set = false;
	int c;

	optind = 0;
	while ((c = getopt_long(argc, argv, "f:o:vh", options, NULL)) >= 0) {
		switch (c) {
		case 'f':
			if (set_format(optarg, &input_set, &output_set) < 0)
				return LK_EXIT_USAGE;
			break;
		case 'o':
			arg_output = optarg;
			break;
		case ARG_BINARY: {
			char **b = realloc(arg_binaries, (arg_nbinaries + 1) * sizeof(*b));
			if (!b)
				return lk_error(-ENOMEM, "import"), LK_EXIT_FILE;
			arg_binaries = b;
			b[arg_nbinaries++] = optarg;
			break;
		}
		case ARG_CONVERT:
			arg_convert = true;
			break;
		case 'v':
			arg_verbose++;
			break;
		case 'h':
			return lk_cmd_usage(stdout, "import", HELP_SHOWN);
		default:
			return lk_cmd_usage(stderr, "import", LK_EXIT_USAGE);
		}
	}
	if (argc - optind > 1) {
		lk_msg("import: one trace at a time (%d given)", argc - optind);
		return LK_EXIT_USAGE;
	}
	if (arg_convert && (!arg_output || strcmp(arg_output, "-") == 0)) {
		lk_msg("import: --convert needs -o FILE, the profile to write");
		return LK_EXIT_USAGE;
	}
	return 0;
}

struct state {
	const char *input;
	FILE *in;
	struct lk_lines lines;
	struct lk_import_match m;
	struct lk_import_binaries bins;
	struct lk_import_sink sink;
	struct lk_outfile profile;
	struct lk_import_live *leaks;
	size_t nleaks, resolved;
	size_t warned; /* symbolizer warnings printed */
};

static void state_done(struct state *s)
{
	if (s->in && s->in != stdin)
		fclose(s->in);
	lk_lines_done(&s->lines);
	lk_import_sink_done(&s->sink);
	lk_outfile_discard(&s->profile);
	lk_import_match_done(&s->m);
	lk_import_binaries_done(&s->bins);
	free(s->leaks);
	free(arg_binaries);
	arg_binaries = NULL;
	arg_nbinaries = 0;
}

static void malformed(struct state *s, uint64_t line, const char *why)
{
	s->m.malformed++;
	if (s->m.malformed <= MALFORMED_SHOWN)
		lk_msg("%s:%" PRIu64 ": malformed line, skipped: %s", s->input, line, why);
	if (s->m.malformed == MALFORMED_SHOWN + 1)
		lk_msg("%s: more malformed lines are not shown; the report counts them", s->input);
}

/* Symbolizes the callers seen since the last call, and shows the symbolizer's new warnings. */
static int resolve_new(struct state *s)
{
	const char *const *w;
	size_t n;
	int r;

	for (; s->resolved + 1 < s->m.callers.n; s->resolved++)
		if ((r = lk_import_binaries_resolve(&s->bins, &s->m.callers.c[s->resolved + 1])) <
		    0)
			return r;
	if (s->bins.sym) {
		n = lk_symbolizer_warnings(s->bins.sym, &w);
		for (; s->warned < n; s->warned++)
			lk_msg("import: %s", w[s->warned]);
	}
	return 0;
}

static int read_trace(struct state *s, enum lk_import_format fmt)
{
	const char *line, *why;
	struct lk_import_rec rec;
	size_t len;
	int r;

	while ((r = lk_lines_next(&s->lines, &line, &len)) > 0) {
		uint64_t no = s->lines.lineno;
		if (s->lines.too_long) {
			malformed(s, no, "longer than 64 KiB");
			continue;
		}
		r = fmt == LK_IMPORT_MTRACE ? lk_mtrace_parse(line, len, &rec, &why)
		                            : lk_kdump_parse(line, len, &rec, &why);
		if (r < 0) {
			malformed(s, no, why);
			continue;
		}
		if (r == 0) {
			s->m.skipped += len > 0 && line[strspn(line, " \t")] != '\0';
			if (arg_verbose >= 2 && len > 0)
				fprintf(stderr, "line %" PRIu64 ": skipped\n", no);
			continue;
		}
		if (rec.caller && arg_convert && s->bins.n) {
			/* convert.c writes a caller's frame at its first ALLOC, in its binary's
			 * terms: a new caller is resolved before the matcher sees it. The report's
			 * callers are resolved at the end, all at once (lk_cmd_import). */
			size_t before = s->m.callers.n;
			uint64_t id;
			if ((r = lk_import_callers_intern(&s->m.callers, rec.caller, rec.caller_len,
			                                  &id)) < 0)
				return r;
			if (s->m.callers.n != before && (r = resolve_new(s)) < 0)
				return r;
		}
		if ((r = lk_import_match_add(&s->m, &rec, no)) < 0)
			return r;
	}
	s->m.lines = s->lines.file_lineno;
	return r;
}

int lk_cmd_import(int argc, char *argv[])
{
	_cleanup_(state_done) struct state s = {0};
	_cleanup_(lk_outfile_discard) struct lk_outfile out = {0};
	enum lk_import_format fmt;
	const char *const *first;
	const char *bad = NULL;
	int k, n;

	k = parse_args(argc, argv);
	if (k == HELP_SHOWN)
		return LK_EXIT_OK;
	if (k)
		return k;
	s.input = optind < argc ? argv[optind] : "-";
	lk_import_match_init(&s.m);
	s.m.verbose = arg_verbose;
	s.m.trace = stderr;

	if (strcmp(s.input, "-") == 0) {
		s.in = stdin;
	} else if (!(s.in = fopen(s.input, "r"))) {
		lk_error(-errno, "import: cannot open '%s'", s.input);
		return LK_EXIT_FILE;
	}
	if ((k = lk_import_binaries_open(&s.bins, arg_binaries, arg_nbinaries, &bad)) < 0) {
		lk_error(k, "import: --binary '%s'%s", bad,
		         k == -ENOEXEC ? " is not a 64-bit ELF file" : "");
		return LK_EXIT_FILE;
	}
	if ((k = lk_lines_init(&s.lines, s.in)) < 0 || (n = lk_lines_peek(&s.lines, &first)) < 0) {
		lk_error(k < 0 ? k : n, "import: cannot read '%s'", s.input);
		return LK_EXIT_FILE;
	}
	fmt = arg_input_format;
	if (fmt == LK_IMPORT_AUTO && lk_import_detect(first, (size_t)n, &fmt) < 0) {
		lk_msg("import: %s: neither an mtrace nor a kdump trace (its first lines are "
		       "neither's records; --format says which)",
		       s.input);
		return LK_EXIT_FILE;
	}
	if (arg_convert) {
		if ((k = lk_outfile_open(&s.profile, arg_output, 0600)) < 0) {
			lk_error(k, "import: cannot create '%s'", arg_output);
			return LK_EXIT_FILE;
		}
		lk_import_sink_init(&s.sink, s.profile.f, &s.m.callers, &s.bins, s.input);
		s.m.sink = &s.sink;
	}

	k = read_trace(&s, fmt);
	if (k == 0)
		k = resolve_new(&s);
	if (k == 0)
		k = lk_import_match_finish(&s.m, &s.leaks, &s.nleaks);
	if (k < 0) {
		lk_error(k, "import: %s", s.input);
		return LK_EXIT_FILE;
	}
	if (arg_convert) {
		if ((k = lk_import_sink_end(&s.sink)) < 0 ||
		    (k = lk_outfile_commit(&s.profile)) < 0) {
			lk_error(k, "import: cannot write '%s'", arg_output);
			return LK_EXIT_FILE;
		}
		fprintf(stderr, "%s -> %s\n", s.input, arg_output);
	}

	struct lk_import_result res = {.input = s.input,
	                               .format = fmt,
	                               .m = &s.m,
	                               .leaks = s.leaks,
	                               .nleaks = s.nleaks,
	                               .bins = &s.bins};
	const char *report_to = arg_convert ? NULL : arg_output;
	if ((k = lk_outfile_open(&out, report_to, 0666)) < 0) {
		lk_error(k, "import: cannot create '%s'", report_to);
		return LK_EXIT_FILE;
	}
	if (arg_json)
		lk_import_json(out.f, &res);
	else
		lk_import_text(out.f, &res);
	if (report_to && (k = lk_outfile_commit(&out)) < 0) {
		lk_error(k, "import: cannot write '%s'", report_to);
		return LK_EXIT_FILE;
	}
	return lk_cmd_end_output("import", "report", s.nleaks > 0 ? LEAKS_FOUND : LK_EXIT_OK);
}
