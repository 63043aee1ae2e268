/* test-diff.c: `leek diff`'s test of a change (src/cli/profile/profile-change.c) against the
 * sampler, over many seeds.
 *
 * Two runs of the same workload of 40 sites (light and heavy sizes, 0.3 to 300 expected samples,
 * sizes from 64 B to 32 MiB, and mixtures) go through the sampler's countdown rule
 * (tests/lib/countdown.h) with independent streams; each site's estimates are built sample by
 * sample with lk_estimate_add_sample(), as profile.c builds them, and tested with
 * lk_change_test() and lk_change_adjust(), as `leek diff` tests them. Checked, with the bounds of
 * docs/sampling.md section 12:
 *   - no change: each site's p < 0.05 in at most about 5% of the runs, and any site flagged
 *     after the adjustment in at most about 5% of them (the false-alarm rate the diff promises);
 *     without the correction for heavy samples, some site fails the first bound;
 *   - real changes (a site tripled, one new, one vanished, heavy blocks doubled): flagged at least
 *     as often as the normal approximation of the test predicts, and the share of false flags
 *     among the flags at most about 5%;
 *   - two moments of one run, with blocks live at both: the variance of the change is that of
 *     the blocks that came and left only, and the test of came against left keeps its false
 *     alarms at 5%.
 * No seed was chosen to make a test pass; never tune a bound.
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "profile.h"
#include "sim.h"

#define SEED   0x6c65656b2d646966ull /* "leek-dif" */
#define PERIOD 524288
#define R      2000 /* pairs of runs */
#define KiB    ((uint64_t)1 << 10)
#define MiB    ((uint64_t)1 << 20)

/* 4 sigma above the expected count of a binomial(n, p): the bound on a count of false alarms
 * whose rate must not exceed p. A correct implementation exceeds it with probability about
 * 3e-5. */
static double above(double n, double p)
{
	return n * p + 4 * sqrt(n * p * (1 - p));
}

/* One class of allocations of a site: `count` of `size` bytes, or `lambda` expected samples. */
struct cls {
	uint64_t size;
	double lambda;
};

#define MAX_CLASSES 3
struct site {
	const char *name;
	struct cls c[MAX_CLASSES];
};

/* The workload: no two sites alike, from very few samples to many, light (p < 1/2) and heavy
 * (p >= 1/2), with 32 MiB (p = 1 in double: exact) among them. */
static const struct site sites[] = {
	{ "64B x0.3", { { 64, 0.3 } } },
	{ "64B x3", { { 64, 3 } } },
	{ "64B x30", { { 64, 30 } } },
	{ "64B x300", { { 64, 300 } } },
	{ "4K x1", { { 4 * KiB, 1 } } },
	{ "4K x5", { { 4 * KiB, 5 } } },
	{ "4K x20", { { 4 * KiB, 20 } } },
	{ "4K x100", { { 4 * KiB, 100 } } },
	{ "64K x0.5", { { 64 * KiB, 0.5 } } },
	{ "64K x2", { { 64 * KiB, 2 } } },
	{ "64K x10", { { 64 * KiB, 10 } } },
	{ "64K x50", { { 64 * KiB, 50 } } },
	{ "256K x3", { { 256 * KiB, 3 } } },
	{ "256K x12", { { 256 * KiB, 12 } } },
	{ "512K x1", { { 512 * KiB, 1 } } },
	{ "512K x4", { { 512 * KiB, 4 } } },
	{ "512K x30", { { 512 * KiB, 30 } } },
	{ "1M x1", { { MiB, 1 } } },
	{ "1M x3", { { MiB, 3 } } },
	{ "1M x10", { { MiB, 10 } } },
	{ "1M x60", { { MiB, 60 } } },
	{ "2M x1", { { 2 * MiB, 1 } } },
	{ "2M x3", { { 2 * MiB, 3 } } },
	{ "2M x20", { { 2 * MiB, 20 } } },
	{ "4M x1", { { 4 * MiB, 1 } } },
	{ "4M x10", { { 4 * MiB, 10 } } },
	{ "4M x100", { { 4 * MiB, 100 } } },
	{ "8M x3", { { 8 * MiB, 3 } } },
	{ "8M x50", { { 8 * MiB, 50 } } },
	{ "32M x2", { { 32 * MiB, 2 } } },
	{ "4K x5 + 2M x3", { { 4 * KiB, 5 }, { 2 * MiB, 3 } } },
	{ "4K x20 + 1M x10", { { 4 * KiB, 20 }, { MiB, 10 } } },
	{ "64B x20 + 1M x3 + 8M x5", { { 64, 20 }, { MiB, 3 }, { 8 * MiB, 5 } } },
	{ "64K x10 + 512K x2", { { 64 * KiB, 10 }, { 512 * KiB, 2 } } },
	{ "256K x1 + 4M x2", { { 256 * KiB, 1 }, { 4 * MiB, 2 } } },
	{ "4K x200 + 4M x13", { { 4 * KiB, 200 }, { 4 * MiB, 13 } } },
	{ "64B x1 + 4K x1", { { 64, 1 }, { 4 * KiB, 1 } } },
	{ "1M x2 + 2M x2", { { MiB, 2 }, { 2 * MiB, 2 } } },
	{ "16K x8", { { 16 * KiB, 8 } } },
	{ "128K x6", { { 128 * KiB, 6 } } },
};
#define NSITES (sizeof(sites) / sizeof(sites[0]))

/* A class's allocations: lambda expected samples (at least one allocation). */
static uint64_t count_of(const struct cls *c)
{
	uint64_t n = (uint64_t)ceil(c->lambda / sim_p(c->size, PERIOD));

	return n ? n : 1;
}

/* Samples of k allocations of `size` bytes into e, as profile.c adds each ALLOC. */
static void add_samples(struct lk_estimate *e, uint64_t size, uint64_t k)
{
	double p = sim_p(size, PERIOD), w = 1, v1 = 0;

	if (p < 1) { /* as live_weigh_sampled(): p = 1 in double weighs 1, no variance */
		w = 1 / p;
		v1 = exp(-(double)size / PERIOD) / (p * p);
	}
	for (uint64_t i = 0; i < k; i++)
		lk_estimate_add_sample(e, (double)size, w, v1);
}

/* One run of site s, `scale` times its allocations, on the countdown c. */
static void run_site(struct countdown *c, const struct site *s, double scale,
		     struct lk_estimate *e)
{
	*e = (struct lk_estimate){ 0 };
	for (int k = 0; k < MAX_CLASSES && s->c[k].size; k++) {
		uint64_t n = (uint64_t)llround((double)count_of(&s->c[k]) * scale);
		add_samples(e, s->c[k].size, countdown_take_run(c, s->c[k].size, n));
	}
	lk_estimate_finish(e);
}

/* The truth of site s, `scale` times: its bytes and the exact variance of its estimate
 * (docs/sampling.md section 4). */
static void truth_of(const struct site *s, double scale, double *bytes, double *var)
{
	*bytes = *var = 0;
	for (int k = 0; k < MAX_CLASSES && s->c[k].size; k++) {
		double n = (double)llround((double)count_of(&s->c[k]) * scale);
		double x = (double)s->c[k].size, p = sim_p(s->c[k].size, PERIOD);
		*bytes += n * x;
		*var += n * x * x * (1 - p) / p;
	}
}

TEST(countdown_in_runs)
{
	static const uint64_t sizes[] = { 0, 1, 64, 4096, 300000, PERIOD, 9 * MiB };
	struct countdown a, b;

	countdown_init(&a, SEED, 99, PERIOD);
	countdown_init(&b, SEED, 99, PERIOD);
	for (unsigned i = 0; i < 200; i++) {
		uint64_t size = sizes[i % 7], n = 1 + (i * 7919) % 5000, one = 0;
		for (uint64_t k = 0; k < n; k++)
			one += countdown_take(&a, size);
		ASSERT_EQ(countdown_take_run(&b, size, n), one);
		ASSERT_EQ(a.left, b.left);
	}
}

/* Both runs' estimates of every site, for pair `r`: base on stream 2r, new on 2r + 1, each
 * site's allocations scaled (NULL: 1, the same program). */
static void run_pair(uint64_t r, const double *scale_base, const double *scale_new,
		     struct lk_estimate *base, struct lk_estimate *new)
{
	struct countdown cb, cn;

	countdown_init(&cb, SEED, 2 * r, PERIOD);
	countdown_init(&cn, SEED, 2 * r + 1, PERIOD);
	for (size_t i = 0; i < NSITES; i++) {
		run_site(&cb, &sites[i], scale_base ? scale_base[i] : 1, &base[i]);
		run_site(&cn, &sites[i], scale_new ? scale_new[i] : 1, &new[i]);
	}
}

/* The diff's decision over the sites: flags[i] for the sites flagged after the adjustment (sites
 * without a sample are not tested, as in diff-rank.c); p[i] each site's own p-value. */
static size_t decide(const struct lk_estimate *base, const struct lk_estimate *new, double *p,
		     bool *flags)
{
	double q[NSITES];
	size_t idx[NSITES], m = 0, nflags = 0;

	for (size_t i = 0; i < NSITES; i++) {
		struct lk_change c;
		lk_change_test(&base[i], PERIOD, &new[i], PERIOD, &c);
		p[i] = c.p;
		flags[i] = false;
		if (base[i].samples + new[i].samples == 0)
			continue;
		size_t j = m++; /* insertion by p: 40 sites */
		while (j > 0 && p[idx[j - 1]] > c.p) {
			idx[j] = idx[j - 1];
			j--;
		}
		idx[j] = i;
	}
	for (size_t j = 0; j < m; j++)
		q[j] = p[idx[j]];
	lk_change_adjust(q, m);
	for (size_t j = 0; j < m; j++)
		if (q[j] <= LK_CHANGE_FDR) {
			flags[idx[j]] = true;
			nflags++;
		}
	return nflags;
}

/* The same program twice. Each site's own p-value is below 0.05 in at most 5% of the pairs, and
 * some site is flagged in at most 5% of them: both counts within 4 binomial sigma of 5% of R
 * (100 + 39 = 139 of 2000). The same runs without the correction for heavy samples (their steps
 * left out of the estimates) make some heavy site fail the first bound: one 1 MiB block seen in
 * one run and missed in the other looks like 2.7 sigma (section 12). */
TEST(no_change_no_alarm)
{
	unsigned site_alarms[NSITES] = { 0 }, naive_alarms[NSITES] = { 0 }, any = 0;
	struct lk_estimate base[NSITES], new[NSITES];
	double p[NSITES], bound = above(R, 0.05);
	bool flags[NSITES];
	size_t worst_naive = 0;

	for (uint64_t r = 0; r < R; r++) {
		run_pair(r, NULL, NULL, base, new);
		any += decide(base, new, p, flags) > 0;
		for (size_t i = 0; i < NSITES; i++) {
			struct lk_estimate b = base[i], n = new[i];
			struct lk_change c;
			site_alarms[i] += p[i] < 0.05;
			b.heavy_step = n.heavy_step = b.heavy_miss = n.heavy_miss = 0;
			lk_change_test(&b, PERIOD, &n, PERIOD, &c);
			naive_alarms[i] += c.p < 0.05;
		}
	}
	for (size_t i = 0; i < NSITES; i++) {
		note("%-26s p < 0.05 in %4u of %d pairs (%.2f%%); without the heavy steps %u\n",
		     sites[i].name, site_alarms[i], R, 100.0 * site_alarms[i] / R, naive_alarms[i]);
		if (site_alarms[i] > bound)
			FAIL("%s: %u false alarms of %d, above %.0f", sites[i].name, site_alarms[i],
			     R, bound);
		if (naive_alarms[i] > naive_alarms[worst_naive])
			worst_naive = i;
	}
	note("some site flagged in %u of %d pairs (bound %.0f); without the heavy steps, %s has "
	     "%u false alarms\n", any, R, bound, sites[worst_naive].name,
	     naive_alarms[worst_naive]);
	ASSERT_TRUE(any <= bound);
	ASSERT_TRUE(naive_alarms[worst_naive] > bound);
}

/* Changed sites: each side's allocations, scaled. */
static const struct {
	const char *name;
	double base, new;
} changes[] = {
	{ "4K x20", 1, 3 },   /* 20 -> 60 expected samples */
	{ "64K x10", 1, 0 },  /* vanished: 10 -> 0 */
	{ "16K x8", 0, 1.5 }, /* new: 0 -> 12 */
	{ "1M x10", 1, 1.5 }, /* heavy: 8.6 -> 13 samples */
};
#define NCHANGES (sizeof(changes) / sizeof(changes[0]))

static size_t site_index(const char *name)
{
	for (size_t i = 0; i < NSITES; i++)
		if (strcmp(sites[i].name, name) == 0)
			return i;
	FAIL("no site %s", name);
}

/* z with P(|Z| > z) = a for a standard normal Z, by bisection on erfc. */
static double z_two_sided(double a)
{
	double lo = 0, hi = 40;

	for (int i = 0; i < 200; i++) {
		double mid = (lo + hi) / 2;
		if (erfc(mid / sqrt(2)) > a)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* The power of the test at site s, its allocations scaled by sb in the base and sn in the new
 * run, by the normal approximation of section 12: the change, less the continuity step, over the
 * standard deviation it would have if nothing changed, against the threshold of one test at
 * level q/m (Bonferroni: Benjamini-Hochberg flags at least what it flags). */
static double predicted_power(const struct site *s, double sb, double sn, double level)
{
	double b, vb, n, vn, w1, w2, step = 0, z;

	truth_of(s, sb, &b, &vb);
	truth_of(s, sn, &n, &vn);
	w1 = b > 0 ? vb / b : vn / n; /* a side without allocations: the other's dispersion */
	w2 = n > 0 ? vn / n : vb / b;
	for (int k = 0; k < MAX_CLASSES && s->c[k].size; k++) {
		double p = sim_p(s->c[k].size, PERIOD), c = (double)s->c[k].size / p;
		step = fmax(step, p < 0.5 ? c / 2 : c); /* heavy misses are common here */
	}
	z = (fabs(n - b) - step) / sqrt(b * w2 + n * w1);
	return 0.5 * erfc((z_two_sided(level) - z) / sqrt(2));
}

/* The workload with four real changes. Each changed site has p < 0.05 in at least its predicted
 * power's share of the pairs (predicted_power at level 0.05), and is flagged after the
 * adjustment in at least its predicted power at level q/m, each less 4 binomial sigma. The
 * predictions are at true values and for a single test at q/m, so they fall short of what the
 * test does (measured: 0.99, 0.98, 0.99, 0.67 against 0.99, 0.90, 0.92, 0.61 predicted at 0.05);
 * a test whose variance were that of two snapshots sharing their blocks, or twice its own, would
 * fall below them. The share of false flags among the flags (the false discovery proportion, 0
 * when nothing is flagged) averages at most 5%: it lies in [0, 1], so its variance is at most its
 * mean, and the bound is 0.05 + 4 sqrt(0.05 / R) = 0.070. */
TEST(real_changes_are_found)
{
	double sb[NSITES], sn[NSITES], p[NSITES], fdp = 0;
	struct lk_estimate base[NSITES], new[NSITES];
	unsigned found[NCHANGES] = { 0 }, raw[NCHANGES] = { 0 };
	size_t at[NCHANGES];
	bool flags[NSITES];

	for (size_t i = 0; i < NSITES; i++)
		sb[i] = sn[i] = 1;
	for (size_t k = 0; k < NCHANGES; k++) {
		at[k] = site_index(changes[k].name);
		sb[at[k]] = changes[k].base;
		sn[at[k]] = changes[k].new;
	}
	for (uint64_t r = 0; r < R; r++) {
		size_t nflags, nfalse;
		run_pair(R + r, sb, sn, base, new);
		nflags = decide(base, new, p, flags);
		nfalse = nflags;
		for (size_t k = 0; k < NCHANGES; k++) {
			found[k] += flags[at[k]];
			raw[k] += p[at[k]] < 0.05;
			nfalse -= flags[at[k]];
		}
		fdp += nflags ? (double)nfalse / (double)nflags : 0;
	}
	for (size_t k = 0; k < NCHANGES; k++) {
		double power = predicted_power(&sites[at[k]], changes[k].base, changes[k].new,
					       LK_CHANGE_FDR / NSITES);
		double praw = predicted_power(&sites[at[k]], changes[k].base, changes[k].new, 0.05);
		double low = R * power - 4 * sqrt(R * power * (1 - power));
		double low_raw = R * praw - 4 * sqrt(R * praw * (1 - praw));
		note("%-10s x%g -> x%g: p < 0.05 in %u of %d pairs, predicted %.4f (bound %.0f); "
		     "flagged in %u, predicted %.4f (bound %.0f)\n",
		     changes[k].name, changes[k].base, changes[k].new, raw[k], R, praw, low_raw,
		     found[k], power, low);
		ASSERT_TRUE(raw[k] >= low_raw);
		ASSERT_TRUE(found[k] >= low);
	}
	fdp /= R;
	note("false discovery proportion: %.4f on average (bound %.3f)\n", fdp,
	     0.05 + 4 * sqrt(0.05 / R));
	ASSERT_TRUE(fdp <= 0.05 + 4 * sqrt(0.05 / R));
}

/* ---- two moments of one run ---- */

/* A site between two moments: blocks live at both (stayed), live at the first and freed by the
 * second (left), allocated in between and live at the second (came), in expected samples. */
static const struct {
	const char *name;
	uint64_t size;
	double stayed, left, came;
} moments[] = {
	{ "64B 100+5/5", 64, 100, 5, 5 },
	{ "4K 200+20/20", 4 * KiB, 200, 20, 20 },
	{ "64K 50+50/50", 64 * KiB, 50, 50, 50 },
	{ "512K 10+2/2", 512 * KiB, 10, 2, 2 },
	{ "1M 30+3/3", MiB, 30, 3, 3 },
	{ "4K 200+20/60", 4 * KiB, 200, 20, 60 }, /* grew: 40 more expected samples */
};
#define NMOMENTS (sizeof(moments) / sizeof(moments[0]))

/* One allocation's share of the moments of a sum of x I / p, I a Bernoulli coin of probability
 * p: its variance c^2 p (1-p) and fourth cumulant c^4 p (1-p) (1 - 6 p (1-p)), c = x / p. */
static void coin_moments(uint64_t size, double lambda, double *var, double *k4)
{
	double p = sim_p(size, PERIOD), c = (double)size / p, n = ceil(lambda / p), v = p * (1 - p);

	*var += n * c * c * v;
	*k4 += n * c * c * c * c * v * (1 - 6 * v);
}

/* Each run samples the site's allocations once; the live bytes at the two moments are
 * L1 = stayed + left and L2 = stayed + came, so their change L2 - L1 = came - left: the blocks
 * live at both cancel, and so does their sampling noise (section 12). Over R runs:
 *   - the change's variance is that of came and left alone: the sample variance of L2 - L1 is
 *     within 4 sigma of Var(came) + Var(left), sigma from its fourth moment (Var(s^2) =
 *     (mu4 - sigma^4 (R-3)/(R-1)) / R, mu4 = k4 + 3 sigma^4); Var(L1) + Var(L2), which counts
 *     the stayed blocks twice, lies outside that band at every site;
 *   - where nothing changed, came against left has p < 0.05 in at most 5% of the runs (4
 *     binomial sigma, as above);
 *   - where it grew, it has p < 0.05 in at least the predicted share of runs (predicted_power, a
 *     lower bound, less 4 sigma), and the test of the two snapshots as if independent falls
 *     short of that prediction. */
TEST(moments_share_their_blocks)
{
	for (size_t i = 0; i < NMOMENTS; i++) {
		const struct site one = { moments[i].name,
					  { { moments[i].size, moments[i].left } } };
		double sum = 0, sum2 = 0, var = 0, k4 = 0, var_stayed = 0, k4_stayed = 0;
		unsigned alarms = 0, naive = 0;
		bool grew = moments[i].came != moments[i].left;

		coin_moments(moments[i].size, moments[i].left, &var, &k4);
		coin_moments(moments[i].size, moments[i].came, &var, &k4);
		coin_moments(moments[i].size, moments[i].stayed, &var_stayed, &k4_stayed);
		for (uint64_t r = 0; r < R; r++) {
			struct lk_estimate stayed, left, came, l1 = { 0 }, l2 = { 0 };
			struct countdown c;
			struct lk_change t;
			const struct site parts[3] = {
				{ "", { { moments[i].size, moments[i].stayed } } },
				{ "", { { moments[i].size, moments[i].left } } },
				{ "", { { moments[i].size, moments[i].came } } },
			};

			countdown_init(&c, SEED, 1000000 + 1000 * i + r, PERIOD);
			run_site(&c, &parts[0], 1, &stayed);
			run_site(&c, &parts[1], 1, &left);
			run_site(&c, &parts[2], 1, &came);
			lk_estimate_add(&l1, &stayed);
			lk_estimate_add(&l1, &left);
			lk_estimate_add(&l2, &stayed);
			lk_estimate_add(&l2, &came);
			double d = l2.value - l1.value;
			sum += d;
			sum2 += d * d;
			lk_change_test(&left, PERIOD, &came, PERIOD, &t);
			alarms += t.p < 0.05;
			lk_change_test(&l1, PERIOD, &l2, PERIOD, &t);
			naive += t.p < 0.05;
		}
		double mean = sum / R, s2 = (sum2 - R * mean * mean) / (R - 1);
		double mu4 = k4 + 3 * var * var;
		double sd_s2 = sqrt((mu4 - var * var * (R - 3.0) / (R - 1.0)) / R);
		double naive_var = var + 2 * var_stayed;
		note("%-14s var(L2 - L1) %.4g, came + left %.4g (4 sigma %.2g), L1 + L2 %.4g; "
		     "p < 0.05 in %u runs, as two snapshots %u\n", moments[i].name, s2, var,
		     4 * sd_s2, naive_var, alarms, naive);
		ASSERT_NEAR(s2, var, 4 * sd_s2);
		ASSERT_TRUE(naive_var > var + 4 * sd_s2);
		if (!grew) {
			ASSERT_TRUE(alarms <= above(R, 0.05));
			continue;
		}
		double power = predicted_power(&one, 1, moments[i].came / moments[i].left, 0.05);
		double low = R * power - 4 * sqrt(R * power * (1 - power));
		note("%-14s predicted power %.4f (bound %.0f)\n", moments[i].name, power, low);
		ASSERT_TRUE(alarms >= low);
		ASSERT_TRUE(naive < low);
	}
}
