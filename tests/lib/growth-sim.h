/* growth-sim.h: a site's sampled blocks over simulated time, and the growth verdict on them, as
 * `leek watch` would see them; shared by tests/unit/test-growth-alarms.c (the bounds of
 * docs/sampling.md section 11) and bench/growth-sim.c (the numbers in it).
 *
 * No profile and no clock: each site's series is made as profile.c makes it (its live sampled
 * blocks, weighted, at the end of each of LK_TIMELINE_BUCKETS equal buckets of the run so far)
 * from blocks drawn as libleek samples them (each on its own, p(s) = 1 - exp(-s/T)), and
 * classified by src/cli/profile/profile-growth.c. Aborts when out of memory.
 */
#ifndef LEEK_GROWTH_SIM_H
#define LEEK_GROWTH_SIM_H

#include <stddef.h>

#include "profile.h"
#include "rng.h"

#define GSIM_PERIOD 524288.0 /* libleek's default period, LEEK_PERIOD */
#define GSIM_DAY 86400.0

/* One site's sampled blocks: when each was allocated, and when the freed ones were freed (both
 * sorted; died may be shorter: a block that never dies is left out), each standing for weight
 * bytes. */
struct gsim_site {
	double *born, *died;
	size_t nborn, ndied;
	double weight;
};

double gsim_expo(struct lk_rng *r, double mean); /* an exponential draw */
int gsim_cmp_double(const void *x, const void *y); /* for qsort */
size_t gsim_upto(const double *v, size_t n, double t); /* how many of sorted v[0..n) are <= t */
double *gsim_doubles(size_t n);

/* The verdict on s at time t (the run so far: 0 to t). */
enum lk_trend gsim_verdict(const struct gsim_site *s, double t);

/* A day of a cache of `blocks` blocks of `size` bytes, each replaced at random after Exp(life)
 * seconds (turnover = blocks / life of them a second; both given, as each caller computes them,
 * so that its draws stay what they were), at period T: its sampled blocks are an M/M/infinity
 * queue (births turnover p(size) a second), started at its stationary law (the cache is filled at
 * once). */
void gsim_cache_day(struct lk_rng *r, double blocks, double size, double life, double turnover,
		    struct gsim_site *s);
/* A leak: sampled blocks born as a Poisson process of rate lambda a second, before horizon, at
 * most cap of them, never freed, each standing for weight bytes. */
void gsim_leak(struct lk_rng *r, double lambda, double horizon, size_t cap, double weight,
	       struct gsim_site *s);
void gsim_site_free(struct gsim_site *s);

#endif /* LEEK_GROWTH_SIM_H */
