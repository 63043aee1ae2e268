/* input.h: what the commands that read and symbolize profiles (`leek report`, `leek export`,
 * `leek diff`) share, so that they take the same options, open the same symbolizer and say the
 * same things about the same files: --focus, --ignore, --merge, --debug-dir, --debuginfod,
 * --max-memory and --base; for the commands that rank allocation sites (report, diff) --alloc-fn,
 * --no-auto-wrappers, --top, --min-share and --stacks; the symbolizer's warnings, printed once
 * each; a file that cannot be read, and one without a trailer.
 *
 * A command puts LK_INPUT_OPTIONS (and LK_INPUT_MERGE_OPTION, LK_INPUT_BASE_OPTION,
 * LK_INPUT_SITE_OPTIONS with LK_INPUT_SITE_SHORT if it takes them) in its getopt_long table and
 * hands every option it does not know itself to lk_input_option(). Everything here prints its
 * own message and returns the exit status (util.h's LK_EXIT_*), as the commands do; nothing
 * exits.
 */
#ifndef LEEK_INPUT_H
#define LEEK_INPUT_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>

#include "site.h"
#include "symbolize.h"

enum {
	LK_INPUT_FOCUS = 0x1000,
	LK_INPUT_IGNORE,
	LK_INPUT_ALLOC_FN,
	LK_INPUT_NO_AUTO_WRAPPERS,
	LK_INPUT_MIN_SHARE,
	LK_INPUT_MERGE,
	LK_INPUT_DEBUG_DIR,
	LK_INPUT_DEBUGINFOD,
	LK_INPUT_MAX_MEMORY,
	LK_INPUT_BASE,
	LK_INPUT_SEGMENT_ONLY,
};

/* The rows of a getopt_long table for the options every such command takes. */
#define LK_INPUT_OPTIONS                                                                           \
	{ "focus", required_argument, NULL, LK_INPUT_FOCUS },                                      \
	{ "ignore", required_argument, NULL, LK_INPUT_IGNORE },                                    \
	{ "debug-dir", required_argument, NULL, LK_INPUT_DEBUG_DIR },                              \
	{ "debuginfod", no_argument, NULL, LK_INPUT_DEBUGINFOD },                                  \
	{ "max-memory", required_argument, NULL, LK_INPUT_MAX_MEMORY },                            \
	{ "segment-only", no_argument, NULL, LK_INPUT_SEGMENT_ONLY }
/* --merge: one output of all the files (report, export; a diff merges each side anyway). */
#define LK_INPUT_MERGE_OPTION { "merge", no_argument, NULL, LK_INPUT_MERGE }
/* --base FILE, repeatable: the files of a diff's base side (export's pprof diff, diff). */
#define LK_INPUT_BASE_OPTION { "base", required_argument, NULL, LK_INPUT_BASE }
/* The options of the commands that pick and rank allocation sites (report, diff), and their
 * short forms (-n N, -s, -v) for getopt_long's short options. */
#define LK_INPUT_SITE_OPTIONS                                                                      \
	{ "alloc-fn", required_argument, NULL, LK_INPUT_ALLOC_FN },                                \
	{ "no-auto-wrappers", no_argument, NULL, LK_INPUT_NO_AUTO_WRAPPERS },                      \
	{ "top", required_argument, NULL, 'n' },                                                   \
	{ "min-share", required_argument, NULL, LK_INPUT_MIN_SHARE },                              \
	{ "stacks", no_argument, NULL, 's' }
#define LK_INPUT_SITE_SHORT "n:sv"

#define LK_INPUT_TOP_DEFAULT 20 /* sites in text: a screen; JSON lists them all (scripts want every
				 * site) */

struct lk_input {
	const char *command;          /* "report", for messages */
	struct lk_site_filter filter; /* --focus, --ignore, --alloc-fn */
	const char **debug_dirs;      /* --debug-dir, in the order given */
	size_t n_debug_dirs;
	const char **bases;           /* --base, in the order given */
	size_t n_bases;
	bool merge, debuginfod;
	bool segment_only;            /* --segment-only: a rotated profile's file alone, not the
				       * chain of segments found beside it (read.h's lk_chain_find) */
	/* LK_INPUT_SITE_OPTIONS */
	size_t top;                   /* --top, if top_set */
	double min_share;             /* --min-share, a fraction (0 to 1), if min_share_set */
	bool top_set, min_share_set, stacks, no_auto_wrappers;
};

/* Handles option c (one of the options above) with its argument: 0, or LK_EXIT_USAGE after
 * printing why (the command's usage for an option it does not know). */
int lk_input_option(struct lk_input *in, int c, const char *arg);

/* --format of the commands that print a report or a diff: text, json or html. */
enum lk_input_format { LK_FORMAT_TEXT, LK_FORMAT_JSON, LK_FORMAT_HTML };
/* arg as a format into *ret: 0, or LK_EXIT_USAGE after printing why. */
int lk_input_format(const char *command, const char *arg, enum lk_input_format *ret);

/* A moment of --from, --to or --at: a time since the start into *ns, or a mark's name (`leek ctl
 * PID mark NAME`, found in each profile later: profile.c) into *mark. 0, or LK_EXIT_USAGE after
 * printing why, naming command and option. */
int lk_input_moment(const char *command, const char *option, const char *arg, uint64_t *ns,
		    const char **mark);
/* Both ends of a window: from (--from) and to (to_option: --to, or inuse's --at), each if not
 * NULL, with lk_input_moment, and two times in order (marks are ordered in each profile:
 * profile.c). 0, or LK_EXIT_USAGE after printing why. */
int lk_input_window(const char *command, const char *from, const char *to_option, const char *to,
		    uint64_t *from_ns, const char **from_mark, uint64_t *to_ns,
		    const char **to_mark);

/* After the options: leaves DEBUGINFOD_URLS unset unless --debuginfod (libdwfl would ask the
 * servers it names: a command must not wait on the network unasked), and opens the symbolizer
 * with the --debug-dir directories. 0, or LK_EXIT_USAGE / LK_EXIT_FILE after printing why. */
int lk_input_symbolizer(struct lk_input *in, struct lk_symbolizer **ret);

/* Prints the symbolizer's warnings that *printed does not count yet, and counts them. */
void lk_input_warnings(const struct lk_symbolizer *sym, size_t *printed);

/* What a command says after loading one file: k < 0: "leek: PATH: offset N: ..." (err, the
 * loader's message, or strerror) and LK_EXIT_FILE; else the warning for a profile without a
 * trailer (trailer false) and 0. */
int lk_input_loaded(const char *path, int k, const char *err, bool trailer);

/* The files of paths[0..*n-1] that name one rotated profile's chain again (another of its
 * segments, or the same file), dropped after the first, in place, unless --segment-only: each
 * file is read with its whole chain, so one of them is enough. Files that are no profile stay. */
void lk_input_chains(const struct lk_input *in, char **paths, size_t *n);
void lk_input_done(struct lk_input *in); /* frees the filter and the lists of files */

#endif /* LEEK_INPUT_H */
