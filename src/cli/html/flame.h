/* flame.h: the data behind the HTML report's flame graphs: every stack a report keeps, merged
 * into a tree of frames from the outermost (the root's children: main, thread starts) to the
 * stack's allocation site (its leaves), then pruned to what a page can draw (flame.c).
 *
 * The one interface the HTML writer takes profiles' stacks through; `leek report tree`'s call
 * tree can stand in for it later. Use:
 *
 *   lk_flame_new(&f);
 *   ro.on_stack = lk_flame_hook(f);           every stack lk_report_add() keeps comes here
 *   ... lk_report_add_file(), lk_report_finish() ...
 *   lk_flame_finish(f, &opts, nbuckets);      prune; then lk_flame_nodes()
 *   lk_flame_free(f);                         before the report and its symbolizer
 *
 * A node is a function (and its module) under its caller's node: two lines of one function under
 * the same caller are one node. Frames below the site (the allocator's) are left out, so a leaf
 * is what the report's sites name. Each node carries the sums of its stacks' estimates (bytes
 * live at the report's moment, at the peak, allocated; objects live and allocated) and, for the
 * moments of the timeline, the live bytes of the stacks that end at it (its "self" series).
 *
 * Pruning (numbers and reasons in docs/design.md, "The HTML report"): a node is kept if, in
 * any of live, peak or allocated bytes or at any moment of the timeline, it holds at least
 * min_share of the whole (at a moment: of the heap's highest point); of those, the max_nodes
 * with the largest such share. The children a kept node loses are summed into one "other" node
 * under it, so every total stays whole. Memory comes from the budget (budget.h): the tree before
 * pruning costs about 210 bytes a node, and -E2BIG past the limit.
 *
 * Never: read profiles, print, or keep a pointer to a stack's stats after the hook returns.
 */
#ifndef LEEK_FLAME_H
#define LEEK_FLAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "report.h"

#define LK_FLAME_MIN_SHARE 0.001 /* 1 pixel of a 1000-pixel-wide graph */
#define LK_FLAME_MAX_NODES 2000  /* kept frames; with their "other" nodes at most twice that */

enum lk_flame_metric {
	LK_FLAME_LIVE,          /* bytes live at the report's moment (the end, or inuse --at) */
	LK_FLAME_PEAK,          /* bytes live at the heap's peak */
	LK_FLAME_ALLOC,         /* bytes allocated */
	LK_FLAME_LIVE_OBJECTS,
	LK_FLAME_ALLOC_OBJECTS,
	_LK_FLAME_METRIC_MAX,
};

struct lk_flame_opts {
	double min_share; /* 0 to 1 */
	size_t max_nodes; /* at least 1 (the root) */
};

struct lk_flame_node {
	const struct lk_sym_frame *frame; /* NULL for the root and for "other" nodes */
	size_t parent;                    /* index of the parent node; SIZE_MAX for the root */
	size_t dropped;                   /* an "other" node: how many frames it sums */
	bool other;
	struct lk_estimate value[_LK_FLAME_METRIC_MAX]; /* the node's and everything under it */
	const double *series; /* live bytes of the stacks ending here at each bucket's end
			       * (lk_flame_buckets() of them); NULL if all are 0 */
};

struct lk_flame;

int lk_flame_new(struct lk_flame **ret);
struct lk_flame *lk_flame_free(struct lk_flame *f); /* NULL-safe, returns NULL */
static inline void lk_flame_freep(struct lk_flame **f)
{
	lk_flame_free(*f);
}

/* The report's hook that feeds f (report.h); valid as long as f. */
const struct lk_report_stack_hook *lk_flame_hook(struct lk_flame *f);

/* Prunes the tree. nbuckets: how many points the series have (the report's timeline); the
 * series are left out (lk_flame_buckets() 0) when the stacks came from several profiles, whose
 * buckets do not line up. 0, -ENOMEM or -E2BIG (the budget). Call once. */
int lk_flame_finish(struct lk_flame *f, const struct lk_flame_opts *o, unsigned nbuckets);

/* After lk_flame_finish(): the pruned nodes, parents before their children (node 0 the root). */
size_t lk_flame_nodes(const struct lk_flame *f, const struct lk_flame_node **ret);
unsigned lk_flame_buckets(const struct lk_flame *f);
size_t lk_flame_nodes_before(const struct lk_flame *f); /* nodes before pruning, root included */
size_t lk_flame_stacks(const struct lk_flame *f);       /* stacks added */

#endif /* LEEK_FLAME_H */
