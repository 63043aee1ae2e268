/* test-frees.c: `leek report frees` end to end, on fixtures/fx-frees.c, whose frees happen in
 * known functions (LEEK_FREE_STACKS; src/preload/sampler.c's free_with_stack, the report in
 * src/cli/report/frees.c and out-frees.c).
 *
 * In exact mode every number is a fact: each (allocation site, free site) pair holds exactly the
 * frees the fixture made there, and every free has its stack. Sampled, on two threads: only the
 * fixture's pairs appear, and the interval of the largest holds what it freed. Without
 * --free-stacks the report still reads, and says there is no free stack. Every test works in its
 * own temporary directory, removed only when it passes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "files.h"
#include "harness.h"
#include "report-util.h"

#define NODES 3000  /* fixtures/fx-frees.c */
#define LEAVES 1500
#define MOVES 150   /* every tenth leaf */

/* `leek run --period PERIOD --seed 1 [--free-stacks] -o DIR/x.%p.lk -- fx-frees [ARG]`. */
static char *run_frees(const char *dir, const char *period, bool free_stacks, const char *arg)
{
	char out[300];
	struct proc run;

	snprintf(out, sizeof(out), "%s/x.%%p.lk", dir);
	leek_run(&run, dir, (const char *[]){ "--period", period, "--seed", "1", "-o", out,
					      free_stacks ? "--free-stacks" : "--no-follow", "--",
					      FX("fx-frees"), arg, NULL },
		 60);
	if (run.status != 0)
		FAIL("leek run fx-frees: exit %d; stderr:\n%s", run.status, run.err);
	ASSERT_CONTAINS(run.out, "nodes 3000");
	proc_free(&run);
	return run_profile(dir);
}

/* `leek report frees --format json ARGS... PATH`: its only process. */
static struct json *frees_json(struct proc *p, const char *dir, const char *path,
			       const char *const *args, const struct json **proc)
{
	const char *a[16] = { "frees", "--format", "json" };
	size_t n = 3;

	for (size_t i = 0; args && args[i]; i++)
		a[n++] = args[i];
	a[n++] = path;
	a[n] = NULL;
	leek_report(p, dir, a);
	struct json *doc = NULL;
	char err[256];
	if (p->status != 0)
		FAIL("leek report frees exited %d; stderr:\n%s", p->status, p->err);
	if (json_parse(p->out, p->out_len, &doc, err, sizeof(err)) < 0)
		FAIL("leek report frees printed invalid JSON: %s (output in %s)", err, p->out_path);
	ASSERT_STREQ(get_str(doc, "format"), "leek-frees");
	ASSERT_EQ(get_u64(doc, "version"), 1);
	const struct json *procs = json_get(doc, "processes");
	ASSERT_TRUE(procs && procs->len == 1);
	*proc = json_at(procs, 0);
	return doc;
}

/* A site's function, or NULL for a null site. */
static const char *site_fn(const struct json *x, const char *key)
{
	const struct json *s = json_get(x, key);

	if (!s)
		FAIL("no \"%s\"", key);
	return s->type == JSON_NULL ? NULL : get_str(s, "function");
}

static bool is_fixture(const char *fn)
{
	return fn && strncmp(fn, "fixture_", 8) == 0;
}

/* The pairs the fixture can make: a fixture's block freed anywhere else is a wrong free stack. */
static bool allowed(const char *alloc, const char *free_fn)
{
	static const char *const ok[][2] = {
		{ "fixture_make_node", "fixture_drop_node" },
		{ "fixture_make_leaf", "fixture_drop_leaf" },
		{ "fixture_make_leaf", "fixture_move_leaf" },
		{ "fixture_move_leaf", "fixture_drop_leaf" },
	};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (free_fn && strcmp(alloc, ok[i][0]) == 0 && strcmp(free_fn, ok[i][1]) == 0)
			return true;
	return false;
}

/* The pair (alloc, free_fn) among pairs; NULL if none. Every fixture pair must be allowed. */
static const struct json *find_pair(const struct json *pairs, const char *alloc,
				    const char *free_fn)
{
	const struct json *found = NULL;

	for (size_t i = 0; i < pairs->len; i++) {
		const struct json *q = json_at(pairs, i);
		const char *a = site_fn(q, "alloc_site"), *f = site_fn(q, "free_site");
		if (is_fixture(a) && !allowed(a, f))
			FAIL("a pair %s -> %s, which fx-frees never makes", a, f ? f : "null");
		if (a && f && strcmp(a, alloc) == 0 && strcmp(f, free_fn) == 0) {
			if (found)
				FAIL("two pairs %s -> %s", alloc, free_fn);
			found = q;
		}
	}
	return found;
}

TEST(exact_mode_names_every_free)
{
	char dir[256];
	struct proc rep;
	const struct json *proc;

	tmp_dir(dir);
	char *path = run_frees(dir, "1", true, NULL);
	struct json *doc = frees_json(&rep, dir, path, NULL, &proc);
	uint64_t frees = get_u64(proc, "frees");

	ASSERT_EQ(get_u64(proc, "period"), 1);
	ASSERT_TRUE(frees >= NODES + LEAVES + MOVES);
	ASSERT_EQ(get_u64(proc, "frees_with_stack"), frees);

	const struct json *pairs = json_get(proc, "pairs");
	static const struct {
		const char *alloc, *free_fn;
		uint64_t n, size;
	} want[] = {
		{ "fixture_make_node", "fixture_drop_node", NODES, 4096 },
		{ "fixture_make_leaf", "fixture_drop_leaf", LEAVES - MOVES, 24576 },
		{ "fixture_make_leaf", "fixture_move_leaf", MOVES, 24576 },
		{ "fixture_move_leaf", "fixture_drop_leaf", MOVES, 32768 },
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct json *q = find_pair(pairs, want[i].alloc, want[i].free_fn);
		if (!q)
			FAIL("no pair %s -> %s", want[i].alloc, want[i].free_fn);
		ASSERT_EQ(get_u64(q, "samples"), want[i].n);
		ASSERT_EQ(get_num(q, "objects"), (double)want[i].n);
		ASSERT_EQ(get_num(q, "bytes"), (double)(want[i].n * want[i].size));
		ASSERT_TRUE(get_num(q, "lifetime_min_s") <= get_num(q, "lifetime_mean_s"));
		ASSERT_TRUE(get_num(q, "lifetime_mean_s") <= get_num(q, "lifetime_max_s"));
		/* The free stack's own frames: its site, then the fixture's main. */
		const struct json *fs = json_get(q, "free_stack");
		ASSERT_TRUE(fs && fs->len >= 2);
		ASSERT_STREQ(get_str(json_at(fs, 0), "function"), want[i].free_fn);
		ASSERT_TRUE(get_bool(json_at(fs, 0), "site"));
	}
	ASSERT_EQ(get_u64(proc, "pairs_total"), pairs->len); /* JSON: all of them */

	/* The last 20, oldest first, each with both stacks. */
	const struct json *recent = json_get(proc, "recent");
	ASSERT_EQ(recent->len, 20);
	bool leaf = false;
	for (size_t i = 0; i < recent->len; i++) {
		const struct json *e = json_at(recent, i);
		ASSERT_TRUE(i == 0 || get_num(e, "free_s") >= get_num(json_at(recent, i - 1), "free_s"));
		ASSERT_TRUE(get_u64(e, "free_stack_id") != 0);
		ASSERT_TRUE(get_num(e, "lifetime_s") >= 0);
		const char *a = site_fn(e, "alloc_site"), *f = site_fn(e, "free_site");
		if (is_fixture(a) && !allowed(a, f))
			FAIL("a recent free %s -> %s, which fx-frees never makes", a, f ? f : "null");
		leaf |= a && strcmp(a, "fixture_make_leaf") == 0 && get_u64(e, "size") == 24576;
	}
	ASSERT_TRUE(leaf); /* the leaves come last */
	json_free(doc);
	proc_free(&rep);

	/* --last 3, and --top 1 in JSON. */
	doc = frees_json(&rep, dir, path, (const char *[]){ "--last", "3", "-n", "1", NULL }, &proc);
	ASSERT_EQ(json_get(proc, "recent")->len, 3);
	ASSERT_EQ(json_get(proc, "pairs")->len, 1);
	json_free(doc);
	proc_free(&rep);

	/* Text: the sites, by name; --stacks: each stack whole. */
	leek_report(&rep, dir, (const char *[]){ "frees", "--last", "2", path, NULL });
	ASSERT_EQ(rep.status, 0);
	ASSERT_CONTAINS(rep.out, "last 2 frees, oldest first");
	ASSERT_CONTAINS(rep.out, "fixture_make_node (fx-frees.c:");
	ASSERT_CONTAINS(rep.out, "freed in     fixture_drop_node (fx-frees.c:");
	proc_free(&rep);
	leek_report(&rep, dir, (const char *[]){ "frees", "--stacks", "-n", "1", path, NULL });
	ASSERT_EQ(rep.status, 0);
	ASSERT_CONTAINS(rep.out, "    freed:\n    > fixture_");
	proc_free(&rep);
	free(path);
	tmp_dir_remove(dir);
}

TEST(sampled_on_two_threads)
{
	char dir[256];
	struct proc rep;
	const struct json *proc;
	double lo, hi;

	tmp_dir(dir);
	char *path = run_frees(dir, "512K", true, "threads");
	struct json *doc = frees_json(&rep, dir, path, NULL, &proc);
	uint64_t frees = get_u64(proc, "frees");

	ASSERT_TRUE(frees > 0);
	ASSERT_EQ(get_u64(proc, "frees_with_stack"), frees);
	const struct json *pairs = json_get(proc, "pairs");
	/* 12 MiB of nodes at a 512 KiB period: no sample with probability e^-23. */
	const struct json *q = find_pair(pairs, "fixture_make_node", "fixture_drop_node");
	ASSERT_TRUE(q);
	get_ci95(q, "bytes", &lo, &hi);
	ASSERT_TRUE(lo <= NODES * 4096.0 && NODES * 4096.0 <= hi);
	ASSERT_TRUE(find_pair(pairs, "fixture_make_leaf", "fixture_drop_leaf"));
	json_free(doc);
	proc_free(&rep);
	free(path);
	tmp_dir_remove(dir);
}

TEST(without_free_stacks)
{
	char dir[256];
	struct proc rep;
	const struct json *proc;

	tmp_dir(dir);
	char *path = run_frees(dir, "1", false, NULL);
	struct json *doc = frees_json(&rep, dir, path, NULL, &proc);
	ASSERT_TRUE(get_u64(proc, "frees") >= NODES + LEAVES + MOVES);
	ASSERT_EQ(get_u64(proc, "frees_with_stack"), 0);
	const struct json *pairs = json_get(proc, "pairs");
	for (size_t i = 0; i < pairs->len; i++) {
		ASSERT_TRUE(!site_fn(json_at(pairs, i), "free_site"));
		ASSERT_EQ(get_u64(json_at(pairs, i), "free_stack_id"), 0);
	}
	json_free(doc);
	proc_free(&rep);
	leek_report(&rep, dir, (const char *[]){ "frees", path, NULL });
	ASSERT_EQ(rep.status, 0);
	ASSERT_CONTAINS(rep.out, "no free stacks in this profile");
	proc_free(&rep);
	free(path);
	tmp_dir_remove(dir);
}

TEST(usage_errors)
{
	static const char *const bad[][3] = {
		{ "--last", "x", "--last 'x'" },
		{ "--last", "-1", "--last '-1'" },
		{ "--format", "html", "text or json" },
		{ "--merge", NULL, "--merge does not apply" },
	};
	char dir[256];
	struct proc rep;

	tmp_dir(dir);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *args[6] = { "frees", bad[i][0] }, **a = args + 2;
		if (bad[i][1])
			*a++ = bad[i][1];
		*a++ = "x.lk";
		leek_report(&rep, dir, args);
		ASSERT_EQ(rep.status, 1);
		ASSERT_CONTAINS(rep.err, bad[i][2]);
		proc_free(&rep);
	}
	tmp_dir_remove(dir);
}
