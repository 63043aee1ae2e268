/* draw.c: nanoseconds per countdown draw, the former inversion against rng.h's ziggurat.
 *
 * The former draw is -ln(U) T with libm's log under the MXCSR guard next_interval had (an ldmxcsr
 * only when the MXCSR must change). Each is timed with the MXCSR's flags clear before every draw
 * (a program that does no floating point: the guard's worst case; the loop's own ldmxcsr is timed
 * apart and subtracted), then with the flags already set. Run by hand, never as a pass/fail:
 *
 *   gcc -O2 -Isrc/common -o /tmp/draw-bench bench/draw.c -lm && /tmp/draw-bench
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>
#include <xmmintrin.h>

#include "rng.h"

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static __attribute__((noinline)) uint64_t old_draw(struct lk_rng *r, uint64_t period)
{
	unsigned csr = _mm_getcsr();
	bool masked = (csr & 0x1f80) == 0x1f80;
	if (!masked) _mm_setcsr(csr | 0x1f80);
	double d = -log(lk_rng_unit(r)) * (double)period;
	uint64_t v = !(d < 0x1.0p62) ? (uint64_t)1 << 62 : (uint64_t)d + 1;
	if (!masked || _mm_getcsr() != csr) _mm_setcsr(csr);
	return v;
}
static __attribute__((noinline)) uint64_t new_draw(struct lk_rng *r, uint64_t period)
{
	return lk_rng_interval(r, period);
}
int main(void)
{
	const int n = 20000000;
	volatile uint64_t vperiod = 524288; /* not a constant the compiler could fold in */
	struct lk_rng r;
	volatile uint64_t sink = 0;
	unsigned clean = _mm_getcsr();
	for (int run = 0; run < 5; run++) {
		uint64_t s = 0;
		lk_rng_seed(&r, 1, run);
		_mm_setcsr(clean); /* flags clear: the old guard's worst case, as in a program doing no FP */
		double t0 = now();
		for (int i = 0; i < n; i++) { s += old_draw(&r, vperiod); _mm_setcsr(clean); }
		double t1 = now();
		for (int i = 0; i < n; i++) { s += new_draw(&r, vperiod); _mm_setcsr(clean); }
		double t2 = now();
		for (int i = 0; i < n; i++) _mm_setcsr(clean);
		double t3 = now();
		/* flags already set (a program that has done inexact arithmetic): no ldmxcsr in the old one */
		_mm_setcsr(clean | 0x3f);
		double t4 = now();
		for (int i = 0; i < n; i++) s += old_draw(&r, vperiod);
		double t5 = now();
		for (int i = 0; i < n; i++) s += new_draw(&r, vperiod);
		double t6 = now();
		sink += s;
		double base = (t3 - t2) / n * 1e9;
		printf("run %d: flags clear: old %.2f new %.2f ns (loop ldmxcsr %.2f subtracted); "
		       "flags set: old %.2f new %.2f ns\n",
		       run, (t1 - t0) / n * 1e9 - base, (t2 - t1) / n * 1e9 - base, base,
		       (t5 - t4) / n * 1e9, (t6 - t5) / n * 1e9);
	}
	return 0;
}
