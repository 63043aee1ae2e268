/* input.c: the options, the symbolizer and the messages of the commands that read and symbolize
 * profiles (see input.h): `leek report`, `leek export` and `leek diff` say the same things the
 * same way.
 *
 * Never: exit, or print a symbolizer warning twice.
 */
#include <errno.h>
#include <stdlib.h>

#include "commands.h"
#include "input.h"
#include "read.h"
#include "report.h"
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

static int add_pattern(struct lk_input *in, enum lk_site_pattern which, const char *option,
		       const char *pattern)
{
	char err[256] = "";
	int r = lk_site_filter_add(&in->filter, which, pattern, err, sizeof(err));

	if (r == -EINVAL)
		lk_msg("%s: --%s '%s': %s", in->command, option, pattern, err);
	else if (r < 0)
		lk_error(r, "%s: --%s", in->command, option);
	return r < 0 ? LK_EXIT_USAGE : 0;
}

/* A repeatable option's argument, at the end of its list (pointers into argv). */
static int add_arg(struct lk_input *in, const char *option, const char ***list, size_t *n,
		   const char *arg)
{
	const char **grown = reallocarray(*list, *n + 1, sizeof(*grown));

	if (!grown) {
		lk_error(-ENOMEM, "%s: --%s", in->command, option);
		return LK_EXIT_USAGE;
	}
	*list = grown;
	(*list)[(*n)++] = arg;
	return 0;
}

int lk_input_option(struct lk_input *in, int c, const char *arg)
{
	uint64_t v;

	switch (c) {
	case LK_INPUT_FOCUS:
		return add_pattern(in, LK_SITE_FOCUS, "focus", arg);
	case LK_INPUT_IGNORE:
		return add_pattern(in, LK_SITE_IGNORE, "ignore", arg);
	case LK_INPUT_ALLOC_FN:
		return add_pattern(in, LK_SITE_ALLOC_FN, "alloc-fn", arg);
	case LK_INPUT_NO_AUTO_WRAPPERS:
		in->no_auto_wrappers = true;
		return 0;
	case 'n':
		if (lk_parse_u64(arg, &v) < 0) {
			lk_msg("%s: --top: '%s' is not a number", in->command, arg);
			return LK_EXIT_USAGE;
		}
		in->top = (size_t)v;
		in->top_set = true;
		return 0;
	case LK_INPUT_MIN_SHARE:
		if (parse_share(arg, &in->min_share) < 0) {
			lk_msg("%s: --min-share: '%s' is not a percentage", in->command, arg);
			return LK_EXIT_USAGE;
		}
		in->min_share_set = true;
		return 0;
	case 's':
	case 'v':
		in->stacks = true;
		return 0;
	case LK_INPUT_MERGE:
		in->merge = true;
		return 0;
	case LK_INPUT_DEBUG_DIR:
		return add_arg(in, "debug-dir", &in->debug_dirs, &in->n_debug_dirs, arg);
	case LK_INPUT_BASE:
		return add_arg(in, "base", &in->bases, &in->n_bases, arg);
	case LK_INPUT_DEBUGINFOD:
		in->debuginfod = true;
		return 0;
	case LK_INPUT_MAX_MEMORY:
		return lk_cmd_max_memory(in->command, arg);
	case LK_INPUT_SEGMENT_ONLY:
		in->segment_only = true;
		return 0;
	}
	return lk_cmd_usage(stderr, in->command, LK_EXIT_USAGE);
}

int lk_input_moment(const char *command, const char *option, const char *arg, uint64_t *ns,
		    const char **mark)
{
	if (lk_parse_duration(arg, ns) == 0)
		return 0;
	if (lk_mark_name_ok(arg)) {
		*mark = arg;
		return 0;
	}
	lk_msg("%s: %s: '%s' is neither a time since the start (e.g. 1.5, 250ms, 2m) nor a mark's "
	       "name", command, option, arg);
	return LK_EXIT_USAGE;
}

int lk_input_window(const char *command, const char *from, const char *to_option, const char *to,
		    uint64_t *from_ns, const char **from_mark, uint64_t *to_ns,
		    const char **to_mark)
{
	if ((from && lk_input_moment(command, "--from", from, from_ns, from_mark)) ||
	    (to && lk_input_moment(command, to_option, to, to_ns, to_mark)))
		return LK_EXIT_USAGE;
	if (!*from_mark && !*to_mark && *from_ns > *to_ns) {
		lk_msg("%s: --from %s is after %s %s", command, from, to_option, to);
		return LK_EXIT_USAGE;
	}
	return 0;
}

int lk_input_format(const char *command, const char *arg, enum lk_input_format *ret)
{
	static const char *const names[] = { [LK_FORMAT_TEXT] = "text", [LK_FORMAT_JSON] = "json",
					     [LK_FORMAT_HTML] = "html" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(arg, names[i]) == 0) {
			*ret = (enum lk_input_format)i;
			return 0;
		}
	lk_msg("%s: --format: '%s' is not text, json or html", command, arg);
	return LK_EXIT_USAGE;
}

int lk_input_symbolizer(struct lk_input *in, struct lk_symbolizer **ret)
{
	struct lk_symbolizer *sym;
	int k;

	/* libdwfl asks debuginfod servers when DEBUGINFOD_URLS is set (Debian sets it for login
	 * shells): a command must not wait on the network unless asked to. */
	if (!in->debuginfod)
		unsetenv("DEBUGINFOD_URLS");
	k = lk_symbolizer_new(&sym);
	if (k < 0) {
		lk_error(k, "%s: cannot start the symbolizer", in->command);
		return LK_EXIT_FILE;
	}
	for (size_t i = 0; i < in->n_debug_dirs; i++) {
		k = lk_symbolizer_add_debug_dir(sym, in->debug_dirs[i]);
		if (k < 0) {
			lk_error(k, "%s: --debug-dir '%s'", in->command, in->debug_dirs[i]);
			lk_symbolizer_free(sym);
			return LK_EXIT_USAGE;
		}
	}
	*ret = sym;
	return 0;
}

void lk_input_warnings(const struct lk_symbolizer *sym, size_t *printed)
{
	const char *const *w;
	size_t n = lk_symbolizer_warnings(sym, &w);

	for (; *printed < n; (*printed)++)
		lk_msg("warning: %s", w[*printed]);
}

int lk_input_loaded(const char *path, int k, const char *err, bool trailer)
{
	if (k < 0) {
		lk_error_of(path, k, err);
		return LK_EXIT_FILE;
	}
	if (!trailer)
		lk_msg("%s: warning: no trailer: read up to its last complete record (the "
		       "process crashed, was killed or exec'd)", path);
	return 0;
}

/* The first file of path's chain, malloc'ed; NULL if it is in none. */
static char *chain_head(const char *path)
{
	struct lk_chain_files f;
	char *head = NULL;

	if (lk_chain_find(path, &f, NULL) < 0 || f.n == 0)
		return NULL; /* an error is said when the file is read */
	head = strdup(f.paths[0]);
	lk_chain_files_done(&f);
	return head;
}

void lk_input_chains(const struct lk_input *in, char **paths, size_t *n)
{
	char **heads;
	size_t kept = 0;

	if (in->segment_only || *n < 2 || !(heads = calloc(*n, sizeof(*heads))))
		return;
	for (size_t i = 0; i < *n; i++) {
		bool again = false;
		heads[kept] = chain_head(paths[i]);
		for (size_t j = 0; j < kept && heads[kept]; j++)
			again |= heads[j] && !strcmp(heads[j], heads[kept]);
		if (again) {
			free(heads[kept]);
			continue;
		}
		paths[kept++] = paths[i];
	}
	for (size_t i = 0; i < kept; i++)
		free(heads[i]);
	free(heads);
	*n = kept;
}

void lk_input_done(struct lk_input *in)
{
	lk_site_filter_done(&in->filter);
	free(in->debug_dirs);
	in->debug_dirs = NULL;
	in->n_debug_dirs = 0;
}
