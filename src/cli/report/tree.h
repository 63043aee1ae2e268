/* tree.h: a call tree of a report's stacks, for `leek report tree` and any writer that draws
 * one (a flame graph, folded stacks).
 *
 * Top-down, the root's children are the outermost frames (_start, clone3) and each node's
 * children the functions it called; inverted (bottom-up), the root's children are the innermost
 * frames, where the allocations were made, and each node's children its callers. Every frame of
 * a stack is a node, allocator frames and inlined frames too (an inlined frame is a node of its
 * own, marked). A node is one function (funcs.h: the same name, file and module, whatever the
 * line) at one place in the tree: the frames of one function at several lines of its parent are
 * one node, whose line is then unknown.
 *
 * Each node carries two sums of the per-stack estimates of one figure (the live bytes at the end,
 * at the peak, ..., or their objects): total, over every stack through the node, and self, over
 * the stacks that end there (top-down: the frame that called the allocator; inverted: the
 * outermost frame). They are sums of independent estimates, so each has the interval of the sum
 * (docs/sampling.md sections 4 and 5, as lk_estimate_add), and total = self + the children's
 * totals.
 *
 * Using it: lk_tree_build() from a report's stacks (report.h: after every lk_report_add), then
 * lk_tree_prune() to drop what is too small to show, then lk_tree_walk() to visit the nodes in
 * order, children by total, largest first. Memory: one node per distinct path prefix, at most
 * one per frame of the stacks, from the memory budget (budget.h). Never prints.
 */
#ifndef LEEK_TREE_H
#define LEEK_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile.h"
#include "symbolize.h"

struct lk_report;

struct lk_tree_opts {
	int view;      /* enum lk_view: the figure (leaks, peak, inuse, alloc or old) */
	bool objects;  /* objects instead of bytes */
	bool inverted; /* innermost frames at the root, callers below */
};

struct lk_tree_node {
	const struct lk_sym_frame *frame; /* the first frame seen here; NULL for the root */
	uint32_t func;                    /* its function id and LK_FUNC_ALLOC flag (funcs.h) */
	bool lines_differ;                /* frames of several lines of the function are here */
	struct lk_tree_node *parent, *child, *next; /* children in order after lk_tree_build */
	struct lk_estimate total, self;
};

struct lk_tree_pruned {
	size_t nodes;    /* nodes left out, in all */
	double total;    /* the figure of the stacks that end in them (the sum of the totals of
			  * the subtrees left out, which no stack crosses twice) */
};

struct lk_tree;

/* The tree of r's stacks (but those --focus and --ignore leave out, and those without a sample
 * of the figure), so that the root's total is the view's. 0, -ENOMEM, or -E2BIG beyond the
 * memory budget. */
int lk_tree_build(const struct lk_report *r, const struct lk_tree_opts *o, struct lk_tree **ret);
struct lk_tree *lk_tree_free(struct lk_tree *t); /* NULL-safe, returns NULL */

const struct lk_tree_node *lk_tree_root(const struct lk_tree *t);
size_t lk_tree_nodes(const struct lk_tree *t);  /* in the tree now, the root included */
const struct lk_tree_opts *lk_tree_opts(const struct lk_tree *t);

/* Leaves out every node whose total is below min (with its subtree); the root stays. Adds what
 * it left out to *pruned. */
void lk_tree_prune(struct lk_tree *t, double min, struct lk_tree_pruned *pruned);

/* Visits the nodes depth first, the root first (depth 0), children in order: enter before a
 * node's children, leave (may be NULL) after them. No recursion: any depth is safe. */
typedef void lk_tree_visit(const struct lk_tree_node *n, unsigned depth, void *ctx);
void lk_tree_walk(const struct lk_tree *t, lk_tree_visit *enter, lk_tree_visit *leave, void *ctx);

#endif /* LEEK_TREE_H */
