/* test-interval.c: the law of lk_rng_interval(), the countdown between two samples.
 *
 * Checks that the countdown c = floor(X) + 1, X ~ Exp(T), has the geometric law of
 * docs/sampling.md section 3: its mean within 4 sigma of the exact 1/(1 - exp(-1/T)), its whole
 * distribution by an Anderson-Darling test at 1%, that the same test rejects wrong laws, and that
 * every countdown is in [1, 2^62] for every period. Every bound is derived in section 10 of that
 * page; never tune one, and never change a seed to make a test pass.
 */
#include <stdlib.h>

#include "harness.h"
#include "sim.h"

#define SEED 0x6c65656b2d737461ull /* "leek-sta" */

/* Exact moments of the countdown, a geometric variable with success probability p1. */
static double countdown_mean(uint64_t period)
{
	return 1.0 / -expm1(-1.0 / (double)period);
}

static double countdown_var(uint64_t period)
{
	double p1 = -expm1(-1.0 / (double)period);

	return (1.0 - p1) / (p1 * p1);
}

/* Mean of n draws, minus `shift` from each (to test wrong roundings). */
static double draw_mean(uint64_t period, uint64_t n, uint64_t stream, double shift)
{
	struct lk_rng r;
	double sum = 0;

	lk_rng_seed(&r, SEED, stream);
	for (uint64_t i = 0; i < n; i++)
		sum += (double)lk_rng_interval(&r, period) - shift;
	return sum / (double)n;
}

TEST(interval_mean)
{
	static const uint64_t periods[] = { 2, 524288, (uint64_t)1 << 40 };
	const uint64_t n = 1000000;

	for (unsigned i = 0; i < sizeof(periods) / sizeof(periods[0]); i++) {
		uint64_t t = periods[i];
		double mean = draw_mean(t, n, i, 0);
		double want = countdown_mean(t), sigma = sqrt(countdown_var(t) / (double)n);

		note("T=%llu: mean %.6g, exact %.6g, (mean-exact)/sigma = %+.2f\n",
		     (unsigned long long)t, mean, want, (mean - want) / sigma);
		ASSERT_NEAR(mean, want, 4 * sigma);
	}
}

/* At T = 2 the mean check sees the rounding: the countdown without its +1 (mean 1.54), and even
 * the continuous mean plus one half (2.5, against the exact 2.5415), are rejected. */
TEST(interval_mean_power)
{
	const uint64_t n = 1000000;
	double want = countdown_mean(2), sigma = sqrt(countdown_var(2) / (double)n);
	double floor_only = draw_mean(2, n, 0, 1.0);

	note("T=2: floor(X) mean %.6g, exact %.6g, 4 sigma %.3g\n", floor_only, want, 4 * sigma);
	ASSERT_TRUE(fabs(floor_only - want) > 4 * sigma);
	ASSERT_TRUE(fabs(2.5 - want) > 4 * sigma);
}

/* ---- Anderson-Darling, fully specified null (the mean is known) ---- */

/* 1% critical value of A^2 when the null distribution is fully specified ("case 0"); it holds
 * for n >= 5 without modification. Anderson and Darling (1954), JASA 49:765; Stephens (1974),
 * JASA 69:730, Table 1; D'Agostino and Stephens (1986), Goodness-of-Fit Techniques, Table 4.2. */
#define AD_CRIT_1PCT 3.857
#define AD_N         10000

struct pit {
	double z, zc; /* z and 1 - z, each computed without cancellation */
};

static int pit_cmp(const void *a, const void *b)
{
	double x = ((const struct pit *)a)->z, y = ((const struct pit *)b)->z;

	return (x > y) - (x < y);
}

/* Randomized probability integral transform of a countdown c under the law of section 3:
 * z = F(c-1) + W (F(c) - F(c-1)) with F(k) = 1 - exp(-k/T), exactly uniform if c has that law
 * (Dunn and Smyth 1996). */
static struct pit pit_of(uint64_t c, uint64_t period, double w)
{
	double a = (double)(c - 1) / (double)period, p1 = -expm1(-1.0 / (double)period);

	return (struct pit){
		.z = -expm1(-a) + w * exp(-a) * p1,
		.zc = exp(-a) * (1.0 - w * p1),
	};
}

static double ad_statistic(struct pit *u, size_t n)
{
	double sum = 0;

	qsort(u, n, sizeof(*u), pit_cmp);
	/* sum_i (2i-1) [ln z_(i) + ln(1 - z_(n+1-i))], regrouped by order statistic. */
	for (size_t j = 1; j <= n; j++)
		sum += (double)(2 * j - 1) * log(u[j - 1].z) +
		       (double)(2 * n + 1 - 2 * j) * log(u[j - 1].zc);
	return -(double)n - sum / (double)n;
}

enum law { LAW_LEEK, LAW_SCALED_1_1, LAW_UNIFORM, LAW_ERLANG2, LAW_PLUS_ONE };

/* One countdown from the law under test: leek's own, or a deliberately wrong one with the
 * same scale. */
static uint64_t draw(struct lk_rng *r, uint64_t period, enum law law)
{
	double t = (double)period;

	switch (law) {
	case LAW_LEEK:
		return lk_rng_interval(r, period);
	case LAW_SCALED_1_1:
		return (uint64_t)(-log(lk_rng_unit(r)) * 1.1 * t) + 1;
	case LAW_UNIFORM: /* same mean */
		return (uint64_t)(lk_rng_unit(r) * 2.0 * t) + 1;
	case LAW_ERLANG2: /* sum of two Exp(T/2): same mean, wrong shape */
		return (uint64_t)((-log(lk_rng_unit(r)) - log(lk_rng_unit(r))) * 0.5 * t) + 1;
	case LAW_PLUS_ONE:
		return lk_rng_interval(r, period) + 1;
	}
	abort();
}

/* A^2 of AD_N countdowns of `law` against leek's law at `period`. W comes from its own stream so
 * that it is independent of the draws. */
static double ad_run(uint64_t period, enum law law, uint64_t stream)
{
	static struct pit u[AD_N];
	struct lk_rng r, w;

	lk_rng_seed(&r, SEED, 2 * stream);
	lk_rng_seed(&w, SEED, 2 * stream + 1);
	for (size_t i = 0; i < AD_N; i++)
		u[i] = pit_of(draw(&r, period, law), period, lk_rng_unit(&w));
	return ad_statistic(u, AD_N);
}

TEST(interval_anderson_darling)
{
	static const uint64_t periods[] = { 2, 524288 };

	for (unsigned i = 0; i < sizeof(periods) / sizeof(periods[0]); i++) {
		double a2 = ad_run(periods[i], LAW_LEEK, 10 + i);

		note("T=%llu: A^2 = %.4f (reject above %.3f)\n", (unsigned long long)periods[i],
		     a2, AD_CRIT_1PCT);
		ASSERT_TRUE(a2 < AD_CRIT_1PCT);
	}
}

/* The test has power: each wrong law is rejected. Expected A^2 (docs/sampling.md section 10):
 * scaled by 1.1 about 38, uniform about 590, Erlang-2 about 420, all with n = 10^4. */
TEST(interval_anderson_darling_power)
{
	static const struct {
		uint64_t period;
		enum law law;
		const char *name;
	} alt[] = {
		{ 524288, LAW_SCALED_1_1, "scaled by 1.1" },
		{ 524288, LAW_UNIFORM, "uniform (0, 2T)" },
		{ 524288, LAW_ERLANG2, "Erlang-2, mean T" },
		{ 2, LAW_PLUS_ONE, "countdown + 1, T = 2" },
	};

	for (unsigned i = 0; i < sizeof(alt) / sizeof(alt[0]); i++) {
		double a2 = ad_run(alt[i].period, alt[i].law, 20 + i);

		note("%s: A^2 = %.1f (must exceed %.3f)\n", alt[i].name, a2, AD_CRIT_1PCT);
		ASSERT_TRUE(a2 > AD_CRIT_1PCT);
	}
}

/* ---- range ---- */

TEST(interval_range)
{
	static const uint64_t periods[] = {
		2, 3, 524288, (uint64_t)1 << 40, (uint64_t)1 << 56, (uint64_t)1 << 57,
		(uint64_t)1 << 61, (uint64_t)1 << 62, (uint64_t)1 << 63, UINT64_MAX,
	};
	const uint64_t cap = (uint64_t)1 << 62;
	struct lk_rng r;

	lk_rng_seed(&r, SEED, 30);
	for (uint64_t t = 0; t <= 1; t++) /* exact mode, and 0 treated as exact */
		for (int i = 0; i < 1000; i++)
			ASSERT_EQ(lk_rng_interval(&r, t), 1);

	for (unsigned i = 0; i < sizeof(periods) / sizeof(periods[0]); i++) {
		uint64_t capped = 0;

		for (int k = 0; k < 100000; k++) {
			uint64_t c = lk_rng_interval(&r, periods[i]);

			ASSERT_TRUE(c >= 1);
			ASSERT_TRUE(c <= cap);
			capped += c == cap;
		}
		/* The cap is reachable only when 36.74 T + 1 > 2^62, i.e. T > 2^56. */
		if (periods[i] <= (uint64_t)1 << 56)
			ASSERT_EQ(capped, 0);
	}
}

/* A state whose next lk_rng_next() returns `out`: xoshiro256** outputs rotl(s1 * 5, 7) * 9, so
 * s1 = rotr(out * 9^-1, 7) * 5^-1 (mod 2^64). */
static uint64_t inverse(uint64_t a) /* a odd */
{
	uint64_t x = a;

	for (int i = 0; i < 6; i++) /* Newton: each step doubles the correct low bits */
		x *= 2 - a * x;
	return x;
}

static struct lk_rng state_giving(uint64_t out)
{
	uint64_t y = out * inverse(9);

	y = y >> 7 | y << 57;
	return (struct lk_rng){ .s = { 0, y * inverse(5), 0, 0 } };
}

/* The two extreme uniforms: U = 1 gives the shortest countdown, 1 (never 0); U = 2^-53 gives
 * the longest, floor(53 ln 2 * T) + 1, or the cap 2^62 once that passes it. */
TEST(interval_extreme_uniforms)
{
	static const uint64_t periods[] = {
		2, 524288, (uint64_t)1 << 56, (uint64_t)1 << 57, (uint64_t)1 << 63, UINT64_MAX,
	};
	const uint64_t cap = (uint64_t)1 << 62;
	struct lk_rng r = state_giving(UINT64_MAX);

	ASSERT_EQ(lk_rng_next(&r), UINT64_MAX);
	r = state_giving(0);
	ASSERT_EQ(lk_rng_next(&r), 0);

	for (unsigned i = 0; i < sizeof(periods) / sizeof(periods[0]); i++) {
		double longest = 53 * log(2.0) * (double)periods[i];

		r = state_giving(UINT64_MAX);
		ASSERT_EQ(lk_rng_interval(&r, periods[i]), 1);

		r = state_giving(0);
		uint64_t c = lk_rng_interval(&r, periods[i]);
		if (longest < 0x1.0p62) {
			ASSERT_NEAR((double)c, floor(longest) + 1, longest * 1e-14 + 1);
			ASSERT_TRUE(c < cap);
		} else {
			ASSERT_EQ(c, cap);
		}
	}
}
