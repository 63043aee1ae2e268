/* test-sampling.c: which allocations the countdown samples.
 *
 * Runs the sampler's countdown rule (tests/lib/countdown.h) over streams of allocations and
 * checks docs/sampling.md: an allocation of s bytes is sampled with probability 1 - exp(-s/T)
 * (within 4 binomial sigma), a periodic pattern of sizes cannot bias a site's estimate (and a
 * fixed-period sampler fails the same check), and huge sizes are always sampled without the
 * countdown ever wrapping. Bounds come from section 10 of that page; never tune them or change a
 * seed.
 */
#include "harness.h"
#include "sim.h"

#define SEED   0x6c65656b2d736d70ull /* "leek-smp" */
#define PERIOD 524288

TEST(sampling_probability)
{
	static const uint64_t sizes[] = { 64, 4096, 65536, PERIOD, 4 * PERIOD };
	const uint64_t n = 1000000;

	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct countdown s;
		uint64_t sampled = 0;

		countdown_init(&s, SEED, i, PERIOD);
		for (uint64_t k = 0; k < n; k++)
			sampled += countdown_take(&s, sizes[i]);

		double p = sim_p(sizes[i], PERIOD), frac = (double)sampled / (double)n;
		double sigma = sqrt(p * (1 - p) / (double)n);
		note("s=%llu: sampled %llu of %llu, p %.6g, (frac-p)/sigma = %+.2f\n",
		     (unsigned long long)sizes[i], (unsigned long long)sampled,
		     (unsigned long long)n, p, (frac - p) / sigma);
		ASSERT_NEAR(frac, p, 4 * sigma);
	}
}

TEST(sampling_zero_size)
{
	struct countdown s;

	countdown_init(&s, SEED, 10, PERIOD);
	for (int k = 0; k < 1000000; k++)
		ASSERT_TRUE(!countdown_take(&s, 0));
}

/* The loop of docs/sampling.md section 2: { malloc(T - 64); malloc(64); }, exactly T bytes per
 * iteration. Returns the estimate of the 64-byte site; `fixed` replaces the exponential
 * countdown by a constant T, the sampler leek must not be. */
static void run_pattern(bool fixed, uint64_t iterations, struct est *small, struct est *big)
{
	const uint64_t a = PERIOD - 64, b = 64;
	double pa = sim_p(a, PERIOD), pb = sim_p(b, PERIOD);
	struct countdown s;

	*small = (struct est){ 0 };
	*big = (struct est){ 0 };
	countdown_init(&s, SEED, 11, PERIOD);
	if (fixed)
		s.left = PERIOD;
	for (uint64_t k = 0; k < iterations; k++) {
		est_all(big, (double)a, pa);
		est_all(small, (double)b, pb);
		if (countdown_take(&s, a)) {
			est_sample(big, (double)a, pa);
			if (fixed)
				s.left = PERIOD;
		}
		if (countdown_take(&s, b)) {
			est_sample(small, (double)b, pb);
			if (fixed)
				s.left = PERIOD;
		}
	}
}

static bool within_4_sigma(const struct est *e)
{
	return fabs(e->value - e->truth) <= 4 * sqrt(e->var);
}

TEST(sampling_pattern)
{
	struct est small, big;

	run_pattern(false, 1000000, &small, &big);
	note("exponential: 64 B site: %llu samples, estimate/truth %.4f, z = %+.2f\n",
	     (unsigned long long)small.samples, small.value / small.truth,
	     (small.value - small.truth) / sqrt(small.var));
	note("exponential: T-64 B site: estimate/truth %.4f, z = %+.2f\n", big.value / big.truth,
	     (big.value - big.truth) / sqrt(big.var));
	ASSERT_TRUE(within_4_sigma(&small));
	ASSERT_TRUE(within_4_sigma(&big));

	/* Power: the same check rejects a fixed period, which samples the 64-byte site at every
	 * iteration (estimate 8192 times the truth). */
	run_pattern(true, 1000000, &small, &big);
	note("fixed period: 64 B site: %llu samples, estimate/truth %.1f\n",
	     (unsigned long long)small.samples, small.value / small.truth);
	ASSERT_TRUE(!within_4_sigma(&small));
}

/* Sizes of 2^62 and more are always sampled, for every period, and the countdown stays in
 * [1, 2^62] (docs/sampling.md section 8). Sizes below the cap are mixed in so that the
 * countdown is seen in every state. */
TEST(sampling_huge_sizes)
{
	static const uint64_t periods[] = {
		1, 2, PERIOD, (uint64_t)1 << 56, (uint64_t)1 << 62, (uint64_t)1 << 63, UINT64_MAX,
	};
	static const uint64_t sizes[] = {
		1, 64, PERIOD, (uint64_t)1 << 40, ((uint64_t)1 << 62) - 1,
		(uint64_t)1 << 62, ((uint64_t)1 << 62) + 1, ((uint64_t)1 << 63) - 1,
		(uint64_t)1 << 63, ((uint64_t)1 << 63) + 1, SIZE_MAX / 2, SIZE_MAX - 1, SIZE_MAX,
	};
	const uint64_t cap = (uint64_t)1 << 62;
	const unsigned nsizes = sizeof(sizes) / sizeof(sizes[0]);

	for (unsigned i = 0; i < sizeof(periods) / sizeof(periods[0]); i++) {
		struct countdown s;
		struct lk_rng pick;

		countdown_init(&s, SEED, 20 + i, periods[i]);
		lk_rng_seed(&pick, SEED, 40 + i);
		for (int k = 0; k < 200000; k++) {
			uint64_t size = sizes[lk_rng_next(&pick) % nsizes], before = s.left;
			bool sampled = countdown_take(&s, size);

			ASSERT_TRUE(s.left >= 1 && s.left <= cap);
			if (size >= cap)
				ASSERT_TRUE(sampled);
			if (!sampled)
				ASSERT_EQ(s.left, before - size); /* no wrap: before > size */
			/* The weight of a huge size is 1 and finite, whatever the period. */
			if (size >= cap && periods[i] <= (uint64_t)1 << 56)
				ASSERT_TRUE(sim_p(size, periods[i]) == 1.0);
		}
	}
}
