/* sim.h: the reader's weights and their estimates, for the statistical tests; the sampler's own
 * countdown rule is tests/lib/countdown.h.
 *
 * Weights follow docs/sampling.md section 4. Never put a tolerance or a tuned constant here:
 * bounds live in the tests, each with its derivation.
 */
#ifndef LEEK_TESTS_SIM_H
#define LEEK_TESTS_SIM_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "countdown.h"

/* 95% two-sided normal quantile. */
#define Z95 1.959963984540054

/* A line of diagnostics (the statistic and its margin), flushed at once: the harness runs each
 * test in a child that leaves with _exit(), which would drop anything still buffered. */
#define note(...) (printf(__VA_ARGS__), fflush(stdout))

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
