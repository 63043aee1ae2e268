/* fpenv.c: the floating-point environment stays the program's own, sampled or not.
 *
 * A program may unmask floating-point exceptions (feenableexcept) or read the sticky exception
 * flags, and an allocator call in between must change neither. Two ways leek could: libunwind's
 * getcontext saves the x87 environment with fnstenv, which then masks every x87 exception; and
 * the sampler's exponential draw (a logarithm) raises the inexact flag in MXCSR, and would trap
 * if the program had unmasked inexact. This program runs with every exception masked and no flag
 * raised, then unmasks every exception, x87 and SSE alike, and checks the raw x87 control and
 * status words and MXCSR after every allocator call: in the
 * main thread and in a second one (whose first sample walks its stack with libunwind), through
 * call chains of many depths (new return addresses, so that libunwind runs again), with 1 MiB
 * blocks that the default period samples too.
 *
 * Prints tally lines (tally.h) for 5003 and 1048579 in exact mode.
 */
#include <fenv.h>
#include <pthread.h>

#include "prog.h"
#include "tally.h"

#define ROUNDS 40

struct fpstate {
	uint16_t cw, sw;
	uint32_t mxcsr;
};

static struct fpstate fp_now(void)
{
	struct fpstate s;

	__asm__ volatile("fnstcw %0" : "=m"(s.cw));
	__asm__ volatile("fnstsw %0" : "=m"(s.sw));
	__asm__ volatile("stmxcsr %0" : "=m"(s.mxcsr));
	return s;
}

static void fp_same(const struct fpstate *want, const char *after)
{
	struct fpstate s = fp_now();

	CHECK(s.cw == want->cw, "x87 control word %#x after %s, %#x before", s.cw, after, want->cw);
	CHECK((s.sw & 0x3f) == (want->sw & 0x3f), "x87 exception flags %#x after %s, %#x before",
	      s.sw & 0x3f, after, want->sw & 0x3f);
	CHECK(s.mxcsr == want->mxcsr, "MXCSR %#x after %s, %#x before", s.mxcsr, after,
	      want->mxcsr);
}

/* Allocates at call depth d: each depth has its own return addresses on the way down. */
static __attribute__((noinline)) void *down(int d, size_t n)
{
	void *p = d > 0 ? down(d - 1, n) : malloc(n);

	__asm__ volatile("" : : "r"(p) : "memory"); /* no tail call: one frame a level */
	return p;
}

static void work(unsigned *small, unsigned *big)
{
	struct fpstate want = fp_now();

	for (int r = 0; r < ROUNDS; r++) {
		void *p = down(r, 5003), *q = down(r % 7, 1048579);
		fp_same(&want, "malloc");
		CHECK(p && q, "malloc failed");
		memset(p, 1, 5003);
		memset(q, 2, 1048579);
		p = realloc(p, 5003 * 2);
		CHECK(p, "realloc failed");
		fp_same(&want, "realloc");
		free(p);
		free(q);
		fp_same(&want, "free");
		void *c = calloc(1, 5003);
		CHECK(c, "calloc failed");
		fp_same(&want, "calloc");
		free(c);
		fp_same(&want, "free");
		*small += 2;
		*big += 1;
	}
}

static unsigned thread_small, thread_big;

static void *thread_main(void *arg)
{
	work(&thread_small, &thread_big);
	return arg;
}

int main(void)
{
	unsigned small = 0, big = 0;
	pthread_t t;

	/* First with every exception masked (the default) and no flag raised: the draw's inexact
	 * flag must not show. Then with every exception unmasked. */
	CHECK(feclearexcept(FE_ALL_EXCEPT) == 0, "feclearexcept failed");
	work(&small, &big);
	CHECK(feenableexcept(FE_ALL_EXCEPT) != -1, "feenableexcept failed");
	work(&small, &big);
	CHECK(pthread_create(&t, NULL, thread_main, NULL) == 0, "pthread_create failed");
	CHECK(pthread_join(t, NULL) == 0, "pthread_join failed");
	CHECK(fegetexcept() == FE_ALL_EXCEPT, "exceptions enabled %#x at the end", fegetexcept());
	/* realloc's new block is 10006 bytes: the tally counts 5003's ALLOCs (malloc and calloc). */
	tally(5003, small + thread_small, 0, small + thread_small);
	tally(1048579, big + thread_big, 0, big + thread_big);
	return 0;
}
