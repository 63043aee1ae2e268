/* unwind.h: what the files that capture a stack share, and nobody else uses.
 *
 * A capture (stack.c) finds a kept walk (walks-kept.c), or walks by the rules cached per return
 * address (unwind-rules.c), following the thread's previous walk where it meets it (walk.c); what
 * the rules do not know, libunwind works out on a stack of its own (unwind-altstack.c). The rest
 * of libleek sees none of this: only preload.h's lk_stack_* functions.
 *
 * Everything here may run inside malloc with no lock held (the capture's walk) or under lk_lock
 * (the kept walks of exact mode's common sample).
 *
 * Never: declare here what another part of libleek uses (that goes in preload.h); allocate; turn
 * an inline function of the sample's path into a call (bench/callgrind-real.sh shows it).
 */
#ifndef LEEK_UNWIND_H
#define LEEK_UNWIND_H

#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <stdbool.h>
#include <stdint.h>

#include "preload.h"

#pragma GCC visibility push(hidden)

/* ---- unwind-rules.c: the unwind-rule cache ---- */
/* A return address's rule: how to find its caller's frame (unwind-rules.c, derive). */
enum {
	RULE_FP = 1,   /* CFA = rbp + 16; caller's rbp at [rbp] */
	RULE_SP = 2,   /* CFA = rsp + off; caller's rbp unchanged, or at [CFA - rbp_off] */
	RULE_END = 3,  /* the outermost frame: the stack ends here */
	RULE_SLOW = 4, /* libunwind every time (signal frames, frames it could not step) */
};
#define RULE(kind, off, rbp_off) ((uint64_t)(kind) | (uint64_t)(off) << 8 | (uint64_t)(rbp_off) << 36)
#define RULE_KIND(r) ((unsigned)(r)&0xff)
#define RULE_OFF(r) (((r) >> 8) & 0xfffffff)
#define RULE_RBP(r) ((r) >> 36)

struct rule_slot {
	uint64_t ip, rule;
};
struct rules {
	uint64_t mask, used;
	struct rule_slot slot[];
};

extern struct rules *lk_rules; /* current table; replaced whole, never freed (unwind-rules.c) */
extern unsigned long long lk_rules_gen; /* the loader's generation the rules are for */
extern __thread uintptr_t lk_stack_top; /* this thread's outermost CFA, as libunwind last saw it */

/* The rule for ip, or 0. The table is read as words (w: ip at an even index, its rule after it,
 * mask2 = mask * 2), so that a probe is one scaled load: the same slot as rule_hash's. */
static inline uint64_t lk_rule_find(const uint64_t *w, uint64_t mask2, uint64_t ip)
{
	for (uint64_t j = (ip * 0x9e3779b97f4a7c15ull) >> 39 & mask2;; j = (j + 2) & mask2) {
		uint64_t k = __atomic_load_n(&w[j], __ATOMIC_ACQUIRE);
		if (k == ip)
			return __atomic_load_n(&w[j + 1], __ATOMIC_ACQUIRE);
		if (k == 0)
			return 0;
	}
}

/* Whether the rules may be used for a walk in the loader's generation gen (forgetting them first
 * if they are another generation's and no learner is inside). */
bool lk_rules_current(unsigned long long gen);
/* libunwind's walk from the context uc, step by step, teaching the cache what it finds: up to max
 * frames in buf, their number returned. */
int lk_rules_walk(unw_context_t *uc, uint64_t *buf, int max);
/* The rule of the frame at (ip, sp, bp), which has none yet: one libunwind step, learned. */
uint64_t lk_rules_learn(const unw_context_t *uc, uintptr_t ip, uintptr_t sp, uintptr_t bp);
void lk_rules_atfork_child(void);

/* ---- unwind-altstack.c: libunwind's work on a stack of its own ---- */
struct unwind_job {
	const unw_context_t *uc;
	uint64_t *buf;
	int max, n;             /* walk: frames wanted, frames found */
	uintptr_t ip, sp, bp;   /* step: the frame */
	uint64_t rule;          /* step: its rule */
	bool walk;
};
/* j done: lk_rules_walk (j->walk) or lk_rules_learn, on the unwinder's stack if it is free. */
void lk_unwind_run(struct unwind_job *j);
void lk_unwind_atfork_child(void);

/* ---- walk.c: the cached walk, and the previous walk it follows ---- */
/* A walk's outcome. WALK_ON only between frames: one step taken, the walk goes on. */
enum walk { WALK_DONE, WALK_MISS, WALK_SLOW, WALK_NEW, WALK_LEARN, WALK_ON };

/* Where a walk is: the frame at (ip, sp, bp), frame k of the stack (buf[k] = ip). */
struct cursor {
	uintptr_t ip, sp, bp;
	int k;
};

/* A frame-pointer frame's two words [a, a + 16) lie in [lo, hi), aligned. */
static inline bool lk_walk_readable(uintptr_t a, uintptr_t lo, uintptr_t hi)
{
	return a >= lo && a < hi && hi - a >= 16 && !(a & 7);
}

/* Moves c to its caller by rule r (WALK_ON), or says why not: WALK_DONE where the stack ends (r
 * is RULE_END), else the walk to take instead. The walk reads only inside [sp, hi): hi is the
 * thread's stack top. */
static inline enum walk lk_walk_step(uint64_t r, struct cursor *c, uintptr_t hi)
{
	uintptr_t cfa, ra;

	if (lk_likely(RULE_KIND(r) == RULE_SP)) { /* most frames of distribution code */
		/* off and rbp_off are multiples of 8 with 0 < rbp_off <= off (derive), so both
		 * words read lie in [sp, cfa): only the top needs a check. */
		cfa = c->sp + RULE_OFF(r);
		if (cfa > hi)
			return WALK_MISS;
		ra = ((uintptr_t *)cfa)[-1];
		if (RULE_RBP(r))
			c->bp = *(uintptr_t *)(cfa - RULE_RBP(r));
	} else if (RULE_KIND(r) == RULE_FP) {
		cfa = c->bp + 16;
		if (!lk_walk_readable(c->bp, c->sp, hi))
			return WALK_MISS;
		ra = ((uintptr_t *)c->bp)[1];
		c->bp = ((uintptr_t *)c->bp)[0];
	} else {
		return RULE_KIND(r) == RULE_END ? WALK_DONE : WALK_SLOW;
	}
	c->ip = ra;
	c->sp = cfa;
	return WALK_ON;
}

struct kept_walks;
enum walk lk_walk_cached(struct cursor *c, uint64_t *buf, int max, bool fresh,
			 struct kept_walks *kw);

/* ---- walks-kept.c: each thread's last walks, found again by what they read ---- */
#define KEPT_FRAMES 64
#define KEPT_WALKS 32     /* walks kept a thread (32: a find's candidates are a 32-bit mask) */

struct walk_frame {
	uintptr_t ip, sp, bp; /* the frame's state */
	uint64_t rule;        /* ip's */
};

/* A kept walk as a find reads it: one cache line (docs/performance.md, "The kept walks' keys").
 * The words the walk read (its checks: key_fill) are not kept, only where they are, in words
 * from the first frame's %rsp, and one sum of what they held and of what the walk was taken
 * under (sum_step). A find reads them only for a first frame at the same depth below this
 * thread's stack top: where the walk read them, if the top is the same, and below the top. */
#define KEY_OFFS 22
#define KEY_WALK 0x3f /* wf: the walk in w[] */
enum { KEY_BP = 0x40, KEY_CUT = 0x80 };
struct __attribute__((aligned(64))) walk_key {
	uint64_t sum;         /* of the rules, the thread, its stack top, f[0]'s ip, %rsp and %rbp
			       * (KEY_BP), and the words (sum_step) */
	uint32_t depth;       /* the stack top then, less f[0]'s %rsp: a find reads the words of a
			       * key of its own depth only, where the walk read them if the top is
			       * the same, and below the top in any case */
	uint32_t id;          /* its stack's number, once interned (lk_stack_learned); 0 */
	uint16_t early;       /* the sum's top 16 bits after 4 words (key_holds) */
	uint8_t nw;           /* words: more than KEY_OFFS, and the offsets are the walk's */
	uint8_t wf;           /* the walk's index (KEY_WALK); KEY_BP: the first frame's %rbp counts;
			       * KEY_CUT: the stack was cut at LEEK_MAX_FRAMES, a loss counted at
			       * each use */
	uint16_t off[KEY_OFFS]; /* in words from f[0]'s %rsp, ascending */
};
_Static_assert(sizeof(struct walk_key) == 64, "a key is one cache line");
_Static_assert(KEPT_WALKS + 2 <= KEY_WALK + 1, "a walk's index fits wf");

/* One walk: its frames and what they were taken under, for the next walk to follow
 * (lk_walk_cached), and the offsets of a key too wide for its line. */
struct kept_walk {
	uintptr_t hi;          /* that thread's stack top then */
	const struct rules *t; /* the rules it went by */
	uint32_t tid;          /* whose */
	bool whole;            /* f holds all of it, and its last frame is where the stack ends */
	int8_t pos;            /* the cache position that holds it, or -1 */
	uint32_t n;            /* frames in f: the walk's first ones */
	struct walk_frame f[KEPT_FRAMES + 1]; /* + the end: a frame with %rsp UINTPTR_MAX */
	uint16_t offs[2 * KEPT_FRAMES];       /* a return address a frame, a %rbp an FP one */
};

/* A slot of kept walks: a record's, or shared by thread id (walks-kept.c). */
struct kept_walks {
	int busy;                 /* try-lock, of a shared slot */
	uint32_t epoch;           /* kept_epoch when it was last emptied: older, a fork's child's */
	uint8_t last;             /* the walk to follow: the last one taken or found */
	uint8_t spare;            /* the walk the next one records into */
	uint8_t used;             /* walks handed out so far: w[0, used) */
	int8_t pending;           /* the cache position of the walk whose id is to be learned, or -1 */
	uint8_t hand;             /* the position the next walk kept takes (first in, first out) */
	uint8_t at[KEPT_WALKS];   /* the cache: at each position a walk's index + 1, or 0 */
	/* At each position, the tag of its walk's first frame (kept_tag): the line a find reads
	 * first, every time, so the one most likely to be in the cache. */
	uint16_t tags[KEPT_WALKS] __attribute__((aligned(64)));
	struct walk_key key[KEPT_WALKS]; /* at each position, its walk's key */
	struct kept_walk w[KEPT_WALKS + 2]; /* the cache's, the last if it is not cached, a spare */
};

/* This thread's slot, taken for a capture (no lk_lock held); NULL if another thread has it now (a
 * walk without the shortcuts). Given back with lk_kept_put. */
struct kept_walks *lk_kept_take(void);
/* The kept walk that this capture, from top, would take again: its key, or NULL. */
struct walk_key *lk_kept_find(struct kept_walks *kw, const struct cursor *top);
/* The walk just recorded in the spare (lk_walk_cached) becomes the last, and is kept if whole;
 * the slot stays taken until its stack's number is learned (lk_stack_learned). */
void lk_kept_add(struct kept_walks *kw, const struct cursor *top, bool cut);
void lk_kept_atfork_child(void);

static inline void lk_kept_put(struct kept_walks *kw)
{
	if (kw->busy)
		__atomic_store_n(&kw->busy, 0, __ATOMIC_RELEASE);
}

/* A kept walk found for this capture: it becomes the one to follow. Its stack's number, and in
 * *cut whether that stack was cut at LEEK_MAX_FRAMES (a loss the caller counts once the sample is
 * taken: lk_stack_count_cut). */
static inline uint32_t lk_kept_taken(struct kept_walks *kw, const struct walk_key *kept, bool *cut)
{
	kw->last = kept->wf & KEY_WALK;
	lk_kept_put(kw);
	*cut = kept->wf & KEY_CUT;
	return kept->id;
}

#pragma GCC visibility pop

#endif /* LEEK_UNWIND_H */
