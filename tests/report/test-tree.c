/* test-tree.c: `leek report tree` end to end (src/cli/report/tree.c, out-tree.c), on the fixtures.
 *
 * fx-golden in exact mode makes every number a fact: each fixture_* function's node must hold the
 * bytes fixtures/fx-golden.c says it allocated, a node's total must be its self plus its
 * children's totals, the root's total the view's, and --min-share must leave out exactly the
 * nodes below it. A sampled run checks the intervals, fx-inline the inlined frames. Every test
 * works in its own temporary directory, removed only when it passes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "files.h"
#include "harness.h"
#include "report-util.h"

/* `leek run --period PERIOD --seed 1 -o DIR/x.%p.lk -- FIXTURE [ARG]`: the profile's path. */
static char *run_fixture(const char *dir, const char *period, const char *fixture, const char *arg)
{
	char out[300];
	struct proc run;

	snprintf(out, sizeof(out), "%s/x.%%p.lk", dir);
	leek_run(&run, dir, (const char *[]){ "--period", period, "--seed", "1", "-o", out, "--",
					      fixture, arg, NULL },
		 60);
	if (run.status != 0)
		FAIL("leek run %s: exit %d; stderr:\n%s", fixture, run.status, run.err);
	proc_free(&run);
	return run_profile(dir);
}

static const struct json *children(const struct json *node)
{
	const struct json *c = json_get(node, "children");

	if (!c || c->type != JSON_ARRAY)
		FAIL("a node has no \"children\" array");
	return c;
}

/* The node whose function is `function`, anywhere under node (depth first); NULL if none. */
static const struct json *find_node(const struct json *node, const char *function)
{
	const struct json *fn = json_get(node, "function"), *c = children(node);

	if (fn && fn->type == JSON_STRING && strcmp(fn->text, function) == 0)
		return node;
	for (size_t i = 0; i < c->len; i++) {
		const struct json *x = find_node(json_at(c, i), function);
		if (x)
			return x;
	}
	return NULL;
}

/* Checks every node under node: total = self + the children's totals (exactly, with
 * exact = true; else within a byte per child, the rounding of each), children by total, largest
 * first, an interval around each estimate; returns the nodes counted. */
static size_t check_sums(const struct json *node, bool exact)
{
	const struct json *c = children(node);
	double total = get_num(node, "total"), sum = get_num(node, "self"), lo, hi;
	size_t nodes = 1;

	get_ci95(node, "total", &lo, &hi);
	ASSERT_TRUE(lo <= total && total <= hi);
	get_ci95(node, "self", &lo, &hi);
	ASSERT_TRUE(lo <= get_num(node, "self") && get_num(node, "self") <= hi);
	for (size_t i = 0; i < c->len; i++) {
		const struct json *x = json_at(c, i);
		sum += get_num(x, "total");
		if (i > 0 && get_num(x, "total") > get_num(json_at(c, i - 1), "total"))
			FAIL("children of %s out of order", json_str(json_get(node, "function")));
		nodes += check_sums(x, exact);
	}
	if (exact ? sum != total : sum > total + (double)c->len + 1 || sum < total - (double)c->len - 1)
		FAIL("node %s: total %.0f, self and children %.0f",
		     json_str(json_get(node, "function")), total, sum);
	return nodes;
}

/* fx-golden's sites, live at the end (fixtures/fx-golden.c): the bytes, blocks and line of each. */
static const struct {
	const char *function;
	uint64_t live, objects;
} golden[] = {
	{ "fixture_leak_large", 300000, 3 }, { "fixture_realloc", 5000, 1 },
	{ "fixture_free_half", 4096, 4 },    { "fixture_aligned", 3000, 1 },
	{ "fixture_leak_small", 480, 10 },
};
#define GOLDEN_LIVE 312576 /* their sum: fx-golden allocates nothing else */

TEST(top_down_in_exact_mode)
{
	char dir[256], *profile;
	struct proc rep;
	struct json *doc;
	const struct json *tree, *root, *main_node;

	tmp_dir(dir);
	profile = run_fixture(dir, "1", FX("fx-golden"), NULL);
	doc = leek_report_json(&rep, dir, (const char *[]){ "tree", profile, NULL });
	ASSERT_STREQ(get_str(doc, "view"), "tree");
	ASSERT_STREQ(get_str(json_get(doc, "options"), "value"), "leaks");
	ASSERT_EQ(json_path(doc, "options.inverted")->type, JSON_FALSE);
	ASSERT_TRUE(json_get(doc, "sites") == NULL);
	tree = report_tree(doc);
	root = json_get(tree, "root");
	ASSERT_EQ(json_get(root, "function")->type, JSON_NULL);
	ASSERT_EQ(get_u64(root, "total"), GOLDEN_LIVE);
	ASSERT_EQ(get_u64(root, "total"), get_u64(json_get(doc, "view_total"), "bytes"));
	ASSERT_TRUE(get_num(root, "share") == 1.0);
	ASSERT_EQ(get_u64(tree, "pruned_nodes"), 0); /* JSON: no --min-share by default */
	ASSERT_EQ(check_sums(root, true), get_u64(tree, "nodes"));

	/* Top-down: each site is a child of main, and holds its own allocations as self. */
	main_node = find_node(root, "main");
	ASSERT_TRUE(main_node != NULL);
	ASSERT_EQ(get_u64(main_node, "total"), GOLDEN_LIVE);
	/* fixture_free_all holds nothing at the end; fixture_zero two blocks of 0 B, last. */
	ASSERT_EQ(children(main_node)->len, 6);
	ASSERT_STREQ(get_str(json_at(children(main_node), 5), "function"), "fixture_zero");
	ASSERT_EQ(get_u64(json_at(children(main_node), 5), "total"), 0);
	ASSERT_EQ(get_u64(json_at(children(main_node), 5), "samples"), 2);
	ASSERT_EQ(get_u64(root, "samples"), 21);
	for (size_t i = 0; i < 5; i++) {
		const struct json *n = json_at(children(main_node), i);
		ASSERT_STREQ(get_str(n, "function"), golden[i].function);
		ASSERT_EQ(get_u64(n, "total"), golden[i].live);
		ASSERT_EQ(get_u64(n, "self"), golden[i].live);
		ASSERT_EQ(get_u64(n, "samples"), golden[i].objects);
		ASSERT_EQ(children(n)->len, 0);
		ASSERT_EQ(json_get(n, "allocator")->type, JSON_FALSE);
	}
	/* One line of fixture_realloc holds bytes live at the end, so its line is known. */
	ASSERT_EQ(frame_line(find_node(root, "fixture_realloc")), 66);
	json_free(doc);
	proc_free(&rep);

	/* Everything allocated: fixture_realloc's two lines are one node, of no single line. */
	doc = leek_report_json(&rep, dir, (const char *[]){ "tree", "--value", "alloc", profile,
							    NULL });
	root = json_get(report_tree(doc), "root");
	ASSERT_EQ(get_u64(root, "total"), get_u64(report_totals(doc), "alloc_bytes"));
	ASSERT_EQ(get_u64(find_node(root, "fixture_realloc"), "total"), 5100);
	ASSERT_EQ(json_get(find_node(root, "fixture_realloc"), "line")->type, JSON_NULL);
	ASSERT_EQ(get_u64(find_node(root, "fixture_free_all"), "total"), 80000);
	check_sums(root, true);
	json_free(doc);
	proc_free(&rep);

	/* Objects, pprof's name of the figure: the two zero-byte blocks count. */
	doc = leek_report_json(&rep, dir, (const char *[]){ "tree", "--value", "inuse_objects",
							    profile, NULL });
	ASSERT_EQ(json_path(doc, "options.objects")->type, JSON_TRUE);
	root = json_get(report_tree(doc), "root");
	ASSERT_EQ(get_u64(root, "total"), 21);
	ASSERT_EQ(get_u64(find_node(root, "fixture_zero"), "total"), 2);
	ASSERT_EQ(get_u64(find_node(root, "fixture_leak_small"), "total"), 10);
	check_sums(root, true);
	json_free(doc);
	proc_free(&rep);
	free(profile);
	tmp_dir_remove(dir);
}

TEST(inverted)
{
	char dir[256], *profile;
	struct proc rep;
	struct json *doc;
	const struct json *root, *c;
	uint64_t sum = 0;

	tmp_dir(dir);
	profile = run_fixture(dir, "1", FX("fx-golden"), NULL);
	doc = leek_report_json(&rep, dir, (const char *[]){ "tree", "--inverted", profile, NULL });
	ASSERT_EQ(json_path(doc, "options.inverted")->type, JSON_TRUE);
	root = json_get(report_tree(doc), "root");
	ASSERT_EQ(get_u64(root, "total"), GOLDEN_LIVE);
	check_sums(root, true);
	/* The innermost frames at the root: the sites, which call malloc themselves; below each,
	 * its caller main, and at the end of each path the outermost frame holds the self. */
	c = children(root);
	ASSERT_EQ(c->len, 6); /* and fixture_zero's 0 B, last */
	for (size_t i = 0; i < 5; i++) {
		const struct json *n = json_at(c, i), *m;
		ASSERT_STREQ(get_str(n, "function"), golden[i].function);
		ASSERT_EQ(get_u64(n, "total"), golden[i].live);
		ASSERT_EQ(get_u64(n, "self"), 0);
		m = json_at(children(n), 0);
		ASSERT_EQ(children(n)->len, 1);
		ASSERT_STREQ(get_str(m, "function"), "main");
		while (children(m)->len)
			m = json_at(children(m), 0);
		ASSERT_EQ(get_u64(m, "self"), golden[i].live);
		sum += get_u64(n, "total");
	}
	ASSERT_EQ(sum, GOLDEN_LIVE);
	json_free(doc);
	proc_free(&rep);
	free(profile);
	tmp_dir_remove(dir);
}

/* --min-share leaves out the nodes below it, and says how many and how much. */
TEST(min_share_prunes)
{
	char dir[256], *profile;
	struct proc rep;
	struct json *doc;
	const struct json *tree;
	uint64_t all;

	tmp_dir(dir);
	profile = run_fixture(dir, "1", FX("fx-golden"), NULL);
	doc = leek_report_json(&rep, dir, (const char *[]){ "tree", profile, NULL });
	all = get_u64(report_tree(doc), "nodes");
	json_free(doc);
	proc_free(&rep);

	/* 1% of 312576 B is 3125.76 B: fixture_aligned (3000 B), fixture_leak_small (480 B) and
	 * fixture_zero (0 B) go, fixture_free_half (4096 B) stays. */
	doc = leek_report_json(&rep, dir, (const char *[]){ "tree", "--min-share", "1", profile,
							    NULL });
	tree = report_tree(doc);
	ASSERT_EQ(get_u64(tree, "pruned_nodes"), 3);
	ASSERT_EQ(get_u64(tree, "pruned_total"), 3480);
	ASSERT_EQ(get_u64(tree, "nodes"), all - 3);
	ASSERT_TRUE(find_node(json_get(tree, "root"), "fixture_aligned") == NULL);
	ASSERT_TRUE(find_node(json_get(tree, "root"), "fixture_free_half") != NULL);
	json_free(doc);
	proc_free(&rep);

	/* Text: the default 0.5% leaves fixture_leak_small (0.15%) and fixture_zero out, and says
	 * so. */
	leek_report(&rep, dir, (const char *[]){ "tree", profile, NULL });
	ASSERT_EQ(rep.status, 0);
	ASSERT_CONTAINS(rep.out, "2 more nodes below 0.5% of the total left out (--min-share); the "
				 "stacks that end in them hold 480 B.");
	ASSERT_TRUE(strstr(rep.out, "fixture_leak_small") == NULL);
	ASSERT_CONTAINS(rep.out, "fixture_aligned (fx-golden.c:82) [fx-golden]");
	proc_free(&rep);
	free(profile);
	tmp_dir_remove(dir);
}

/* The text tree: box characters in a UTF-8 locale, ASCII in the C locale or with --ascii. */
TEST(text_drawing)
{
	char dir[256], *profile;
	struct proc rep;
	const char *utf8[] = { "LC_ALL=C.UTF-8", NULL };

	tmp_dir(dir);
	profile = run_fixture(dir, "1", FX("fx-golden"), NULL);
	leek_report(&rep, dir, (const char *[]){ "tree", profile, NULL });
	ASSERT_EQ(rep.status, 0);
	ASSERT_CONTAINS(rep.out, "tree, top-down (callers above their callees): heap live at the "
				 "end\ntotal 305 KiB exact, 21 samples; ");
	ASSERT_CONTAINS(rep.out, "    305 KiB  exact                  100.0%       21           -  "
				 "(all stacks)\n");
	ASSERT_CONTAINS(rep.out, "    293 KiB  exact                   96.0%        3     293 KiB  ");
	ASSERT_CONTAINS(rep.out, "|- fixture_leak_large (fx-golden.c:36) [fx-golden]\n");
	ASSERT_CONTAINS(rep.out, "`- fixture_aligned (fx-golden.c:82) [fx-golden]\n");
	ASSERT_TRUE(strstr(rep.out, "\u2514") == NULL);
	proc_free(&rep);

	const char *args[] = { "report", "tree", "--inverted", profile, NULL };
	leek_start(&rep, dir, utf8, args, 60);
	proc_wait(&rep);
	ASSERT_EQ(rep.status, 0);
	ASSERT_CONTAINS(rep.out, "tree, bottom-up (each frame above its callers)");
	ASSERT_CONTAINS(rep.out, "\u251c\u2500 fixture_leak_large (fx-golden.c:36) [fx-golden]\n");
	ASSERT_CONTAINS(rep.out, "\u2502  \u2514\u2500 main (fx-golden.c:");
	proc_free(&rep);
	const char *ascii[] = { "report", "tree", "--ascii", profile, NULL };
	leek_start(&rep, dir, utf8, ascii, 60);
	proc_wait(&rep);
	ASSERT_TRUE(strstr(rep.out, "\u2514") == NULL);
	ASSERT_CONTAINS(rep.out, "`- fixture_aligned");
	proc_free(&rep);
	free(profile);
	tmp_dir_remove(dir);
}

/* What belongs to sites or to the tree alone is refused elsewhere. */
TEST(options)
{
	static const char *const bad[][5] = {
		{ "tree", "--top", "5", "x.lk", NULL },   { "tree", "-s", "x.lk", NULL },
		{ "--inverted", "x.lk", NULL },           { "peak", "--value", "alloc", "x.lk", NULL },
		{ "tree", "--value", "growth", "x.lk", NULL },
		{ "tree", "--value", "inuse", "x.lk", NULL }, /* needs --at */
		{ "--view", "peak", "--view", "tree", NULL },
	};
	char dir[256];
	struct proc rep;

	tmp_dir(dir);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		leek_report(&rep, dir, bad[i]);
		if (rep.status != 1)
			FAIL("leek report %s %s: exit %d, expected 1", bad[i][0], bad[i][1], rep.status);
		proc_free(&rep);
	}
	tmp_dir_remove(dir);
}

/* At a sampling period the estimates have intervals, and the root's is the view total's: the
 * interval of the sum, never a sum of intervals. */
TEST(sampled_intervals)
{
	char dir[256], *profile;
	struct proc rep;
	struct json *doc;
	const struct json *root, *total;
	double lo, hi, tlo, thi;

	tmp_dir(dir);
	profile = run_fixture(dir, "4096", FX("fx-golden"), NULL);
	doc = leek_report_json(&rep, dir, (const char *[]){ "tree", "--value", "alloc", profile,
							    NULL });
	root = json_get(report_tree(doc), "root");
	total = json_get(doc, "view_total");
	get_ci95(root, "total", &lo, &hi);
	get_ci95(total, "bytes", &tlo, &thi);
	ASSERT_TRUE(lo < get_num(root, "total") && get_num(root, "total") < hi);
	ASSERT_TRUE(lo == tlo && hi == thi);
	ASSERT_EQ(get_u64(root, "total"), get_u64(total, "bytes"));
	ASSERT_EQ(get_u64(root, "samples"), get_u64(total, "samples"));
	check_sums(root, false);
	json_free(doc);
	proc_free(&rep);
	free(profile);
	tmp_dir_remove(dir);
}

/* An inlined function is a node of its own, marked, under the function it was inlined into. */
TEST(inlined_frames)
{
	char dir[256], *profile;
	struct proc rep;
	struct json *doc;
	const struct json *outer, *helper;

	tmp_dir(dir);
	profile = run_fixture(dir, "1", FX("fx-inline"), FX_DLIB);
	doc = leek_report_json(&rep, dir, (const char *[]){ "tree", profile, NULL });
	outer = find_node(json_get(report_tree(doc), "root"), "fixture_inl_outer");
	ASSERT_TRUE(outer != NULL);
	ASSERT_EQ(json_get(outer, "inlined")->type, JSON_FALSE);
	helper = json_at(children(outer), 0);
	ASSERT_EQ(children(outer)->len, 1);
	ASSERT_STREQ(get_str(helper, "function"), "fixture_inl_helper");
	ASSERT_EQ(json_get(helper, "inlined")->type, JSON_TRUE);
	ASSERT_EQ(get_u64(helper, "self"), 12345);
	ASSERT_EQ(get_u64(outer, "self"), 0);
	json_free(doc);
	proc_free(&rep);

	leek_report(&rep, dir, (const char *[]){ "tree", profile, NULL });
	ASSERT_CONTAINS(rep.out, "fixture_inl_helper (fx-inline.c:");
	ASSERT_CONTAINS(rep.out, "[fx-inline]  (inlined)\n");
	proc_free(&rep);
	free(profile);
	tmp_dir_remove(dir);
}
