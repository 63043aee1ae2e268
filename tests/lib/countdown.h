/* countdown.h: libleek's sampling decision for one thread, for the tests that simulate a program
 * (tests/stats, and tests/unit's growth over many seeds).
 *
 * The step is the rule of docs/sampling.md section 1, written with the same unsigned compare the
 * library uses, so that a test of this step is a test of the sampler's decision: sampled iff
 * size >= left, the subtraction only when size < left (so it never wraps), a fresh
 * lk_rng_interval() after every sample, and a fresh draw (not an automatic sample) for a new
 * thread. Inline: the statistical tests take millions of steps.
 */
#ifndef LEEK_TEST_COUNTDOWN_H
#define LEEK_TEST_COUNTDOWN_H

#include <stdbool.h>
#include <stdint.h>

#include "rng.h"

struct countdown {
	struct lk_rng rng;
	uint64_t period;
	uint64_t left; /* bytes until the next sample, in [1, 2^62] */
};

static inline void countdown_init(struct countdown *c, uint64_t seed, uint64_t stream,
				  uint64_t period)
{
	lk_rng_seed(&c->rng, seed, stream);
	c->period = period;
	c->left = lk_rng_interval(&c->rng, period); /* a new thread's first draw */
}

/* One allocation of `size` bytes: true if it is sampled. */
static inline bool countdown_take(struct countdown *c, uint64_t size)
{
	if (size < c->left) {
		c->left -= size;
		return false;
	}
	c->left = lk_rng_interval(&c->rng, c->period);
	return true;
}

/* countdown_take() n times for allocations of one size, without a step for each: how many were
 * sampled. The same decisions: allocation k + 1 of the run passes iff (k + 1) size < left, so
 * floor((left - 1) / size) pass before the next sample. */
static inline uint64_t countdown_take_run(struct countdown *c, uint64_t size, uint64_t n)
{
	uint64_t sampled = 0;

	if (size == 0)
		return 0; /* 0 < left: never sampled, and left stays */
	for (;;) {
		uint64_t pass = (c->left - 1) / size;
		if (pass >= n) {
			c->left -= n * size; /* n size <= pass size < left */
			return sampled;
		}
		n -= pass + 1;
		sampled++;
		c->left = lk_rng_interval(&c->rng, c->period);
	}
}

#endif /* LEEK_TEST_COUNTDOWN_H */
