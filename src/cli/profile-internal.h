/* profile-internal.h: the state shared by the files behind profile.h: profile.c (the passes),
 * profile-live.c (the live set), profile-tables.c (stacks and modules), profile-result.c
 * (snapshots, totals, accessors) and profile-input.c (opening, messages). Nothing outside
 * src/cli/profile*.c may include it.
 *
 * Memory follows the stacks, the module records and the sampled blocks live at once, never the
 * number of records: the live set reuses the slots of freed blocks, and everything per stack is
 * a fixed size (LK_TIMELINE_BUCKETS points at most).
 *
 * Glossary: w = 1/p(s), the weight of a sample (docs/sampling.md section 4); v1 = (1-p)/p^2 =
 * w^2 - w, its object-count variance term (a block of s bytes adds s^2 v1 to a byte estimate's);
 * q = s w in fixed point (LIVE_Q_ONE units a byte), so that a sum of live bytes comes back to
 * exactly the same value when a block is freed (the growth test counts ties).
 */
#ifndef LEEK_PROFILE_INTERNAL_H
#define LEEK_PROFILE_INTERNAL_H

#include "profile.h"
#include "u64map.h"

typedef __int128 lk_q128;      /* a fixed-point sum of bytes */
#define LIVE_Q_ONE 65536.0     /* 2^-16 byte: s w <= T + s < 2^65, and sums fit in 127 bits */

/* One sampled block that is live. */
struct live_block {
	uint64_t addr, size;
	int64_t t_ns;     /* allocation time since start; negative for an INHERITed block */
	uint32_t stack;   /* the stack id (the reader checked it is defined) */
	uint32_t next;    /* free list link (slot + 1, 0 = end) while the slot is free */
	double w, v1;
};

/* The live sampled blocks and their sum: H(t), the estimated live heap, with its variance. */
struct live_set {
	struct lk_u64map map;        /* addr -> slot in blocks */
	struct live_block *blocks;
	uint32_t used, cap, free_head;
	uint64_t count, max_count;
	lk_q128 heap_q;              /* sum of q over live blocks */
	double heap_var;             /* sum of s^2 v1: drifts by rounding, reset at count 0 */
	uint64_t period;             /* 1 in exact mode */
};

void live_set_init(struct live_set *ls, uint64_t period);
void live_set_done(struct live_set *ls);
/* Adds a block at an address where none is live (remove the old one first); the new block, with
 * its weights, goes to *ret. 0, -ENOMEM or -E2BIG (LK_PROFILE_MAX_LIVE). */
int live_set_add(struct live_set *ls, uint64_t addr, uint64_t size, uint32_t stack, int64_t t_ns,
		 struct live_block *ret);
/* Removes the block at addr into *ret (may be NULL); false if no sampled block is live there. */
bool live_set_remove(struct live_set *ls, uint64_t addr, struct live_block *ret);
static inline lk_q128 live_q(const struct live_block *b)
{
	double q = (double)b->size * b->w * LIVE_Q_ONE;

	/* One instruction below 2^63 (128 TiB), a libgcc call above. */
	return q < 0x1p63 ? (lk_q128)(int64_t)q : (lk_q128)q;
}
/* Every live block: for (i = 0; i < ls->map.size; i++) if (ls->map.e[i].used)
 * ls->blocks[ls->map.e[i].value]. */

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
	size_t nstacks, stacks_cap, runs_cap; /* ids 0..nstacks-1 */
	bool stack0_used;

	struct lk_module_info_rec *modules; /* in id order */
	size_t nmodules, modules_cap;
	struct seg_range *ranges;
	size_t nranges, ranges_cap;
	bool ranges_dirty;

	unsigned nbuckets;
	struct lk_timeline_point timeline[LK_TIMELINE_BUCKETS];

	struct lk_live_block *live_blocks; /* at the end, oldest first */
	size_t nlive_blocks;
};

/* profile-input.c: the input, opened so that it can be read twice, and failure messages. Each
 * profile_fail* sets *msg (malloc'ed) unless it already holds the first failure's message, and
 * returns r. */
int profile_open_input(const char *path, int *ret, char **msg);
int profile_open_reader(int fd, struct lk_reader **ret, char **msg); /* from the start */
int profile_fail(char **msg, int r, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int profile_fail_reader(char **msg, const struct lk_reader *rd, int r);
int profile_fail_record(char **msg, const struct lk_record *rec, int r, const char *what);

/* profile-result.c: snapshots of the live set into per-stack estimates, and the end. */
enum profile_snap {
	PROFILE_SNAP_LIVE, /* live_*: at opts.at_ns */
	PROFILE_SNAP_PEAK, /* peak_*: right after the record where H(t) peaked */
	PROFILE_SNAP_OLD,  /* old_*: at the end, at least opts.age_ns old at end_ns */
};
void profile_add_block(struct lk_estimate *bytes, struct lk_estimate *objects,
		       const struct live_block *b);
void profile_snapshot(struct lk_profile *p, const struct live_set *ls, enum profile_snap which,
		      uint64_t end_ns);
/* The old blocks, the live blocks at the end, totals, intervals, growth. 0 or -ENOMEM. */
int profile_finish(struct lk_profile *p, const struct live_set *ls, uint64_t duration_ns);

/* profile-tables.c: copies of STACK and MODULE records. 0, -ENOMEM or -E2BIG (*what says). */
int profile_add_stack(struct lk_profile *p, const struct lk_record *rec, const char **what);
int profile_add_module(struct lk_profile *p, const struct lk_record *rec, const char **what);
void profile_unload_module(struct lk_profile *p, const struct lk_record *rec);
void profile_tables_free(struct lk_profile *p);

#endif /* LEEK_PROFILE_INTERNAL_H */
