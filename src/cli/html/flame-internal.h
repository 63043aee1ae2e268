/* flame-internal.h: the flame tree's state, shared by flame.c (the tree, its widths) and
 * flame-prune.c (pruning); flame.h is the interface. Never included outside src/cli/html.
 */
#ifndef LEEK_FLAME_INTERNAL_H
#define LEEK_FLAME_INTERNAL_H

#include "flame.h"

#define NONE UINT32_MAX

/* What pruning knows of each node of the tree, by its id (tree.h). */
struct scratch {
	double share;   /* its largest share of a whole (flame.h) */
	uint32_t out;   /* its index among the pruned nodes, or NONE if dropped */
	uint32_t other; /* the index of its "other" node among the pruned, or NONE */
};

struct lk_flame {
	struct lk_flame_opts opts;
	struct lk_flame_width widths[LK_FLAME_MAX_WIDTHS];
	size_t nodes_before, stacks;

	/* While building: the tree, and per node (by id) its scratch and its widths. */
	struct lk_tree *tree;
	struct scratch *scratch;
	double *width;                 /* nwidths a node */
	size_t ids, nseries;           /* nodes made; nodes with a series */
	double heap[LK_TIMELINE_BUCKETS]; /* every series summed */

	/* The pruned nodes: out_cap of them, nout used, with their figures and widths. */
	struct lk_flame_node *out;
	struct lk_estimate *out_figure;
	double *out_width;
	double (*out_series)[LK_TIMELINE_BUCKETS]; /* out_series_cap, nout_series used */
	size_t nout, out_cap, nout_series, out_series_cap;
};

/* flame-prune.c: prunes f->tree into f->out (flame.h). 0, -ENOMEM or -E2BIG. */
int lk_flame_prune(struct lk_flame *f);

#endif /* LEEK_FLAME_INTERNAL_H */
