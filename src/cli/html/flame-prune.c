/* flame-prune.c: prunes the flame graphs' tree to what a page can draw (flame.h), once flame.c has
 * every node's widths:
 *   1. each node's share: the largest of its widths over the root's, and of its live bytes at
 *      each bucket's end over the heap's highest point (one depth-first walk that sums the
 *      series of the stacks ending under it, one accumulator a depth);
 *   2. the nodes with a share of at least min_share, at most max_nodes of them, the largest
 *      first (ties to the lower id, so a parent, whose share is never below its child's, is
 *      kept before it);
 *   3. the kept nodes in depth-first order, each followed by one "other" node for the children
 *      it lost, whose sums, widths and series are those children's, then by its kept children.
 *
 * Never: print, or recurse (the kept nodes may be a path max_nodes deep).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "flame-internal.h"

struct score {
	struct lk_flame *f;
	double (*acc)[LK_TIMELINE_BUCKETS]; /* per depth: the series of the stacks ending under */
	size_t cap;
	double heap_max;
	int err;
};

static void score_enter(const struct lk_tree_node *n, unsigned depth, void *ctx)
{
	struct score *s = ctx;
	unsigned nb = s->f->opts.buckets;

	if (!nb || s->err)
		return;
	if (depth >= s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		void *a = realloc(s->acc, cap * sizeof(*s->acc));
		if (!a) {
			s->err = -ENOMEM;
			return;
		}
		s->acc = a;
		s->cap = cap;
	}
	if (n->series)
		memcpy(s->acc[depth], n->series, nb * sizeof(double));
	else
		memset(s->acc[depth], 0, nb * sizeof(double));
}

static void score_leave(const struct lk_tree_node *n, unsigned depth, void *ctx)
{
	struct score *s = ctx;
	struct lk_flame *f = s->f;
	const double *w = &f->width[(size_t)n->id * f->opts.nwidths], *root = f->width;
	unsigned nb = s->err ? 0 : f->opts.buckets;
	double share = 0;

	for (unsigned i = 0; i < f->opts.nwidths; i++)
		if (root[i] > 0 && w[i] / root[i] > share)
			share = w[i] / root[i];
	for (unsigned b = 0; b < nb && s->heap_max > 0; b++)
		if (s->acc[depth][b] / s->heap_max > share)
			share = s->acc[depth][b] / s->heap_max;
	f->scratch[n->id] = (struct scratch){ .share = share, .out = NONE, .other = NONE };
	for (unsigned b = 0; b < nb && depth > 0; b++)
		s->acc[depth - 1][b] += s->acc[depth][b];
}

/* A node's share is at most its parent's (a sum over fewer stacks, in another order, may round
 * above it by an ulp), so that the kept nodes make a tree. */
static void clamp_share(const struct lk_tree_node *n, unsigned depth, void *ctx)
{
	struct scratch *x = ctx;

	if (depth && x[n->id].share > x[n->parent->id].share)
		x[n->id].share = x[n->parent->id].share;
}

/* Step 1: every node's share (see the top of the file). */
static int score(struct lk_flame *f)
{
	struct score s = { .f = f };

	for (unsigned b = 0; b < f->opts.buckets; b++)
		s.heap_max = f->heap[b] > s.heap_max ? f->heap[b] : s.heap_max;
	lk_tree_walk(f->tree, score_enter, score_leave, &s);
	free(s.acc);
	if (!s.err)
		lk_tree_walk(f->tree, clamp_share, NULL, f->scratch);
	return s.err;
}

struct candidates {
	const struct lk_flame *f;
	const struct lk_tree_node **v;
	size_t n;
};

static void candidate(const struct lk_tree_node *n, unsigned depth, void *ctx)
{
	struct candidates *c = ctx;

	if (depth == 0 || c->f->scratch[n->id].share >= c->f->opts.min_share)
		c->v[c->n++] = n;
}

static const struct scratch *sort_scratch; /* qsort has no context argument */

static int cmp_share(const void *a, const void *b)
{
	uint32_t i = (*(const struct lk_tree_node *const *)a)->id;
	uint32_t j = (*(const struct lk_tree_node *const *)b)->id;
	double x = sort_scratch[i].share, y = sort_scratch[j].share;

	if (x != y)
		return x > y ? -1 : 1;
	return i < j ? -1 : i > j;
}

/* Step 2: marks the kept nodes (out 0 for now); how many. */
static int64_t select_nodes(struct lk_flame *f)
{
	size_t total = lk_tree_nodes(f->tree), keep;
	struct candidates c = { .f = f, .v = lk_budget_malloc(total * sizeof(*c.v)) };

	if (!c.v)
		return -errno;
	lk_tree_walk(f->tree, candidate, NULL, &c);
	sort_scratch = f->scratch;
	qsort(c.v, c.n, sizeof(*c.v), cmp_share);
	keep = c.n < f->opts.max_nodes ? c.n : f->opts.max_nodes ? f->opts.max_nodes : 1;
	for (size_t i = 0; i < keep; i++)
		f->scratch[c.v[i]->id].out = 0;
	lk_budget_free(c.v, total * sizeof(*c.v));
	return (int64_t)keep;
}

static bool kept(const struct lk_flame *f, const struct lk_tree_node *n)
{
	return f->scratch[n->id].out != NONE;
}

/* A pruned node from its sums and widths; its index. */
static size_t put_node(struct lk_flame *f, const struct lk_flame_node *x,
		       const struct lk_tree_sum *sum, const double *width)
{
	size_t i = f->nout++;
	struct lk_estimate *e = &f->out_figure[i * f->opts.nfigures];
	double *w = &f->out_width[i * f->opts.nwidths];

	f->out[i] = *x;
	f->out[i].figure = e;
	f->out[i].width = w;
	for (unsigned k = 0; k < f->opts.nfigures; k++)
		lk_tree_finish(&sum[k], &e[k]);
	memcpy(w, width, f->opts.nwidths * sizeof(*w));
	return i;
}

/* Kept node n under pruned node parent, then the "other" node of the children it loses. */
static void emit(struct lk_flame *f, const struct lk_tree_node *n, size_t parent)
{
	struct lk_tree_sum other[LK_TREE_MAX_FIGURES] = { 0 };
	double ow[LK_FLAME_MAX_WIDTHS] = { 0 };
	size_t dropped = 0, me;

	me = put_node(f, &(struct lk_flame_node){ .frame = n->frame, .parent = parent }, n->sum,
		      &f->width[(size_t)n->id * f->opts.nwidths]);
	f->scratch[n->id].out = (uint32_t)me;
	for (const struct lk_tree_node *c = n->child; c; c = c->next) {
		if (kept(f, c))
			continue;
		for (unsigned k = 0; k < f->opts.nfigures; k++)
			lk_tree_add(&other[k], &c->sum[k]);
		for (unsigned i = 0; i < f->opts.nwidths; i++)
			ow[i] += f->width[(size_t)c->id * f->opts.nwidths + i];
		dropped++;
	}
	if (dropped)
		f->scratch[n->id].other = (uint32_t)put_node(
			f, &(struct lk_flame_node){ .parent = me, .other = true, .dropped = dropped },
			other, ow);
}

/* The first kept node of the list that starts at n, or NULL. */
static const struct lk_tree_node *next_kept(const struct lk_flame *f, const struct lk_tree_node *n)
{
	while (n && !kept(f, n))
		n = n->next;
	return n;
}

/* Step 3: the kept nodes depth first, without recursion (the walk of tree.c, over kept ones). */
static void emit_all(struct lk_flame *f)
{
	const struct lk_tree_node *root = lk_tree_root(f->tree), *n = root, *c;

	emit(f, root, SIZE_MAX);
	for (;;) {
		if ((c = next_kept(f, n->child))) {
			emit(f, c, f->scratch[n->id].out);
			n = c;
			continue;
		}
		while (n != root && !(c = next_kept(f, n->next)))
			n = n->parent;
		if (n == root)
			return;
		emit(f, c, f->scratch[n->parent->id].out);
		n = c;
	}
}

/* The series of pruned node o, made (zeros) if it has none yet. */
static double *out_series(struct lk_flame *f, size_t o)
{
	if (!f->out[o].series) {
		f->out[o].series = f->out_series[f->nout_series];
		memset(f->out_series[f->nout_series++], 0, sizeof(*f->out_series));
	}
	return (double *)f->out[o].series;
}

/* Each node's series goes to it if it is kept, else to the "other" node under its nearest kept
 * ancestor. */
static void place_series(const struct lk_tree_node *n, unsigned depth, void *ctx)
{
	struct lk_flame *f = ctx;
	const struct lk_tree_node *at = n, *from = NULL;
	double *s;

	(void)depth;
	if (!n->series)
		return;
	while (!kept(f, at)) {
		from = at;
		at = at->parent;
	}
	s = out_series(f, from ? f->scratch[at->id].other : f->scratch[at->id].out);
	for (unsigned b = 0; b < f->opts.buckets; b++)
		s[b] += n->series[b];
}

int lk_flame_prune(struct lk_flame *f)
{
	int64_t keep;
	int k = score(f);

	if (k < 0)
		return k;
	keep = select_nodes(f);
	if (keep < 0)
		return (int)keep;
	/* kept nodes and at most one "other" each */
	f->out_cap = 2 * (size_t)keep;
	f->out = lk_budget_calloc(f->out_cap, sizeof(*f->out));
	f->out_figure = f->out ? lk_budget_calloc(f->out_cap * f->opts.nfigures,
						  sizeof(*f->out_figure))
			       : NULL;
	f->out_width = f->out_figure ? lk_budget_calloc(f->out_cap * f->opts.nwidths,
							sizeof(*f->out_width))
				     : NULL;
	if (!f->out_width) {
		k = -errno;
		lk_budget_free(f->out, f->out_cap * sizeof(*f->out));
		lk_budget_free(f->out_figure,
			       f->out_cap * f->opts.nfigures * sizeof(*f->out_figure));
		f->out = NULL;
		f->out_figure = NULL;
		f->out_cap = 0;
		return k;
	}
	emit_all(f);
	if (!f->opts.buckets)
		return 0;
	f->out_series_cap = f->nseries < f->nout ? f->nseries : f->nout;
	f->out_series = lk_budget_malloc(f->out_series_cap * sizeof(*f->out_series));
	if (!f->out_series && f->out_series_cap)
		return -errno;
	lk_tree_walk(f->tree, place_series, NULL, f);
	return 0;
}
