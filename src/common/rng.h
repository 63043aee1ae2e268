/* rng.h: the sampler's random stream and its exponential draws (docs/sampling.md).
 *
 * Pure functions on a caller-owned state, so that the preload sampler and the statistical tests
 * run exactly the same code. No allocation, no syscalls, no global state; safe in a signal
 * handler. The generator is xoshiro256** seeded through splitmix64 (Blackman and Vigna), which
 * passes BigCrush and costs a handful of instructions per draw.
 */
#ifndef LEEK_RNG_H
#define LEEK_RNG_H

#include <math.h>
#include <stdint.h>

struct lk_rng {
	uint64_t s[4];
};

static inline uint64_t lk_splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Seeds stream number `stream` (one per thread) of a run seeded with `seed`. */
static inline void lk_rng_seed(struct lk_rng *r, uint64_t seed, uint64_t stream)
{
	uint64_t x = seed ^ lk_splitmix64(&stream);

	for (int i = 0; i < 4; i++)
		r->s[i] = lk_splitmix64(&x);
}

static inline uint64_t lk_rng_next(struct lk_rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = ((s[1] * 5) << 7 | (s[1] * 5) >> 57) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = s[3] << 45 | s[3] >> 19;
	return result;
}

/* A uniform double in (0, 1]: never 0, so its logarithm is finite. */
static inline double lk_rng_unit(struct lk_rng *r)
{
	return (double)((lk_rng_next(r) >> 11) + 1) * 0x1.0p-53;
}

/* Bytes until the next sample: an exponential draw with mean `period`, rounded up so that it is
 * at least 1, and capped at 2^62 so that the countdown can never wrap. period 1 is exact mode
 * and returns 1 (every allocation of one byte or more is sampled). */
static inline uint64_t lk_rng_interval(struct lk_rng *r, uint64_t period)
{
	if (period <= 1)
		return 1;
	double d = -log(lk_rng_unit(r)) * (double)period;
	if (!(d < 0x1.0p62))
		return (uint64_t)1 << 62;
	uint64_t v = (uint64_t)d + 1;
	return v;
}

#endif /* LEEK_RNG_H */
