/* test-profile-growth.c: the growth verdicts (src/cli/profile/profile-growth.c), on hand-made
 * series and on simulated programs sampled exactly as libleek samples them.
 *
 * The simulated program runs for 1 s and has the three shapes of demo/leek-demo.c: a steady leak
 * (40 MiB in blocks of 256 B to 2 KiB), a pool filled in the first 30% of the run (16 MiB in
 * 64 KiB buffers) and pure churn (180 MiB in blocks of 16 to 512 B, each freed 5 ms later, the
 * ones still in flight at the end never freed); optionally a cache filled with 8 MiB in the first
 * 10 ms that then replaces 20000 entries at random. Its allocations go through the sampler's
 * countdown with fixed seeds, at the default period, and the samples become a profile. Every seed
 * must give growing, plateau and flat: the seeds were never chosen to pass.
 */
#include <math.h>
#include <stdlib.h>

#include "harness.h"
#include "profile-sim.h"

#define MIB (1024ull * 1024)
#define SEC 1000000000ull

static const char *trend_name(enum lk_trend t)
{
	static const char *names[] = { "unknown", "flat", "growing", "plateau" };
	return t <= LK_TREND_PLATEAU ? names[t] : "?";
}

#define ASSERT_TREND(g, t)                                                                         \
	do {                                                                                       \
		if ((g).trend != (t))                                                              \
			FAIL("trend %s, expected %s (confidence %g)", trend_name((g).trend),       \
			     trend_name(t), (g).confidence);                                       \
	} while (0)

TEST(classify_series)
{
	double s[LK_TIMELINE_BUCKETS] = { 0 };
	struct lk_growth g;

	/* Too few samples, or too few points: unknown, whatever the shape. */
	for (int i = 0; i < 64; i++)
		s[i] = 1000.0 * i;
	lk_growth_classify(s, 64, 0.01, 4, &g);
	ASSERT_TREND(g, LK_TREND_UNKNOWN);
	ASSERT_EQ(g.confidence, 0);
	lk_growth_classify(s, 7, 0.01, 1000, &g);
	ASSERT_TREND(g, LK_TREND_UNKNOWN);

	/* A straight rise: growing, at 1000 bytes a bucket = 100000 B/s. */
	lk_growth_classify(s, 64, 0.01, 1000, &g);
	ASSERT_TREND(g, LK_TREND_GROWING);
	ASSERT_TRUE(g.confidence > 0.999);
	ASSERT_NEAR(g.slope_bytes_s, 100000, 1e-6);

	/* Rises over the first 30%, then holds: plateau. */
	for (int i = 0; i < 64; i++)
		s[i] = 1000.0 * (i < 19 ? i : 19);
	lk_growth_classify(s, 64, 0.01, 1000, &g);
	ASSERT_TREND(g, LK_TREND_PLATEAU);
	ASSERT_TRUE(g.confidence > 0.999);
	ASSERT_EQ(g.slope_bytes_s, 0);

	/* Constant: flat, and as flat as can be. */
	for (int i = 0; i < 64; i++)
		s[i] = 5e6;
	lk_growth_classify(s, 64, 0.01, 1000, &g);
	ASSERT_TREND(g, LK_TREND_FLAT);
	ASSERT_EQ(g.confidence, 1);

	/* A small rise on a high level is not a plateau; a rise and a fall neither. */
	for (int i = 0; i < 64; i++)
		s[i] = 5e6 + (i < 19 ? i : 19) * 1000.0;
	lk_growth_classify(s, 64, 0.01, 1000, &g);
	ASSERT_TREND(g, LK_TREND_FLAT);
	for (int i = 0; i < 64; i++)
		s[i] = i < 32 ? 1000.0 * i : 1000.0 * (64 - i);
	lk_growth_classify(s, 64, 0.01, 1000, &g);
	ASSERT_TREND(g, LK_TREND_FLAT);

	/* Zero with one or two blocks in flight at the end: a step, not growth. */
	for (int i = 0; i < 64; i++)
		s[i] = 0;
	s[63] = 524288;
	lk_growth_classify(s, 64, 0.01, 300, &g);
	ASSERT_TREND(g, LK_TREND_FLAT);
	s[62] = 524288;
	s[63] = 2 * 524288;
	lk_growth_classify(s, 64, 0.01, 300, &g);
	ASSERT_TREND(g, LK_TREND_FLAT);

	/* Fewer buckets work the same way (opts.buckets). */
	for (int i = 0; i < 16; i++)
		s[i] = 1000.0 * i;
	lk_growth_classify(s, 16, 0.0625, 100, &g);
	ASSERT_TREND(g, LK_TREND_GROWING);
}

enum site { LEAK, POOL, CHURN, CACHE, NSITES };

/* A sampled ALLOC or FREE, for the profile. */
struct event {
	uint64_t t, seq, addr, size;
	enum site site;
	bool alloc;
};

struct events {
	struct event *e;
	size_t n, cap;
};

static void push(struct events *v, struct event e)
{
	if (v->n == v->cap) {
		v->cap = v->cap ? v->cap * 2 : 4096;
		v->e = realloc(v->e, v->cap * sizeof(*v->e));
		if (!v->e)
			abort();
	}
	e.seq = v->n;
	v->e[v->n++] = e;
}

static int cmp_event(const void *x, const void *y)
{
	const struct event *a = x, *b = y;

	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* One kind of allocation of the program: n of them spread evenly over [from, to), or, with n 0,
 * a Poisson process of `rate` a second there; sizes uniform in [min, max]. */
struct stream {
	enum site site;
	double from, to, rate, t;
	uint64_t n, i, min, max;
};

static void stream_next(struct stream *st, struct lk_rng *rng)
{
	if (st->n)
		st->t = st->i < st->n ? st->from + (st->i + lk_rng_unit(rng)) * (st->to - st->from) /
							   (double)st->n
				      : INFINITY;
	else
		st->t += -log(lk_rng_unit(rng)) / st->rate * SEC;
	st->i++;
	if (st->t >= st->to)
		st->t = INFINITY;
}

#define CACHE_SLOTS 2048 /* of 4 KiB: 8 MiB */
#define CHURN_LIFE 5000000 /* ns */

/* Runs the program's allocations, in time order, through the sampler, and loads the profile of
 * what was sampled; stack id = site + 1. */
static struct lk_profile *simulate(uint64_t seed, uint64_t period, bool with_cache)
{
	struct stream st[] = {
		{ LEAK, 0, SEC, 40.0 * MIB / 1152, .min = 256, .max = 2048 },   /* 40 MiB */
		{ POOL, 0, 0.3 * SEC, .n = 256, .min = 65536, .max = 65536 },  /* 16 MiB */
		{ CHURN, 0, SEC, 180.0 * MIB / 264, .min = 16, .max = 512 },   /* 180 MiB */
		{ CACHE, 0, 0.01 * SEC, .n = CACHE_SLOTS, .min = 4096, .max = 4096 }, /* fill */
		{ CACHE, 0, SEC, 20000, .min = 4096, .max = 4096 },           /* replace */
	};
	size_t nst = with_cache ? 5 : 3, fill = 0;
	uint64_t cache[CACHE_SLOTS] = { 0 }, addr = 0x10000;
	struct lk_profile *p = NULL;
	struct events out = { 0 };
	struct countdown sm;
	struct lk_rng rng;
	char *err = NULL;
	struct sim s;

	lk_rng_seed(&rng, seed, 1);
	countdown_init(&sm, seed, 0, period);
	for (size_t k = 0; k < nst; k++)
		stream_next(&st[k], &rng);
	for (;;) {
		struct stream *e = &st[0];
		uint64_t t, size, slot = 0;
		for (size_t k = 1; k < nst; k++)
			if (st[k].t < e->t)
				e = &st[k];
		if (isinf(e->t))
			break;
		t = (uint64_t)e->t;
		size = e->min + lk_rng_next(&rng) % (e->max - e->min + 1);
		if (e->site == CACHE) {
			slot = e->n ? fill++ % CACHE_SLOTS : lk_rng_next(&rng) % CACHE_SLOTS;
			if (cache[slot]) /* the entry it replaces */
				push(&out, (struct event){ .t = t, .addr = cache[slot] });
			cache[slot] = 0;
		}
		stream_next(e, &rng);
		if (!countdown_take(&sm, size))
			continue;
		addr += 16;
		push(&out, (struct event){ .t = t, .addr = addr, .size = size, .site = e->site,
					   .alloc = true });
		if (e->site == CHURN && t + CHURN_LIFE < SEC) /* else still in flight at the end */
			push(&out, (struct event){ .t = t + CHURN_LIFE, .addr = addr });
		if (e->site == CACHE)
			cache[slot] = addr;
	}
	qsort(out.e, out.n, sizeof(*out.e), cmp_event);
	sim_start(&s, period, period == 1 ? LK_HDR_EXACT : 0);
	for (int i = 0; i < NSITES; i++)
		sim_site(&s, 0x401000 + 0x100 * (uint64_t)i);
	for (size_t i = 0; i < out.n; i++) {
		if (out.e[i].alloc)
			sim_alloc(&s, out.e[i].t, out.e[i].addr, out.e[i].size, out.e[i].site + 1);
		else
			sim_free(&s, out.e[i].t, out.e[i].addr);
	}
	sim_trailer(&s, SEC, NULL);
	ASSERT_OK(sim_load(&s, NULL, &p, &err));
	free(out.e);
	free(s.b.p);
	return p;
}

static const struct lk_stack_stats *site_stats(const struct lk_profile *p, enum site site)
{
	const struct lk_stack_stats *s;
	size_t n = lk_profile_stacks(p, &s);

	ASSERT_TRUE((size_t)site < n);
	ASSERT_EQ(s[site].id, site + 1);
	return &s[site];
}

TEST(simulated_program_default_period)
{
	for (uint64_t seed = 1; seed <= 12; seed++) {
		struct lk_profile *p = simulate(seed, 524288, false);
		const struct lk_stack_stats *leak = site_stats(p, LEAK);

		ASSERT_TREND(leak->growth, LK_TREND_GROWING);
		ASSERT_TRUE(leak->growth.confidence > 0.99);
		/* 40 MiB/s, measured over the last third. */
		ASSERT_TRUE(leak->growth.slope_bytes_s > 20 * MIB);
		ASSERT_TRUE(leak->growth.slope_bytes_s < 80 * MIB);
		ASSERT_TREND(site_stats(p, POOL)->growth, LK_TREND_PLATEAU);
		ASSERT_TREND(site_stats(p, CHURN)->growth, LK_TREND_FLAT);
		lk_profile_free(p);
	}
}

TEST(simulated_cache_is_not_growing)
{
	/* Full from the start, turning over at random: its sampled level wanders like a random
	 * walk pulled back to its mean, which a trend test on ranks alone takes for growth in
	 * about a fifth of such runs. Never growing; a wander upwards may read as a plateau
	 * (2 of 200 other seeds did). */
	for (uint64_t seed = 1; seed <= 12; seed++) {
		struct lk_profile *p = simulate(seed, 524288, true);
		enum lk_trend t = site_stats(p, CACHE)->growth.trend;

		ASSERT_TRUE(t != LK_TREND_GROWING);
		ASSERT_TREND(site_stats(p, LEAK)->growth, LK_TREND_GROWING);
		lk_profile_free(p);
	}
}

TEST(simulated_program_exact)
{
	struct lk_profile *p = simulate(1, 1, true);
	const struct lk_stack_stats *leak = site_stats(p, LEAK);

	ASSERT_TREND(leak->growth, LK_TREND_GROWING);
	ASSERT_NEAR(leak->growth.slope_bytes_s, 40.0 * MIB, 4.0 * MIB);
	ASSERT_TREND(site_stats(p, POOL)->growth, LK_TREND_PLATEAU);
	ASSERT_TREND(site_stats(p, CHURN)->growth, LK_TREND_FLAT);
	ASSERT_TREND(site_stats(p, CACHE)->growth, LK_TREND_FLAT);
	/* Exact: the pool's 16 MiB to the byte, with no interval. */
	ASSERT_EQ(site_stats(p, POOL)->live_bytes.value, 16 * MIB);
	ASSERT_EQ(site_stats(p, POOL)->live_bytes.hi, 16 * MIB);
	ASSERT_TRUE(!site_stats(p, POOL)->live_bytes.too_few);
	lk_profile_free(p);
}
