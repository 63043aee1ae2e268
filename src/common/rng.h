/* rng.h: the sampler's random stream and its exponential draws (docs/sampling.md).
 *
 * Pure functions on a caller-owned state, so that the preload sampler and the statistical tests
 * run exactly the same code. No allocation, no syscalls, no global state; safe in a signal
 * handler. The generator is xoshiro256** seeded through splitmix64 (Blackman and Vigna), which
 * passes BigCrush and costs a handful of instructions per draw. The exponential draw is a
 * ziggurat whose common case is integer only (bench/draw.c); it must never raise a floating-point
 * flag there, nor leave the MXCSR changed on its rare floating-point path.
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

/* ---- The exponential draw: a ziggurat in integers (docs/sampling.md section 3) ----
 *
 * The draw takes one 64-bit output w: its low 8 bits choose one of 256 layers of equal area under
 * exp(-x), its high 56 bits the position u / 2^56 across the layer, so the layer and the position
 * come from disjoint, independent bits (Doornik 2005). About 97.8% of points fall in a layer's
 * part that lies wholly under the curve: they are accepted with one integer compare, and the
 * countdown is floor(x T) + 1 with x in 4.60 fixed point and a 128-bit product. No floating point
 * there, so the program's MXCSR (flags, masks, rounding) is never read or changed.
 * The rest (a wedge under the curve's edge, or the tail past r = 7.697) is lk_rng_interval_rare.
 *
 * The position is taken from ~w rather than w so that the generator's extreme outputs give the
 * extreme countdowns, as the inversion -ln(U) did: an all-ones output gives x = 0 (countdown 1),
 * and an all-zero stream reaches the tail and its longest value, 53 ln 2 (tests/stats). */
#include "rng-table.h"

/* A test may count the paths taken (tests/unit/test-rng-draw.c); nothing else defines this. */
#ifndef LK_RNG_COUNT
#define LK_RNG_COUNT(what) ((void)0)
#endif
enum { LK_RNG_RARE, LK_RNG_WEDGE, LK_RNG_WEDGE_REJECT, LK_RNG_TAIL, LK_RNG_TAIL_REJECT };

/* floor(x T) + 1 for x = xq / 2^60, capped at 2^62 so that the countdown can never wrap. */
static inline uint64_t lk_rng_countdown(uint64_t xq, uint64_t period)
{
	unsigned __int128 p = (unsigned __int128)xq * period;
	unsigned __int128 c = p >> 60;

	return c >= ((uint64_t)1 << 62) - 1 ? (uint64_t)1 << 62 : (uint64_t)c + 1;
}

/* The common case: the countdown if w falls in a layer's inner part, else 0. */
static inline uint64_t lk_rng_zig_fast(uint64_t w, uint64_t period)
{
	const struct lk_zig_layer *l = &lk_zig[w & (LK_ZIG_LAYERS - 1)];
	uint64_t u = ~w >> 8;

	if (__builtin_expect(u >= l->k, 0))
		return 0;
	return lk_rng_countdown((uint64_t)(((unsigned __int128)u * l->w) >> 56), period);
}

/* The rare cases, in floating point. For a wedge the point (x, y), y uniform over the layer's
 * height, is kept when y <= exp(-x); else the whole draw starts again, which is what makes the
 * accepted points uniform under the curve (Marsaglia and Tsang 2000). The tail x > r is the
 * inversion -ln(U) with U uniform on (0, exp(-r)]: U = j 2^-53 on the same grid as lk_rng_unit,
 * j uniform on [1, 2^42] and kept when U <= exp(-r) (93% of the time). */
static __attribute__((noinline, unused)) uint64_t lk_rng_zig_slow(struct lk_rng *r,
								 uint64_t period, uint64_t w)
{
	for (;;) {
		uint64_t v = lk_rng_zig_fast(w, period);

		if (v)
			return v;
		LK_RNG_COUNT(LK_RNG_RARE);
		unsigned i = w & (LK_ZIG_LAYERS - 1);
		uint64_t u = ~w >> 8;

		if (i == 0) {
			for (;;) {
				LK_RNG_COUNT(LK_RNG_TAIL);
				uint64_t j = (lk_rng_next(r) >> (11 + LK_ZIG_TAIL_SHIFT)) + 1;

				if (j <= LK_ZIG_TAIL_J) {
					double d = -log((double)j * 0x1.0p-53) * (double)period;

					if (!(d < 0x1.0p62))
						return (uint64_t)1 << 62;
					return (uint64_t)d + 1;
				}
				LK_RNG_COUNT(LK_RNG_TAIL_REJECT);
			}
		}
		LK_RNG_COUNT(LK_RNG_WEDGE);
		uint64_t xq = (uint64_t)(((unsigned __int128)u * lk_zig[i].w) >> 56);
		double y = lk_zig_f[i] + (double)(lk_rng_next(r) >> 11) * 0x1.0p-53 *
						 (lk_zig_f[i + 1] - lk_zig_f[i]);

		if (y <= exp(-(double)xq * 0x1.0p-60))
			return lk_rng_countdown(xq, period);
		LK_RNG_COUNT(LK_RNG_WEDGE_REJECT);
		w = lk_rng_next(r);
	}
}

/* The rare path under a protected MXCSR: its floating point sets the inexact flag, and would trap
 * if the program had unmasked it. Computed with every exception masked, and the program's MXCSR,
 * flags included, put back (tests/preload/fpenv.c). An ldmxcsr costs about 6 ns here, so it is
 * done only when the MXCSR must change: with every exception masked already (the default), only
 * once the draw has raised a flag that the program's MXCSR did not have. */
static __attribute__((noinline, cold, unused)) uint64_t
lk_rng_interval_rare(struct lk_rng *r, uint64_t period, uint64_t w)
{
	unsigned csr = __builtin_ia32_stmxcsr();
	int masked = (csr & 0x1f80) == 0x1f80;

	if (!masked)
		__builtin_ia32_ldmxcsr(csr | 0x1f80);
	uint64_t v = lk_rng_zig_slow(r, period, w);
	if (!masked || __builtin_ia32_stmxcsr() != csr)
		__builtin_ia32_ldmxcsr(csr);
	return v;
}

/* Bytes until the next sample: an exponential draw with mean `period`, rounded down and plus one
 * so that it is at least 1, and capped at 2^62 so that the countdown can never wrap. period 1 is
 * exact mode and returns 1 (every allocation of one byte or more is sampled). Leaves the
 * floating-point environment as it found it. */
static inline uint64_t lk_rng_interval(struct lk_rng *r, uint64_t period)
{
	if (period <= 1)
		return 1;
	uint64_t w = lk_rng_next(r);
	uint64_t v = lk_rng_zig_fast(w, period);

	if (__builtin_expect(v != 0, 1))
		return v;
	return lk_rng_interval_rare(r, period, w);
}

#endif /* LEEK_RNG_H */
