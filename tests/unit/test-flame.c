/* test-flame.c: the HTML pages' flame tree (src/cli/html/flame.h) on reports made here, stack by
 * stack (struct lk_report holds them as report.c keeps them): how stacks merge by function under
 * their callers, where a path stops (the site, past the allocator and the wrappers the report
 * skips), the pruning rule (a share of a width, the node cap, "other" nodes that keep every total
 * whole), where the series of pruned stacks go, and a diff's tree of two reports with its gross
 * changes.
 */
#include <stdlib.h>
#include <string.h>

#include "flame.h"
#include "harness.h"

#define MAX_STACKS 1024
#define MAX_FRAMES 8

/* A report as lk_report_finish leaves it, as far as the flame tree reads one: its stacks, their
 * function ids and the wrappers it skips. */
struct fake {
	struct lk_report r;
	struct lk_report_stack st[MAX_STACKS];
	const struct lk_sym_frame *frames[MAX_STACKS][MAX_FRAMES];
	uint32_t funcs[MAX_STACKS][MAX_FRAMES];
	double series[MAX_STACKS][LK_TIMELINE_BUCKETS];
};

static struct fake *fake_new(void)
{
	struct fake *x = calloc(1, sizeof(*x));

	ASSERT_TRUE(x != NULL);
	lk_funcs_init(&x->r.funcs, NULL);
	x->r.stacks = x->st;
	x->r.nprocs = 1;
	return x;
}

static void fake_free(struct fake *x)
{
	lk_funcs_done(&x->r.funcs);
	free(x->r.wrappers.skip);
	free(x);
}

/* The report skips function `function` as a wrapper (wrappers.h), as if its rule had found it. */
static void fake_skip(struct fake *x, const struct lk_sym_frame *frame)
{
	uint32_t id;

	ASSERT_OK(lk_funcs_get(&x->r.funcs, frame, &id));
	x->r.wrappers.nfuncs = LK_FUNCS_MAX;
	if (!x->r.wrappers.skip)
		x->r.wrappers.skip = calloc(LK_FUNCS_MAX / 8, 1);
	x->r.wrappers.skip[LK_FUNC_ID(id) / 8] |= 1 << (LK_FUNC_ID(id) % 8);
}

static struct lk_sym_frame F(const char *function)
{
	return (struct lk_sym_frame){ .function = function, .module = "/bin/prog" };
}

/* Adds one stack (innermost first) with the given live and allocated bytes, and its live bytes
 * at buckets from `from` on (series); its allocator frames are the built-in list's. */
static struct lk_report_stack *add(struct fake *x, const struct lk_sym_frame *const *frames,
				   size_t n, double live, double alloc, unsigned from)
{
	size_t i = x->r.nstacks++;
	struct lk_report_stack *st = &x->st[i];

	ASSERT_TRUE(i < MAX_STACKS && n <= MAX_FRAMES);
	*st = (struct lk_report_stack){ .frames = x->frames[i], .funcs = x->funcs[i],
					.n = (uint32_t)n, .series = x->series[i] };
	for (size_t j = 0; j < n; j++) {
		x->frames[i][j] = frames[j];
		ASSERT_OK(lk_funcs_get(&x->r.funcs, frames[j], &x->funcs[i][j]));
	}
	while (st->alloc_at < n && (x->funcs[i][st->alloc_at] & LK_FUNC_ALLOC)) /* as report.c */
		st->alloc_at++;
	if (st->alloc_at == n)
		st->alloc_at = 0;
	st->live_bytes = (struct lk_estimate){ .value = live, .observed = live, .samples = 1 };
	st->alloc_bytes = (struct lk_estimate){ .value = alloc, .observed = alloc, .samples = 1 };
	st->alloc_objects = (struct lk_estimate){ .value = 1, .samples = 1 };
	for (unsigned b = from; b < LK_TIMELINE_BUCKETS; b++)
		x->series[i][b] = live;
	return st;
}

/* The tree's figures here: live bytes, allocated bytes and objects; drawn by live or allocated
 * bytes. */
enum { LIVE, ALLOC, ALLOC_OBJECTS, NFIGURES };

static void figures(void *ctx, size_t report, const struct lk_report_stack *st,
		    const struct lk_estimate **e)
{
	(void)ctx;
	(void)report;
	e[LIVE] = &st->live_bytes;
	e[ALLOC] = &st->alloc_bytes;
	e[ALLOC_OBJECTS] = &st->alloc_objects;
}

static const struct lk_flame_width widths[] = { { LIVE, -1 }, { ALLOC, -1 } };

static struct lk_flame_opts opts(double min_share, size_t max_nodes, unsigned buckets)
{
	return (struct lk_flame_opts){ .figures = figures, .nfigures = NFIGURES, .widths = widths,
				       .nwidths = 2, .buckets = buckets, .min_share = min_share,
				       .max_nodes = max_nodes };
}

static struct lk_flame *build(const struct fake *x, const struct lk_flame_opts *o)
{
	struct lk_flame *f = NULL;

	ASSERT_OK(lk_flame_build((const struct lk_report *const[]){ &x->r }, 1, o, &f));
	return f;
}

/* The pruned node named function (the first); fails if none. */
static size_t node_named(const struct lk_flame_node *nodes, size_t n, const char *function)
{
	for (size_t i = 0; i < n; i++)
		if (nodes[i].frame && strcmp(nodes[i].frame->function, function) == 0)
			return i;
	FAIL("no node %s", function);
}

/* The only "other" node; fails if none or several. */
static size_t other_node(const struct lk_flame_node *nodes, size_t n)
{
	size_t o = SIZE_MAX;

	for (size_t i = 0; i < n; i++) {
		if (!nodes[i].other)
			continue;
		ASSERT_TRUE(o == SIZE_MAX);
		o = i;
	}
	ASSERT_TRUE(o != SIZE_MAX);
	return o;
}

static bool has_node(const struct lk_flame_node *nodes, size_t n, const char *function)
{
	for (size_t i = 0; i < n; i++)
		if (nodes[i].frame && strcmp(nodes[i].frame->function, function) == 0)
			return true;
	return false;
}

static double live(const struct lk_flame_node *x)
{
	return x->figure[LIVE].value;
}

/* Parents come before their children; every node's value and widths are at least its
 * children's sums. */
static void check_tree(const struct lk_flame_node *nodes, size_t n, unsigned nwidths)
{
	ASSERT_TRUE(n >= 1 && nodes[0].parent == SIZE_MAX);
	for (size_t i = 1; i < n; i++)
		ASSERT_TRUE(nodes[i].parent < i);
	for (size_t i = 0; i < n; i++) {
		double sum = 0, w[LK_FLAME_MAX_WIDTHS] = { 0 };
		for (size_t j = i + 1; j < n; j++) {
			if (nodes[j].parent != i)
				continue;
			sum += live(&nodes[j]);
			for (unsigned k = 0; k < nwidths; k++)
				w[k] += nodes[j].width[k];
		}
		ASSERT_TRUE(sum <= live(&nodes[i]) + 1e-6);
		for (unsigned k = 0; k < nwidths; k++)
			ASSERT_TRUE(w[k] <= nodes[i].width[k] + 1e-6);
	}
}

/* Two stacks through main -> a merge there; the allocator frame under the site is left out; two
 * lines of one function (two frame objects) are one node. */
TEST(stacks_merge_by_function_down_to_the_site)
{
	struct lk_sym_frame malloc_ = F("malloc"), x = F("x"), y = F("y"), a = F("a"),
			    a2 = F("a"), main_ = F("main");
	struct lk_flame_opts o = opts(LK_FLAME_MIN_SHARE, LK_FLAME_MAX_NODES, LK_TIMELINE_BUCKETS);
	struct fake *r = fake_new();
	const struct lk_flame_node *nodes;
	struct lk_flame *f;
	size_t n;

	a2.line = 7;
	add(r, (const struct lk_sym_frame *[]){ &malloc_, &x, &a, &main_ }, 4, 100, 300, 0);
	add(r, (const struct lk_sym_frame *[]){ &y, &a2, &main_ }, 3, 50, 50, 0);
	f = build(r, &o);
	n = lk_flame_nodes(f, &nodes);
	ASSERT_EQ(n, 5); /* root, main, a, x, y: no malloc */
	ASSERT_EQ(lk_flame_nodes_before(f), 5);
	ASSERT_EQ(lk_flame_stacks(f), 2);
	check_tree(nodes, n, 2);
	ASSERT_EQ(live(&nodes[0]), 150);
	ASSERT_EQ(live(&nodes[node_named(nodes, n, "a")]), 150);
	ASSERT_EQ(nodes[node_named(nodes, n, "a")].figure[ALLOC].value, 350);
	ASSERT_EQ(nodes[node_named(nodes, n, "a")].width[1], 350);
	ASSERT_EQ(live(&nodes[node_named(nodes, n, "x")]), 100);
	ASSERT_EQ(nodes[node_named(nodes, n, "x")].parent, node_named(nodes, n, "a"));
	ASSERT_EQ(nodes[node_named(nodes, n, "a")].figure[ALLOC_OBJECTS].value, 2);
	ASSERT_TRUE(!has_node(nodes, n, "malloc"));
	lk_flame_free(f);
	fake_free(r);
}

/* A wrapper the report skips (its rule found it: wrappers.h) is no frame of the graph, as it is
 * no site: each stack stops at the wrapper's caller, which is then a leaf. Without the skip, the
 * wrapper is the leaf under each caller. */
TEST(a_wrapper_the_report_skips_is_no_leaf)
{
	struct lk_sym_frame malloc_ = F("malloc"), wrap = F("wrap"), main_ = F("main"), c[3];
	struct lk_flame_opts o = opts(LK_FLAME_MIN_SHARE, LK_FLAME_MAX_NODES, 0);
	const struct lk_flame_node *nodes;
	static const char *const names[3] = { "caller0", "caller1", "caller2" };

	for (unsigned skip = 0; skip < 2; skip++) {
		struct fake *r = fake_new();
		struct lk_flame *f;
		size_t n;

		for (unsigned k = 0; k < 3; k++) {
			c[k] = F(names[k]);
			add(r, (const struct lk_sym_frame *[]){ &malloc_, &wrap, &c[k], &main_ }, 4,
			    100 * (k + 1), 100 * (k + 1), 0);
		}
		if (skip)
			fake_skip(r, &wrap);
		f = build(r, &o);
		n = lk_flame_nodes(f, &nodes);
		check_tree(nodes, n, 2);
		ASSERT_EQ(has_node(nodes, n, "wrap"), !skip);
		ASSERT_EQ(n, skip ? 5 : 8); /* root, main, 3 callers (and 3 wraps) */
		for (unsigned k = 0; k < 3; k++) {
			size_t at = node_named(nodes, n, names[k]);
			bool leaf = true;
			for (size_t i = 0; i < n; i++)
				leaf &= nodes[i].parent != at;
			ASSERT_EQ(leaf, (bool)skip);
			ASSERT_EQ(live(&nodes[at]), 100 * (k + 1));
		}
		lk_flame_free(f);
		fake_free(r);
	}
}

/* One big site and 999 tiny ones under main: the tiny ones (0.0001% each) become one "other"
 * node that holds their sum, so main's total is whole; raising min_share to 0 keeps them all. */
TEST(small_frames_become_one_other_node)
{
	static struct lk_sym_frame tiny[999];
	static char names[999][16];
	struct lk_sym_frame big = F("big"), main_ = F("main");
	const struct lk_flame_node *nodes;
	size_t n, o;

	for (unsigned pass = 0; pass < 2; pass++) {
		struct lk_flame_opts fo = pass ? opts(0, 100000, LK_TIMELINE_BUCKETS)
					       : opts(LK_FLAME_MIN_SHARE, LK_FLAME_MAX_NODES,
						      LK_TIMELINE_BUCKETS);
		struct fake *r = fake_new();
		struct lk_flame *f;

		add(r, (const struct lk_sym_frame *[]){ &big, &main_ }, 2, 1e9, 1e9, 0);
		for (unsigned i = 0; i < 999; i++) {
			snprintf(names[i], sizeof(names[i]), "tiny%u", i);
			tiny[i] = F(names[i]);
			add(r, (const struct lk_sym_frame *[]){ &tiny[i], &main_ }, 2, 1000, 1000, 0);
		}
		f = build(r, &fo);
		n = lk_flame_nodes(f, &nodes);
		check_tree(nodes, n, 2);
		if (pass) {
			ASSERT_EQ(n, 1002); /* root, main, big, 999 tiny */
			lk_flame_free(f);
			fake_free(r);
			break;
		}
		ASSERT_EQ(n, 4); /* root, main, big, other */
		o = other_node(nodes, n);
		ASSERT_EQ(nodes[o].dropped, 999);
		ASSERT_EQ(nodes[o].parent, node_named(nodes, n, "main"));
		ASSERT_EQ(live(&nodes[o]), 999000);
		ASSERT_EQ(nodes[o].figure[LIVE].samples, 999);
		ASSERT_EQ(nodes[o].width[1], 999000);
		ASSERT_EQ(live(&nodes[node_named(nodes, n, "main")]), 1e9 + 999000);
		/* The other node's series: the tiny stacks' (1000 each from bucket 0). */
		ASSERT_TRUE(nodes[o].series != NULL);
		ASSERT_EQ(nodes[o].series[5], 999000);
		lk_flame_free(f);
		fake_free(r);
	}
}

/* max_nodes keeps the largest: 50 sites of decreasing size under main, 10 kept (root, main and
 * the 8 largest), the rest in "other". */
TEST(the_node_cap_keeps_the_largest)
{
	static struct lk_sym_frame s[50];
	static char names[50][16];
	struct lk_sym_frame main_ = F("main");
	struct lk_flame_opts o = opts(0.001, 10, LK_TIMELINE_BUCKETS);
	struct fake *r = fake_new();
	const struct lk_flame_node *nodes;
	struct lk_flame *f;
	size_t n;

	for (unsigned i = 0; i < 50; i++) {
		snprintf(names[i], sizeof(names[i]), "s%02u", i);
		s[i] = F(names[i]);
		add(r, (const struct lk_sym_frame *[]){ &s[i], &main_ }, 2, 1000 - i, 1000, 0);
	}
	f = build(r, &o);
	n = lk_flame_nodes(f, &nodes);
	check_tree(nodes, n, 2);
	ASSERT_EQ(n, 11);
	for (unsigned i = 0; i < 8; i++)
		node_named(nodes, n, names[i]);
	for (size_t i = 0; i < n; i++)
		ASSERT_TRUE(!nodes[i].frame || strcmp(nodes[i].frame->function, "s08") < 0 ||
			    strcmp(nodes[i].frame->function, "main") == 0);
	lk_flame_free(f);
	fake_free(r);
}

/* A site that matters only in the middle of the run: freed before the end, and 0.01% of all
 * bytes allocated (a churning site allocates the rest), but a third of the heap from bucket 10 to
 * 19. The series rule keeps it; without series (buckets 0: merged processes), it goes to
 * "other", and no node has a series. */
TEST(a_site_large_at_one_moment_is_kept)
{
	struct lk_sym_frame churn = F("churn"), mid = F("mid"), keep = F("keep"), main_ = F("main");
	const struct lk_flame_node *nodes;

	for (unsigned with_series = 0; with_series < 2; with_series++) {
		struct lk_flame_opts o = opts(LK_FLAME_MIN_SHARE, LK_FLAME_MAX_NODES,
					      with_series ? LK_TIMELINE_BUCKETS : 0);
		struct fake *r = fake_new();
		struct lk_report_stack *st;
		struct lk_flame *f;
		size_t n;

		add(r, (const struct lk_sym_frame *[]){ &churn, &main_ }, 2, 0, 1e10, 0);
		add(r, (const struct lk_sym_frame *[]){ &keep, &main_ }, 2, 2e6, 2e6, 0);
		st = add(r, (const struct lk_sym_frame *[]){ &mid, &main_ }, 2, 0, 1e6, 0);
		for (unsigned b = 10; b < 20; b++)
			st->series[b] = 1e6;
		f = build(r, &o);
		n = lk_flame_nodes(f, &nodes);
		check_tree(nodes, n, 2);
		ASSERT_EQ(has_node(nodes, n, "mid"), (bool)with_series);
		if (with_series) {
			size_t m = node_named(nodes, n, "mid");
			ASSERT_EQ(nodes[m].series[15], 1e6);
			ASSERT_EQ(nodes[m].series[25], 0);
		}
		for (size_t i = 0; i < n && !with_series; i++)
			ASSERT_TRUE(nodes[i].series == NULL);
		lk_flame_free(f);
		fake_free(r);
	}
}

/* A diff's tree: two reports (each with its own function ids) under one numbering, each stack's
 * figure that of its side; the gross change of a node sums |change| over its subtree:
 *   base: main -> a 100, main -> b 50        new: main -> a 40, main -> b 90, main -> c 30
 *   a -60, b +40, c +30: main's change +10, its gross change 130.
 * With three nodes kept (root, main, a), b and c become one "other" node whose gross change is
 * theirs summed (70), not |their net change| (70 too here: both grew), and whose figures are
 * their sums. */
enum { BASE, NEW };

static void sides(void *ctx, size_t report, const struct lk_report_stack *st,
		  const struct lk_estimate **e)
{
	(void)ctx;
	e[report == 0 ? BASE : NEW] = &st->live_bytes;
}

TEST(a_diff_tree_and_its_gross_change)
{
	struct lk_sym_frame a = F("a"), b = F("b"), c = F("c"), main_ = F("main");
	struct lk_sym_frame a2 = F("a"), b2 = F("b"), main2 = F("main");
	static const struct lk_flame_width gross[] = { { NEW, BASE }, { BASE, -1 }, { NEW, -1 } };
	struct fake *rb = fake_new(), *rn = fake_new();
	const struct lk_flame_node *nodes;
	struct lk_flame *f;
	size_t n, o;

	add(rb, (const struct lk_sym_frame *[]){ &a, &main_ }, 2, 100, 0, 0);
	add(rb, (const struct lk_sym_frame *[]){ &b, &main_ }, 2, 50, 0, 0);
	add(rn, (const struct lk_sym_frame *[]){ &b2, &main2 }, 2, 90, 0, 0); /* other ids */
	add(rn, (const struct lk_sym_frame *[]){ &a2, &main2 }, 2, 40, 0, 0);
	add(rn, (const struct lk_sym_frame *[]){ &c, &main2 }, 2, 30, 0, 0);
	for (unsigned pass = 0; pass < 2; pass++) {
		struct lk_flame_opts fo = { .figures = sides, .nfigures = 2, .widths = gross,
					    .nwidths = 3, .min_share = 0,
					    .max_nodes = pass ? 3 : 100 };
		ASSERT_OK(lk_flame_build((const struct lk_report *const[]){ &rb->r, &rn->r }, 2, &fo,
					 &f));
		n = lk_flame_nodes(f, &nodes);
		check_tree(nodes, n, 3);
		ASSERT_EQ(lk_flame_stacks(f), 5);
		ASSERT_EQ(nodes[0].width[0], 130);
		ASSERT_EQ(nodes[node_named(nodes, n, "main")].width[0], 130);
		ASSERT_EQ(nodes[node_named(nodes, n, "main")].figure[BASE].value, 150);
		ASSERT_EQ(nodes[node_named(nodes, n, "main")].figure[NEW].value, 160);
		ASSERT_EQ(nodes[node_named(nodes, n, "a")].width[0], 60);
		ASSERT_EQ(nodes[node_named(nodes, n, "a")].figure[NEW].value, 40);
		if (!pass) {
			ASSERT_EQ(n, 5); /* root, main, a, b, c: "a" and "main" once each */
			ASSERT_EQ(nodes[node_named(nodes, n, "b")].width[0], 40);
			ASSERT_EQ(nodes[node_named(nodes, n, "c")].width[0], 30);
			ASSERT_EQ(nodes[node_named(nodes, n, "c")].figure[BASE].samples, 0);
			lk_flame_free(f);
			continue;
		}
		ASSERT_EQ(n, 4); /* root, main, a, other */
		o = other_node(nodes, n);
		ASSERT_EQ(nodes[o].dropped, 2);
		ASSERT_EQ(nodes[o].width[0], 70);
		ASSERT_EQ(nodes[o].figure[BASE].value, 50);
		ASSERT_EQ(nodes[o].figure[NEW].value, 120);
		lk_flame_free(f);
	}
	fake_free(rb);
	fake_free(rn);
}

/* Changes of both signs under one node: its own gross change is the sum of theirs, never their
 * net (which is 0 here), so the node is as wide as what changed under it. */
TEST(opposite_changes_do_not_cancel_in_the_width)
{
	struct lk_sym_frame up = F("up"), down = F("down"), mid = F("mid"), main_ = F("main");
	struct lk_sym_frame up2 = F("up"), down2 = F("down"), mid2 = F("mid"), main2 = F("main");
	static const struct lk_flame_width gross[] = { { NEW, BASE } };
	struct lk_flame_opts fo = { .figures = sides, .nfigures = 2, .widths = gross, .nwidths = 1,
				    .min_share = 0, .max_nodes = 100 };
	struct fake *rb = fake_new(), *rn = fake_new();
	const struct lk_flame_node *nodes;
	struct lk_flame *f;
	size_t n, m;

	add(rb, (const struct lk_sym_frame *[]){ &up, &mid, &main_ }, 3, 100, 0, 0);
	add(rb, (const struct lk_sym_frame *[]){ &down, &mid, &main_ }, 3, 300, 0, 0);
	add(rn, (const struct lk_sym_frame *[]){ &up2, &mid2, &main2 }, 3, 300, 0, 0);
	add(rn, (const struct lk_sym_frame *[]){ &down2, &mid2, &main2 }, 3, 100, 0, 0);
	ASSERT_OK(lk_flame_build((const struct lk_report *const[]){ &rb->r, &rn->r }, 2, &fo, &f));
	n = lk_flame_nodes(f, &nodes);
	check_tree(nodes, n, 1);
	m = node_named(nodes, n, "mid");
	ASSERT_EQ(nodes[m].figure[NEW].value - nodes[m].figure[BASE].value, 0);
	ASSERT_EQ(nodes[m].width[0], 400);
	ASSERT_EQ(nodes[node_named(nodes, n, "up")].width[0], 200);
	lk_flame_free(f);
	fake_free(rb);
	fake_free(rn);
}
