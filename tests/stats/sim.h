/* sim.h: the sampler's countdown rule and the reader's weights, for the statistical tests.
 *
 * The countdown step is the rule of docs/sampling.md section 1, written with the same unsigned
 * compare the library uses, so that a test of this step is a test of the sampler's decision:
 * sampled iff size >= left, the subtraction only when size < left (so it never wraps), a fresh
 * lk_rng_interval() after every sample, and a fresh draw (not an automatic sample) for a new
 * thread. Weights follow section 4. Never put a tolerance or a tuned constant here: bounds live in
 * the tests, each with its derivation.
 */
#ifndef LEEK_TESTS_SIM_H
#define LEEK_TESTS_SIM_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "rng.h"

/* 95% two-sided normal quantile. */
#define Z95 1.959963984540054

/* A line of diagnostics (the statistic and its margin), flushed at once: the harness runs each
 * test in a child that leaves with _exit(), which would drop anything still buffered. */
#define note(...) (printf(__VA_ARGS__), fflush(stdout))

struct sim {
	struct lk_rng rng;
	uint64_t period;
	uint64_t left; /* bytes until the next sample, in [1, 2^62] */
};

static inline void sim_init(struct sim *s, uint64_t seed, uint64_t stream, uint64_t period)
{
	lk_rng_seed(&s->rng, seed, stream);
	s->period = period;
	s->left = lk_rng_interval(&s->rng, period); /* a new thread's first draw */
}

/* One allocation of `size` bytes: true if it is sampled. */
static inline bool sim_alloc(struct sim *s, uint64_t size)
{
	if (size < s->left) {
		s->left -= size;
		return false;
	}
	s->left = lk_rng_interval(&s->rng, s->period);
	return true;
}

/* p(s) = 1 - exp(-s/T), through expm1 so that small s/T keeps its digits; exact mode is p = 1. */
static inline double sim_p(uint64_t size, uint64_t period)
{
	if (period <= 1)
		return 1.0;
	return -expm1(-(double)size / (double)period);
}

/* A running Horvitz-Thompson estimate of one set of allocations (docs/sampling.md section 4):
 * the truth and its exact variance over all allocations, the estimate and its variance estimate
 * over the samples. */
struct est {
	double truth, var;     /* over every allocation */
	double value, var_hat; /* over the samples */
	uint64_t samples;
};

static inline void est_all(struct est *e, double x, double p)
{
	e->truth += x;
	e->var += x * x * (1 - p) / p;
}

static inline void est_sample(struct est *e, double x, double p)
{
	e->value += x / p;
	e->var_hat += x * x * (1 - p) / (p * p);
	e->samples++;
}

/* The 95% normal interval of docs/sampling.md section 5 covers the truth. Raising the lower end
 * to the observed total, as the reports do, cannot change this: the truth is never below it. */
static inline bool est_covers(const struct est *e)
{
	double h = Z95 * sqrt(e->var_hat);

	return e->value - h <= e->truth && e->truth <= e->value + h;
}

#endif /* LEEK_TESTS_SIM_H */
