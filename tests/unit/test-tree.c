/* test-tree.c: the call tree of a report (src/cli/report/tree.c) without a program: profiles
 * built record by record (profile-sim.h) whose frames no module covers, so the symbolizer names
 * each address "0x...". tests/report/test-tree.c runs it on real programs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "harness.h"
#include "profile-sim.h"
#include "report.h"
#include "tree.h"

#define PC(k) (0x400000 + 0x10 * (uint64_t)(k))

static struct lk_report *tree_report(const struct lk_profile *p, struct lk_symbolizer *sym,
				     const struct lk_report_opts *o, int want, char **err)
{
	struct lk_report *r = NULL;

	ASSERT_OK(lk_report_new(o, &r));
	ASSERT_OK(lk_report_add(r, sym, 0, "x.lk", p, err));
	ASSERT_EQ(lk_report_finish(r, err), want);
	return r;
}

struct visit {
	char order[4096];
	size_t len;
	unsigned max_depth, open;
};

static void enter(const struct lk_tree_node *n, unsigned depth, void *ctx)
{
	struct visit *v = ctx;

	if (v->len < sizeof(v->order) - 64) /* the order of the first nodes only */
		v->len += (size_t)snprintf(v->order + v->len, 64, "%s%u:%s", v->len ? " " : "",
					   depth, n->frame ? n->frame->function : "root");
	if (depth > v->max_depth)
		v->max_depth = depth;
	v->open++;
}

static void leave(const struct lk_tree_node *n, unsigned depth, void *ctx)
{
	struct visit *v = ctx;

	(void)n;
	(void)depth;
	v->open--;
}

/* Three stacks under one caller: the walk goes depth first, children by total, and leaves
 * each node it entered; top-down and inverted. */
TEST(walk_order)
{
	struct lk_symbolizer *sym = NULL;
	struct lk_profile *p = NULL;
	struct lk_report *r;
	struct visit v = {};
	char *err = NULL;
	struct sim s;
	const uint64_t a[] = { PC(1), PC(9) }, b[] = { PC(2), PC(9) }, c[] = { PC(3), PC(2), PC(9) };
	uint64_t ids[3];

	sim_start(&s, 1, LK_HDR_EXACT);
	ids[0] = sim_stack(&s, a, 2);
	ids[1] = sim_stack(&s, b, 2);
	ids[2] = sim_stack(&s, c, 3);
	sim_alloc(&s, 1, 0x10000, 100, ids[0]);
	sim_alloc(&s, 2, 0x20000, 300, ids[1]);
	sim_alloc(&s, 3, 0x30000, 50, ids[2]);
	ASSERT_OK(sim_load(&s, NULL, &p, &err));
	ASSERT_OK(lk_symbolizer_new(&sym));

	r = tree_report(p, sym, &(struct lk_report_opts){ .tree = true }, 0, NULL);
	ASSERT_EQ(r->nsites, 0);
	ASSERT_EQ(lk_tree_nodes(r->tree), 5);
	lk_tree_walk(r->tree, enter, leave, &v);
	ASSERT_STREQ(v.order, "0:root 1:0x400090 2:0x400020 3:0x400030 2:0x400010");
	ASSERT_EQ(v.open, 0);
	ASSERT_EQ(lk_tree_root(r->tree)->sum[0].value, 450);
	ASSERT_EQ(lk_tree_root(r->tree)->child->child->sum[0].value, 350); /* 0x400020 */
	ASSERT_EQ(lk_tree_root(r->tree)->child->child->sum[1].value, 300);
	lk_report_free(r);

	memset(&v, 0, sizeof(v));
	r = tree_report(p, sym, &(struct lk_report_opts){ .tree = true, .inverted = true }, 0, NULL);
	lk_tree_walk(r->tree, enter, leave, &v);
	ASSERT_STREQ(v.order, "0:root 1:0x400020 2:0x400090 1:0x400010 2:0x400090 "
			      "1:0x400030 2:0x400020 3:0x400090");
	lk_report_free(r);

	/* Pruned under 60 B: 0x400030 goes from both, with what it holds. */
	memset(&v, 0, sizeof(v));
	r = tree_report(p, sym,
			&(struct lk_report_opts){ .tree = true, .min_share = 60.0 / 450 }, 0, NULL);
	ASSERT_EQ(r->tree_pruned.nodes, 1);
	ASSERT_EQ(r->tree_pruned.total, 50);
	ASSERT_EQ(lk_tree_nodes(r->tree), 4);
	lk_tree_walk(r->tree, enter, NULL, &v);
	ASSERT_STREQ(v.order, "0:root 1:0x400090 2:0x400020 2:0x400010");
	lk_report_free(r);
	lk_symbolizer_free(sym);
	lk_profile_free(p);
	free(s.b.p);
}

/* A tree's nodes come from the memory budget: 2000 stacks of 64 distinct frames make 128000
 * nodes; under a limit the report says it needs more, and everything goes back when it is
 * freed. A path of 64 frames is walked without recursion. */
TEST(tree_takes_from_the_budget)
{
	struct lk_symbolizer *sym = NULL;
	struct lk_profile *p = NULL;
	struct lk_report *r;
	struct visit v = {};
	uint64_t loaded, frames[64];
	char *err = NULL;
	struct sim s;

	sim_start(&s, 1, LK_HDR_EXACT);
	for (uint64_t i = 0; i < 2000; i++) {
		for (uint64_t f = 0; f < 64; f++)
			frames[f] = PC(64 * i + f);
		sim_alloc(&s, i + 1, 0x100000 + 0x100 * i, 10, sim_stack(&s, frames, 64));
	}
	ASSERT_OK(sim_load(&s, NULL, &p, &err));
	ASSERT_OK(lk_symbolizer_new(&sym));
	loaded = lk_budget_used();

	r = tree_report(p, sym, &(struct lk_report_opts){ .tree = true }, 0, NULL);
	ASSERT_EQ(lk_tree_nodes(r->tree), 1 + 2000 * 64);
	lk_tree_walk(r->tree, enter, leave, &v);
	ASSERT_EQ(v.max_depth, 64);
	ASSERT_EQ(v.open, 0);
	lk_report_free(r);
	ASSERT_EQ(lk_budget_used(), loaded);

	/* The stacks fit, the tree does not. */
	r = NULL;
	ASSERT_OK(lk_report_new(&(struct lk_report_opts){ .tree = true }, &r));
	ASSERT_OK(lk_report_add(r, sym, 0, "x.lk", p, &err));
	lk_budget_set_limit(lk_budget_used() + 4 * 1024 * 1024);
	ASSERT_EQ(lk_report_finish(r, &err), -E2BIG);
	ASSERT_CONTAINS(err, "of memory to report (--max-memory; 2000 stacks and 0 sites so far)");
	ASSERT_TRUE(r->tree == NULL);
	lk_report_free(r);
	ASSERT_EQ(lk_budget_used(), loaded);
	lk_budget_set_limit(0);
	free(err);
	lk_symbolizer_free(sym);
	lk_profile_free(p);
	free(s.b.p);
}
