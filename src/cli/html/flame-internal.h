/* flame-internal.h: the flame tree's state, shared by flame.c (building) and flame-prune.c
 * (pruning); flame.h is the interface. Never included outside src/cli/html.
 */
#ifndef LEEK_FLAME_INTERNAL_H
#define LEEK_FLAME_INTERNAL_H

#include "flame.h"

#define NONE UINT32_MAX
#define MAX_TREE_NODES (UINT32_MAX - 1)

struct lk_flame_sum { /* what lk_estimate_finish() needs of an estimate */
	double value, var, observed;
	uint64_t samples;
};

struct tnode {
	const struct lk_sym_frame *frame; /* NULL: the root */
	uint32_t parent, first_child, next_sibling;
	uint32_t series; /* index of its self series in f->series, or NONE */
	uint32_t out;    /* its index among the pruned nodes, or NONE if dropped */
	uint32_t other;  /* the index of its "other" node among the pruned, or NONE */
	double share;
	struct lk_flame_sum v[_LK_FLAME_METRIC_MAX];
};

struct lk_flame {
	struct lk_report_stack_hook hook;
	struct tnode *nodes;
	size_t n, cap;
	uint32_t *slots; /* node index + 1; 0 = empty */
	size_t nslots;
	double (*series)[LK_TIMELINE_BUCKETS];
	size_t nseries, series_cap;
	size_t stacks;
	uint32_t profile;
	bool several_profiles, finished;

	struct lk_flame_node *out; /* after lk_flame_finish(): out_cap of them, nout used */
	double (*out_series)[LK_TIMELINE_BUCKETS]; /* out_series_cap, nout_series used */
	size_t nout, out_cap, nout_series, out_series_cap, nodes_before;
	unsigned buckets;
};

/* sums += t, metric by metric */
void lk_flame_add_sums(struct lk_flame_sum *s, const struct lk_flame_sum *t);
/* Frees the tree before pruning (nodes, table, series); the pruned nodes stay. */
void lk_flame_free_tree(struct lk_flame *f);

#endif /* LEEK_FLAME_INTERNAL_H */
