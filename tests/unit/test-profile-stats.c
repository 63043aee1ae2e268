 /* test-profile-stats.c: the estimators and intervals of docs/sampling.md (sections 4 to 6) as
  * src/cli/profile/profile-stats.c and profile.c compute them: weights, K_eff, the normal and the
  * scaled Garwood intervals, the observed floor, the "too few samples" rule, sums, and the
  * per-stack estimates of a profile at the default period, recomputed here from the records.
 */
#include <math.h>
#include <stdlib.h>

#include "harness.h"
#include "profile-sim.h"

#define T 524288.0

static struct lk_estimate est(double value, double var, double observed, uint64_t samples)
{
	struct lk_estimate e = { .value = value, .var = var, .observed = observed,
				 .samples = samples };

	lk_estimate_finish(&e);
	return e;
}

TEST(weight)
{
	ASSERT_NEAR(lk_sample_weight(64, 524288), 1 / -expm1(-64 / T), 1e-9);
	ASSERT_NEAR(lk_sample_weight(1, 524288), 524288.5, 0.01);
	ASSERT_EQ(lk_sample_weight(100 << 20, 524288), 1.0); /* p = 1 in double precision */
	ASSERT_EQ(lk_sample_weight(7, 1), 1.0);              /* exact mode */
	ASSERT_EQ(lk_sample_weight(0, 524288), 1.0);         /* never sampled; 1 object if it is */
	ASSERT_NEAR(lk_sample_weight(16, 1ull << 40), (double)(1ull << 40) / 16 + 0.5, 1);
}

TEST(interval_rules)
{
	struct lk_estimate e;

	/* V = 0: the point, whatever K. */
	e = est(1000, 0, 500, 3);
	ASSERT_EQ(e.lo, 1000);
	ASSERT_EQ(e.hi, 1000);
	ASSERT_TRUE(isinf(e.k_eff));
	ASSERT_TRUE(!e.too_few);
	e = est(0, 0, 0, 0); /* nothing at all */
	ASSERT_EQ(e.lo, 0);
	ASSERT_EQ(e.hi, 0);
	ASSERT_TRUE(!e.too_few);

	/* K_eff >= 20: normal. */
	e = est(100, 100, 0, 100);
	ASSERT_NEAR(e.k_eff, 100, 1e-12);
	ASSERT_NEAR(e.lo, 100 - 19.6, 1e-9);
	ASSERT_NEAR(e.hi, 100 + 19.6, 1e-9);
	e = est(20, 20, 0, 20);
	ASSERT_NEAR(e.lo, 20 - 1.96 * sqrt(20), 1e-9);
	ASSERT_TRUE(!e.too_few);

	/* Below: w = V/est times Garwood's L and U at K_eff, linear between rows. */
	e = est(1000, 1e5, 0, 10); /* w = 100, K_eff = 10 */
	ASSERT_NEAR(e.lo, 479.54, 1e-9);
	ASSERT_NEAR(e.hi, 1839.04, 1e-9);
	e = est(250, 25000, 0, 3); /* w = 100, K_eff = 2.5 */
	ASSERT_NEAR(e.k_eff, 2.5, 1e-12);
	ASSERT_NEAR(e.lo, 100 * (0.2422 + 0.6187) / 2, 1e-9);
	ASSERT_NEAR(e.hi, 100 * (7.2247 + 8.7673) / 2, 1e-9);
	ASSERT_TRUE(e.too_few);
	e = est(19.5, 19.5, 0, 19); /* w = 1, between rows 19 and 20 */
	ASSERT_NEAR(e.lo, (11.4392 + 12.2165) / 2, 1e-9);
	ASSERT_NEAR(e.hi, (29.6709 + 30.8884) / 2, 1e-9);

	/* Too few below 5 effective samples, not at 5. */
	ASSERT_TRUE(est(4.999, 4.999, 0, 5).too_few);
	ASSERT_TRUE(!est(5, 5, 0, 5).too_few);

	/* The truth is never below what was observed. */
	e = est(1000, 1e5, 600, 10);
	ASSERT_EQ(e.lo, 600);
	ASSERT_NEAR(e.hi, 1839.04, 1e-9);
	e = est(100, 100, 95, 100); /* normal, floored */
	ASSERT_EQ(e.lo, 95);

	/* One small sample: K_eff = w / (w - 1), just above 1. */
	double w = lk_sample_weight(64, 524288);
	e = est(64 * w, 64.0 * 64 * (w * w - w), 64, 1);
	ASSERT_NEAR(e.k_eff, w / (w - 1), 1e-9);
	ASSERT_TRUE(e.k_eff >= 1);
	ASSERT_TRUE(e.too_few);
	ASSERT_NEAR(e.lo, 64 * (w - 1) * (0.0253 + (e.k_eff - 1) * (0.2422 - 0.0253)), 1e-6);
}

/* Garwood's rows solve P(Poisson(L) >= K) = 0.025 and P(Poisson(U) <= K) = 0.025. */
static double poisson_cdf(unsigned k, double mu)
{
	double term = exp(-mu), sum = term;

	for (unsigned i = 1; i <= k; i++) {
		term *= mu / i;
		sum += term;
	}
	return sum;
}

TEST(garwood_table)
{
	for (unsigned k = 1; k < 20; k++) {
		struct lk_estimate e = est(k, k, 0, k); /* w = 1, K_eff = k: the row itself */
		ASSERT_NEAR(1 - poisson_cdf(k - 1, e.lo), 0.025, 2e-5);
		ASSERT_NEAR(poisson_cdf(k, e.hi), 0.025, 2e-5);
	}
}

TEST(sums)
{
	struct lk_estimate sum = { 0 }, a = est(100, 100, 50, 3), b = est(300, 200, 100, 5);

	lk_estimate_add(&sum, &a);
	lk_estimate_add(&sum, &b);
	ASSERT_EQ(sum.value, 400);
	ASSERT_EQ(sum.var, 300);
	ASSERT_EQ(sum.observed, 150);
	ASSERT_EQ(sum.samples, 8);
	ASSERT_NEAR(sum.k_eff, 160000.0 / 300, 1e-9);
	ASSERT_NEAR(sum.lo, 400 - 1.96 * sqrt(300), 1e-9);
}

/* Sums of section 4 over the samples of a list of sizes. */
struct expect {
	double bytes, bytes_var, objects, objects_var, observed;
	uint64_t k;
};

static void expect_add(struct expect *x, uint64_t size)
{
	double p = -expm1(-(double)size / T), w = p < 1 ? 1 / p : 1, s = (double)size;

	x->bytes += s * w;
	x->bytes_var += s * s * (w * w - w);
	x->objects += w;
	x->objects_var += w * w - w;
	x->observed += s;
	x->k++;
}

static void check(const struct lk_estimate *bytes, const struct lk_estimate *objects,
		  const struct expect *x)
{
	struct lk_estimate again = *bytes;

	ASSERT_NEAR(bytes->value, x->bytes, x->bytes * 1e-12);
	ASSERT_NEAR(bytes->var, x->bytes_var, x->bytes_var * 1e-9);
	ASSERT_EQ(bytes->observed, x->observed);
	ASSERT_EQ(bytes->samples, x->k);
	ASSERT_NEAR(objects->value, x->objects, x->objects * 1e-12);
	ASSERT_NEAR(objects->var, x->objects_var, x->objects_var * 1e-9);
	ASSERT_EQ(objects->observed, x->k);
	/* The interval is the rule's, and holds the estimate and the observed floor. */
	lk_estimate_finish(&again);
	ASSERT_EQ(again.lo, bytes->lo);
	ASSERT_EQ(again.hi, bytes->hi);
	ASSERT_TRUE(bytes->lo >= bytes->observed);
	ASSERT_TRUE(bytes->lo <= bytes->value && bytes->value <= bytes->hi);
	ASSERT_TRUE(objects->lo <= objects->value && objects->value <= objects->hi);
}

TEST(default_period_estimates)
{
	struct expect alloc1 = { 0 }, live1 = { 0 }, big = { 0 }, mib = { 0 }, none = { 0 };
	const struct lk_profile_totals *t;
	const struct lk_stack_stats *st;
	struct lk_profile *p = NULL;
	char *err = NULL;
	struct sim s;

	sim_start(&s, 524288, 0);
	sim_site(&s, 0x401000); /* 1: small blocks, one freed */
	sim_site(&s, 0x402000); /* 2: one huge block: p = 1 */
	sim_site(&s, 0x403000); /* 3: thirty blocks of 1 MiB */
	for (int i = 0; i < 3; i++) {
		sim_alloc(&s, 10 + i, 0x1000 + 0x100 * i, 64 + 64 * i, 1);
		expect_add(&alloc1, 64 + 64 * i);
		if (i)
			expect_add(&live1, 64 + 64 * i);
	}
	sim_free(&s, 20, 0x1000);
	sim_alloc(&s, 30, 0x100000000, 100 << 20, 2);
	expect_add(&big, 100 << 20);
	for (int i = 0; i < 30; i++) {
		sim_alloc(&s, 40 + i, 0x200000000 + (i << 20), 1 << 20, 3);
		expect_add(&mib, 1 << 20);
	}
	sim_alloc(&s, 80, 0x5000, 4096, 0);
	expect_add(&none, 4096);
	sim_trailer(&s, 90, NULL);
	ASSERT_OK(sim_load(&s, NULL, &p, &err));

	ASSERT_EQ(lk_profile_stacks(p, &st), 4);
	ASSERT_EQ(st[0].id, 0);
	check(&st[0].alloc_bytes, &st[0].alloc_objects, &none);
	check(&st[1].alloc_bytes, &st[1].alloc_objects, &alloc1);
	check(&st[1].live_bytes, &st[1].live_objects, &live1);
	ASSERT_TRUE(st[1].live_bytes.too_few); /* two small samples */
	ASSERT_NEAR(st[1].live_bytes.k_eff, live1.bytes * live1.bytes / live1.bytes_var, 1e-6);
	/* 100 MiB is sampled with p = 1: exact, no interval. */
	check(&st[2].alloc_bytes, &st[2].alloc_objects, &big);
	ASSERT_EQ(st[2].live_bytes.value, 100 << 20);
	ASSERT_EQ(st[2].live_bytes.var, 0);
	ASSERT_EQ(st[2].live_bytes.hi, 100 << 20);
	ASSERT_TRUE(!st[2].live_bytes.too_few);
	/* Thirty samples of 1 MiB, p = 0.865: K_eff = 30 w / (w - 1) = 221, normal. */
	check(&st[3].alloc_bytes, &st[3].alloc_objects, &mib);
	ASSERT_NEAR(st[3].alloc_bytes.k_eff, 30 / exp(-2.0), 1e-6);
	ASSERT_NEAR(st[3].alloc_bytes.lo,
		    mib.bytes - 1.96 * sqrt(mib.bytes_var), mib.bytes * 1e-9);

	/* Totals are the sums of the stacks; the peak is the end here. */
	t = lk_profile_totals(p);
	ASSERT_EQ(t->period, 524288);
	ASSERT_NEAR(t->alloc_bytes.value, alloc1.bytes + big.bytes + mib.bytes + none.bytes, 1e-3);
	ASSERT_NEAR(t->alloc_bytes.var,
		    alloc1.bytes_var + big.bytes_var + mib.bytes_var + none.bytes_var, 1);
	ASSERT_NEAR(t->live_bytes_end.value, live1.bytes + big.bytes + mib.bytes + none.bytes,
		    1e-3);
	ASSERT_NEAR(t->peak_bytes.value, t->live_bytes_end.value, 1e-3);
	ASSERT_EQ(t->peak_ns, 80);
	const struct lk_timeline_point *tl;
	size_t n = lk_profile_timeline(p, &tl);
	ASSERT_NEAR(tl[n - 1].heap_max, t->peak_bytes.value, 1e-3);
	lk_profile_free(p);
	free(s.b.p);
}

/* ---- the test of a change (profile-change.c, docs/sampling.md section 12) ---- */

/* k samples of `size` bytes at period T into a fresh estimate, as profile.c adds them. */
static struct lk_estimate samples_of(uint64_t size, uint64_t k)
{
	double p = -expm1(-(double)size / T);
	struct lk_estimate e = { 0 };

	for (uint64_t i = 0; i < k; i++)
		lk_estimate_add_sample(&e, (double)size, 1 / p, exp(-(double)size / T) / (p * p));
	lk_estimate_finish(&e);
	return e;
}

TEST(change_exact)
{
	struct lk_estimate a = est(100, 0, 100, 2), b = est(101, 0, 101, 2), none = est(0, 0, 0, 0);
	struct lk_change c;

	lk_change_test(&a, 1, &a, 1, &c); /* exact and equal: no change */
	ASSERT_EQ(c.value, 0);
	ASSERT_EQ(c.p, 1);
	lk_change_test(&a, 1, &b, 1, &c); /* exact: one byte is a fact, with a point interval */
	ASSERT_EQ(c.value, 1);
	ASSERT_EQ(c.p, 0);
	ASSERT_EQ(c.lo, 1);
	ASSERT_EQ(c.hi, 1);
	lk_change_test(&a, 1, &none, 1, &c); /* vanished in exact mode */
	ASSERT_EQ(c.value, -100);
	ASSERT_EQ(c.p, 0);
	/* Exact base, a sampled new side with a sample where the base had none: a fact too. */
	struct lk_estimate s = samples_of(4096, 1);
	lk_change_test(&none, 1, &s, 524288, &c);
	ASSERT_EQ(c.p, 0);
}

/* Light samples of one size, weight c = s/p each: the change is c (K2 - K1), its variance if
 * nothing changed c^2 (1-p) (K1 + K2), and the correction half a step, so z = (|K2 - K1| - 1/2)
 * / sqrt((1-p) (K1 + K2)): the continuity-corrected comparison of two Poisson counts. */
TEST(change_light)
{
	double p = -expm1(-4096 / T);
	struct lk_change c;

	for (uint64_t k1 = 0; k1 <= 30; k1 += 6) {
		for (uint64_t k2 = 0; k2 <= 30; k2 += 5) {
			struct lk_estimate a = samples_of(4096, k1), b = samples_of(4096, k2);
			double z = (fabs((double)k2 - (double)k1) - 0.5) /
				   sqrt((1 - p) * (double)(k1 + k2));
			lk_change_test(&a, 524288, &b, 524288, &c);
			ASSERT_NEAR(c.value, 4096 / p * ((double)k2 - (double)k1), 1e-6 * 4096 / p);
			if (k1 + k2 == 0) {
				ASSERT_EQ(c.p, 1);
				continue;
			}
			ASSERT_NEAR(c.p, z > 0 ? erfc(z / sqrt(2)) : 1, 1e-9);
			/* The interval: half a step and 1.96 sigma of the estimates' own variance;
			 * a side without a sample may hold 3 periods more. */
			double half = 4096 / p / 2 + 1.959963984540054 * sqrt(a.var + b.var);
			ASSERT_NEAR(c.hi - c.value, half + (k2 ? 0 : 2.995732273553991 * T), 1e-3);
			ASSERT_NEAR(c.value - c.lo, half + (k1 ? 0 : 2.995732273553991 * T), 1e-3);
		}
	}
	/* 12 samples against 0 is a change; 3 against 0 is not. */
	struct lk_estimate none = est(0, 0, 0, 0), twelve = samples_of(4096, 12);
	struct lk_estimate three = samples_of(4096, 3);
	lk_change_test(&none, 524288, &twelve, 524288, &c);
	ASSERT_TRUE(c.p < 0.001);
	lk_change_test(&none, 524288, &three, 524288, &c);
	ASSERT_TRUE(c.p > 0.05);
}

/* Heavy samples (p >= 1/2): one 1 MiB block (p = 0.865) seen in one run and missed in the other
 * is no change (the correction is a whole step), nor are two against one; ten against none is.
 * Blocks that are almost never missed (8 MiB: 1 - p = 2.3e-7) are left out of the correction,
 * so one more of them is a change. */
TEST(change_heavy)
{
	struct lk_estimate none = est(0, 0, 0, 0), one = samples_of(1 << 20, 1);
	struct lk_estimate two = samples_of(1 << 20, 2), ten = samples_of(1 << 20, 10);
	struct lk_change c;

	lk_change_test(&one, 524288, &none, 524288, &c);
	ASSERT_EQ(c.p, 1);
	lk_change_test(&one, 524288, &two, 524288, &c);
	ASSERT_EQ(c.p, 1);
	lk_change_test(&none, 524288, &ten, 524288, &c);
	ASSERT_TRUE(c.p < 1e-6);
	struct lk_estimate big3 = samples_of(8 << 20, 3), big4 = samples_of(8 << 20, 4);
	ASSERT_TRUE(big3.heavy_miss < 1e-5);
	lk_change_test(&big3, 524288, &big4, 524288, &c);
	ASSERT_TRUE(c.p < 1e-6);
	/* Without the correction the single 1 MiB block would have been a change at 1%. */
	one.heavy_step = 0;
	lk_change_test(&one, 524288, &none, 524288, &c);
	ASSERT_TRUE(c.p < 0.01);
}

/* Benjamini-Hochberg: q_(i) = min over j >= i of n p_(j) / j, at most 1. */
TEST(change_adjust)
{
	double p[] = { 0.01, 0.02, 0.03, 0.5 }, q[] = { 0.001, 0.2, 0.9, 0.95 };

	lk_change_adjust(p, 4);
	ASSERT_NEAR(p[0], 0.04, 1e-12);
	ASSERT_NEAR(p[1], 0.04, 1e-12);
	ASSERT_NEAR(p[2], 0.04, 1e-12);
	ASSERT_NEAR(p[3], 0.5, 1e-12);
	lk_change_adjust(q, 4);
	ASSERT_NEAR(q[0], 0.004, 1e-12);
	ASSERT_NEAR(q[1], 0.4, 1e-12);
	ASSERT_NEAR(q[2], 0.95, 1e-12);
	ASSERT_NEAR(q[3], 0.95, 1e-12);
	lk_change_adjust(q, 0);
}
