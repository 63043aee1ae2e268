/* test-wrappers.c: the wrappers a profile's stacks reveal (src/cli/symbols/wrappers.c), and how a
 * report's sites skip them, alone or sharing the decision with another report
 * (src/cli/report/report-sites.c).
 *
 * The rule's tests build stacks of function ids by hand: id A is an allocator frame, W the
 * candidate, C1.. its callers, MAIN the outermost frame. Each threshold of wrappers.h is tested on
 * both sides of its bar, so that a changed number fails here. The report's tests build profiles
 * (profile-sim.h) whose frames no module covers: the symbolizer names each address "0x...", one
 * function per address.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "funcs.h"
#include "harness.h"
#include "profile-sim.h"
#include "report.h"
#include "wrappers.h"

enum { A, W, W2, H, X, MAIN, Y, C1 = 10, D1 = 40, S1 = 70, MAX_ID = 100 };

#define MAX_STACKS 256

struct stacks {
	uint32_t ids[MAX_STACKS][8];
	struct lk_wrap_stack s[MAX_STACKS];
	size_t n;
};

/* A stack of ids (innermost first, ending with MAX_ID) with that many samples; A is flagged an
 * allocator frame, as funcs.c flags malloc. */
static void push(struct stacks *t, uint64_t samples, const uint32_t *ids)
{
	size_t k = 0;

	ASSERT_TRUE(t->n < MAX_STACKS);
	for (; ids[k] != MAX_ID; k++)
		t->ids[t->n][k] = ids[k] == A ? (A | LK_FUNC_ALLOC) : ids[k];
	t->s[t->n] = (struct lk_wrap_stack){ .funcs = t->ids[t->n], .n = (uint32_t)k,
					     .samples = samples };
	t->n++;
}

#define PUSH(t, samples, ...) push(t, samples, (const uint32_t[]){ __VA_ARGS__, MAX_ID })

/* W under callers C1..C(callers), each with `each` samples, each caller under MAIN. */
static void wrapper_under(struct stacks *t, unsigned callers, uint64_t each)
{
	for (unsigned k = 0; k < callers; k++)
		PUSH(t, each, A, W, C1 + k, MAIN);
}

static size_t found(struct stacks *t, struct lk_wrappers *w)
{
	ASSERT_OK(lk_wrappers_find(w, t->s, t->n, MAX_ID));
	return w->n;
}

TEST(many_callers_make_a_wrapper)
{
	struct stacks t = {};
	struct lk_wrappers w;

	wrapper_under(&t, 12, 10);
	ASSERT_EQ(found(&t, &w), 1);
	ASSERT_EQ(w.list[0].func, W);
	ASSERT_EQ(w.list[0].callers, 12);
	ASSERT_EQ(w.list[0].samples, 120);
	ASSERT_EQ(w.list[0].round, 1);
	ASSERT_EQ(w.list[0].depth, 0);
	ASSERT_TRUE(w.list[0].share == 1.0);
	ASSERT_TRUE(w.list[0].top_share > 0.083 && w.list[0].top_share < 0.084);
	ASSERT_TRUE(lk_wrappers_skips(&w, W) && !lk_wrappers_skips(&w, C1));
	/* A site skips the allocator frame and the wrapper: the caller. */
	ASSERT_EQ(lk_wrappers_next(&w, t.ids[3], 4, 0), 2);
	ASSERT_EQ(t.ids[3][2], C1 + 3);
	ASSERT_EQ(lk_wrappers_next(NULL, t.ids[3], 4, 0), 1);
	lk_wrappers_done(&w);
}

/* A program whose allocations all come from one function with few callers: that function is the
 * site, however large its share. */
TEST(few_callers_make_a_site)
{
	struct stacks t = {};
	struct lk_wrappers w;

	wrapper_under(&t, LK_WRAP_MIN_CALLERS - 1, 1000);
	ASSERT_EQ(found(&t, &w), 0);
	lk_wrappers_done(&w);
	/* Stacks that end at W show no caller: they do not count as one. */
	PUSH(&t, 1000, A, W);
	ASSERT_EQ(found(&t, &w), 0);
	lk_wrappers_done(&w);
	PUSH(&t, 1000, A, W, C1 + LK_WRAP_MIN_CALLERS - 1, MAIN);
	ASSERT_EQ(found(&t, &w), 1);
	lk_wrappers_done(&w);
}

/* Skipping must split the site: not where one caller would take more than 90% of it. */
TEST(one_dominant_caller_keeps_the_site)
{
	struct stacks t = {};
	struct lk_wrappers w;

	wrapper_under(&t, 11, 10);           /* 110 samples */
	PUSH(&t, 1000, A, W, C1 + 20, MAIN); /* 1000 / 1110 = 90.1% */
	ASSERT_EQ(found(&t, &w), 0);
	lk_wrappers_done(&w);
	t.s[t.n - 1].samples = 980; /* 980 / 1090 = 89.9% */
	ASSERT_EQ(found(&t, &w), 1);
	ASSERT_TRUE(w.list[0].top_share < LK_WRAP_MAX_TOP);
	lk_wrappers_done(&w);
}

/* Only a frame that holds a large share of the samples, on enough of them, is judged. */
TEST(share_and_samples)
{
	struct stacks t = {};
	struct lk_wrappers w;

	wrapper_under(&t, 12, 2); /* 24 samples */
	for (unsigned k = 0; k < 20; k++)
		PUSH(&t, 11, A, S1 + k, MAIN); /* 20 sites of one caller each: 220 samples */
	ASSERT_EQ(found(&t, &w), 0);   /* 24 / 244 = 9.8% */
	lk_wrappers_done(&w);
	t.n -= 1; /* 24 / 233 = 10.3% */
	ASSERT_EQ(found(&t, &w), 1);
	lk_wrappers_done(&w);

	memset(&t, 0, sizeof(t));
	for (unsigned k = 0; k < LK_WRAP_MIN_SAMPLES - 1; k++)
		PUSH(&t, 1, A, W, C1 + k, MAIN);
	ASSERT_EQ(found(&t, &w), 0); /* 19 samples under 19 callers */
	lk_wrappers_done(&w);
	PUSH(&t, 1, A, W, C1 + 20, MAIN);
	ASSERT_EQ(found(&t, &w), 1);
	lk_wrappers_done(&w);
}

/* A function that allocates through W and also through something else is no wrapper: W is the
 * would-be site in less than 90% of the samples that have it. */
TEST(impure_function_is_a_site)
{
	struct stacks t = {};
	struct lk_wrappers w;

	wrapper_under(&t, 12, 10);       /* 120 samples with W as the would-be site */
	PUSH(&t, 14, A, X, W, C1, MAIN); /* 14 more with W above X: 120 / 134 = 89.6% */
	ASSERT_EQ(found(&t, &w), 0);
	lk_wrappers_done(&w);
	t.s[t.n - 1].samples = 13; /* 120 / 133 = 90.2% */
	ASSERT_EQ(found(&t, &w), 1);
	ASSERT_EQ(w.list[0].func, W);
	lk_wrappers_done(&w);
}

/* sqlite3MemMalloc under sqlite3Malloc: W's only caller is W2, whose callers are many; both go. */
TEST(chain_of_wrappers)
{
	struct stacks t = {};
	struct lk_wrappers w;

	for (unsigned k = 0; k < 8; k++)
		PUSH(&t, 10, A, W, W2, C1 + k, MAIN);
	ASSERT_EQ(found(&t, &w), 2);
	ASSERT_EQ(w.list[0].func, W);
	ASSERT_EQ(w.list[0].depth, 0);
	ASSERT_EQ(w.list[1].func, W2);
	ASSERT_EQ(w.list[1].depth, 1);
	ASSERT_EQ(w.list[1].callers, 8);
	ASSERT_EQ(lk_wrappers_next(&w, t.ids[0], 5, 0), 3);
	lk_wrappers_done(&w);

	/* Each the only caller of the one before: W, W2, H, X, then many callers. A chain of
	 * LK_WRAP_MAX_CHAIN frames is judged by its callers; a longer one is no wrapper. */
	memset(&t, 0, sizeof(t));
	for (unsigned k = 0; k < 8; k++)
		PUSH(&t, 10, A, W, W2, H, X, D1 + k);
	ASSERT_EQ(found(&t, &w), LK_WRAP_MAX_CHAIN);
	ASSERT_EQ(w.list[3].func, X);
	ASSERT_EQ(w.list[3].depth, 3);
	lk_wrappers_done(&w);
	memset(&t, 0, sizeof(t));
	for (unsigned k = 0; k < 8; k++)
		PUSH(&t, 10, A, W, W2, H, X, Y, D1 + k);
	ASSERT_EQ(found(&t, &w), 0);
	lk_wrappers_done(&w);

	/* A caller that holds 99% of W's samples but not all continues the chain; 98% does not. */
	memset(&t, 0, sizeof(t));
	for (unsigned k = 0; k < 8; k++)
		PUSH(&t, 100, A, W, W2, C1 + k, MAIN);
	PUSH(&t, 8, A, W, H, MAIN); /* 800 / 808 = 99.0% */
	ASSERT_EQ(found(&t, &w), 2);
	lk_wrappers_done(&w);
	t.s[t.n - 1].samples = 17; /* 800 / 817 = 97.9% */
	ASSERT_EQ(found(&t, &w), 0);
	lk_wrappers_done(&w);
}

/* Round 2 judges the sites that skipping the first wrapper gives. */
TEST(wrapper_under_a_wrapper)
{
	struct stacks t = {};
	struct lk_wrappers w;

	for (unsigned k = 0; k < 6; k++) {
		PUSH(&t, 10, A, W, H, D1 + k, MAIN); /* H: 60 samples under 6 callers */
		PUSH(&t, 10, A, W, C1 + k, MAIN);    /* and 6 more callers of W */
	}
	ASSERT_EQ(found(&t, &w), 2);
	ASSERT_EQ(w.list[0].func, W);
	ASSERT_EQ(w.list[0].round, 1);
	ASSERT_EQ(w.list[0].callers, 7);
	ASSERT_EQ(w.list[1].func, H);
	ASSERT_EQ(w.list[1].round, 2);
	ASSERT_TRUE(w.list[1].share == 0.5);
	ASSERT_EQ(lk_wrappers_next(&w, t.ids[0], 5, 0), 3); /* D1 */
	ASSERT_EQ(lk_wrappers_next(&w, t.ids[1], 4, 0), 2); /* C1 */
	lk_wrappers_done(&w);
}

/* A normal program: its top site has 60% with 3 callers, and many small sites of one caller each
 * add up the rest; nothing is a wrapper. */
TEST(normal_program_keeps_its_sites)
{
	struct stacks t = {};
	struct lk_wrappers w;

	for (unsigned k = 0; k < 3; k++)
		PUSH(&t, 200, A, S1, C1 + k, MAIN);
	for (unsigned k = 1; k < 30; k++)
		PUSH(&t, 10 + k % 7, A, S1 + k, D1 + k % 4, MAIN);
	ASSERT_EQ(found(&t, &w), 0);
	lk_wrappers_done(&w);
	/* Stacks of allocator frames only have no site to judge. */
	PUSH(&t, 1000, A, A);
	ASSERT_EQ(found(&t, &w), 0);
	ASSERT_EQ(lk_wrappers_next(&w, t.ids[t.n - 1], 2, 0), 2);
	lk_wrappers_done(&w);
}

/* Another numbering of the same functions: the skip set and the list follow it, and a wrapper
 * that the other numbering has no function for stays out of its list. */
TEST(renumbered_wrappers)
{
	struct stacks t = {};
	struct lk_wrappers w, r = {};
	/* f -> the rule's id: 0 MAIN, 1 C1, 2 H, 3 W (no W2, no other caller) */
	static const uint32_t ids[] = { MAIN, C1, H, W };

	for (unsigned k = 0; k < 6; k++) {
		PUSH(&t, 10, A, W, H, D1 + k, MAIN);
		PUSH(&t, 10, A, W, C1 + k, MAIN);
	}
	ASSERT_EQ(found(&t, &w), 2); /* W, then H (wrapper_under_a_wrapper) */
	ASSERT_OK(lk_wrappers_renumber(&r, &w, ids, 4));
	ASSERT_EQ(r.nfuncs, 4);
	ASSERT_TRUE(lk_wrappers_skips(&r, 3) && lk_wrappers_skips(&r, 2));
	ASSERT_TRUE(!lk_wrappers_skips(&r, 0) && !lk_wrappers_skips(&r, 1));
	ASSERT_EQ(r.n, 2);
	ASSERT_EQ(r.list[0].func, 3); /* W, found first */
	ASSERT_EQ(r.list[0].samples, w.list[0].samples);
	ASSERT_EQ(r.list[1].func, 2);
	ASSERT_EQ(r.list[1].round, 2);
	lk_wrappers_done(&r);
	/* Functions without W or H: nothing is skipped; with W alone: W is. */
	ASSERT_OK(lk_wrappers_renumber(&r, &w, ids, 2));
	ASSERT_EQ(r.n, 0);
	ASSERT_OK(lk_wrappers_renumber(&r, &w, (const uint32_t[]){ W, MAIN }, 2));
	ASSERT_EQ(r.n, 1);
	ASSERT_EQ(r.list[0].func, 0);
	ASSERT_TRUE(lk_wrappers_skips(&r, 0) && !lk_wrappers_skips(&r, 1));
	lk_wrappers_done(&r);
	lk_wrappers_done(&w);
}

/* ---- in a report ---- */

#define PC_W 0x401000
#define PC_CALLER(k) (0x402000 + 0x10 * (uint64_t)(k))
#define PC_MAIN 0x403000

/* `callers` callers of one address (a wrapper without a symbol), caller k making `each`
 * allocations of 100 B (0: k + 1 of them), all live; and `own` allocations of a site of its
 * own. */
static struct lk_profile *through_wrapper(unsigned callers, unsigned each, unsigned own)
{
	struct lk_profile *p = NULL;
	char *err = NULL;
	uint64_t t = 0, addr = 0x100000;
	struct sim s;

	sim_start(&s, 1, LK_HDR_EXACT);
	for (unsigned k = 0; k < callers; k++) {
		uint64_t frames[3] = { PC_W, PC_CALLER(k), PC_MAIN };
		uint64_t id = sim_stack(&s, frames, 3);
		for (unsigned i = 0; i < (each ? each : k + 1); i++)
			sim_alloc(&s, ++t, addr += 0x100, 100, id);
	}
	if (own) {
		uint64_t frames[2] = { PC_CALLER(20), PC_MAIN }, id = sim_stack(&s, frames, 2);
		for (unsigned i = 0; i < own; i++)
			sim_alloc(&s, ++t, addr += 0x100, 10, id);
	}
	ASSERT_OK(sim_load(&s, NULL, &p, &err));
	free(s.b.p);
	return p;
}

/* 12 callers of the wrapper, caller k making k + 1 allocations; and 30 of a site of its own. */
static struct lk_profile *wrapped_profile(void)
{
	return through_wrapper(12, 0, 30);
}

static struct lk_report *report_of(struct lk_symbolizer *sym, const struct lk_profile *p,
				   const struct lk_report_opts *o)
{
	struct lk_report *r = NULL;

	ASSERT_OK(lk_report_new(o, &r));
	ASSERT_OK(lk_report_add(r, sym, 0, "x.lk", p, NULL));
	ASSERT_OK(lk_report_finish(r, NULL));
	return r;
}

static const struct lk_report_site *site_named(const struct lk_report *r, const char *function)
{
	for (size_t i = 0; i < r->nsites; i++)
		if (!strcmp(r->sites[i].stack[r->sites[i].site_frame]->function, function))
			return &r->sites[i];
	return NULL;
}

TEST(report_sites_skip_the_wrapper)
{
	struct lk_symbolizer *sym = NULL;
	struct lk_profile *p = wrapped_profile();
	struct lk_report *r;
	struct lk_site_filter focus = {};
	char name[32];

	ASSERT_OK(lk_symbolizer_new(&sym));
	r = report_of(sym, p, &(struct lk_report_opts){ .view = LK_VIEW_LEAKS });
	ASSERT_EQ(r->wrappers.n, 1);
	ASSERT_STREQ(lk_funcs_frame(&r->funcs, r->wrappers.list[0].func)->function, "0x401000");
	ASSERT_EQ(r->nsites, 13); /* the 12 callers and the site of its own */
	ASSERT_TRUE(site_named(r, "0x401000") == NULL);
	for (unsigned k = 0; k < 12; k++) {
		snprintf(name, sizeof(name), "0x%llx", (unsigned long long)PC_CALLER(k));
		const struct lk_report_site *s = site_named(r, name);
		ASSERT_TRUE(s != NULL);
		ASSERT_EQ(s->live_bytes.value, 100.0 * (k + 1));
		ASSERT_EQ(s->site_frame, 1);
		ASSERT_TRUE(!(s->funcs[0] & LK_FUNC_ALLOC)); /* a wrapper, not an allocator */
	}
	ASSERT_EQ(r->sites[0].live_bytes.value, 1200);
	lk_report_free(r);

	/* --no-auto-wrappers: one site for all 78 allocations through the wrapper. */
	r = report_of(sym, p, &(struct lk_report_opts){ .view = LK_VIEW_LEAKS,
							 .no_auto_wrappers = true });
	ASSERT_EQ(r->wrappers.n, 0);
	ASSERT_EQ(r->nsites, 2);
	ASSERT_STREQ(r->sites[0].stack[r->sites[0].site_frame]->function, "0x401000");
	ASSERT_EQ(r->sites[0].live_bytes.value, 7800);
	lk_report_free(r);

	/* --focus on one caller leaves the wrapper what it is: the profile's, not the view's. */
	snprintf(name, sizeof(name), "^0x%llx$", (unsigned long long)PC_CALLER(3));
	ASSERT_OK(lk_site_filter_add(&focus, LK_SITE_FOCUS, name, NULL, 0));
	r = report_of(sym, p, &(struct lk_report_opts){ .view = LK_VIEW_LEAKS, .filter = &focus });
	ASSERT_EQ(r->wrappers.n, 1);
	ASSERT_EQ(r->nsites, 1);
	ASSERT_EQ(r->stacks_filtered, 12);
	ASSERT_STREQ(r->sites[0].stack[r->sites[0].site_frame]->function, "0x402030");
	lk_report_free(r);
	lk_site_filter_done(&focus);

	/* --alloc-fn by location names it too, and then it is no longer the rule's to find. */
	ASSERT_OK(lk_site_filter_add(&focus, LK_SITE_ALLOC_FN, "^0x401000$", NULL, 0));
	r = report_of(sym, p, &(struct lk_report_opts){ .view = LK_VIEW_LEAKS, .filter = &focus,
							 .no_auto_wrappers = true });
	ASSERT_EQ(r->wrappers.n, 0);
	ASSERT_EQ(r->nsites, 13);
	ASSERT_TRUE(r->sites[0].funcs[0] & LK_FUNC_ALLOC);
	lk_report_free(r);
	lk_site_filter_done(&focus);

	lk_symbolizer_free(sym);
	lk_profile_free(p);
}

/* The reports of p[0] and p[1] with options o, their wrappers decided together. */
static void two_sides(struct lk_symbolizer *sym, const struct lk_report_opts *o,
		      struct lk_profile *const *p, struct lk_report **r)
{
	for (int i = 0; i < 2; i++) {
		ASSERT_OK(lk_report_new(o, &r[i]));
		ASSERT_OK(lk_report_add(r[i], sym, (uint32_t)i, "x.lk", p[i], NULL));
	}
	ASSERT_OK(lk_report_share_wrappers(r, 2));
}

/* Two reports (leek diff's sides): alone, the one with 3 callers keeps the wrapper as its site;
 * sharing the decision with the one of 12 callers, both skip it, and both list it. */
TEST(reports_share_their_wrappers)
{
	struct lk_symbolizer *sym = NULL;
	struct lk_profile *p[2] = { through_wrapper(3, 20, 0), wrapped_profile() };
	const struct lk_report_opts o = { .view = LK_VIEW_LEAKS, .all_sites = true };
	struct lk_report *r[2];
	char name[32];

	ASSERT_OK(lk_symbolizer_new(&sym));
	r[0] = report_of(sym, p[0], &o);
	ASSERT_EQ(r[0]->wrappers.n, 0);
	ASSERT_EQ(r[0]->nsites, 1);
	ASSERT_STREQ(r[0]->sites[0].stack[r[0]->sites[0].site_frame]->function, "0x401000");
	lk_report_free(r[0]);

	two_sides(sym, &o, p, r);
	for (int i = 0; i < 2; i++) {
		ASSERT_OK(lk_report_finish(r[i], NULL));
		ASSERT_EQ(r[i]->wrappers.n, 1);
		ASSERT_STREQ(lk_funcs_frame(&r[i]->funcs, r[i]->wrappers.list[0].func)->function,
			     "0x401000");
		ASSERT_EQ(r[i]->wrappers.list[0].samples, 60 + 78); /* both sides' */
		ASSERT_TRUE(site_named(r[i], "0x401000") == NULL);
	}
	ASSERT_EQ(r[0]->nsites, 3);
	for (unsigned k = 0; k < 3; k++) {
		snprintf(name, sizeof(name), "0x%llx", (unsigned long long)PC_CALLER(k));
		ASSERT_EQ(site_named(r[0], name)->live_bytes.value, 2000);
		ASSERT_EQ(site_named(r[1], name)->live_bytes.value, 100.0 * (k + 1));
	}
	lk_report_free(r[0]);
	lk_report_free(r[1]);

	/* --no-auto-wrappers on both: nothing shared, nothing skipped. */
	const struct lk_report_opts keep = { .view = LK_VIEW_LEAKS, .no_auto_wrappers = true };
	two_sides(sym, &keep, p, r);
	for (int i = 0; i < 2; i++) {
		ASSERT_OK(lk_report_finish(r[i], NULL));
		ASSERT_EQ(r[i]->wrappers.n, 0);
		ASSERT_TRUE(site_named(r[i], "0x401000") != NULL);
		lk_report_free(r[i]);
	}
	lk_symbolizer_free(sym);
	lk_profile_free(p[0]);
	lk_profile_free(p[1]);
}
