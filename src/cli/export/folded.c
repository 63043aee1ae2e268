/* folded.c: `leek export --format folded`: collapsed stacks, the input of flamegraph.pl,
 * inferno-flamegraph and speedscope.
 *
 * One line per distinct symbolized stack, its frames from the outermost to the leaf joined by
 * ';', a space, and the value --value chose summed over every stack (and process) that
 * symbolizes alike, rounded to an integer:
 *
 *   main;fixture_inl_outer;fixture_inl_helper 12345
 *
 * Frames are named by function, inlined functions as frames of their own. A name is escaped as
 * every exported string is (escape.c), and its ';' too, as \x3b: a name never holds the
 * separator, a newline or a control byte. Lines are sorted by their bytes, as stackcollapse's
 * are; a line whose value rounds to 0 is left out.
 *
 * Never: write a negative value (no --base: the tools that read this format sum, and read a
 * difference from two files), or a name that did not go through escape.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "export-internal.h"
#include "idset.h"

struct folded {
	enum lk_export_value value;
	struct lk_idset lines; /* "root;...;leaf", each once */
	double *sum;           /* per line */
	size_t sum_cap;
	struct lk_strbuf line; /* the stack being added */
};

static void folded_close(void *w)
{
	struct folded *f = w;

	if (!f)
		return;
	lk_idset_done(&f->lines);
	lk_budget_free(f->sum, f->sum_cap * sizeof(*f->sum));
	lk_strbuf_done(&f->line);
	free(f);
}

static int folded_open(const struct lk_export_opts *o, void **ret)
{
	struct folded *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	f->value = o->value;
	lk_idset_init(&f->lines);
	*ret = f;
	return 0;
}

static int folded_process(void *w, const struct lk_export_process *p)
{
	return 0;
}

static int folded_stack(void *w, const struct lk_export_stack *s)
{
	struct folded *f = w;
	uint32_t id;
	bool added;
	int r = 0;

	if (s->value[f->value] == 0)
		return 0;
	f->line.len = 0;
	for (size_t i = s->nframes; i-- > 0 && r >= 0;) {
		const char *name = s->frames[i]->function;
		r = lk_export_escape(&f->line, name, strlen(name), ";");
		if (r >= 0 && i > 0)
			r = lk_strbuf_put(&f->line, ";", 1);
	}
	if (r >= 0)
		r = lk_idset_add(&f->lines, f->line.s ? f->line.s : "", f->line.len, &id, &added);
	if (r >= 0)
		r = lk_budget_grow((void **)&f->sum, &f->sum_cap, f->lines.n, sizeof(*f->sum));
	if (r < 0)
		return r;
	if (added)
		f->sum[id] = 0;
	f->sum[id] += s->value[f->value];
	return 0;
}

static int by_line(const void *a, const void *b, void *ctx)
{
	const struct lk_idset *lines = ctx;

	return strcmp(lk_idset_get(lines, *(const uint32_t *)a, NULL),
		      lk_idset_get(lines, *(const uint32_t *)b, NULL));
}

static int folded_write(void *w, FILE *out)
{
	struct folded *f = w;
	size_t n = f->lines.n;
	uint32_t *order = lk_budget_calloc(n ? n : 1, sizeof(*order));

	if (!order)
		return errno == E2BIG ? -E2BIG : -ENOMEM;
	for (size_t i = 0; i < n; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, n, sizeof(*order), by_line, &f->lines);
	for (size_t i = 0; i < n; i++) {
		int64_t v = lk_export_round(f->sum[order[i]]);
		if (v != 0)
			fprintf(out, "%s %" PRId64 "\n", lk_idset_get(&f->lines, order[i], NULL), v);
	}
	lk_budget_free(order, (n ? n : 1) * sizeof(*order));
	return 0;
}

const struct lk_export_format lk_export_folded = {
	.name = "folded",
	.suffix = ".folded",
	.binary = false,
	.takes_base = false,
	.takes_value = true,
	.no_base = "folded has no negative values: compare two folded files instead",
	.open = folded_open,
	.process = folded_process,
	.stack = folded_stack,
	.write = folded_write,
	.close = folded_close,
};
