/* flame-prune.c: prunes the HTML report's flame graph tree to what a page can draw (flame.h),
 * in lk_flame_finish().
 *
 * Pruning, in lk_flame_finish(), once every node's sums include its children's:
 *   1. each node's share: the largest of its live, peak and allocated bytes over the root's,
 *      and of its live bytes at each bucket's end over the heap's highest point (one depth-first
 *      walk that sums the series of the stacks ending under it, one accumulator a depth);
 *   2. the nodes with a share of at least min_share, at most max_nodes of them, the largest
 *      first (ties to the lower index, so a parent, whose share is never below its child's, is
 *      kept before it);
 *   3. the kept nodes in depth-first order, each followed by its kept children and then one
 *      "other" node for the children it lost, whose sums and series are those children's.
 *
 * Never: print, or keep the tree before pruning once done (lk_flame_free_tree).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "flame-internal.h"

/* Step 1: every node's share (see the top of the file). nb buckets; heap_max the highest sum of
 * all series at one bucket (0: no series). */
static int score(struct lk_flame *f, unsigned nb, double heap_max)
{
	const struct tnode *root = &f->nodes[0];
	double (*acc)[LK_TIMELINE_BUCKETS] = NULL;
	uint32_t *path = NULL, at = 0;
	size_t depth = 0, cap = 0;
	int k = 0;

	for (;;) {
		struct tnode *x = &f->nodes[at];
		if (depth == cap) { /* entering at: a new accumulator */
			size_t c = cap ? 2 * cap : 64;
			void *a = realloc(acc, c * sizeof(*acc)), *p;
			if (a)
				acc = a;
			p = a ? realloc(path, c * sizeof(*path)) : NULL;
			if (!p) {
				k = -ENOMEM;
				break;
			}
			path = p;
			cap = c;
		}
		path[depth] = at;
		memset(acc[depth], 0, sizeof(*acc));
		if (x->series != NONE)
			memcpy(acc[depth], f->series[x->series], sizeof(*acc));
		if (x->first_child != NONE) {
			at = x->first_child;
			depth++;
			continue;
		}
		for (;;) { /* leaving path[depth]: its share, then on to its next sibling */
			struct tnode *y = &f->nodes[path[depth]];
			double s = 0;
			for (unsigned m = LK_FLAME_LIVE; m <= LK_FLAME_ALLOC; m++)
				if (root->v[m].value > 0 && y->v[m].value / root->v[m].value > s)
					s = y->v[m].value / root->v[m].value;
			for (unsigned b = 0; b < nb && heap_max > 0; b++)
				if (acc[depth][b] / heap_max > s)
					s = acc[depth][b] / heap_max;
			y->share = s;
			if (depth == 0)
				goto done;
			for (unsigned b = 0; b < nb; b++)
				acc[depth - 1][b] += acc[depth][b];
			if (y->next_sibling != NONE) {
				at = y->next_sibling;
				break;
			}
			depth--;
		}
	}
done:
	free(acc);
	free(path);
	return k;
}

static const struct tnode *sort_nodes; /* qsort has no context argument */

static int cmp_share(const void *a, const void *b)
{
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
	double x = sort_nodes[i].share, y = sort_nodes[j].share;

	if (x != y)
		return x > y ? -1 : 1;
	return i < j ? -1 : i > j;
}

/* Step 2: marks the kept nodes (out != NONE, for now 0); how many. */
static int64_t select_nodes(struct lk_flame *f, const struct lk_flame_opts *o)
{
	size_t nc = 0, keep;
	uint32_t *c = lk_budget_malloc(f->n * sizeof(*c));

	if (!c)
		return -errno;
	for (size_t i = 0; i < f->n; i++)
		if (i == 0 || f->nodes[i].share >= o->min_share)
			c[nc++] = (uint32_t)i;
	sort_nodes = f->nodes;
	qsort(c, nc, sizeof(*c), cmp_share);
	keep = nc < o->max_nodes ? nc : o->max_nodes ? o->max_nodes : 1;
	for (size_t i = 0; i < keep; i++)
		f->nodes[c[i]].out = 0;
	lk_budget_free(c, f->n * sizeof(*c));
	return (int64_t)keep;
}

static void finish_sums(struct lk_estimate *e, const struct lk_flame_sum *s)
{
	for (unsigned m = 0; m < _LK_FLAME_METRIC_MAX; m++) {
		e[m] = (struct lk_estimate){
			.value = s[m].value,
			.var = s[m].var,
			.observed = s[m].observed,
			.samples = s[m].samples,
		};
		lk_estimate_finish(&e[m]);
	}
}

/* Step 3: the pruned nodes in depth-first order, an "other" node after each kept node's kept
 * children. The children lists hold the newest first; the page orders them itself. */
static void emit(struct lk_flame *f, uint32_t i, size_t parent)
{
	struct tnode *x = &f->nodes[i];
	struct lk_flame_sum other[_LK_FLAME_METRIC_MAX] = { 0 };
	size_t dropped = 0, me = f->nout++;

	x->out = (uint32_t)me;
	f->out[me] = (struct lk_flame_node){ .frame = x->frame, .parent = parent };
	finish_sums(f->out[me].value, x->v);
	for (uint32_t c = x->first_child; c != NONE; c = f->nodes[c].next_sibling) {
		if (f->nodes[c].out != NONE) {
			emit(f, c, me);
			continue;
		}
		lk_flame_add_sums(other, f->nodes[c].v);
		dropped++;
	}
	if (!dropped)
		return;
	x->other = (uint32_t)f->nout;
	f->out[f->nout] = (struct lk_flame_node){ .parent = me, .other = true, .dropped = dropped };
	finish_sums(f->out[f->nout++].value, other);
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

/* Each stack's series goes to the node it ends at if that is kept, else to the "other" node
 * under its nearest kept ancestor. */
static int place_series(struct lk_flame *f, unsigned nb)
{
	size_t need = f->nseries < f->nout ? f->nseries : f->nout;

	f->out_series = lk_budget_malloc(need * sizeof(*f->out_series));
	if (!f->out_series && need)
		return -errno;
	f->out_series_cap = need;
	for (size_t i = 0; i < f->n; i++) {
		const struct tnode *x = &f->nodes[i];
		uint32_t at = (uint32_t)i, from = NONE;
		double *s;
		if (x->series == NONE)
			continue;
		while (f->nodes[at].out == NONE) {
			from = at;
			at = f->nodes[at].parent;
		}
		s = out_series(f, from == NONE ? f->nodes[at].out : f->nodes[at].other);
		for (unsigned b = 0; b < nb; b++)
			s[b] += f->series[x->series][b];
	}
	return 0;
}

int lk_flame_finish(struct lk_flame *f, const struct lk_flame_opts *o, unsigned nbuckets)
{
	double heap_max = 0;
	int64_t kept;
	int k;

	if (f->finished)
		return -EINVAL;
	f->finished = true;
	f->nodes_before = f->n;
	f->buckets = f->several_profiles ? 0
		     : nbuckets < LK_TIMELINE_BUCKETS ? nbuckets : LK_TIMELINE_BUCKETS;
	for (size_t i = f->n; i-- > 1;) /* children after parents: sums from the leaves up */
		lk_flame_add_sums(f->nodes[f->nodes[i].parent].v, f->nodes[i].v);
	{
		double heap[LK_TIMELINE_BUCKETS] = { 0 };
		for (size_t i = 0; i < f->nseries; i++) /* row by row: 512 bytes each */
			for (unsigned b = 0; b < f->buckets; b++)
				heap[b] += f->series[i][b];
		for (unsigned b = 0; b < f->buckets; b++)
			heap_max = heap[b] > heap_max ? heap[b] : heap_max;
	}
	k = score(f, f->buckets, heap_max);
	if (k < 0)
		return k;
	kept = select_nodes(f, o);
	if (kept < 0)
		return (int)kept;
	/* kept nodes and at most one "other" each */
	f->out = lk_budget_calloc(2 * (size_t)kept, sizeof(*f->out));
	if (!f->out)
		return -errno;
	f->out_cap = 2 * (size_t)kept;
	emit(f, 0, SIZE_MAX);
	if (f->buckets && (k = place_series(f, f->buckets)) < 0)
		return k;
	lk_flame_free_tree(f);
	return 0;
}

