/* profile-growth.c: is a stack's live heap still growing, has it levelled off, or is it flat?
 * (lk_growth_classify, for the report's leak verdicts.)
 *
 * The input is one stack's live-bytes estimate at the end of each of n equal buckets of the run
 * (profile.c). Live bytes are a running sum, allocations minus frees, and that shapes the noise:
 * with sampling the series is a staircase (each sampled block moves it by about one period T and
 * it stays exactly level in between: profile.c sums in fixed point), short-lived blocks add
 * independent noise to each point, and long-lived ones that turn over (a cache) make it wander
 * like a random walk pulled back to its mean. Two one-sided tests for a rise, each blind where
 * the other sees:
 *
 *   Mann-Kendall (Mann 1945; Kendall, "Rank correlation methods", 1975): S = sum over pairs
 *   i < j of sign(x[j] - x[i]); with exchangeable points E[S] = 0 and Var[S] = (n(n-1)(2n+5) -
 *   sum over groups of t tied values of t(t-1)(2t+5)) / 18 (ties are the rule in a staircase);
 *   z = (S - sign S) / sqrt(Var[S]), p = P(N(0,1) >= z). Any monotone shape, any noise law; but
 *   it takes the wander of a turning-over cache for a trend (alone, on the last third, it called
 *   a full 8 MiB cache with random replacement "growing" in 42 simulated runs of 200, and churn
 *   with blocks in flight at the end in 3).
 *
 *   Drift: the series as a random walk, the t-test of the mean of its n - 1 steps (Student's t
 *   with n - 2 degrees of freedom). A leak is a random walk with drift, so this is its natural
 *   test; a wander that returns to its mean cannot pass it, and neither can a jump at the very
 *   end (one step among many gives t of about 1: a churning process stopped mid-request).
 *
 * The verdicts, with the last third of the run as "now" (the last ceil(n/3) points, 22 of 64):
 *
 * 1. UNKNOWN: fewer than MIN_SAMPLES sampled blocks (allocated or inherited) behind the series,
 *    or fewer than MIN_POINTS points. Below 5 samples an estimate is an order of magnitude and
 *    nothing more (docs/sampling.md section 5), let alone a trend.
 * 2. GROWING: the last third rises by both tests, p = the larger p-value < ALPHA_GROWING; or the
 *    whole run rises by both at p < ALPHA_GROWING and either the last third's steps are not
 *    significantly smaller than the earlier ones (Welch's t-test on the steps, at ALPHA) or the
 *    last third still rises at ALPHA: a slow leak whose last third alone is too few samples.
 * 3. PLATEAU: the whole run rises by both tests (at ALPHA) and the last third's steps are
 *    significantly smaller, and the last third no longer rises at ALPHA; or, for a level that turns over heavily (the drift test drowns in its noise), the
 *    whole run rises by Mann-Kendall alone at p < ALPHA_RANKS_ONLY. In both cases the mean of the
 *    last third must be at least PLATEAU_RATIO times the mean of the first tenth, and the last
 *    third must not be falling (Mann-Kendall downwards): it grew, and no longer does (a pool
 *    filled, a cache warmed).
 * 4. FLAT: anything else: no rise, a rise too small against where it started, a rise and a fall.
 *
 * confidence is 1 - p of the test behind the verdict (the larger p-value when several decide);
 * for FLAT it is the whole run's p-value for a rise itself (1 when the series never rises), so
 * that a clearly flat series scores high and a near miss low. slope_bytes_s is Sen's slope (Sen
 * 1968): the median of (x[j] - x[i]) / (j - i) over the pairs of the last third, per second; it
 * says how fast a site grows now (0 for a staircase with fewer steps than level stretches).
 *
 * ALPHA_GROWING = 3e-5 is set by the false alarms a day of `leek watch` (docs/sampling.md section
 * 11): a steady site whose level wanders like a random walk is the drift test's null, so each way
 * to "growing" passes with probability ALPHA_GROWING at most, 2 ALPHA_GROWING a look, and 144 looks
 * a day (watch's default --every 10m) stay under 1% by the union bound. The price is the samples
 * a leak needs: 15 of them (6 at 0.01), about 9.5 minutes for 1 MiB a minute at the default period
 * (tests/unit/test-growth-alarms.c). The plateau's tests keep ALPHA = 0.01: lowering it would call
 * more filled pools growing. Otherwise p-values read as "how unlike noise". Checked by
 * simulating libleek's sampler at the default period over 200 seeds (101-300; tests/unit/
 * test-profile-growth.c runs 1-12): over 1 s, a 40 MiB leak was growing in 200 of 200, a 10 MiB
 * one (about 20 samples, near the 15 that growing needs) in 110 (flat 85, plateau 5; 193 at
 * 0.01), a 16 MiB pool filled in the first 30% a plateau in 200, 180 MiB of churn with 5 ms
 * lifetimes flat in 200, and the cache never growing (flat 198, plateau 2).
 * Pure function of its arguments, no state.
 */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "profile.h"

#define MIN_SAMPLES 5
#define MIN_POINTS 8
#define ALPHA 0.01             /* the plateau's tests: a slowdown, a fall */
#define ALPHA_GROWING 3e-5     /* "growing": under 1% of days with a false one at watch's 144
				* looks a day (docs/sampling.md section 11) */
#define ALPHA_RANKS_ONLY 0.001 /* a plateau seen by Mann-Kendall alone */
#define PLATEAU_RATIO 2.0

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

/* Mann-Kendall's z for x[0..n), tie-corrected, with the continuity correction; 0 when every
 * value is tied. */
static double mann_kendall_z(const double *x, unsigned n)
{
	double sorted[LK_TIMELINE_BUCKETS], var;
	long s = 0;

	for (unsigned i = 0; i < n; i++)
		for (unsigned j = i + 1; j < n; j++)
			s += (x[j] > x[i]) - (x[j] < x[i]);
	for (unsigned i = 0; i < n; i++)
		sorted[i] = x[i];
	qsort(sorted, n, sizeof(*sorted), cmp_double);
	var = (double)n * (n - 1) * (2.0 * n + 5);
	for (unsigned i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && sorted[j] == sorted[i];)
			j++;
		double t = j - i;
		var -= t * (t - 1) * (2 * t + 5);
	}
	var /= 18;
	if (s == 0 || !(var > 0))
		return 0;
	return (double)(s > 0 ? s - 1 : s + 1) / sqrt(var);
}

static double normal_upper(double z)
{
	return 0.5 * erfc(z / sqrt(2.0));
}

/* P(T >= t) for Student's t with nu >= 1 degrees of freedom, by the finite sums of Abramowitz
 * and Stegun 26.7.3 and 26.7.4 (exact for integer nu). */
static double student_upper(double t, unsigned nu)
{
	double th = atan(t / sqrt((double)nu)), c2 = cos(th) * cos(th), term = 1, sum = 1, a;

	if (nu % 2) {
		for (unsigned k = 3; k + 2 <= nu; k += 2) {
			term *= (k - 1.0) / k * c2;
			sum += term;
		}
		a = 2 / M_PI * (th + (nu > 1 ? sin(th) * cos(th) * sum : 0));
	} else {
		for (unsigned k = 2; k + 2 <= nu; k += 2) {
			term *= (k - 1.0) / k * c2;
			sum += term;
		}
		a = sin(th) * sum;
	}
	return (1 - a) / 2;
}

/* One-sided p-value of a drift upwards, the series taken as a random walk: the t-test of the
 * mean of its n - 1 steps. */
static double drift_up(const double *x, unsigned n)
{
	unsigned m = n - 1;
	double mean, var = 0;

	if (n < 3)
		return 1;
	mean = (x[n - 1] - x[0]) / m;
	for (unsigned i = 1; i < n; i++)
		var += (x[i] - x[i - 1] - mean) * (x[i] - x[i - 1] - mean);
	var /= m - 1;
	if (!(var > 0)) /* every step the same: a straight line */
		return mean > 0 ? 0 : 1;
	return student_upper(mean / sqrt(var / m), m - 1);
}

/* One-sided p-value that the steps of a[0..na) climb faster on average than those of b[0..nb)
 * (Welch's t-test on the steps, the Welch-Satterthwaite degrees of freedom rounded down). */
static double slowdown(const double *a, unsigned na, const double *b, unsigned nb)
{
	double ma, mb, va = 0, vb = 0, se2, df;
	unsigned m = na - 1, k = nb - 1;

	if (na < 3 || nb < 3)
		return 1;
	ma = (a[na - 1] - a[0]) / m;
	mb = (b[nb - 1] - b[0]) / k;
	for (unsigned i = 1; i < na; i++)
		va += (a[i] - a[i - 1] - ma) * (a[i] - a[i - 1] - ma);
	for (unsigned i = 1; i < nb; i++)
		vb += (b[i] - b[i - 1] - mb) * (b[i] - b[i - 1] - mb);
	va /= (m - 1) * (double)m; /* now the variances of the two means */
	vb /= (k - 1) * (double)k;
	se2 = va + vb;
	if (!(se2 > 0))
		return ma > mb ? 0 : 1;
	df = se2 * se2 / (va * va / (m - 1) + vb * vb / (k - 1));
	return student_upper((ma - mb) / sqrt(se2), df >= 1 ? (unsigned)df : 1);
}

static double max2(double a, double b)
{
	return a > b ? a : b;
}

/* Sen's slope of x[0..n) per step. */
static double sen_slope(const double *x, unsigned n)
{
	_Static_assert(LK_TIMELINE_BUCKETS <= 64, "the pairs fit the buffer");
	double d[64 * 63 / 2];
	size_t k = 0;

	if (n < 2)
		return 0;
	for (unsigned i = 0; i < n; i++)
		for (unsigned j = i + 1; j < n; j++)
			d[k++] = (x[j] - x[i]) / (j - i);
	qsort(d, k, sizeof(*d), cmp_double);
	return k % 2 ? d[k / 2] : (d[k / 2 - 1] + d[k / 2]) / 2;
}

static double mean(const double *x, unsigned n)
{
	double s = 0;

	for (unsigned i = 0; i < n; i++)
		s += x[i];
	return n ? s / n : 0;
}

/* Rose, and levelled off: the tail is well above the start and not falling. */
static bool levelled(const double *series, unsigned n, const double *tail, unsigned last)
{
	unsigned first = n / 10 ? n / 10 : 1;
	double m = mean(tail, last);

	return m > 0 && m >= PLATEAU_RATIO * mean(series, first) &&
	       normal_upper(-mann_kendall_z(tail, last)) >= ALPHA;
}

void lk_growth_classify(const double *series, unsigned n, double bucket_s, uint64_t samples,
			struct lk_growth *ret)
{
	double p_last, p_mk, p_rw, p_slow;
	const double *tail;
	unsigned last;

	*ret = (struct lk_growth){ .trend = LK_TREND_UNKNOWN };
	if (n > LK_TIMELINE_BUCKETS)
		n = LK_TIMELINE_BUCKETS;
	last = (n + 2) / 3;
	tail = series + n - last;
	if (n >= 2 && bucket_s > 0)
		ret->slope_bytes_s = sen_slope(tail, last) / bucket_s;
	if (samples < MIN_SAMPLES || n < MIN_POINTS)
		return;

	/* Still rising in the tail, by both tests. */
	p_last = max2(normal_upper(mann_kendall_z(tail, last)), drift_up(tail, last));
	if (p_last < ALPHA_GROWING) {
		ret->trend = LK_TREND_GROWING;
		ret->confidence = 1 - p_last;
		return;
	}
	p_mk = normal_upper(mann_kendall_z(series, n));
	p_rw = drift_up(series, n);
	if (max2(p_mk, p_rw) < ALPHA) {
		/* Rose through the run beyond a random walk's reach. The head is everything
		 * before the tail, sharing its first point. */
		p_slow = slowdown(series, n - last + 1, tail, last);
		if (p_slow >= ALPHA || p_last < ALPHA) { /* no sign of slowing down, or still
							   * rising: a slow leak, if sure enough */
			if (max2(p_mk, p_rw) < ALPHA_GROWING) {
				ret->trend = LK_TREND_GROWING;
				ret->confidence = 1 - max2(p_mk, p_rw);
				return;
			}
		} else if (levelled(series, n, tail, last)) {
			ret->trend = LK_TREND_PLATEAU;
			ret->confidence = 1 - max2(max2(p_mk, p_rw), p_slow);
			return;
		}
	} else if (p_mk < ALPHA_RANKS_ONLY && levelled(series, n, tail, last)) {
		/* Rose by rank, but within the noise of a heavy turnover: a warmed cache. */
		ret->trend = LK_TREND_PLATEAU;
		ret->confidence = 1 - p_mk;
		return;
	}
	ret->trend = LK_TREND_FLAT;
	ret->confidence = max2(p_mk, p_rw);
}
