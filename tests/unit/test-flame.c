/* test-flame.c: the HTML report's flame tree (src/cli/html/flame.h) on stacks made here: how
 * stacks merge by function under their callers, where a path stops (the site), the pruning rule
 * (a share of a total, the node cap, "other" nodes that keep every total whole), and where the
 * series of pruned stacks go.
 */
#include <stdlib.h>
#include <string.h>

#include "flame.h"
#include "harness.h"

static struct lk_sym_frame F(const char *function)
{
	return (struct lk_sym_frame){ .function = function, .module = "/bin/prog" };
}

/* Feeds one stack (innermost first) with the given live and allocated bytes, series[b] = live
 * at buckets from `from` on. */
static void add(struct lk_flame *f, const struct lk_sym_frame *const *frames, size_t n,
		size_t site, double live, double alloc, unsigned from)
{
	struct lk_stack_stats st = { 0 };
	const struct lk_report_stack_hook *h = lk_flame_hook(f);

	st.live_bytes = (struct lk_estimate){ .value = live, .observed = live, .samples = 1 };
	st.peak_bytes = st.live_bytes;
	st.alloc_bytes = (struct lk_estimate){ .value = alloc, .observed = alloc, .samples = 1 };
	st.live_objects = (struct lk_estimate){ .value = live > 0, .samples = 1 };
	st.alloc_objects = (struct lk_estimate){ .value = 1, .samples = 1 };
	for (unsigned b = from; b < LK_TIMELINE_BUCKETS; b++)
		st.series[b] = live;
	ASSERT_OK(h->fn(h->ctx, 0, frames, n, site, &st));
}

/* The pruned node named function (the first); fails if none. */
static size_t node_named(const struct lk_flame_node *nodes, size_t n, const char *function)
{
	for (size_t i = 0; i < n; i++)
		if (nodes[i].frame && strcmp(nodes[i].frame->function, function) == 0)
			return i;
	FAIL("no node %s", function);
}

static double live(const struct lk_flame_node *x)
{
	return x->value[LK_FLAME_LIVE].value;
}

/* Parents come before their children; every node's value is at least its children's sum, and a
 * node with an "other" child is exactly its children's sum here (no stack ends inside). */
static void check_tree(const struct lk_flame_node *nodes, size_t n)
{
	ASSERT_TRUE(n >= 1 && nodes[0].parent == SIZE_MAX);
	for (size_t i = 1; i < n; i++)
		ASSERT_TRUE(nodes[i].parent < i);
	for (size_t i = 0; i < n; i++) {
		double sum = 0;
		for (size_t j = i + 1; j < n; j++)
			if (nodes[j].parent == i)
				sum += live(&nodes[j]);
		ASSERT_TRUE(sum <= live(&nodes[i]) + 1e-6);
	}
}

static const struct lk_flame_opts defaults = { LK_FLAME_MIN_SHARE, LK_FLAME_MAX_NODES };

/* Two stacks through main -> a merge there; the allocator frame under the site is left out; two
 * lines of one function (two frame objects) are one node. */
TEST(stacks_merge_by_function_down_to_the_site)
{
	struct lk_sym_frame malloc_ = F("malloc"), x = F("x"), y = F("y"), a = F("a"),
			    a2 = F("a"), main_ = F("main");
	const struct lk_sym_frame *s1[] = { &malloc_, &x, &a, &main_ };
	const struct lk_sym_frame *s2[] = { &y, &a2, &main_ };
	const struct lk_flame_node *nodes;
	struct lk_flame *f;
	size_t n;

	ASSERT_OK(lk_flame_new(&f));
	add(f, s1, 4, 1, 100, 300, 0);
	add(f, s2, 3, 0, 50, 50, 0);
	ASSERT_OK(lk_flame_finish(f, &defaults, LK_TIMELINE_BUCKETS));
	n = lk_flame_nodes(f, &nodes);
	ASSERT_EQ(n, 5); /* root, main, a, x, y: no malloc */
	ASSERT_EQ(lk_flame_nodes_before(f), 5);
	ASSERT_EQ(lk_flame_stacks(f), 2);
	check_tree(nodes, n);
	ASSERT_EQ(live(&nodes[0]), 150);
	ASSERT_EQ(live(&nodes[node_named(nodes, n, "a")]), 150);
	ASSERT_EQ(nodes[node_named(nodes, n, "a")].value[LK_FLAME_ALLOC].value, 350);
	ASSERT_EQ(live(&nodes[node_named(nodes, n, "x")]), 100);
	ASSERT_EQ(nodes[node_named(nodes, n, "x")].parent, node_named(nodes, n, "a"));
	ASSERT_EQ(nodes[node_named(nodes, n, "a")].value[LK_FLAME_ALLOC_OBJECTS].value, 2);
	for (size_t i = 0; i < n; i++)
		ASSERT_TRUE(!nodes[i].frame || strcmp(nodes[i].frame->function, "malloc") != 0);
	lk_flame_free(f);
}

/* One big site and 999 tiny ones under main: the tiny ones (0.0001% each) become one "other"
 * node that holds their sum, so main's total is whole; raising min_share to 0 keeps them all. */
TEST(small_frames_become_one_other_node)
{
	static struct lk_sym_frame tiny[999];
	static char names[999][16];
	struct lk_sym_frame big = F("big"), main_ = F("main");
	const struct lk_flame_node *nodes;
	struct lk_flame *f;
	size_t n, o = SIZE_MAX;

	for (unsigned pass = 0; pass < 2; pass++) {
		ASSERT_OK(lk_flame_new(&f));
		add(f, (const struct lk_sym_frame *[]){ &big, &main_ }, 2, 0, 1e9, 1e9, 0);
		for (unsigned i = 0; i < 999; i++) {
			snprintf(names[i], sizeof(names[i]), "tiny%u", i);
			tiny[i] = F(names[i]);
			add(f, (const struct lk_sym_frame *[]){ &tiny[i], &main_ }, 2, 0, 1000, 1000, 0);
		}
		ASSERT_OK(lk_flame_finish(f, pass ? &(struct lk_flame_opts){ 0, 100000 } : &defaults,
					  LK_TIMELINE_BUCKETS));
		n = lk_flame_nodes(f, &nodes);
		check_tree(nodes, n);
		if (pass) {
			ASSERT_EQ(n, 1002); /* root, main, big, 999 tiny */
			lk_flame_free(f);
			break;
		}
		ASSERT_EQ(n, 4); /* root, main, big, other */
		for (size_t i = 0; i < n; i++)
			if (nodes[i].other)
				o = i;
		ASSERT_TRUE(o != SIZE_MAX);
		ASSERT_EQ(nodes[o].dropped, 999);
		ASSERT_EQ(nodes[o].parent, node_named(nodes, n, "main"));
		ASSERT_EQ(live(&nodes[o]), 999000);
		ASSERT_EQ(nodes[o].value[LK_FLAME_LIVE].samples, 999);
		ASSERT_EQ(live(&nodes[node_named(nodes, n, "main")]), 1e9 + 999000);
		/* The other node's series: the tiny stacks' (1000 each from bucket 0). */
		ASSERT_TRUE(nodes[o].series != NULL);
		ASSERT_EQ(nodes[o].series[5], 999000);
		lk_flame_free(f);
	}
}

/* max_nodes keeps the largest: 50 sites of decreasing size under main, 10 kept (root, main and
 * the 8 largest), the rest in "other". */
TEST(the_node_cap_keeps_the_largest)
{
	static struct lk_sym_frame s[50];
	static char names[50][16];
	struct lk_sym_frame main_ = F("main");
	const struct lk_flame_node *nodes;
	struct lk_flame *f;
	size_t n;

	ASSERT_OK(lk_flame_new(&f));
	for (unsigned i = 0; i < 50; i++) {
		snprintf(names[i], sizeof(names[i]), "s%02u", i);
		s[i] = F(names[i]);
		add(f, (const struct lk_sym_frame *[]){ &s[i], &main_ }, 2, 0, 1000 - i, 1000, 0);
	}
	ASSERT_OK(lk_flame_finish(f, &(struct lk_flame_opts){ 0.001, 10 }, LK_TIMELINE_BUCKETS));
	n = lk_flame_nodes(f, &nodes);
	check_tree(nodes, n);
	ASSERT_EQ(n, 11);
	for (unsigned i = 0; i < 8; i++)
		node_named(nodes, n, names[i]);
	for (size_t i = 0; i < n; i++)
		ASSERT_TRUE(!nodes[i].frame || strcmp(nodes[i].frame->function, "s08") < 0 ||
			    strcmp(nodes[i].frame->function, "main") == 0);
	lk_flame_free(f);
}

/* A site that matters only in the middle of the run: freed before the end, and 0.01% of all
 * bytes allocated (a churning site allocates the rest), but a third of the heap from bucket 10 to
 * 19. The series rule keeps it; fed without its series, it goes to "other". */
TEST(a_site_large_at_one_moment_is_kept)
{
	struct lk_sym_frame churn = F("churn"), mid = F("mid"), keep = F("keep"), main_ = F("main");
	const struct lk_flame_node *nodes;
	struct lk_flame *f;
	size_t n;

	for (unsigned with_series = 0; with_series < 2; with_series++) {
		struct lk_stack_stats st = { 0 };
		const struct lk_report_stack_hook *h;
		bool found = false;

		ASSERT_OK(lk_flame_new(&f));
		h = lk_flame_hook(f);
		add(f, (const struct lk_sym_frame *[]){ &churn, &main_ }, 2, 0, 0, 1e10, 0);
		add(f, (const struct lk_sym_frame *[]){ &keep, &main_ }, 2, 0, 2e6, 2e6, 0);
		st.alloc_bytes = (struct lk_estimate){ .value = 1e6, .samples = 1 };
		for (unsigned b = 10; b < 20 && with_series; b++)
			st.series[b] = 1e6;
		ASSERT_OK(h->fn(h->ctx, 0, (const struct lk_sym_frame *[]){ &mid, &main_ }, 2, 0,
				&st));
		ASSERT_OK(lk_flame_finish(f, &defaults, LK_TIMELINE_BUCKETS));
		n = lk_flame_nodes(f, &nodes);
		check_tree(nodes, n);
		for (size_t i = 0; i < n; i++)
			found |= nodes[i].frame && strcmp(nodes[i].frame->function, "mid") == 0;
		ASSERT_EQ(found, with_series);
		if (with_series) {
			size_t m = node_named(nodes, n, "mid");
			ASSERT_EQ(nodes[m].series[15], 1e6);
			ASSERT_EQ(nodes[m].series[25], 0);
		}
		lk_flame_free(f);
	}
}

/* Stacks of two profiles (--merge): their buckets do not line up, so no series at all. */
TEST(several_profiles_have_no_series)
{
	struct lk_sym_frame x = F("x"), main_ = F("main");
	const struct lk_sym_frame *s[] = { &x, &main_ };
	const struct lk_report_stack_hook *h;
	struct lk_stack_stats st = { 0 };
	const struct lk_flame_node *nodes;
	struct lk_flame *f;

	ASSERT_OK(lk_flame_new(&f));
	h = lk_flame_hook(f);
	st.live_bytes.value = st.series[0] = 10;
	ASSERT_OK(h->fn(h->ctx, 0, s, 2, 0, &st));
	ASSERT_OK(h->fn(h->ctx, 1, s, 2, 0, &st));
	ASSERT_OK(lk_flame_finish(f, &defaults, LK_TIMELINE_BUCKETS));
	ASSERT_EQ(lk_flame_buckets(f), 0);
	ASSERT_EQ(lk_flame_nodes(f, &nodes), 3);
	ASSERT_EQ(live(&nodes[2]), 20);
	lk_flame_free(f);
}
