/* test-diff-run.c: `leek diff` of real profiles: fixtures/fx-diff.c run twice under `leek run`
 * with different amounts, in exact mode and at the default period, and once with two phases for
 * --from/--to; fixtures/fx-wrapper.c run with few and with many callers of its wrapper, for the
 * wrappers that both sides skip alike.
 *
 * The diff's figures must be those of `leek report` for each profile (its growth view, which
 * lists every site), and its changes their difference; it must flag the sites whose amounts
 * changed and no other. In exact mode that is a fact. At the default period the seeds are fixed
 * (1 and 2, never chosen): the changes are far beyond the noise (z above 4, section 12), and
 * the chance that a correct diff flags an unchanged site of these runs is below 5% (the
 * false-alarm rate that tests/stats/test-diff.c checks over 2000 pairs).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff-util.h"
#include "files.h"
#include "harness.h"
#include "report-util.h"

#ifndef FX_WRAPPER
#error "meson passes FX_WRAPPER, fx-wrapper stripped of its symbols (or not, without objcopy)"
#endif

/* `leek run [--period 1] --seed SEED -o DIR/NAME.%p.lk -- fx-diff ARGS...`: the profile. */
static char *run_fx(const char *dir, const char *name, bool exact, const char *seed,
		    const char *const *args)
{
	const char *argv[16] = { "--seed", seed, "-o" };
	char out[300], prefix[64];
	size_t n = 3;
	struct proc p;

	snprintf(out, sizeof(out), "%s/%s.%%p.lk", dir, name);
	argv[n++] = out;
	if (exact) {
		argv[n++] = "--period";
		argv[n++] = "1";
	}
	argv[n++] = "--";
	argv[n++] = FX("fx-diff");
	for (size_t i = 0; args[i]; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	leek_run(&p, dir, argv, 60);
	if (p.status != 0)
		FAIL("leek run fx-diff: exit %d, stderr:\n%s", p.status, p.err);
	proc_free(&p);
	snprintf(prefix, sizeof(prefix), "%s.", name);
	return find_one(dir, prefix, "");
}

/* The report's site of `function` in each profile's growth view (every site), or NULL. */
static const struct json *report_site(struct json *doc, const char *function)
{
	return find_site(doc, function);
}

static double figure(const struct json *site, const char *key)
{
	return site ? get_num(site, key) : 0;
}

/* The diff's change of `function` against the two reports: base and new as they say (JSON
 * rounds each to a byte), the change their difference, and significant as expected. */
static void expect_site(const struct json *diff, struct json *rb, struct json *rn,
			const char *function, const char *figure_name, const char *report_key,
			bool significant)
{
	const struct json *s = diff_site(diff, function), *c;
	double base = figure(report_site(rb, function), report_key);
	double new = figure(report_site(rn, function), report_key);

	if (!s)
		FAIL("no site %s in the diff", function);
	c = diff_change(s, figure_name);
	ASSERT_NEAR(get_num(c, "base_bytes"), base, 0.5);
	ASSERT_NEAR(get_num(c, "new_bytes"), new, 0.5);
	ASSERT_NEAR(get_num(c, "change_bytes"), new - base, 1);
	if (get_bool(c, "significant") != significant)
		FAIL("%s %s: %.0f -> %.0f, significant %d (p %s), expected %d", function,
		     figure_name, base, new, !significant,
		     json_get(c, "p_value")->text ? json_get(c, "p_value")->text : "null",
		     significant);
}

static const char *const changed[] = { "fixture_diff_grow", "fixture_diff_gone",
				       "fixture_diff_new" };

static void two_runs(bool exact)
{
	const char *seed_a = "1", *seed_b = "2";
	char dir[256], *a, *b;
	struct json *ra, *rb, *d;
	const struct json *sites;
	struct proc p, q, r;

	tmp_dir(dir);
	/* grow 100 -> 400 blocks of 64 KiB (about 12 -> 47 samples), gone 300 -> 0, new 0 -> 300,
	 * churn 2000 -> 8000 blocks of 4 KiB, never live (about 16 -> 62 samples). */
	a = run_fx(dir, "a", exact, seed_a, (const char *[]){ "100", "300", "0", "2000", NULL });
	b = run_fx(dir, "b", exact, seed_b, (const char *[]){ "400", "0", "300", "8000", NULL });
	ra = leek_report_json(&p, dir, (const char *[]){ "--view", "growth", a, NULL });
	rb = leek_report_json(&q, dir, (const char *[]){ "--view", "growth", b, NULL });
	d = leek_diff_json(&r, dir, (const char *[]){ a, b, NULL });
	for (size_t i = 0; i < 3; i++) {
		expect_site(d, ra, rb, changed[i], "live", "live_bytes", true);
		expect_site(d, ra, rb, changed[i], "alloc", "alloc_bytes", true);
	}
	expect_site(d, ra, rb, "fixture_diff_same", "live", "live_bytes", false);
	expect_site(d, ra, rb, "fixture_diff_same", "alloc", "alloc_bytes", false);
	expect_site(d, ra, rb, "fixture_diff_churn", "live", "live_bytes", false);
	expect_site(d, ra, rb, "fixture_diff_churn", "alloc", "alloc_bytes", true);
	/* No other site is flagged (the loader's and libc's, the same in both runs). */
	sites = json_get(d, "sites");
	ASSERT_EQ(get_u64(d, "sites_significant"), 3);
	for (size_t i = 0; i < sites->len; i++) {
		const char *f = get_str(json_at(sites, i), "function");
		bool want = false;
		for (size_t k = 0; k < 3; k++)
			want |= strcmp(f, changed[k]) == 0;
		if (get_bool(json_at(sites, i), "significant") != want)
			FAIL("site %s: significant is %d", f, !want);
	}
	/* The whole's figures are the sums of the sites. */
	ASSERT_NEAR(get_num(diff_change(d, "live"), "base_bytes"),
		    get_num(json_get(ra, "view_total"), "bytes"), sites->len);
	if (exact) /* the changed sites' figures are exact: so is their change */
		ASSERT_EQ(get_num(diff_change(diff_site(d, "fixture_diff_grow"), "live"),
				  "change_bytes"), 300 * 65536);
	json_free(ra);
	json_free(rb);
	json_free(d);
	proc_free(&p);
	proc_free(&q);
	proc_free(&r);
	free(a);
	free(b);
	tmp_dir_remove(dir);
}

TEST(two_runs_exact)
{
	two_runs(true);
}

TEST(two_runs_sampled)
{
	two_runs(false);
}

/* fx-diff phases: live at 200 ms (the early blocks and _same) and at 600 ms (50 early ones
 * freed, 120 late ones allocated): the diff's two sides are `leek report inuse --at` at each;
 * early shrank and late grew, significantly, and _same did not change. */
static void two_moments(bool exact)
{
	static const struct {
		const char *function;
		bool significant;
	} want[] = {
		{ "fixture_phase_early", true },
		{ "fixture_phase_late", true },
		{ "fixture_diff_same", false },
	};
	char dir[256], *a;
	struct json *r1, *r2, *d;
	struct proc p, q, r;

	tmp_dir(dir);
	a = run_fx(dir, "m", exact, "3", (const char *[]){ "phases", NULL });
	r1 = leek_report_json(&p, dir, (const char *[]){ "inuse", "--at", "200ms", a, NULL });
	r2 = leek_report_json(&q, dir, (const char *[]){ "inuse", "--at", "600ms", a, NULL });
	d = leek_diff_json(&r, dir, (const char *[]){ "--from", "200ms", "--to", "0.6", a, NULL });
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		expect_site(d, r1, r2, want[i].function, "live", "live_bytes",
			    want[i].significant);
	if (exact) {
		ASSERT_EQ(get_num(diff_change(diff_site(d, "fixture_phase_early"), "live"),
				  "change_bytes"), -50 * 65536);
		ASSERT_EQ(get_num(json_get(diff_site(d, "fixture_phase_late"), "allocated"),
				  "bytes"), 120 * 65536);
	}
	json_free(r1);
	json_free(r2);
	json_free(d);
	proc_free(&p);
	proc_free(&q);
	proc_free(&r);
	free(a);
	tmp_dir_remove(dir);
}

TEST(two_moments_exact)
{
	two_moments(true);
}

TEST(two_moments_sampled)
{
	two_moments(false);
}

/* `leek run --period 1 -o DIR/NAME.%p.lk -- fx-wrapper HOW`: the profile. */
static char *run_wrapper(const char *dir, const char *name, const char *how)
{
	char out[300], prefix[64];
	struct proc p;

	snprintf(out, sizeof(out), "%s/%s.%%p.lk", dir, name);
	leek_run(&p, dir, (const char *[]){ "--period", "1", "-o", out, "--", FX_WRAPPER, how, NULL },
		 60);
	if (p.status != 0)
		FAIL("leek run fx-wrapper %s: exit %d, stderr:\n%s", how, p.status, p.err);
	proc_free(&p);
	snprintf(prefix, sizeof(prefix), "%s.", name);
	return find_one(dir, prefix, "");
}

/* fx-wrapper's callers, fixture_wcall_K: K + 1 blocks of 64 (K + 1) bytes with "many", 20 blocks
 * of 100 bytes for K < 3 with "few". */
static double wcall_bytes(bool many, unsigned k)
{
	return many ? 64.0 * (k + 1) * (k + 1) : k < 3 ? 2000 : 0;
}

/* A wrapper list (base or new side of a diff, or a report's) is the one of `leek report --merge`
 * of both files: one wrapper, with the same samples. */
static void expect_wrappers(const struct json *list, const struct json *merged)
{
	ASSERT_EQ(list->len, 1);
	ASSERT_EQ(merged->len, 1);
	ASSERT_STREQ(get_str(json_at(list, 0), "function"), get_str(json_at(merged, 0), "function"));
	ASSERT_EQ(get_u64(json_at(list, 0), "samples"), get_u64(json_at(merged, 0), "samples"));
}

/* fx-wrapper few keeps its wrapper as the site (3 callers: too few for the rule), fx-wrapper many
 * has it skipped (12 callers). Decided on each side alone, the diff would compare the wrapper
 * (6000 bytes, then gone) with the twelve callers (all new). Decided over both sides' stacks
 * together (138 samples under 12 callers), both sides skip it: the callers are the sites on both,
 * fixture_wcall_0..2 going from 2000 bytes each to 64, 256 and 576, and the wrapper is the one
 * `leek report --merge` of the two files finds. --no-auto-wrappers keeps it on both sides. */
TEST(wrappers_decided_over_both_sides)
{
	char dir[256], *few, *many, name[32];
	struct json *d, *m, *keep;
	const struct json *sites, *stack;
	struct proc p, q, r, t;

	tmp_dir(dir);
	few = run_wrapper(dir, "few", "few");
	many = run_wrapper(dir, "many", "many");
	d = leek_diff_json(&p, dir, (const char *[]){ few, many, NULL });
	m = leek_report_json(&q, dir, (const char *[]){ "--merge", few, many, NULL });
	expect_wrappers(json_get(json_get(d, "base"), "wrappers_skipped"), report_wrappers(m));
	expect_wrappers(json_get(json_get(d, "new"), "wrappers_skipped"), report_wrappers(m));
	sites = json_get(d, "sites");
	ASSERT_EQ(sites->len, 12);
	for (size_t i = 0; i < sites->len; i++) {
		const char *f = get_str(json_at(sites, i), "function");
		unsigned k;
		if (sscanf(f, "fixture_wcall_%u", &k) != 1 || k > 11)
			FAIL("site %zu is %s, not one of fx-wrapper's callers", i + 1, f);
		ASSERT_EQ(get_num(diff_change(json_at(sites, i), "live"), "base_bytes"),
			  wcall_bytes(false, k));
		ASSERT_EQ(get_num(diff_change(json_at(sites, i), "live"), "new_bytes"),
			  wcall_bytes(true, k));
		/* The site's stack names the wrapper it skipped, as the report's does. */
		stack = json_get(json_at(sites, i), "stack");
		ASSERT_TRUE(get_bool(json_at(stack, 0), "wrapper"));
		ASSERT_STREQ(get_str(json_at(stack, 0), "function"),
			     get_str(json_at(report_wrappers(m), 0), "function"));
	}
	/* The text names it too. */
	leek_diff(&r, dir, (const char *[]){ few, many, NULL });
	snprintf(name, sizeof(name), "\n             %.16s", get_str(json_at(report_wrappers(m), 0),
								   "function"));
	if (r.status != 0 || !strstr(r.out, "wrappers     skipped, by what the stacks of both sides") ||
	    !strstr(r.out, name))
		FAIL("leek diff: exit %d, no wrapper line; stdout:\n%s", r.status, r.out);

	keep = leek_diff_json(&t, dir, (const char *[]){ "--no-auto-wrappers", few, many, NULL });
	ASSERT_EQ(json_get(json_get(keep, "options"), "auto_wrappers")->type, JSON_FALSE);
	ASSERT_EQ(json_get(json_get(keep, "new"), "wrappers_skipped")->len, 0);
	sites = json_get(keep, "sites");
	ASSERT_EQ(sites->len, 1);
	ASSERT_STREQ(get_str(json_at(sites, 0), "function"),
		     get_str(json_at(report_wrappers(m), 0), "function"));
	ASSERT_EQ(get_num(diff_change(json_at(sites, 0), "live"), "base_bytes"), 6000);
	ASSERT_EQ(get_num(diff_change(json_at(sites, 0), "live"), "new_bytes"), 41600);
	json_free(d);
	json_free(m);
	json_free(keep);
	proc_free(&p);
	proc_free(&q);
	proc_free(&r);
	proc_free(&t);
	free(few);
	free(many);
	tmp_dir_remove(dir);
}
