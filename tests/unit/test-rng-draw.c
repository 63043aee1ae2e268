/* test-rng-draw.c: the ziggurat behind lk_rng_interval() (rng.h, docs/sampling.md section 3).
 *
 * Checks the committed table (rng-table.h) against its definition, the draws' law against the
 * exact exponential with large samples (Kolmogorov-Smirnov, and chi-square over the layers and
 * over equiprobable bins), that the rare paths are taken at the rate the table implies, and that
 * the common path raises no floating-point flag. Fixed seeds; every bound is derived here. Never
 * tune a bound or change a seed to make a test pass.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <xmmintrin.h>

#include "harness.h"

/* The paths taken, counted through rng.h's test seam. */
static uint64_t path_count[8];
#define LK_RNG_COUNT(what) (path_count[what]++)
#include "rng.h"

#define SEED 0x6c65656b2d7a6967ull /* "leek-zig" */
#define note(...) (printf(__VA_ARGS__), fflush(stdout))
#define N    LK_ZIG_LAYERS

static long double edge(int i) /* x_i; x_256 = 0 */
{
	return i < N ? (long double)lk_zig[i].w * 0x1.0p-60L : 0.0L;
}

/* Upper 1-alpha point of chi-square with k degrees of freedom (Wilson and Hilferty 1931; within
 * 0.5% of the exact point for k >= 100 at alpha = 0.001). */
static double chisq_crit(double k, double z_alpha)
{
	double a = 2.0 / (9.0 * k);

	return k * pow(1.0 - a + z_alpha * sqrt(a), 3);
}
#define Z_0_001 3.0902 /* the normal's upper 0.1% point */

/* ---- the table ---- */

TEST(rng_table_consistent)
{
	long double v = edge(0) * expl(-edge(1)); /* the base strip's area: x_0 f(r) */
	long double r = edge(1);

	/* The base strip is the rectangle [0, r] x [0, f(r)] and the tail: v = r f(r) + exp(-r). */
	ASSERT_NEAR((double)(v / (r * expl(-r) + expl(-r))), 1.0, 1e-17);
	for (int i = 0; i < N; i++) {
		unsigned __int128 next = i + 1 < N ? lk_zig[i + 1].w : 0;
		unsigned __int128 k = ((next << 56) + lk_zig[i].w - 1) / lk_zig[i].w;

		ASSERT_TRUE(lk_zig[i].w > next);         /* edges strictly decrease */
		ASSERT_EQ(lk_zig[i].k, (uint64_t)k);     /* u < k exactly when u x_i < x_{i+1} */
		ASSERT_NEAR(lk_zig_f[i] / (double)expl(-edge(i)), 1.0, 0x1.0p-52);
		if (i >= 1) /* every layer above the base has the same area v */
			ASSERT_NEAR((double)(edge(i) * (expl(-edge(i + 1)) - expl(-edge(i))) / v),
				    1.0, 1e-15);
	}
	ASSERT_EQ(lk_zig[N - 1].k, 0); /* the top layer is all wedge */
	ASSERT_TRUE(lk_zig_f[N] == 1.0);
	/* The tail keeps U = j 2^-53 <= exp(-r): J is the largest such j, and 2^-11 >= exp(-r). */
	ASSERT_TRUE((long double)LK_ZIG_TAIL_J * 0x1.0p-53L <= expl(-r));
	ASSERT_TRUE((long double)(LK_ZIG_TAIL_J + 1) * 0x1.0p-53L > expl(-r));
	ASSERT_TRUE(expl(-r) <= 0x1.0p-11L);
	note("r = %.17Lg, v = %.17Lg, area 256 v = %.9Lg\n", r, v, 256 * v);
}

/* ---- the law ---- */

/* At T = 2^40 the countdown c = floor(x T) + 1 gives x = (c - 1) / T to within 2^-40, far below
 * what n = 10^7 draws can see (bins of probability 1e-5 or more, counts of 100 or more). */
#define T40 ((uint64_t)1 << 40)

static double draw_x(struct lk_rng *r)
{
	return (double)(lk_rng_interval(r, T40) - 1) * 0x1.0p-40;
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Kolmogorov-Smirnov against F(x) = 1 - exp(-x), fully specified. P(sqrt(n) D > 1.9495) = 0.001
 * in the limit (Kolmogorov 1933); at n = 10^6 the finite-n correction (Stephens 1970:
 * sqrt(n) + 0.12 + 0.11 / sqrt(n)) moves it by 1e-4. */
TEST(rng_draw_ks)
{
	enum { n = 1000000 };
	static double z[n];
	struct lk_rng r;
	double d = 0;

	lk_rng_seed(&r, SEED, 1);
	for (int i = 0; i < n; i++)
		z[i] = -expm1(-draw_x(&r));
	qsort(z, n, sizeof(z[0]), dbl_cmp);
	for (int i = 0; i < n; i++)
		d = fmax(d, fmax((double)(i + 1) / n - z[i], z[i] - (double)i / n));
	note("KS: sqrt(n) D = %.4f (reject above 1.9495)\n", sqrt((double)n) * d);
	ASSERT_TRUE(sqrt((double)n) * d < 1.9495);
}

static double chisq(const uint64_t *count, const double *p, int bins, uint64_t n)
{
	double s = 0;

	for (int b = 0; b < bins; b++) {
		double e = p[b] * (double)n;

		s += ((double)count[b] - e) * ((double)count[b] - e) / e;
	}
	return s;
}

/* Chi-square over the ziggurat's own intervals [x_{i+1}, x_i) and the tail [r, inf): a layer
 * whose width, threshold or wedge were wrong would move mass between exactly these bins. And
 * chi-square over 1000 equiprobable bins, for the shape within layers. 256 and 1000 bins give 255
 * and 999 degrees of freedom; each test rejects at 0.1%. */
TEST(rng_draw_chisq)
{
	enum { n = 10000000, EQ = 1000 };
	static uint64_t layer[N], eq[EQ];
	static double pl[N], pe[EQ];
	struct lk_rng r;

	for (int i = 0; i < N; i++) /* bin i: [x_{i+1}, x_i), bin 0: [r, inf) */
		pl[i] = i == 0 ? exp(-(double)edge(1))
			       : exp(-(double)edge(i + 1)) - exp(-(double)edge(i));
	for (int b = 0; b < EQ; b++)
		pe[b] = 1.0 / EQ;
	lk_rng_seed(&r, SEED, 2);
	for (int k = 0; k < n; k++) {
		double x = draw_x(&r);
		int lo = 0, hi = N - 1; /* the largest i with x < x_i: edges decrease */

		while (lo < hi) {
			int mid = (lo + hi + 1) / 2;

			if (x < (double)edge(mid))
				lo = mid;
			else
				hi = mid - 1;
		}
		layer[x < (double)edge(1) ? lo : 0]++;
		int b = (int)(-expm1(-x) * EQ);
		eq[b < EQ ? b : EQ - 1]++;
	}
	double cl = chisq(layer, pl, N, n), ce = chisq(eq, pe, EQ, n);
	double kl = chisq_crit(N - 1, Z_0_001), ke = chisq_crit(EQ - 1, Z_0_001);

	note("layers: chi2 = %.1f on %d df (reject above %.1f); tail %llu, expected %.0f\n", cl,
	     N - 1, kl, (unsigned long long)layer[0], pl[0] * n);
	note("equiprobable: chi2 = %.1f on %d df (reject above %.1f)\n", ce, EQ - 1, ke);
	ASSERT_TRUE(cl < kl);
	ASSERT_TRUE(ce < ke);
}

/* ---- the rare paths ---- */

static void assert_binomial(const char *what, uint64_t got, uint64_t trials, double p)
{
	double e = p * (double)trials, sigma = sqrt(e * (1 - p));

	note("%s: %llu of %llu (%.4f%%), expected %.0f +- %.0f\n", what,
	     (unsigned long long)got, (unsigned long long)trials, 100.0 * (double)got / trials, e,
	     sigma);
	ASSERT_NEAR((double)got, e, 4 * sigma);
}

/* Each attempt (a draw, or a fresh start after a wedge's rejection) is uniform over the 256
 * layers of total area A: it leaves the common path with probability (1/256) sum (1 - k_i 2^-56),
 * reaches the tail with (1/256)(1 - k_0 2^-56), and is rejected with 1 - 1/A (the area outside
 * the curve). A tail try is kept with probability J 2^-42. Binomial counts, 4 sigma. */
TEST(rng_draw_rare_rates)
{
	const uint64_t n = 10000000;
	long double area = edge(0) * expl(-edge(1)), p_rare = 0;
	struct lk_rng r;

	for (int i = 1; i < N; i++)
		area += edge(i) * (expl(-edge(i + 1)) - expl(-edge(i)));
	for (int i = 0; i < N; i++)
		p_rare += (1 - (long double)lk_zig[i].k * 0x1.0p-56L) / N;
	long double p_tail = (1 - (long double)lk_zig[0].k * 0x1.0p-56L) / N;

	lk_rng_seed(&r, SEED, 3);
	for (uint64_t k = 0; k < n; k++)
		lk_rng_interval(&r, 524288);
	uint64_t attempts = n + path_count[LK_RNG_WEDGE_REJECT];

	note("rare path in %.3f%% of draws\n", 100.0 * (double)path_count[LK_RNG_RARE] / n);
	assert_binomial("rare", path_count[LK_RNG_RARE], attempts, (double)p_rare);
	assert_binomial("tail", path_count[LK_RNG_TAIL] - path_count[LK_RNG_TAIL_REJECT], attempts,
			(double)p_tail);
	assert_binomial("rejected", path_count[LK_RNG_WEDGE_REJECT], attempts,
			(double)(1 - 1 / area));
	assert_binomial("tail try kept", path_count[LK_RNG_TAIL] - path_count[LK_RNG_TAIL_REJECT],
			path_count[LK_RNG_TAIL], (double)LK_ZIG_TAIL_J * 0x1.0p-42);
}

/* ---- the floating-point environment ---- */

/* The common path on its own raises no flag: MXCSR unchanged after each call with all flags
 * clear. Then with every exception unmasked, where any floating-point operation outside the rare
 * path's protection would trap (SIGFPE kills this forked test), whole draws leave MXCSR as it
 * was, rare paths included. */
TEST(rng_draw_fp_environment)
{
	const unsigned clean = 0x1f80; /* every exception masked, no flag */
	struct lk_rng r;
	uint64_t fast = 0, sum = 0;

	lk_rng_seed(&r, SEED, 4);
	_mm_setcsr(clean);
	for (int k = 0; k < 1000000; k++) {
		uint64_t v = lk_rng_zig_fast(lk_rng_next(&r), 524288);

		fast += v != 0;
		sum += v;
		if (_mm_getcsr() != clean)
			FAIL("the common path changed MXCSR to %#x", _mm_getcsr());
	}
	ASSERT_TRUE(fast > 970000); /* 97.8% expected (rng_draw_rare_rates) */

	/* masked; unmasked; masked and toward zero; masked with every flag set; unmasked with inexact
	 * already raised */
	static const unsigned modes[] = { 0x1f80, 0x0000, 0x7f80, 0x1f80 | 0x3f, 0x0000 | 0x20 };
	for (unsigned m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		uint64_t rare = path_count[LK_RNG_RARE];

		_mm_setcsr(modes[m]);
		for (int k = 0; k < 200000; k++) {
			sum += lk_rng_interval(&r, 524288);
			if (_mm_getcsr() != modes[m])
				FAIL("a draw changed MXCSR from %#x to %#x", modes[m], _mm_getcsr());
		}
		_mm_setcsr(clean);
		ASSERT_TRUE(path_count[LK_RNG_RARE] - rare > 1000); /* the rare path ran */
	}
	note("checksum %llu\n", (unsigned long long)sum);
}
