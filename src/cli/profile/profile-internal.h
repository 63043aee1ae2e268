/* profile-internal.h: the state shared by the files behind profile.h: profile.c (the passes),
 * profile-live.c (the live set), profile-tables.c (stacks and modules), profile-result.c
 * (snapshots, totals, accessors) and profile-input.c (opening, messages). Nothing outside
 * src/cli/profile/profile*.c may include it.
 *
 * Memory follows the stacks, the module records and the sampled blocks live at once, never the
 * number of records: the live set reuses the slots of freed blocks, and everything per stack is
 * a fixed size (LK_TIMELINE_BUCKETS points at most). All of it but the struct lk_profile itself
 * (the timeline) and the header's strings is taken from the memory budget (budget.h).
 *
 * Glossary: w = 1/p(s), the weight of a sample (docs/sampling.md section 4); v1 = (1-p)/p^2 =
 * w^2 - w, its object-count variance term (a block of s bytes adds s^2 v1 to a byte estimate's);
 * q = s w in fixed point (LIVE_Q_ONE units a byte), so that a sum of live bytes comes back to
 * exactly the same value when a block is freed (the growth test counts ties).
 */
#ifndef LEEK_PROFILE_INTERNAL_H
#define LEEK_PROFILE_INTERNAL_H

#include "profile.h"
#include "recent.h"

typedef __int128 lk_q128;      /* a fixed-point sum of bytes */
#define LIVE_Q_ONE 65536.0     /* 2^-16 byte: s w <= T + s < 2^65, and sums fit in 127 bits */

/* One sampled block that is live. */
struct live_block {
	uint64_t seq;     /* its number in the file (format.h); a version 6 profile's thread
			   * segments hand them out of order */
	uint64_t size;
	int64_t t_ns;     /* allocation time since start; negative for an INHERITed block */
	uint32_t stack;   /* the stack id (the reader checked it is defined) */
	union {
		uint32_t next;  /* free list link (slot + 1, 0 = end) while the slot is free */
		uint32_t epoch; /* while live: the marks made before it came (live_set_mark) */
	};
};

/* A block that was live at the mark (live_set_mark()) and has left the set since. */
struct live_gone {
	uint64_t size;
	uint32_t stack;
};

/* An entry of the live set's hash table: 8 bytes, so that the table of a large heap stays in the
 * cache, and a probe touches the block itself only when the hashes match. */
struct live_entry {
	uint32_t slot1;   /* the block's slot + 1; 0: an empty entry */
	uint32_t hash;    /* the low 32 bits of its number's hash: its home, and a filter */
};

/* What a block of a given size weighs (docs/sampling.md section 4). */
struct live_weight {
	double w, v1;
};

/* The live sampled blocks and their sum: H(t), the estimated live heap, with its variance; and the
 * blocks that were live at the mark (profile-live.c). */
struct live_set {
	struct lk_recent recent;     /* the newest block numbers -> slot + 1 (recent.h) */
	struct live_entry *e;        /* older block numbers -> slot: open addressing, linear probing */
	size_t size, nold;           /* entries: 0 or a power of two, at most half of them used */
	struct live_block *blocks;   /* by slot; freed slots are reused, last freed first */
	uint32_t used, cap, free_head;
	uint64_t count, max_count;
	lk_q128 heap_q;              /* sum of q over live blocks */
	double heap_var;             /* sum of s^2 v1: drifts by rounding, reset at count 0 */
	uint64_t period;             /* 1 in exact mode */
	uint32_t marks;              /* marks made: a block of a lower epoch came before the last */
	struct live_gone *gone;      /* the blocks live at the mark that have left since */
	size_t ngone, gone_cap;      /* ngone <= the blocks live at the mark <= gone_cap */
};

void live_set_init(struct live_set *ls, uint64_t period);
void live_set_done(struct live_set *ls);
/* live_set_add() and live_set_remove() but for their common case, a block in a page of the recent
 * window (profile-live.c). */
int live_set_add_slow(struct live_set *ls, uint64_t block, uint64_t size, uint32_t stack,
		      int64_t t_ns);
bool live_set_remove_slow(struct live_set *ls, uint64_t block, struct live_block *ret);
/* Frees the table that finds blocks by number, when no block will be looked up again (the end's
 * pass): the set may then only be walked (live_set_foreach) and given to live_set_done. Its
 * memory, 8 to 32 bytes a block behind recent.h's window, goes before the end's list is made. */
void live_set_drop_table(struct live_set *ls);
/* Calls fn for every live block, in no particular order. */
void live_set_foreach(const struct live_set *ls,
		      void (*fn)(void *ctx, const struct live_block *b), void *ctx);
/* Marks the set as it is now, to be summed later: the blocks live now will be the live blocks
 * that came before the mark (live_at_mark), and those in gone. Forgets the previous mark. 0,
 * -ENOMEM or -E2BIG (the budget): room in gone for every block live now is made here, so that
 * removing a block never fails. */
int live_set_mark(struct live_set *ls);

/* Whether live block b came before the last mark: was live then. */
static inline bool live_at_mark(const struct live_set *ls, const struct live_block *b)
{
	return b->epoch < ls->marks;
}

/* The low 32 bits of a block number's hash (murmur3's finalizer: consecutive numbers spread). */
static inline uint32_t live_hash(uint64_t block)
{
	block ^= block >> 33;
	block *= 0xff51afd7ed558ccdull;
	block ^= block >> 33;
	return (uint32_t)block;
}

/* Asks the cache for the table entry where a lookup of block starts: a hint, which changes
 * nothing. always_inline: as a call, GCC finds it free of side effects and drops it, prefetch
 * and all. */
static inline __attribute__((always_inline)) void live_table_prefetch(const struct live_set *ls,
								       uint64_t block)
{
	if (ls->size)
		__builtin_prefetch(&ls->e[live_hash(block) & (ls->size - 1)]);
}

/* The same for block's element in the recent window, or its table entry if it is behind it. */
static inline __attribute__((always_inline)) void live_set_prefetch(const struct live_set *ls,
								     uint64_t block)
{
	if (!lk_recent_behind(&ls->recent, block))
		lk_recent_prefetch(&ls->recent, block);
	else
		live_table_prefetch(ls, block);
}

struct live_weight live_weigh_sampled(uint64_t size, uint64_t period);
/* The weights of a block of `size` bytes: in exact mode w = 1 and v1 = 0, without a call. */
static inline struct live_weight live_weigh(const struct live_set *ls, uint64_t size)
{
	if (ls->period <= 1)
		return (struct live_weight){ .w = 1.0, .v1 = 0.0 };
	return live_weigh_sampled(size, ls->period);
}

/* q = s w in fixed point. For w = 1 and s below 2^47 that is s 2^16 exactly, without a
 * floating-point conversion: the same value the general case gives. */
static inline lk_q128 live_q(uint64_t size, double w)
{
	double q;

	if (w == 1.0 && size < (1ull << 47))
		return (lk_q128)(size << 16);
	q = (double)size * w * LIVE_Q_ONE;
	/* One instruction below 2^63 (128 TiB), a libgcc call above. */
	return q < 0x1p63 ? (lk_q128)(int64_t)q : (lk_q128)q;
}

/* live_q(size, live_weigh(ls, size).w): in exact mode without a floating-point test. */
static inline lk_q128 live_q_of(const struct live_set *ls, uint64_t size)
{
	if (ls->period <= 1)
		return live_q(size, 1.0);
	return live_q(size, live_weigh_sampled(size, ls->period).w);
}

/* A block of `size` bytes joins H(t). Exact mode's v1 is 0: its variance term adds +0.0, which
 * changes nothing (heap_var, a sum of terms >= 0 from +0.0, is never -0.0), so it is not added. */
static inline void live_sum_add(struct live_set *ls, uint64_t size)
{
	if (ls->period <= 1) {
		ls->heap_q += live_q(size, 1.0);
	} else {
		struct live_weight w = live_weigh_sampled(size, ls->period);
		ls->heap_q += live_q(size, w.w);
		ls->heap_var += (double)size * (double)size * w.v1;
	}
	if (++ls->count > ls->max_count)
		ls->max_count = ls->count;
}

/* A block leaves: its weights leave H(t), and if it was live at the mark, it is kept in gone. */
static inline void live_sum_remove(struct live_set *ls, const struct live_block *b)
{
	if (live_at_mark(ls, b)) /* room made by live_set_mark() */
		ls->gone[ls->ngone++] = (struct live_gone){ .size = b->size, .stack = b->stack };
	if (ls->period <= 1) { /* as in live_sum_add() */
		ls->heap_q -= live_q(b->size, 1.0);
	} else {
		struct live_weight wt = live_weigh_sampled(b->size, ls->period);
		ls->heap_q -= live_q(b->size, wt.w);
		ls->heap_var -= (double)b->size * (double)b->size * wt.v1;
	}
	if (--ls->count == 0) {
		ls->heap_q = 0; /* exact already; the variance may have drifted */
		ls->heap_var = 0;
	}
}

/* Block's element in its page of the set's window, whose elements are struct live_block
 * (live_set_init): the element recent.c reaches, as its own type. */
static inline struct live_block *live_elem(struct lk_recent_page *pg, uint64_t block)
{
	return (struct live_block *)(void *)pg->elem + block % LK_RECENT_PAGE;
}

/* ALLOC or INHERIT: block number `block`, not live already (the reader checks the file's
 * numbering), mostly above every number added before, with one probe of the table. 0, -ENOMEM,
 * or -E2BIG (LK_PROFILE_MAX_LIVE blocks live already, or beyond the budget). Inline, for a block
 * of a page of the recent window, which is nearly every one: an exact profile adds tens of
 * millions (bench/report-throughput.sh). */
static inline int live_set_add(struct live_set *ls, uint64_t block, uint64_t size, uint32_t stack,
			       int64_t t_ns)
{
	struct lk_recent_page *pg = lk_recent_page_of(&ls->recent, block);
	uint64_t bit = 1ull << (block % 64);
	uint64_t *live;

	if (!pg || block == 0 || ls->count >= LK_PROFILE_MAX_LIVE)
		return live_set_add_slow(ls, block, size, stack, t_ns);
	live = &pg->live[block % LK_RECENT_PAGE / 64];
	ls->recent.count += !(*live & bit);
	*live |= bit;
	*live_elem(pg, block) = (struct live_block){ .seq = block, .size = size, .t_ns = t_ns,
						     .stack = stack, .epoch = ls->marks };
	live_sum_add(ls, size);
	return 0;
}

/* Removes block number `block` into *ret; false if it is not live. Inline for a page of the recent
 * window, as live_set_add(). */
static inline bool live_set_remove(struct live_set *ls, uint64_t block, struct live_block *ret)
{
	struct lk_recent_page *pg = lk_recent_page_of(&ls->recent, block);
	uint64_t bit = 1ull << (block % 64);
	uint64_t *live;

	if (!pg)
		return live_set_remove_slow(ls, block, ret);
	live = &pg->live[block % LK_RECENT_PAGE / 64];
	if (!(*live & bit))
		return false;
	*live &= ~bit;
	ls->recent.count--;
	*ret = *live_elem(pg, block);
	live_sum_remove(ls, ret);
	return true;
}

/* Every live block: for (i = 0; i < ls->size; i++) if (ls->e[i].slot1)
 * ls->blocks[ls->e[i].slot1 - 1]. */

/* Per stack, what the passes keep beside the public lk_stack_stats. */
struct stack_run {
	lk_q128 live_q;   /* live bytes of this stack, fixed point (for series) */
	uint64_t live_n;
	uint64_t inherited;
};

/* Loaded segments, to name the module of each frame of a STACK when it is read. */
struct seg_range {
	uint64_t lo, hi, id; /* [lo, hi) */
};

struct lk_profile {
	struct lk_profile_header header;
	char *strings;                    /* header.exe, NUL, header.cmdline, NUL */
	struct lk_profile_totals totals;
	struct lk_profile_opts opts;

	struct lk_stack_stats *stacks;    /* by id: [0] is "no stack" */
	struct stack_run *runs;
	struct lk_window *windows;        /* by id, with opts.window; else NULL */
	size_t nstacks, stacks_cap, runs_cap, windows_cap; /* ids 0..nstacks-1 */
	bool stack0_used;

	struct lk_module_info_rec *modules; /* in id order */
	size_t nmodules, modules_cap;
	struct seg_range *ranges;
	size_t nranges, ranges_cap;
	bool ranges_dirty;

	unsigned nbuckets;
	struct lk_timeline_point timeline[LK_TIMELINE_BUCKETS];

	struct lk_live_block *live_blocks; /* at the end, oldest first; room for live_blocks_cap */
	size_t nlive_blocks, live_blocks_cap;

	struct profile_frees *frees;      /* opts.frees: profile-frees.c's; else NULL */

	struct lk_error_event *errors;    /* the first LK_PROFILE_MAX_ERRORS ERROR records */
	size_t nerrors, errors_cap;

	struct lk_chain_files chain;      /* a rotated profile's segments, read as one; or n == 0 */
};

/* profile-input.c: the input, opened so that it can be read twice, and failure messages. Each
 * profile_fail* sets *msg (malloc'ed) unless it already holds the first failure's message, and
 * returns r. */
int profile_open_input(const char *path, int *ret, char **msg);
/* From the start; below limit only, unless 0 (lk_profile_opts.limit). */
int profile_open_reader(int fd, uint64_t limit, uint64_t whole, struct lk_reader **ret,
			char **msg);
/* The same for p->chain's segments, as one profile (read.h's lk_reader_open_chain). */
int profile_open_chain(const struct lk_profile *p, struct lk_reader **ret, char **msg);
int profile_fail(char **msg, int r, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int profile_fail_reader(char **msg, const struct lk_reader *rd, int r);
/* "offset N: what", or strerror(-r) without what. */
int profile_fail_record(char **msg, const struct lk_record *rec, int r, const char *what);
/* "offset N: the profile needs more than <limit> of memory to read (--max-memory; N live blocks
 * and N stacks so far)": what a -E2BIG from the budget (budget.h) says. */
int profile_fail_budget(char **msg, int r, uint64_t offset, const struct lk_profile *p,
			const struct live_set *ls);

/* A sampled block of `size` bytes into the estimates of bytes and objects: every ALLOC adds one
 * (inline, for that), and the end's pass every block live. */
static inline void profile_add_block(struct lk_estimate *bytes, struct lk_estimate *objects,
				     uint64_t size, const struct live_weight *wt)
{
	lk_estimate_add_sample(bytes, (double)size, wt->w, wt->v1);
	objects->value += wt->w; /* no steps: object counts are not tested for changes */
	objects->var += wt->v1;
	objects->observed += 1;
	objects->samples++;
}

/* profile_add_block() with exact mode's weights, w = 1 and v1 = 0, without floating-point
 * products: s w is s, and the variance terms add +0.0 to sums that are never -0.0 (terms >= 0
 * from +0.0), which changes nothing. */
static inline void profile_add_exact(struct lk_estimate *bytes, struct lk_estimate *objects,
				     uint64_t size)
{
	double s = (double)size;

	bytes->value += s;
	bytes->observed += s;
	bytes->samples++;
	objects->value += 1;
	objects->observed += 1;
	objects->samples++;
}

/* profile-result.c: snapshots of the live set into per-stack estimates, and the end. */
/* live_*: the set now (opts.at_ns has just passed); with opts.window, the window's came_* too. */
void profile_snapshot_live(struct lk_profile *p, const struct live_set *ls);
/* The window's from_* (opts.from_ns has just passed, or the end came first). */
void profile_snapshot_from(struct lk_profile *p, const struct live_set *ls);
/* Whether a block allocated at t_ns (since start) came after the window's first moment. */
static inline bool profile_after_from(const struct lk_profile *p, int64_t t_ns)
{
	return (__int128)t_ns > (__int128)p->opts.from_ns;
}
/* At the end, in one pass over the set: peak_* (the blocks live at the set's mark, taken right
 * after the record where H(t) peaked: the set at the mark is known only then), live_* too if
 * live (opts.at_ns not passed), old_* (at least opts.age_ns old at duration_ns), the blocks live
 * at the end (their totals, and their list unless opts.no_live_list, in no order yet), the
 * window's came_* with live_*; then the intervals and the growth verdicts. 0, -ENOMEM or
 * -E2BIG (the list, beyond the budget). */
int profile_finish(struct lk_profile *p, const struct live_set *ls, uint64_t duration_ns,
		   bool live);
/* The list of the blocks live at the end, oldest first: once the live set is freed, so that the
 * sort's room (as much again as the list) comes from the set's. */
void profile_sort_live(struct lk_profile *p);

/* profile-frees.c (opts.frees): the free rec of live block b, just removed from the set, with
 * its weight w. 0, -ENOMEM, or -E2BIG (beyond the budget). profile_frees_finish sorts the pairs
 * and finishes their estimates, at the end; profile_frees_free accepts a profile without them. */
int profile_frees_add(struct lk_profile *p, const struct live_block *b, const struct lk_record *rec,
		      double w, double v1);
void profile_frees_finish(struct lk_profile *p);
void profile_frees_free(struct lk_profile *p);

/* profile-tables.c: copies of STACK and MODULE records. 0, -ENOMEM, or -E2BIG: beyond a limit
 * (*what says which) or beyond the budget (*what untouched). */
int profile_add_stack(struct lk_profile *p, const struct lk_record *rec, const char **what);
int profile_add_module(struct lk_profile *p, const struct lk_record *rec, const char **what);
void profile_unload_module(struct lk_profile *p, const struct lk_record *rec);
void profile_tables_free(struct lk_profile *p);

#endif /* LEEK_PROFILE_INTERNAL_H */
