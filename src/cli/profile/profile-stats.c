/* profile-stats.c: the pure arithmetic of docs/sampling.md, shared by profile.c and the report:
 * the weight of a sample (section 3), and the 95% interval and "too few samples" rule of one
 * estimate (section 5, with Garwood's table), and sums of estimates.
 *
 * Pure functions of their arguments: no I/O, no allocation, no state. Never change a number here
 * without changing docs/sampling.md first; tests/unit/test-profile-stats.c checks the table's
 * rows against the Poisson distribution.
 */
#include <math.h>

#include "profile.h"

double lk_sample_weight(uint64_t size, uint64_t period)
{
	double p;

	/* Exact mode weighs 1 (section 6). Size 0 is never sampled above period 1 (p(0) = 0);
	 * a file that holds one anyway counts it as one object, not as an infinite weight. */
	if (period <= 1 || size == 0)
		return 1.0;
	/* -expm1(-x) is 1 - exp(-x) without the cancellation for blocks far below the period. */
	p = -expm1(-(double)size / (double)period);
	return p >= 1.0 ? 1.0 : 1.0 / p;
}

/* Garwood's exact 95% interval for a Poisson mean given a count K (section 5): L(K) solves
 * P(Poisson(L) >= K) = 0.025 and U(K) solves P(Poisson(U) <= K) = 0.025. Rows 0..20. */
static const double garwood[21][2] = {
	{ 0, 3.6889 },        { 0.0253, 5.5716 },   { 0.2422, 7.2247 },   { 0.6187, 8.7673 },
	{ 1.0899, 10.2416 },  { 1.6235, 11.6683 },  { 2.2019, 13.0595 },  { 2.8144, 14.4227 },
	{ 3.4538, 15.7632 },  { 4.1154, 17.0848 },  { 4.7954, 18.3904 },  { 5.4912, 19.6820 },
	{ 6.2006, 20.9616 },  { 6.9220, 22.2304 },  { 7.6539, 23.4896 },  { 8.3954, 24.7402 },
	{ 9.1454, 25.9830 },  { 9.9031, 27.2186 },  { 10.6679, 28.4478 }, { 11.4392, 29.6709 },
	{ 12.2165, 30.8884 },
};

#define K_NORMAL 20.0  /* from here on the normal interval covers 93% to 95% */
#define K_TOO_FEW 5.0  /* below: an order of magnitude and nothing more */
#define Z95 1.96

/* L(k) or U(k) (col 0 or 1) for a real k in [0, 20], linear between the table's rows. */
static double garwood_at(double k, int col)
{
	int i;

	if (!(k > 0))
		return garwood[0][col];
	if (k >= K_NORMAL)
		return garwood[20][col];
	i = (int)k;
	return garwood[i][col] + (k - i) * (garwood[i + 1][col] - garwood[i][col]);
}

void lk_estimate_finish(struct lk_estimate *e)
{
	if (!(e->var > 0) || !(e->value > 0)) {
		/* V = 0: every sample had p = 1 (or there is none, or exact mode): the point. */
		e->lo = e->hi = e->value;
		e->k_eff = INFINITY;
		e->too_few = false;
	} else {
		e->k_eff = e->value * e->value / e->var;
		if (e->k_eff >= K_NORMAL) {
			double half = Z95 * sqrt(e->var);
			e->lo = e->value - half;
			e->hi = e->value + half;
		} else {
			/* Scaled Poisson: the estimate as w times a Poisson count of mean K_eff,
			 * matching both moments (Fay and Feuer, 1997). */
			double w = e->var / e->value;
			e->lo = w * garwood_at(e->k_eff, 0);
			e->hi = w * garwood_at(e->k_eff, 1);
		}
		e->too_few = e->k_eff < K_TOO_FEW;
	}
	/* The truth is never below what the samples show by themselves. */
	if (e->lo < e->observed)
		e->lo = e->observed;
	if (e->hi < e->lo)
		e->hi = e->lo;
}

void lk_estimate_add(struct lk_estimate *sum, const struct lk_estimate *e)
{
	sum->value += e->value;
	sum->var += e->var;
	sum->observed += e->observed;
	sum->samples += e->samples;
	sum->step = fmax(sum->step, e->step);
	sum->heavy_step = fmax(sum->heavy_step, e->heavy_step);
	sum->heavy_miss += e->heavy_miss;
	lk_estimate_finish(sum);
}

void lk_window_add(struct lk_window *sum, const struct lk_window *w)
{
	lk_estimate_add(&sum->from_bytes, &w->from_bytes);
	lk_estimate_add(&sum->from_objects, &w->from_objects);
	lk_estimate_add(&sum->came_bytes, &w->came_bytes);
	lk_estimate_add(&sum->came_objects, &w->came_objects);
	lk_estimate_add(&sum->left_bytes, &w->left_bytes);
	lk_estimate_add(&sum->left_objects, &w->left_objects);
	lk_estimate_add(&sum->alloc_bytes, &w->alloc_bytes);
	lk_estimate_add(&sum->alloc_objects, &w->alloc_objects);
}
