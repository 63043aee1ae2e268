/* wrappers.c: the rule of wrappers.h, over a section's stacks.
 *
 * A stack is seen through its frames past the allocator: funcs[from..] without allocator frames
 * and without the wrappers found so far, as a site skips them. Each round:
 *
 *   1. the samples of each would-be site; those with enough (LK_WRAP_MIN_SHARE of all and
 *      LK_WRAP_MIN_SAMPLES) are candidates, at most 1 / LK_WRAP_MIN_SHARE of them;
 *   2. a candidate's chain begins as its would-be site, if pure (a "proposal" checked in one
 *      walk); then, walk by walk, the callers of each chain are counted: they make it a
 *      wrapper chain, or one that holds LK_WRAP_ONLY_CALLER of them is proposed to extend it,
 *      or the candidate is no wrapper;
 *   3. the wrapper chains' functions join the skip set; a round begins again if any did.
 *
 * Never: skip a frame for any other reason, or change what a stack holds.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "funcs.h"
#include "u64map.h"
#include "wrappers.h"

#define END_CALLER ((uint64_t)UINT32_MAX) /* the stack ends past the chain: no caller */
#define MAX_CANDIDATES ((size_t)(1 / LK_WRAP_MIN_SHARE + 0.5))

enum state { PROPOSED, ACTIVE, WRAPPER, REJECTED };

struct cand {
	enum state state;
	uint32_t chain[LK_WRAP_MAX_CHAIN];
	unsigned len;
	uint32_t proposal;         /* PROPOSED: the function to put at chain[len], if pure */
	uint64_t samples;          /* the chain's, as last counted */
	uint64_t at, contains;     /* purity: samples with the proposal in place, anywhere */
	struct lk_u64map callers;  /* caller id (or END_CALLER) -> samples */
	size_t ncallers;           /* distinct, as last counted */
	double top_share;          /* the largest caller's share of the chain's samples */
};

size_t lk_wrappers_next(const struct lk_wrappers *w, const uint32_t *funcs, size_t n, size_t from)
{
	for (size_t i = from; i < n; i++)
		if (!(funcs[i] & LK_FUNC_ALLOC) && !(w && lk_wrappers_skips(w, LK_FUNC_ID(funcs[i]))))
			return i;
	return n;
}

void lk_wrappers_done(struct lk_wrappers *w)
{
	lk_budget_free(w->list, w->cap * sizeof(*w->list));
	lk_budget_free(w->skip, (w->nfuncs + 7) / 8);
	*w = (struct lk_wrappers){};
}

/* Where the caller of the chain's first len frames is in s (an index, n for none), or -1 if s
 * does not begin with them. */
static long chain_end(const struct lk_wrappers *w, const struct lk_wrap_stack *s,
		      const uint32_t *chain, unsigned len)
{
	size_t i = lk_wrappers_next(w, s->funcs, s->n, s->from);

	for (unsigned j = 0; j < len; j++) {
		if (i >= s->n || LK_FUNC_ID(s->funcs[i]) != chain[j])
			return -1;
		i = lk_wrappers_next(w, s->funcs, s->n, i + 1);
	}
	return (long)i;
}

static bool contains(const struct lk_wrappers *w, const struct lk_wrap_stack *s, uint32_t id)
{
	for (size_t i = lk_wrappers_next(w, s->funcs, s->n, s->from); i < s->n;
	     i = lk_wrappers_next(w, s->funcs, s->n, i + 1))
		if (LK_FUNC_ID(s->funcs[i]) == id)
			return true;
	return false;
}

/* Purity of each proposal: a proposal that sits at its place in LK_WRAP_PURE of the samples
 * that have it anywhere joins the chain. */
static void check_proposals(const struct lk_wrappers *w, const struct lk_wrap_stack *s, size_t n,
			    struct cand *c, size_t nc)
{
	for (size_t k = 0; k < nc; k++)
		c[k].at = c[k].contains = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < nc; k++) {
			long end;
			if (c[k].state != PROPOSED || !contains(w, &s[i], c[k].proposal))
				continue;
			c[k].contains += s[i].samples;
			end = chain_end(w, &s[i], c[k].chain, c[k].len);
			if (end >= 0 && (size_t)end < s[i].n &&
			    LK_FUNC_ID(s[i].funcs[end]) == c[k].proposal)
				c[k].at += s[i].samples;
		}
	for (size_t k = 0; k < nc; k++) {
		if (c[k].state != PROPOSED)
			continue;
		if ((double)c[k].at >= LK_WRAP_PURE * (double)c[k].contains) {
			c[k].chain[c[k].len++] = c[k].proposal;
			c[k].state = ACTIVE;
		} else
			c[k].state = REJECTED;
	}
}

/* Counts the callers of each active chain, then decides: many callers, a wrapper chain; one
 * dominant caller, a proposal; else no wrapper. 0 or the map's error. */
static int count_callers(const struct lk_wrappers *w, const struct lk_wrap_stack *s, size_t n,
			 struct cand *c, size_t nc, uint64_t total)
{
	int k = 0;

	for (size_t j = 0; j < nc; j++)
		if (c[j].state == ACTIVE) {
			lk_u64map_done(&c[j].callers);
			c[j].samples = 0;
		}
	for (size_t i = 0; i < n && k >= 0; i++)
		for (size_t j = 0; j < nc && k >= 0; j++) {
			long end;
			uint64_t caller, *v;
			if (c[j].state != ACTIVE || (end = chain_end(w, &s[i], c[j].chain, c[j].len)) < 0)
				continue;
			caller = (size_t)end < s[i].n ? LK_FUNC_ID(s[i].funcs[end]) : END_CALLER;
			c[j].samples += s[i].samples;
			v = lk_u64map_get(&c[j].callers, caller);
			k = v ? (*v += s[i].samples, 0)
			      : lk_u64map_put(&c[j].callers, caller, s[i].samples);
		}
	for (size_t j = 0; j < nc && k >= 0; j++) {
		struct cand *x = &c[j];
		double sum = (double)x->samples;
		uint64_t top = 0, top_id = END_CALLER;
		bool in_chain = false;

		if (x->state != ACTIVE)
			continue;
		for (size_t i = 0; i < x->callers.size; i++) {
			const struct lk_u64map_entry *e = &x->callers.e[i];
			if (!e->used)
				continue;
			if (e->value > top || (e->value == top && e->key < top_id)) {
				top = e->value;
				top_id = e->key;
			}
		}
		for (unsigned i = 0; i < x->len; i++)
			in_chain |= x->chain[i] == top_id;
		/* A stack that ends past the chain shows no caller. */
		x->ncallers = x->callers.count - (lk_u64map_get(&x->callers, END_CALLER) != NULL);
		x->top_share = sum > 0 ? (double)top / sum : 1;
		if (x->samples < LK_WRAP_MIN_SAMPLES || sum < LK_WRAP_MIN_SHARE * (double)total)
			x->state = REJECTED;
		else if (x->ncallers >= LK_WRAP_MIN_CALLERS && x->top_share <= LK_WRAP_MAX_TOP)
			x->state = WRAPPER;
		else if (x->top_share >= LK_WRAP_ONLY_CALLER && top_id != END_CALLER && !in_chain &&
			 x->len < LK_WRAP_MAX_CHAIN) {
			x->state = PROPOSED;
			x->proposal = (uint32_t)top_id;
		} else
			x->state = REJECTED;
	}
	return k;
}

static int cmp_cands(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return x->proposal < y->proposal ? -1 : x->proposal > y->proposal;
}

/* Step 1: the would-be sites with enough samples, largest first, into c (at most
 * MAX_CANDIDATES); their count, or the map's error. */
static long find_candidates(const struct lk_wrappers *w, const struct lk_wrap_stack *s, size_t n,
			    struct cand *c, uint64_t *total)
{
	struct lk_u64map by_site;
	size_t nc = 0;
	int k = 0;

	*total = 0;
	lk_u64map_init_budgeted(&by_site, SIZE_MAX);
	for (size_t i = 0; i < n && k >= 0; i++) {
		size_t at = lk_wrappers_next(w, s[i].funcs, s[i].n, s[i].from);
		uint64_t *v;
		*total += s[i].samples;
		if (at >= s[i].n)
			continue;
		v = lk_u64map_get(&by_site, LK_FUNC_ID(s[i].funcs[at]));
		k = v ? (*v += s[i].samples, 0)
		      : lk_u64map_put(&by_site, LK_FUNC_ID(s[i].funcs[at]), s[i].samples);
	}
	for (size_t i = 0; i < by_site.size && k >= 0; i++) {
		const struct lk_u64map_entry *e = &by_site.e[i];
		if (!e->used || e->value < LK_WRAP_MIN_SAMPLES ||
		    (double)e->value < LK_WRAP_MIN_SHARE * (double)*total || nc == MAX_CANDIDATES)
			continue;
		c[nc++] = (struct cand){ .state = PROPOSED, .proposal = (uint32_t)e->key,
					 .samples = e->value };
	}
	lk_u64map_done(&by_site);
	if (k < 0)
		return k;
	qsort(c, nc, sizeof(*c), cmp_cands);
	for (size_t j = 0; j < nc; j++)
		lk_u64map_init_budgeted(&c[j].callers, SIZE_MAX);
	return (long)nc;
}

/* Step 3: the wrapper chains of one round into w. 0, or -errno. */
static int take(struct lk_wrappers *w, const struct cand *c, size_t nc, unsigned round,
		uint64_t total)
{
	for (size_t j = 0; j < nc; j++) {
		if (c[j].state != WRAPPER)
			continue;
		for (unsigned i = 0; i < c[j].len; i++) {
			uint32_t id = c[j].chain[i];
			if (w->n == w->cap) {
				size_t cap = w->cap ? 2 * w->cap : 8;
				struct lk_wrapper *l = lk_budget_realloc(
					w->list, w->cap * sizeof(*l), cap * sizeof(*l));
				if (!l)
					return -errno;
				w->list = l;
				w->cap = cap;
			}
			w->list[w->n++] = (struct lk_wrapper){
				.func = id,
				.round = round,
				.depth = i,
				.samples = c[j].samples,
				.share = total ? (double)c[j].samples / (double)total : 0,
				.callers = c[j].ncallers,
				.top_share = c[j].top_share,
			};
			w->skip[id / 8] |= (uint8_t)(1u << (id % 8));
		}
	}
	return 0;
}

int lk_wrappers_find(struct lk_wrappers *w, const struct lk_wrap_stack *s, size_t n,
		     size_t nfuncs)
{
	struct cand c[MAX_CANDIDATES];
	int k = 0;

	*w = (struct lk_wrappers){ .nfuncs = nfuncs };
	if (nfuncs && !(w->skip = lk_budget_calloc((nfuncs + 7) / 8, 1)))
		return -errno;
	for (unsigned round = 1; round <= LK_WRAP_MAX_ROUNDS && k >= 0; round++) {
		size_t before = w->n, nc;
		uint64_t total;
		long got = find_candidates(w, s, n, c, &total);

		if (got < 0) {
			k = (int)got;
			break;
		}
		nc = (size_t)got;
		for (bool busy = nc > 0; busy && k >= 0;) {
			check_proposals(w, s, n, c, nc);
			k = count_callers(w, s, n, c, nc, total);
			busy = false;
			for (size_t j = 0; j < nc; j++)
				busy |= c[j].state == PROPOSED;
		}
		if (k >= 0)
			k = take(w, c, nc, round, total);
		for (size_t j = 0; j < nc; j++)
			lk_u64map_done(&c[j].callers);
		if (w->n == before)
			break;
	}
	if (k < 0)
		lk_wrappers_done(w);
	return k;
}

int lk_wrappers_renumber(struct lk_wrappers *dst, const struct lk_wrappers *src,
			 const uint32_t *ids, size_t nfuncs)
{
	uint32_t *local = NULL; /* src->list[i] is dst's function local[i], UINT32_MAX: none */
	int k = 0;

	*dst = (struct lk_wrappers){ .nfuncs = nfuncs };
	if ((nfuncs && !(dst->skip = lk_budget_calloc((nfuncs + 7) / 8, 1))) ||
	    (src->n && !(dst->list = lk_budget_malloc(src->n * sizeof(*dst->list)))) ||
	    (src->n && !(local = lk_budget_malloc(src->n * sizeof(*local))))) {
		k = -errno;
		goto out;
	}
	dst->cap = src->n;
	for (size_t i = 0; i < src->n; i++)
		local[i] = UINT32_MAX;
	for (size_t f = 0; f < nfuncs; f++) {
		if (!lk_wrappers_skips(src, ids[f]))
			continue;
		dst->skip[f / 8] |= (uint8_t)(1u << (f % 8));
		for (size_t i = 0; i < src->n; i++) /* few: the wrappers found */
			if (src->list[i].func == ids[f])
				local[i] = (uint32_t)f;
	}
	for (size_t i = 0; i < src->n; i++)
		if (local[i] != UINT32_MAX) {
			dst->list[dst->n] = src->list[i];
			dst->list[dst->n++].func = local[i];
		}
out:
	lk_budget_free(local, src->n * sizeof(*local));
	if (k < 0)
		lk_wrappers_done(dst);
	return k;
}
