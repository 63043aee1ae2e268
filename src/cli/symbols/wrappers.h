/* wrappers.h: the allocation wrappers that a profile's stacks reveal, which a site skips.
 *
 * A program's own wrapper around malloc (sqlite3's static sqlite3MemMalloc, git's xmalloc, perl's
 * Perl_safesysmalloc) is the first frame past the allocator in most of its stacks, so every
 * allocation would have it as its site: one line at 100%. The built-in list (allocators.c) and
 * --alloc-fn name the wrappers someone knew of; this rule finds the others in the stacks. The
 * would-be site of a stack is its first frame past the allocator frames (and past the wrappers
 * found so far), its caller the next such frame. A function W is a wrapper if, over the samples
 * whose would-be site is W:
 *
 *   - they are LK_WRAP_MIN_SHARE of all samples or more, and LK_WRAP_MIN_SAMPLES or more;
 *   - W has LK_WRAP_MIN_CALLERS distinct callers or more;
 *   - no caller holds more than LK_WRAP_MAX_TOP of them (skipping W must split its site, not
 *     move it whole to one caller);
 *   - W is the would-be site in LK_WRAP_PURE of the samples that have W anywhere (a wrapper
 *     allocates for its callers and does nothing else that allocates).
 *
 * A wrapper may have one caller that is a wrapper too (sqlite3MemMalloc's only caller is
 * sqlite3Malloc): where one caller holds LK_WRAP_ONLY_CALLER of W's samples and is as pure, the
 * rule judges the two by the callers of the pair, up to LK_WRAP_MAX_CHAIN frames, and skips all
 * of them if those make a wrapper. Once wrappers are found, the rule runs again on the would-be
 * sites that skipping them gives, LK_WRAP_MAX_ROUNDS times at most. docs/design.md ("Choosing a
 * site") says why each number is what it is.
 *
 * The rule only ever skips frames, and the report names each one it skipped. Pure: no I/O, no
 * printing; memory from the budget (budget.h), bounded by the number of functions, and time by
 * LK_WRAP_MAX_ROUNDS * (LK_WRAP_MAX_CHAIN + 1) walks of the stacks for each candidate.
 */
#ifndef LEEK_WRAPPERS_H
#define LEEK_WRAPPERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LK_WRAP_MIN_SHARE 0.10   /* of all samples */
#define LK_WRAP_MIN_SAMPLES 20   /* behind the wrapper */
#define LK_WRAP_MIN_CALLERS 5    /* distinct callers */
#define LK_WRAP_MAX_TOP 0.90     /* the largest caller's share of the wrapper's samples */
#define LK_WRAP_ONLY_CALLER 0.99 /* a caller with this share of a chain's samples extends it */
#define LK_WRAP_PURE 0.90        /* of the samples that have the function anywhere */
#define LK_WRAP_MAX_CHAIN 4      /* frames in one chain of wrappers */
#define LK_WRAP_MAX_ROUNDS 4

/* One stack, as the rule sees it. */
struct lk_wrap_stack {
	const uint32_t *funcs; /* function ids with their LK_FUNC_ALLOC flags (funcs.h), innermost
				* first */
	uint32_t n, from;      /* the rule looks at funcs[from .. n - 1] */
	uint64_t samples;      /* its weight */
};

/* A wrapper found. */
struct lk_wrapper {
	uint32_t func;    /* its function id */
	unsigned round;   /* found in round 1, 2, ... */
	unsigned depth;   /* 0: the frame above the allocator; 1: its only caller, ... */
	uint64_t samples; /* the samples of its chain: whose would-be site it was */
	double share;     /* of all samples */
	size_t callers;   /* distinct callers of its chain */
	double top_share; /* the largest one's share of the chain's samples */
};

struct lk_wrappers {
	struct lk_wrapper *list; /* in the order found */
	size_t n, cap;
	uint8_t *skip;           /* a bit per function id */
	size_t nfuncs;
};

/* Runs the rule on n stacks whose function ids are below nfuncs; w must be zeroed or done. 0,
 * -ENOMEM or -E2BIG (the budget), w then empty. */
int lk_wrappers_find(struct lk_wrappers *w, const struct lk_wrap_stack *s, size_t n,
		     size_t nfuncs);
void lk_wrappers_done(struct lk_wrappers *w);

/* src's wrappers in another numbering of the same functions, into dst: function f (below nfuncs)
 * is src's ids[f], and no two fs share one. A wrapper of src that no f is stays out of dst's list
 * (those stacks do not have it). dst must be zeroed or done. 0, -ENOMEM or -E2BIG, dst then
 * empty. */
int lk_wrappers_renumber(struct lk_wrappers *dst, const struct lk_wrappers *src,
			 const uint32_t *ids, size_t nfuncs);

static inline bool lk_wrappers_skips(const struct lk_wrappers *w, uint32_t id)
{
	return id < w->nfuncs && w->skip && (w->skip[id / 8] >> (id % 8) & 1);
}

/* The first of funcs[from .. n - 1] that is neither an allocator frame nor a wrapper of w (w may
 * be NULL), or n if there is none. */
size_t lk_wrappers_next(const struct lk_wrappers *w, const uint32_t *funcs, size_t n, size_t from);

#endif /* LEEK_WRAPPERS_H */
