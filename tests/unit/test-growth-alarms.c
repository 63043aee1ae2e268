/* test-growth-alarms.c: the growth verdict's false alarms and its delay to see a leak
 * (src/cli/profile/profile-growth.c), against the bounds of docs/sampling.md section 11.
 *
 * No profile and no clock: each site's sampled blocks are simulated (tests/lib/growth-sim.h, as
 * bench/growth-sim.c's are) with fixed seeds, and classified at the moments `leek watch` would.
 * The seeds were never chosen to pass.
 *
 * - A random walk with Gaussian steps is the drift test's exact null: each of the two ways to
 *   "growing" passes it with probability ALPHA at most, so a verdict is growing with probability
 *   2 ALPHA at most.
 * - A 256 MiB cache whose entries live an hour, looked at every 10 minutes for a day: under 1%
 *   of days with a false alarm (144 looks of 2 ALPHA each, the union bound).
 * - A leak of 1 MiB a minute at the default period, looked at every 30 s: "growing" never before
 *   12 of its sampled blocks, and after the predicted delay.
 */
#include <math.h>
#include <stdlib.h>

#include "growth-sim.h"
#include "harness.h"

#define ALPHA 3e-5 /* profile-growth.c's ALPHA_GROWING */

/* A standard normal (Box-Muller). */
static double normal(struct lk_rng *r)
{
	return sqrt(-2 * log(lk_rng_unit(r))) * cos(2 * M_PI * lk_rng_unit(r));
}

/* The exact null of the drift test: a random walk with Gaussian steps (the staircase of many
 * sampled blocks coming and going). 2 ALPHA per verdict at most: 10000 walks expect 0.6 false
 * "growing" at most, and 5 or more has a probability under 4e-4 (Poisson) even then. With the old
 * ALPHA of 0.01 there were hundreds. */
TEST(random_walk_per_verdict)
{
	struct lk_rng r;
	unsigned growing = 0, n = 10000;
	double x[LK_TIMELINE_BUCKETS];
	struct lk_growth g;

	lk_rng_seed(&r, 31, 1);
	for (unsigned k = 0; k < n; k++) {
		x[0] = 1e9;
		for (unsigned i = 1; i < LK_TIMELINE_BUCKETS; i++)
			x[i] = x[i - 1] + 1e6 * normal(&r);
		lk_growth_classify(x, LK_TIMELINE_BUCKETS, 1, 1000, &g);
		growing += g.trend == LK_TREND_GROWING;
	}
	if (growing >= 5)
		FAIL("%u growing of %u random walks, bound 2 ALPHA n = %g", growing, n,
		     2 * ALPHA * n);
}

/* A 256 MiB cache of 4 KiB entries that live an hour, looked at every 10 minutes of a day (watch's
 * default --every): at most 144 x 2 ALPHA = 0.86% of days see a false "growing" (the union
 * bound; the looks are correlated, so the truth is lower). 50 days expect 0.43 at most, and 4 or
 * more has a probability of 0.1%. With the old ALPHA of 0.01, 19 of 100 other days did
 * (bench/growth-sim.sh 100 600 17476 1 268435456 74565). */
TEST(cache_days)
{
	struct lk_rng r;
	unsigned alarmed = 0, days = 50;

	lk_rng_seed(&r, 31, 2);
	for (unsigned d = 0; d < days; d++) {
		struct gsim_site s;
		bool any = false;
		gsim_cache_day(&r, 65536, 4096, 3600, 65536 / 3600.0, &s);
		for (double t = 600; t <= GSIM_DAY && !any; t += 600)
			any = gsim_verdict(&s, t) == LK_TREND_GROWING;
		alarmed += any;
		gsim_site_free(&s);
	}
	if (alarmed >= 4)
		FAIL("%u of %u days with a false growing", alarmed, days);
}

/* A leak of 1 MiB a minute in 1 KiB blocks at the default period, looked at every 30 s: its
 * sampled blocks are a Poisson process of rate lambda = 1/30 a second. Neither way to "growing"
 * can pass with fewer than 12 of them (section 11: the tail's drift test needs 12 steps of one
 * block, the whole run's 15), so that is a hard bound. The whole run's 15 unit steps, with the
 * samples that share a bucket (about 15% at this delay) or fall in the first one (no step) not
 * counting, and half a look, predict a median delay of (15 / 0.85 + 0.3) / lambda + 15 s = 554 s;
 * the median of 200 runs must be within 15% of it, and every run must see it within the hour. */
TEST(leak_delay)
{
	struct lk_rng r;
	double p = -expm1(-1024.0 / GSIM_PERIOD), lambda = 17476.0 / 1024 * p, delay[200];
	unsigned runs = 200, early = 0;

	lk_rng_seed(&r, 31, 3);
	for (unsigned k = 0; k < runs; k++) {
		struct gsim_site s;
		gsim_leak(&r, lambda, 3600, 4096, 1024 / p, &s);
		delay[k] = INFINITY;
		for (double t = 30; t <= 3600; t += 30)
			if (gsim_verdict(&s, t) == LK_TREND_GROWING) {
				delay[k] = t;
				break;
			}
		early += gsim_upto(s.born, s.nborn, delay[k]) < 12;
		gsim_site_free(&s);
	}
	qsort(delay, runs, sizeof(double), gsim_cmp_double);
	ASSERT_EQ(early, 0);
	ASSERT_TRUE(delay[runs - 1] <= 3600);
	double median = (delay[runs / 2 - 1] + delay[runs / 2]) / 2;
	if (fabs(median - 554) > 0.15 * 554)
		FAIL("median delay %g s, predicted 554 s within 15%%", median);
}
