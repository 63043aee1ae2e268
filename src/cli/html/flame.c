/* flame.c: the flame graphs' tree (flame.h): the reports' call tree (tree.h, each stack down to
 * its site), every node's widths, then pruning (flame-prune.c), after which the tree goes and
 * only the pruned nodes stay.
 *
 * The widths come in one walk from the leaves up: a figure's total is the tree's sum; a gross
 * change is |the node's own change| (its change less its children's) plus its children's gross
 * changes. The same walk sums every series into the heap at each bucket, whose highest point the
 * moments' shares are taken over.
 *
 * Never: print, or keep the tree once pruned.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "flame-internal.h"

static void free_work(struct lk_flame *f)
{
	lk_budget_free(f->scratch, f->ids * sizeof(*f->scratch));
	lk_budget_free(f->width, f->ids * f->opts.nwidths * sizeof(*f->width));
	f->scratch = NULL;
	f->width = NULL;
	f->tree = lk_tree_free(f->tree);
}

struct lk_flame *lk_flame_free(struct lk_flame *f)
{
	if (!f)
		return NULL;
	free_work(f);
	lk_budget_free(f->out, f->out_cap * sizeof(*f->out));
	lk_budget_free(f->out_figure, f->out_cap * f->opts.nfigures * sizeof(*f->out_figure));
	lk_budget_free(f->out_width, f->out_cap * f->opts.nwidths * sizeof(*f->out_width));
	lk_budget_free(f->out_series, f->out_series_cap * sizeof(*f->out_series));
	free(f);
	return NULL;
}

/* After n's children (the walk's leave): its widths, and its series into the heap. */
static void widths_of(const struct lk_tree_node *n, unsigned depth, void *ctx)
{
	struct lk_flame *f = ctx;
	double *w = &f->width[(size_t)n->id * f->opts.nwidths];

	(void)depth;
	for (unsigned i = 0; i < f->opts.nwidths; i++) {
		const struct lk_flame_width *x = &f->widths[i];
		double own, children = 0;
		if (x->from < 0) {
			w[i] = n->sum[x->figure].value;
			continue;
		}
		own = n->sum[x->figure].value - n->sum[x->from].value;
		for (const struct lk_tree_node *c = n->child; c; c = c->next) {
			own -= c->sum[x->figure].value - c->sum[x->from].value;
			children += f->width[(size_t)c->id * f->opts.nwidths + i];
		}
		w[i] = fabs(own) + children;
	}
	if (!n->series)
		return;
	f->nseries++;
	for (unsigned b = 0; b < f->opts.buckets; b++)
		f->heap[b] += n->series[b];
}

int lk_flame_build(const struct lk_report *const *r, size_t n, const struct lk_flame_opts *o,
		   struct lk_flame **ret)
{
	struct lk_tree_opts to = { .figures = o->figures, .ctx = o->ctx, .nfigures = o->nfigures,
				   .to_site = true, .series = o->buckets > 0 };
	struct lk_flame *f;
	int k;

	if (o->nwidths < 1 || o->nwidths > LK_FLAME_MAX_WIDTHS || o->buckets > LK_TIMELINE_BUCKETS)
		return -EINVAL;
	for (unsigned i = 0; i < o->nwidths; i++)
		if (o->widths[i].figure >= o->nfigures || o->widths[i].from >= (int)o->nfigures)
			return -EINVAL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->opts = *o;
	memcpy(f->widths, o->widths, o->nwidths * sizeof(*o->widths));
	f->opts.widths = f->widths;
	f->opts.figures = NULL; /* the tree's only */
	f->opts.ctx = NULL;
	k = lk_tree_build(r, n, &to, &f->tree);
	if (k >= 0) {
		f->ids = lk_tree_ids(f->tree);
		f->nodes_before = lk_tree_nodes(f->tree);
		f->stacks = lk_tree_stacks(f->tree);
		f->scratch = lk_budget_malloc(f->ids * sizeof(*f->scratch));
		f->width = f->scratch ? lk_budget_malloc(f->ids * o->nwidths * sizeof(*f->width))
				      : NULL;
		if (!f->width)
			k = -errno;
	}
	if (k >= 0) {
		lk_tree_walk(f->tree, NULL, widths_of, f);
		k = lk_flame_prune(f);
	}
	free_work(f);
	if (k < 0) {
		lk_flame_free(f);
		return k;
	}
	*ret = f;
	return 0;
}

size_t lk_flame_nodes(const struct lk_flame *f, const struct lk_flame_node **ret)
{
	*ret = f->out;
	return f->nout;
}

const struct lk_flame_opts *lk_flame_opts(const struct lk_flame *f)
{
	return &f->opts;
}

size_t lk_flame_nodes_before(const struct lk_flame *f)
{
	return f->nodes_before;
}

size_t lk_flame_stacks(const struct lk_flame *f)
{
	return f->stacks;
}
