/* growth-sim.c: simulated sites and their growth verdicts (growth-sim.h).
 *
 * Never: read the clock (all time is simulated), or depend on anything but the arguments and the
 * generator's state.
 */
#include <math.h>
#include <stdlib.h>

#include "growth-sim.h"

double gsim_expo(struct lk_rng *r, double mean)
{
	return -mean * log(lk_rng_unit(r));
}

int gsim_cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

size_t gsim_upto(const double *v, size_t n, double t)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

double *gsim_doubles(size_t n)
{
	double *v = malloc((n ? n : 1) * sizeof(double));

	if (!v)
		abort();
	return v;
}

enum lk_trend gsim_verdict(const struct gsim_site *s, double t)
{
	double series[LK_TIMELINE_BUCKETS];
	struct lk_growth g;

	for (unsigned i = 0; i < LK_TIMELINE_BUCKETS; i++) {
		double u = t * (i + 1) / LK_TIMELINE_BUCKETS;
		series[i] = s->weight * (double)(gsim_upto(s->born, s->nborn, u) -
						 gsim_upto(s->died, s->ndied, u));
	}
	lk_growth_classify(series, LK_TIMELINE_BUCKETS, t / LK_TIMELINE_BUCKETS,
			   gsim_upto(s->born, s->nborn, t), &g);
	return g.trend;
}

void gsim_cache_day(struct lk_rng *r, double blocks, double size, double life, double turnover,
		    struct gsim_site *s)
{
	double p = -expm1(-size / GSIM_PERIOD), rate = turnover * p;
	size_t cap = (size_t)(blocks * p * 2 + GSIM_DAY * rate * 2) + 64, n = 0;

	s->born = gsim_doubles(cap);
	s->died = gsim_doubles(cap);
	for (double i = 0; i < blocks && n < cap; i++)
		if (lk_rng_unit(r) < p) {
			s->born[n] = 0;
			s->died[n++] = gsim_expo(r, life);
		}
	for (double t = gsim_expo(r, 1 / rate); t < GSIM_DAY && n < cap;
	     t += gsim_expo(r, 1 / rate)) {
		s->born[n] = t;
		s->died[n++] = t + gsim_expo(r, life);
	}
	s->nborn = s->ndied = n;
	qsort(s->died, n, sizeof(double), gsim_cmp_double);
	s->weight = size / p;
}

void gsim_leak(struct lk_rng *r, double lambda, double horizon, size_t cap, double weight,
	       struct gsim_site *s)
{
	*s = (struct gsim_site){ .born = gsim_doubles(cap), .weight = weight };
	for (double t = gsim_expo(r, 1 / lambda); t < horizon && s->nborn < cap;
	     t += gsim_expo(r, 1 / lambda))
		s->born[s->nborn++] = t;
}

void gsim_site_free(struct gsim_site *s)
{
	free(s->born);
	free(s->died);
	s->born = s->died = NULL;
}
