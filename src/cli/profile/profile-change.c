/* profile-change.c: whether two estimates differ by more than their sampling noise, and the
 * correction for testing many sites at once: the arithmetic of docs/sampling.md section 12, for
 * `leek diff`.
 *
 * The two estimates are sums over different samples, so they are independent: two profiles, or
 * the blocks that came and the blocks that left between two moments of one profile. The test is
 * a score test (the variance the change would have if nothing changed) with a continuity
 * correction of the largest step a sample can make, so that a change of one or two samples, or of
 * one large block that was missed, is never taken for a real one. Pure functions of their
 * arguments: no I/O, no allocation, no state. Never change a number here without changing
 * docs/sampling.md first; tests/stats/test-diff.c checks the false alarms and the power.
 */
#include <math.h>

#include "profile.h"

#define Z95 1.959963984540054
/* Below this many expected misses of heavy samples (p >= 1/2) on both sides together, a miss is
 * rare enough to leave out of the correction: it adds at most about 1% of false alarms. */
#define HEAVY_MISS_RARE 0.01
/* A sampled side without a sample may still hold this many periods: a site of B bytes is missed
 * with probability exp(-B/T), below 5% from B = T ln 20 on (section 5). */
#define MISSED_PERIODS 2.995732273553991

/* The variance per byte of an estimate, V/X: about the period for small blocks, less for large
 * ones, 0 when exact; -1 when it has no sample to say. */
static double dispersion(const struct lk_estimate *e)
{
	if (!e->samples)
		return -1;
	return e->value > 0 && e->var > 0 ? e->var / e->value : 0;
}

/* A side without a sample: the other side's dispersion at this side's period, or the period
 * itself, the largest dispersion a sample can have (x (1-p)/p < T for every x); 0 if exact. */
static double dispersion_of_none(uint64_t period, double other, uint64_t other_period)
{
	if (period <= 1)
		return 0;
	if (other >= 0 && other_period > 1)
		return other * (double)period / (double)other_period;
	return (double)period;
}

void lk_change_test(const struct lk_estimate *base, uint64_t base_period,
		    const struct lk_estimate *new, uint64_t new_period, struct lk_change *ret)
{
	double d = new->value - base->value;
	double w1 = dispersion(base), w2 = dispersion(new), v0, cc, half, z;

	if (w1 < 0 && w2 < 0)
		w1 = w2 = 0; /* no sample on either side: nothing to compare */
	else if (w1 < 0)
		w1 = dispersion_of_none(base_period, w2, new_period);
	else if (w2 < 0)
		w2 = dispersion_of_none(new_period, w1, base_period);
	/* The variance of the change if both sides had the same value: X1 w2 + X2 w1, which is
	 * V1 + V2 when w1 = w2, and the new side's variance at the base's value when the base is
	 * exact (w1 = 0). */
	v0 = base->value * w2 + new->value * w1;
	/* Half the step of a light sample (p < 1/2); the whole step of a heavy one when heavy
	 * samples can be missed often enough to matter. */
	cc = fmax(base->step, new->step) / 2;
	if (base->heavy_miss + new->heavy_miss >= HEAVY_MISS_RARE)
		cc = fmax(cc, fmax(base->heavy_step, new->heavy_step));

	half = cc + Z95 * sqrt(base->var + new->var);
	ret->value = d;
	ret->lo = d - half;
	ret->hi = d + half;
	if (!base->samples && base_period > 1)
		ret->lo -= MISSED_PERIODS * (double)base_period;
	if (!new->samples && new_period > 1)
		ret->hi += MISSED_PERIODS * (double)new_period;
	if (!(v0 > 0)) {
		ret->p = fabs(d) > cc ? 0 : 1; /* exact: a difference is a fact */
		return;
	}
	z = (fabs(d) - cc) / sqrt(v0);
	ret->p = z > 0 ? erfc(z / M_SQRT2) : 1;
}

void lk_change_adjust(double *p, size_t n)
{
	double q = 1;

	/* q_(i) = min over j >= i of n p_(j) / j (1-based), at most 1. */
	for (size_t i = n; i > 0; i--) {
		double x = p[i - 1] * (double)n / (double)i;
		if (x < q)
			q = x;
		p[i - 1] = q;
	}
}
