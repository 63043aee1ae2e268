/* flame.h: the data behind the flame graphs of the HTML pages (the report's, out-html.c; the
 * diff's, src/cli/diff/diff-html.c): the call tree of the reports' stacks (tree.h), each stack
 * from its outermost frame down to its site as the report picks it (no allocator frame, no
 * wrapper the report skips: a leaf is what the report's sites name), pruned to what a page can
 * draw (flame-prune.c).
 *
 * The caller says what each node sums (its figures: a tree's, tree.h) and how the graph may be
 * drawn: its widths, each a figure's total, or the gross change from one figure to another (the
 * diff's): |the change of the stacks that end at a node| summed over the node's subtree, so that
 * a parent is never narrower than its children, whichever way they changed. A node may also carry
 * the live bytes, at each timeline bucket's end, of the stacks that end at it (its "self"
 * series, the report's flame graph of a moment: lk_report_opts.series).
 *
 * Pruning (numbers and reasons in docs/design.md, "The HTML report"): a node is kept if, in any
 * of its widths or at any moment of the timeline, it holds at least min_share of the whole (at a
 * moment: of the heap's highest point); of those, the max_nodes with the largest such share. The
 * children a kept node loses are summed into one "other" node under it, so every total and width
 * stays whole. Memory comes from the budget (budget.h): the tree's (tree.h) and 24 bytes a node
 * and 8 a width while pruning; -E2BIG past the limit.
 *
 * Use:
 *   lk_flame_build(reports, n, &opts, &f);   after lk_report_finish (or the diff's)
 *   lk_flame_nodes(f, &nodes) ...
 *   lk_flame_free(f);                        before the reports' symbolizer
 *
 * Never: read profiles, print, or keep a pointer into the reports (only into the symbolizer).
 */
#ifndef LEEK_FLAME_H
#define LEEK_FLAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "report.h"

#define LK_FLAME_MIN_SHARE 0.001 /* 1 pixel of a 1000-pixel-wide graph */
#define LK_FLAME_MAX_NODES 2000  /* kept frames; with their "other" nodes at most twice that */
#define LK_FLAME_MAX_WIDTHS 4

/* A way to draw the graph: the total of figure `figure`, or (from >= 0) the gross change from
 * figure `from` to figure `figure` (see the top). */
struct lk_flame_width {
	unsigned figure;
	int from;
};

struct lk_flame_opts {
	lk_tree_figures_fn *figures; /* what each node sums (tree.h) */
	void *ctx;
	unsigned nfigures;
	const struct lk_flame_width *widths; /* 1 to LK_FLAME_MAX_WIDTHS */
	unsigned nwidths;
	unsigned buckets; /* points of the series (the report's timeline); 0: no series */
	double min_share; /* 0 to 1 */
	size_t max_nodes; /* at least 1 (the root) */
};

struct lk_flame_node {
	const struct lk_sym_frame *frame; /* NULL for the root and for "other" nodes */
	size_t parent;                    /* index of the parent node; SIZE_MAX for the root */
	size_t dropped;                   /* an "other" node: how many frames it sums */
	bool other;
	const struct lk_estimate *figure; /* nfigures: the node's and everything under it */
	const double *width;              /* nwidths */
	const double *series; /* live bytes of the stacks ending here at each bucket's end
			       * (buckets of them); NULL if all are 0 */
};

struct lk_flame;

/* The pruned flame tree of the stacks of r[0 .. n) (tree.h's lk_tree_build). 0, -EINVAL, -ENOMEM
 * or -E2BIG (the budget). */
int lk_flame_build(const struct lk_report *const *r, size_t n, const struct lk_flame_opts *o,
		   struct lk_flame **ret);
struct lk_flame *lk_flame_free(struct lk_flame *f); /* NULL-safe, returns NULL */
static inline void lk_flame_freep(struct lk_flame **f)
{
	lk_flame_free(*f);
}

/* The pruned nodes, parents before their children (node 0 the root). */
size_t lk_flame_nodes(const struct lk_flame *f, const struct lk_flame_node **ret);
const struct lk_flame_opts *lk_flame_opts(const struct lk_flame *f); /* figures, ctx: unset */
size_t lk_flame_nodes_before(const struct lk_flame *f); /* nodes before pruning, root included */
size_t lk_flame_stacks(const struct lk_flame *f);       /* stacks in the tree */

#endif /* LEEK_FLAME_H */
