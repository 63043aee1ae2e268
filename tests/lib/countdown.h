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

#endif /* LEEK_TEST_COUNTDOWN_H */
