/* site-args.c: the options `leek report` and `leek diff` share, and what both do with them
 * (site-args.h).
 *
 * Never: exit, or print a message twice (the symbolizer's warnings accumulate; each is printed
 * once, by index).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "site-args.h"
#include "util.h"

/* "5", "5%", "0.5": a percentage, as a fraction. */
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

static int add_pattern(struct lk_site_args *a, const char *command, enum lk_site_pattern which,
		       const char *option, const char *pattern)
{
	char err[256] = "";
	int r = lk_site_filter_add(&a->filter, which, pattern, err, sizeof(err));

	if (r == -EINVAL)
		lk_msg("%s: %s '%s': %s", command, option, pattern, err);
	else if (r < 0)
		lk_error(r, "%s: %s", command, option);
	return r < 0 ? LK_EXIT_USAGE : 0;
}

int lk_site_args_option(struct lk_site_args *a, const char *command, int c, const char *arg)
{
	uint64_t v;
	char **dirs;

	switch (c) {
	case 'n':
		if (lk_parse_u64(arg, &v) < 0) {
			lk_msg("%s: --top: '%s' is not a number", command, arg);
			return LK_EXIT_USAGE;
		}
		a->top = (size_t)v;
		a->top_set = true;
		return 0;
	case LK_OPT_MIN_SHARE:
		if (parse_share(arg, &a->min_share) < 0) {
			lk_msg("%s: --min-share: '%s' is not a percentage", command, arg);
			return LK_EXIT_USAGE;
		}
		return 0;
	case LK_OPT_FOCUS:
		return add_pattern(a, command, LK_SITE_FOCUS, "--focus", arg);
	case LK_OPT_IGNORE:
		return add_pattern(a, command, LK_SITE_IGNORE, "--ignore", arg);
	case LK_OPT_ALLOC_FN:
		return add_pattern(a, command, LK_SITE_ALLOC_FN, "--alloc-fn", arg);
	case 's':
	case 'v':
		a->stacks = true;
		return 0;
	case 'f':
		if (strcmp(arg, "json") != 0 && strcmp(arg, "text") != 0) {
			lk_msg("%s: --format: '%s' is neither text nor json", command, arg);
			return LK_EXIT_USAGE;
		}
		a->json = strcmp(arg, "json") == 0;
		return 0;
	case LK_OPT_DEBUG_DIR:
		dirs = reallocarray(a->debug_dirs, a->n_debug_dirs + 1, sizeof(*dirs));
		if (!dirs) {
			lk_error(-ENOMEM, "%s: --debug-dir", command);
			return LK_EXIT_USAGE;
		}
		a->debug_dirs = dirs;
		a->debug_dirs[a->n_debug_dirs++] = (char *)arg;
		return 0;
	case LK_OPT_DEBUGINFOD:
		a->debuginfod = true;
		return 0;
	case LK_OPT_MAX_MEMORY:
		return lk_cmd_max_memory(command, arg);
	default:
		return LK_SITE_ARGS_UNKNOWN;
	}
}

size_t lk_site_args_top(const struct lk_site_args *a)
{
	if (a->top_set)
		return a->top;
	return a->json ? 0 : LK_SITE_TOP_DEFAULT;
}

void lk_site_args_done(struct lk_site_args *a)
{
	lk_site_filter_done(&a->filter);
	free(a->debug_dirs);
	a->debug_dirs = NULL;
	a->n_debug_dirs = 0;
}

int lk_site_args_symbolizer(const struct lk_site_args *a, const char *command,
			    struct lk_symbolizer **ret)
{
	struct lk_symbolizer *sym;
	int k;

	/* libdwfl asks debuginfod servers when DEBUGINFOD_URLS is set (Debian sets it for login
	 * shells): a report must not wait on the network unless asked to. */
	if (!a->debuginfod)
		unsetenv("DEBUGINFOD_URLS");
	k = lk_symbolizer_new(&sym);
	if (k < 0) {
		lk_error(k, "%s: cannot start the symbolizer", command);
		return LK_EXIT_FILE;
	}
	for (size_t i = 0; i < a->n_debug_dirs; i++) {
		k = lk_symbolizer_add_debug_dir(sym, a->debug_dirs[i]);
		if (k < 0) {
			lk_error(k, "%s: --debug-dir '%s'", command, a->debug_dirs[i]);
			lk_symbolizer_free(sym);
			return LK_EXIT_USAGE;
		}
	}
	*ret = sym;
	return 0;
}

void lk_site_args_warnings(const struct lk_symbolizer *sym, size_t *printed)
{
	const char *const *w;
	size_t n = lk_symbolizer_warnings(sym, &w);

	for (; *printed < n; (*printed)++)
		lk_msg("warning: %s", w[*printed]);
}

void lk_site_args_no_trailer(const char *path)
{
	lk_msg("%s: warning: no trailer: reported up to its last complete record (the process "
	       "crashed, was killed or exec'd)", path);
}
