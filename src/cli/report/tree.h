/* tree.h: the call tree of reports' stacks: `leek report tree`, and the flame graphs of the HTML
 * pages (src/cli/html/flame.h), the report's and the diff's. The one call-tree builder of leek.
 *
 * Top-down, the root's children are the outermost frames (_start, clone3) and each node's
 * children the functions it called; inverted (bottom-up), the root's children are the innermost
 * frames, where the allocations were made, and each node's children its callers. Every frame of
 * a stack is a node, allocator frames and inlined frames too (an inlined frame is a node of its
 * own, marked), unless to_site: then a stack stops at its site as the report picks it
 * (lk_report_stack_site: no allocator frame, no wrapper the report skips), so that a leaf is what
 * the report's sites name. A node is one function (funcs.h: the same name, file and module,
 * whatever the line) at one place in the tree: the frames of one function at several lines of
 * its parent are one node, whose line is then unknown.
 *
 * Each node carries sums of per-stack estimates of the figures the caller asks for (the live
 * bytes at the end, at the peak, ..., or their objects; or, for a diff, each side's): through
 * lk_tree_figures_fn, which gives a stack's estimate of each figure, or none. Total sums over
 * every stack through the node, self (opts.self) over the stacks that end there (top-down: the
 * frame that called the allocator, or the site; inverted: the outermost frame). They are sums of
 * independent estimates, so each has the interval of the sum (docs/sampling.md sections 4 and 5,
 * as lk_estimate_add), and total = self + the children's totals. With opts.series, a node also
 * has the live bytes, at each timeline bucket's end, of the stacks that end there (their
 * lk_report_stack.series): the flame graph of a moment.
 *
 * Several reports make one tree (a diff's two sides): their functions under one numbering, and
 * each stack's figures from the callback, told which report the stack is of.
 *
 * Using it: lk_tree_build() from finished reports (report.h), then lk_tree_prune() to drop what
 * is too small to show, or lk_tree_walk() to visit the nodes in order, children by the total of
 * figure 0, largest first. Memory: one node per distinct path prefix, at most one per frame of
 * the stacks, from the memory budget (budget.h). Never prints.
 */
#ifndef LEEK_TREE_H
#define LEEK_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile.h"
#include "symbolize.h"

struct lk_report;
struct lk_report_stack;

#define LK_TREE_MAX_FIGURES 8

/* The estimates the tree sums for stack st of report number `report` (of lk_tree_build's): e[i]
 * for figure i, or NULL where the stack has none (e[] comes NULL-filled). A stack without a
 * sample or a value in any figure is left out, as are those --focus and --ignore leave out. */
typedef void lk_tree_figures_fn(void *ctx, size_t report, const struct lk_report_stack *st,
				const struct lk_estimate **e);

struct lk_tree_opts {
	lk_tree_figures_fn *figures;
	void *ctx;
	unsigned nfigures; /* 1 to LK_TREE_MAX_FIGURES; the children are ordered by figure 0 */
	bool self;         /* self sums besides totals */
	bool inverted;     /* innermost frames at the root, callers below */
	bool to_site;      /* each stack stops at its site: no allocator frame, no wrapper */
	bool series;       /* each node's self series (the stacks' series: lk_report_opts.series) */
};

/* A sum of independent estimates, raw: value, variance, observed and samples added, the steps
 * as lk_estimate_add takes them; lk_tree_finish() makes it an estimate with its interval. */
struct lk_tree_sum {
	double value, var, observed, step, heavy_step, heavy_miss;
	uint64_t samples;
};

struct lk_tree_node {
	const struct lk_sym_frame *frame; /* the first frame seen here; NULL for the root */
	uint32_t func;                    /* its function id and LK_FUNC_ALLOC flag (funcs.h; of
					   * the tree's own numbering if several reports) */
	uint32_t id;                      /* 0 for the root, then in the order made, so a parent's
					   * is below its children's; below lk_tree_ids() */
	bool lines_differ;                /* frames of several lines of the function are here */
	bool series_owned;                /* series is the tree's (a sum), not a stack's */
	struct lk_tree_node *parent, *child, *next; /* children in order after lk_tree_build */
	const double *series;             /* opts.series: the stacks that end here, summed
					   * (LK_TIMELINE_BUCKETS points); NULL if none does */
	struct lk_tree_sum sum[];         /* nfigures totals, then (opts.self) nfigures selfs */
};

struct lk_tree_pruned {
	size_t nodes;    /* nodes left out, in all */
	double total;    /* figure 0 of the stacks that end in them (the sum of the totals of the
			  * subtrees left out, which no stack crosses twice) */
};

struct lk_tree;

/* The tree of the stacks of r[0 .. n) (finished reports, or with their wrappers shared), so that
 * the root's totals are the figures' sums over every stack shown. 0, -EINVAL (bad options),
 * -ENOMEM, or -E2BIG beyond the memory budget. */
int lk_tree_build(const struct lk_report *const *r, size_t n, const struct lk_tree_opts *o,
		  struct lk_tree **ret);
struct lk_tree *lk_tree_free(struct lk_tree *t); /* NULL-safe, returns NULL */

const struct lk_tree_node *lk_tree_root(const struct lk_tree *t);
size_t lk_tree_nodes(const struct lk_tree *t); /* in the tree now, the root included */
size_t lk_tree_ids(const struct lk_tree *t);   /* nodes made: every id is below it */
size_t lk_tree_stacks(const struct lk_tree *t); /* stacks in the tree */
const struct lk_tree_opts *lk_tree_opts(const struct lk_tree *t);

/* Figure i of node n, finished: its total, and (opts.self) its self. */
void lk_tree_total(const struct lk_tree *t, const struct lk_tree_node *n, unsigned i,
		   struct lk_estimate *ret);
void lk_tree_self(const struct lk_tree *t, const struct lk_tree_node *n, unsigned i,
		  struct lk_estimate *ret);

/* s += x, raw (finished once, at the end: the interval of a sum, never a sum of intervals). */
void lk_tree_add(struct lk_tree_sum *s, const struct lk_tree_sum *x);
void lk_tree_finish(const struct lk_tree_sum *s, struct lk_estimate *ret);

/* Leaves out every node whose total of figure 0 is below min (with its subtree); the root
 * stays. Adds what it left out to *pruned. */
void lk_tree_prune(struct lk_tree *t, double min, struct lk_tree_pruned *pruned);

/* Visits the nodes depth first, the root first (depth 0), children in order: enter before a
 * node's children, leave after them (either may be NULL). No recursion: any depth is safe. */
typedef void lk_tree_visit(const struct lk_tree_node *n, unsigned depth, void *ctx);
void lk_tree_walk(const struct lk_tree *t, lk_tree_visit *enter, lk_tree_visit *leave, void *ctx);

#endif /* LEEK_TREE_H */
