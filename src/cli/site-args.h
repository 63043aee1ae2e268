/* site-args.h: the options of the commands that rank allocation sites, `leek report` and `leek
 * diff`, read alike: --top, --min-share, --focus, --ignore, --alloc-fn, --stacks, --format,
 * --debug-dir, --debuginfod and --max-memory; and what both do with them before and while they
 * read profiles (the symbolizer, its warnings, a profile without a trailer).
 *
 * A command puts LK_SITE_OPTIONS in its getopt_long table and SITE_SHORT_OPTIONS in its short
 * options, and hands every option it does not know itself to lk_site_args_option(). Messages name
 * the command; nothing here exits.
 */
#ifndef LEEK_SITE_ARGS_H
#define LEEK_SITE_ARGS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>

#include "site.h"
#include "symbolize.h"

enum {
	LK_OPT_MIN_SHARE = 0x200,
	LK_OPT_FOCUS,
	LK_OPT_IGNORE,
	LK_OPT_ALLOC_FN,
	LK_OPT_DEBUG_DIR,
	LK_OPT_DEBUGINFOD,
	LK_OPT_MAX_MEMORY,
};

#define LK_SITE_OPTIONS                                                                            \
	{ "top", required_argument, NULL, 'n' },                                                   \
	{ "min-share", required_argument, NULL, LK_OPT_MIN_SHARE },                                \
	{ "focus", required_argument, NULL, LK_OPT_FOCUS },                                        \
	{ "ignore", required_argument, NULL, LK_OPT_IGNORE },                                      \
	{ "alloc-fn", required_argument, NULL, LK_OPT_ALLOC_FN },                                  \
	{ "stacks", no_argument, NULL, 's' },                                                      \
	{ "format", required_argument, NULL, 'f' },                                                \
	{ "debug-dir", required_argument, NULL, LK_OPT_DEBUG_DIR },                                \
	{ "debuginfod", no_argument, NULL, LK_OPT_DEBUGINFOD },                                    \
	{ "max-memory", required_argument, NULL, LK_OPT_MAX_MEMORY }
#define SITE_SHORT_OPTIONS "n:svf:"

#define LK_SITE_TOP_DEFAULT 20 /* a screen of sites in text; JSON lists them all */

struct lk_site_args {
	size_t top;             /* --top, or LK_SITE_TOP_DEFAULT */
	bool top_set;
	double min_share;       /* a fraction, 0 to 1 */
	bool stacks, json, debuginfod;
	struct lk_site_filter filter;
	char **debug_dirs;      /* --debug-dir, in order: pointers into argv */
	size_t n_debug_dirs;
};

/* 0 if option c (with arg) is one of LK_SITE_OPTIONS and was taken, LK_SITE_ARGS_UNKNOWN if it
 * is not one of them, or LK_EXIT_USAGE after printing why. */
#define LK_SITE_ARGS_UNKNOWN (-1)
int lk_site_args_option(struct lk_site_args *a, const char *command, int c, const char *arg);
/* The sites kept: --top, or all by default in JSON (scripts want every site). */
size_t lk_site_args_top(const struct lk_site_args *a);
void lk_site_args_done(struct lk_site_args *a);
static inline void lk_site_args_donep(struct lk_site_args **a)
{
	lk_site_args_done(*a);
}

/* The symbolizer the options ask for: DEBUGINFOD_URLS unset for this process unless
 * --debuginfod (a report must not wait on the network unasked), each --debug-dir added. 0, or
 * an exit status after printing why. */
int lk_site_args_symbolizer(const struct lk_site_args *a, const char *command,
			    struct lk_symbolizer **ret);
/* Prints the symbolizer's warnings not printed yet. */
void lk_site_args_warnings(const struct lk_symbolizer *sym, size_t *printed);
/* The warning for a profile that ends without a trailer. */
void lk_site_args_no_trailer(const char *path);

#endif /* LEEK_SITE_ARGS_H */
