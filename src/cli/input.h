/* input.h: what the commands that read and symbolize profiles (`leek report`, `leek export`)
 * share, so that they take the same options, open the same symbolizer and say the same things
 * about the same files: --focus, --ignore, --alloc-fn, --merge, --debug-dir, --debuginfod and
 * --max-memory; the symbolizer's warnings, printed once each; a file that cannot be read, and one
 * without a trailer.
 *
 * A command puts LK_INPUT_OPTIONS in its getopt_long table and hands every option it does not
 * know itself to lk_input_option(). Everything here prints its own message and returns the exit
 * status (util.h's LK_EXIT_*), as the commands do; nothing exits.
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
	LK_INPUT_MERGE,
	LK_INPUT_DEBUG_DIR,
	LK_INPUT_DEBUGINFOD,
	LK_INPUT_MAX_MEMORY,
};

/* The rows of a getopt_long table for the options above, but --alloc-fn, which only a command
 * that picks allocation sites takes ({ "alloc-fn", required_argument, NULL, LK_INPUT_ALLOC_FN }
 * in its own table). */
#define LK_INPUT_OPTIONS                                                                           \
	{ "focus", required_argument, NULL, LK_INPUT_FOCUS },                                      \
	{ "ignore", required_argument, NULL, LK_INPUT_IGNORE },                                    \
	{ "merge", no_argument, NULL, LK_INPUT_MERGE },                                            \
	{ "debug-dir", required_argument, NULL, LK_INPUT_DEBUG_DIR },                              \
	{ "debuginfod", no_argument, NULL, LK_INPUT_DEBUGINFOD },                                  \
	{ "max-memory", required_argument, NULL, LK_INPUT_MAX_MEMORY }

struct lk_input {
	const char *command;          /* "report", for messages */
	struct lk_site_filter filter; /* --focus, --ignore, --alloc-fn */
	const char **debug_dirs;      /* --debug-dir, in the order given */
	size_t n_debug_dirs;
	bool merge, debuginfod;
};

/* Handles option c (one of LK_INPUT_*) with its argument: 0, or LK_EXIT_USAGE after printing
 * why. */
int lk_input_option(struct lk_input *in, int c, const char *arg);

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

void lk_input_done(struct lk_input *in); /* frees the filter and the directories' list */

#endif /* LEEK_INPUT_H */
