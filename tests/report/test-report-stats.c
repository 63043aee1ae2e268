/* test-report-stats.c: the report's statistics at the default period, end to end.
 *
 * The same program under many fixed seeds: the report's 95% interval for a site of known size
 * must cover the truth as often as docs/sampling.md says it does, and its estimate must be
 * unbiased; and the growth verdicts of three sites of known shape must be right. Every bound is
 * derived in a comment from the math, and no seed was chosen to make a test pass: the seeds are
 * 1..R and 1..3.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "files.h"
#include "fx-stat.h"
#include "harness.h"
#include "report-util.h"

#define PERIOD 524288.0 /* the default; the tests check that the profiles say so */
#define Z95 1.959963984540054

/* Runs at once: the fixtures mostly start, allocate and exit, so a few more than the 2 CI cores
 * keep both busy. */
#define PARALLEL 4

#define note(...) (printf(__VA_ARGS__), fflush(stdout))

/* `leek run --seed S -o DIR/sS.%p.lk -- fixture` for each seed of [first, first + n), then
 * `leek report --format json ARGS... PROFILE` of each; docs[i] gets seed first + i's report.
 * PARALLEL at a time, runs first, then reports. */
static void run_seeds(const char *dir, const char *fixture, unsigned first, unsigned n,
		      const char *const *report_args, struct json **docs)
{
	struct proc p[PARALLEL];

	for (unsigned i = 0; i < n; i += PARALLEL) {
		unsigned m = n - i < PARALLEL ? n - i : PARALLEL;
		char seed[PARALLEL][24], out[PARALLEL][300];
		for (unsigned k = 0; k < m; k++) {
			snprintf(seed[k], sizeof(seed[k]), "%u", first + i + k);
			snprintf(out[k], sizeof(out[k]), "%s/s%u.%%p.lk", dir, first + i + k);
			leek_run_start(&p[k], dir,
				       (const char *[]){ "--seed", seed[k], "-o", out[k], "--", fixture,
							 NULL },
				       60);
		}
		for (unsigned k = 0; k < m; k++) {
			proc_wait(&p[k]);
			if (p[k].status != 0)
				FAIL("seed %u: leek run exited %d:\n%s", first + i + k, p[k].status,
				     p[k].err);
			proc_free(&p[k]);
		}
	}
	for (unsigned i = 0; i < n; i += PARALLEL) {
		unsigned m = n - i < PARALLEL ? n - i : PARALLEL;
		char *profile[PARALLEL];
		for (unsigned k = 0; k < m; k++) {
			const char *args[16];
			char prefix[32];
			size_t a = 0;
			snprintf(prefix, sizeof(prefix), "s%u.", first + i + k);
			profile[k] = find_one(dir, prefix, "");
			ASSERT_TRUE(profile[k] != NULL);
			for (; report_args[a] && a < 14; a++)
				args[a] = report_args[a];
			args[a++] = profile[k];
			args[a] = NULL;
			leek_report_json_start(&p[k], dir, args);
		}
		for (unsigned k = 0; k < m; k++) {
			proc_wait(&p[k]);
			docs[i + k] = leek_report_json_parse(&p[k]);
			/* The profile says it was sampled at the default period. */
			ASSERT_EQ(get_u64(json_path(docs[i + k], "processes.0"), "period"),
				  (uint64_t)PERIOD);
			proc_free(&p[k]);
			free(profile[k]);
		}
	}
}

/* fx-stat leaks FX_STAT_ROUNDS blocks of each of FX_STAT_NSIZES sizes from one site, so its live
 * bytes at the end are known exactly, and so is the variance of the estimate (docs/sampling.md
 * section 4: Var = sum over allocations of s^2 (1 - p) / p, p = 1 - exp(-s/T)):
 *
 *   truth B = 560 * (1000 + 5000 + 20000 + 60000 + 100000) = 104 160 000 bytes
 *   sd      = 7.13 MB (6.8% of B); E[K] = 185 samples, and K_eff >= K for bytes (section 5)
 *
 * so every run is in the regime of the normal interval (K_eff >= 20, by far), and the estimate
 * is nearly symmetric: its skewness, sum s^3 (1-p)(1-2p)/p^2 / Var^1.5, is 0.058, about that of a
 * Poisson count of 300. A simulation of this exact workload with tests/stats/sim.h (40 000 runs,
 * seeds not used here) gave a coverage of 94.9%.
 *
 * Coverage, as in docs/sampling.md section 10: over R = 200 seeds the number of runs whose
 * interval covers B is binomial(200, c) for a true coverage c. The test passes at 180 or more
 * (90%). A correct implementation fails with probability P(binomial(200, 0.95) <= 179) = 0.0012
 * (0.0015 at the simulated 0.949; 0.0093 even at 0.94); an interval of true coverage 0.85 passes
 * with probability P(binomial(200, 0.85) >= 180) = 0.025, and one of 0.80 with 0.0001. R = 100
 * would fail a correct implementation 1.1% of the time at the same 90% threshold.
 *
 * Unbiased: the mean of the R estimates is within 4 sigma of B, sigma = sd / sqrt(R) = 0.504 MB
 * (a two-sided normal tail of 6.3e-5). A bias of 2% of B (2.1 MB) would fail.
 */
TEST(interval_coverage)
{
	static const double sizes[FX_STAT_NSIZES] = FX_STAT_SIZES;
	enum { R = 200, PASS = 180 };
	double truth = 0, var = 0, sum = 0, lo, hi;
	struct json *docs[R];
	unsigned covered = 0, too_few = 0;
	char dir[256];

	for (int k = 0; k < FX_STAT_NSIZES; k++) {
		double p = -expm1(-sizes[k] / PERIOD);
		truth += FX_STAT_ROUNDS * sizes[k];
		var += FX_STAT_ROUNDS * sizes[k] * sizes[k] * (1 - p) / p;
	}
	ASSERT_EQ((uint64_t)truth, 104160000);

	tmp_dir(dir);
	run_seeds(dir, FX("fx-stat"), 1, R,
		  (const char *[]){ "--focus", "^fixture_stat_leak$", NULL }, docs);
	for (unsigned i = 0; i < R; i++) {
		const struct json *s = find_site(docs[i], "fixture_stat_leak");
		if (!s)
			FAIL("seed %u: no fixture_stat_leak site", i + 1);
		double est = get_num(s, "live_bytes");
		get_ci95(s, "live_bytes", &lo, &hi);
		if (!(lo <= est && est <= hi))
			FAIL("seed %u: estimate %.0f outside [%.0f, %.0f]", i + 1, est, lo, hi);
		covered += lo <= truth && truth <= hi;
		too_few += json_get(s, "too_few_samples")->type != JSON_FALSE;
		sum += est;
		json_free(docs[i]);
	}
	double mean = sum / R, sigma = sqrt(var / R);
	note("truth %.0f B; %u of %d intervals cover it (pass: %d); mean estimate %.0f, "
	     "%.2f sigma from the truth (sigma %.0f)\n",
	     truth, covered, R, PASS, mean, (mean - truth) / sigma, sigma);
	ASSERT_EQ(too_few, 0);
	ASSERT_TRUE(covered >= PASS);
	ASSERT_TRUE(fabs(mean - truth) <= 4 * sigma);
	tmp_dir_remove(dir);
}

 /* fx-growth (its comment has the shapes): a steady leak, a pool filled in the first 30% of the run
  * and level after, and pure churn, 64 KiB blocks, about one second, seeds 1 to 3. Why the verdicts
  * are far from their thresholds (src/cli/profile/profile-growth.c, 64 buckets, the last third is
  * 22 points):
 *
 *   leak:  118 samples expected, 1.8 per bucket: a bucket of the last third gains none with
 *          probability about exp(-1.8) = 0.16, so about 18 of its 21 adjacent pairs rise
 *          (3 needed) and Mann-Kendall's z is about 6, p about 1e-10 (3e-5 needed); the drift
 *          test's steps, 2.4 samples a bucket on average, give t about 8 (4.3 needed).
 *   pool:  nothing is allocated or freed in the last 70%: the last third is one constant level
 *          (no rise at all, p = 1), while the whole run rises (p far below 0.01) and the level
 *          of the last third is about 5 times the mean of the first tenth (2 needed).
 *   churn: every block is freed right after its malloc, so no sample is live at a bucket's end:
 *          the series is constant (0), p = 1: flat, with about 470 samples behind it (5
 *          needed for any verdict).
 *
 * The default period gives these sites 120 to 480 samples each; no smaller period is needed.
 */
TEST(growth_trends)
{
	static const struct {
		const char *function, *trend;
	} want[] = {
		{ "fixture_grow_leak", "growing" },
		{ "fixture_grow_pool", "plateau" },
		{ "fixture_grow_churn", "flat" },
	};
	enum { SEEDS = 3 };
	struct json *docs[SEEDS];
	char dir[256];

	tmp_dir(dir);
	run_seeds(dir, FX("fx-growth"), 1, SEEDS,
		  (const char *[]){ "--view", "growth", "--focus", "^fixture_grow_", NULL }, docs);
	for (unsigned i = 0; i < SEEDS; i++) {
		for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
			const struct json *s = find_site(docs[i], want[k].function);
			if (!s)
				FAIL("seed %u: no site %s", i + 1, want[k].function);
			note("seed %u: %-20s %-8s confidence %.4f, %llu samples\n", i + 1,
			     want[k].function, get_str(s, "trend"), get_num(s, "trend_confidence"),
			     (unsigned long long)get_u64(s, "alloc_samples"));
			if (strcmp(get_str(s, "trend"), want[k].trend) != 0)
				FAIL("seed %u: %s is \"%s\", expected \"%s\"", i + 1,
				     want[k].function, get_str(s, "trend"), want[k].trend);
		}
		/* The growth view ranks growing sites first, then plateaus, then flat ones. */
		ASSERT_STREQ(get_str(json_at(report_sites(docs[i]), 0), "function"),
			     "fixture_grow_leak");
		ASSERT_STREQ(get_str(json_at(report_sites(docs[i]), 1), "function"),
			     "fixture_grow_pool");
		json_free(docs[i]);
	}
	tmp_dir_remove(dir);
}
