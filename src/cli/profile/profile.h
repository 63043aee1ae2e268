/* profile.h: aggregation of one profile into per-stack estimates, with intervals and a timeline.
 *
 * profile.c reads a profile with the streaming reader (read.h) and keeps only what is bounded by
 * the number of distinct stacks and of live samples, never by the length of the file: per stack,
 * running sums; per live sampled block, one entry; for the heap timeline, a fixed number of
 * buckets. The file is read twice: first, records skipped undecoded, to learn its length and
 * duration (the buckets), then to aggregate. The live set at the peak is found in that second
 * pass: each new high marks the live set, and blocks live at the mark that go later are set aside
 * (never more than were live at the mark). Estimates and intervals follow docs/sampling.md (sections 4 and 5); nothing here
 * knows about symbols or output formats.
 *
 * Errors are negative errno values; on failure *ret is untouched and the message out-parameter
 * says "offset N: what is wrong".
 *
 * Limits (so that a file cannot decide how much memory the CLI takes): everything kept is taken
 * from the memory budget (budget.h: --max-memory, by default half the machine's memory), 144 bytes
 * at most a live block (tests/unit/test-profile-budget.c), and beyond it lk_profile_load() fails
 * with -E2BIG and "offset N: the profile needs more than 256 MiB of memory to read (--max-memory;
 * 2359295 live blocks and 1 stack so far)". Whatever the budget: LK_PROFILE_MAX_LIVE sampled
 * blocks live at once, LK_PROFILE_MAX_STACKS stacks and LK_PROFILE_MAX_MODULES module records per
 * file, beyond which it fails with -E2BIG and says which limit. docs/design.md, "Reading a
 * profile", has the numbers.
 */
#ifndef LEEK_PROFILE_H
#define LEEK_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "read.h"

#define LK_TIMELINE_BUCKETS 64 /* default number of points in the heap timeline and growth series */
#define LK_PROFILE_MAX_LIVE (1u << 25)       /* sampled blocks live at once: slots
					      * are 32-bit, and 2^25 take 4.5 GiB at most */
#define LK_PROFILE_MAX_STACKS ((1u << 22) + 1) /* libleek's own stack table holds 2^22 - 1 */
#define LK_PROFILE_MAX_MODULES (1u << 20)    /* MODULE records in one file */

/* One estimate with its 95% interval (docs/sampling.md section 5). */
struct lk_estimate {
	double value;      /* unbiased estimate (Horvitz-Thompson) */
	double var;        /* unbiased estimate of its variance */
	double lo, hi;     /* 95% interval, lo >= observed */
	double observed;   /* what the samples show by themselves (sum of sizes, or sample count) */
	uint64_t samples;  /* K: sampled allocations behind it */
	double k_eff;      /* est^2 / var (infinite when var == 0) */
	bool too_few;      /* k_eff < 5: "too few samples", not to be ranked as precise */
	/* How coarse the estimate is, for the test of a change (docs/sampling.md section 12; byte
	 * estimates only: profile.c leaves them 0 in object counts, which are not tested): */
	double step;       /* the largest weighted value x/p of a sample with p < 1/2 */
	double heavy_step; /* ... of a sample with 1/2 <= p < 1 (sampled more often than not) */
	double heavy_miss; /* sum of (1-p)/p over those: the allocations like them not sampled */
};

/* One sample into an estimate's sums (docs/sampling.md section 4): x is its size (or 1 for an
 * object count), w = 1/p its weight and v1 = (1-p)/p^2 its variance term. Inline: profile.c adds
 * one per ALLOC. */
static inline void lk_estimate_add_sample(struct lk_estimate *e, double x, double w, double v1)
{
	double c = x * w;

	e->value += c;
	e->var += x * x * v1;
	e->observed += x;
	e->samples++;
	if (w > 2.0) {                          /* p < 1/2 */
		e->step = c > e->step ? c : e->step; /* a maxsd, not a branch */
	} else if (w > 1.0) {                   /* 1/2 <= p < 1 */
		if (c > e->heavy_step)
			e->heavy_step = c;
		e->heavy_miss += v1 / w; /* (1-p)/p, without the cancellation of w - 1 */
	}
}

enum lk_trend {
	LK_TREND_UNKNOWN = 0, /* too few samples to say */
	LK_TREND_FLAT,        /* no significant change through the run */
	LK_TREND_GROWING,     /* live bytes still rising in the last part of the run */
	LK_TREND_PLATEAU,     /* rose, then levelled off (pools, warmed caches) */
};

struct lk_growth {
	enum lk_trend trend;
	double confidence;    /* 1 - p-value of the test behind the verdict, in [0, 1]; for FLAT,
			       * the p-value of the whole-run test for a rise (1 when the series
			       * never rises); 0 for UNKNOWN (profile-growth.c) */
	double slope_bytes_s; /* Sen's slope of live bytes over the last part of the run */
};

/* What changed at one stack between two moments, from_ns and at_ns (lk_profile_opts.window):
 * "live at t" as for live_* (after every record at or before t). The blocks live at at_ns are
 * those live at from_ns, less those that left, plus those that came; so live - from = came -
 * left, and came and left are sums over different samples (docs/sampling.md section 12).
 * Taken from snapshots, so that no record costs more: came is the blocks of at_ns's snapshot
 * allocated after from_ns, left from_ns's snapshot less the others, alloc the stack's
 * allocations at at_ns less those at from_ns. The steps of left and alloc (lk_estimate.step,
 * heavy_step) are then those of the larger sums: at least their own. */
struct lk_window {
	struct lk_estimate from_bytes, from_objects;   /* live at from_ns */
	struct lk_estimate came_bytes, came_objects;   /* allocated after from_ns, live at at_ns */
	struct lk_estimate left_bytes, left_objects;   /* live at from_ns, freed by at_ns */
	struct lk_estimate alloc_bytes, alloc_objects; /* allocated in (from_ns, at_ns] */
};

/* Per stack (one allocation call chain). Estimates are in bytes requested and in objects. */
struct lk_stack_stats {
	uint64_t id;              /* the stack id in its profile (1..) ; 0 = "no stack" */
	uint32_t nframes;
	const uint64_t *frames;   /* return addresses, innermost first */
	const uint64_t *modules;  /* per frame: id of the module mapped there when the stack was
				   * written (0 if none) */
	struct lk_estimate alloc_bytes, alloc_objects;   /* everything allocated, freed or not */
	struct lk_estimate live_bytes, live_objects;     /* live at the selected moment (see opts) */
	struct lk_estimate peak_bytes, peak_objects;     /* live at the global peak */
	struct lk_estimate old_bytes, old_objects;       /* live at the end and at least opts.age
							  * old */
	double series[LK_TIMELINE_BUCKETS];              /* live-bytes estimate at each bucket's end */
	struct lk_growth growth;
	const struct lk_window *window;                  /* opts.window: what changed from
							  * opts.from_ns to opts.at_ns; else NULL */
};


struct lk_timeline_point {
	uint64_t t_ns;       /* bucket end, since the profile's start */
	double heap_bytes;   /* estimated live heap (sampled blocks, weighted) */
	double heap_max;     /* the highest estimate reached within the bucket */
	uint64_t rss_bytes;  /* last RSS record at or before t_ns (0 if none yet) */
};

struct lk_profile_opts {
	uint64_t at_ns;      /* "live" means live at this time since start; UINT64_MAX = the end */
	uint64_t age_ns;     /* old_*: live at the end and allocated at least age_ns before it
			      * (end - t >= age_ns, so 0 takes every live block) */
	uint64_t from_ns;    /* window: the first moment, at or before at_ns */
	bool window;         /* each stack's window (struct lk_window) between from_ns and at_ns */
	unsigned buckets;    /* timeline points, <= LK_TIMELINE_BUCKETS; 0 = the maximum */
	const char *at_mark;   /* not NULL: at_ns is the time of the profile's first mark of this
				* name (`leek ctl PID mark NAME`), found by lk_profile_load() */
	const char *from_mark; /* the same for from_ns */
	bool no_live_list;   /* lk_profile_live_blocks() gives none (their totals are kept): `leek
			      * run`'s summary, which shows no block, spares the list's memory and
			      * its sort (a million blocks live at an exact redis-server's exit) */
	uint64_t limit;      /* 0: the whole file. Else the file is still being written, and only
			      * the records that end before this offset are read, as a follower
			      * reads them (lk_reader_follow; docs/format.md, "Reading a profile
			      * being written"): `leek watch`'s reports; the end is the last record
			      * read, and totals.trailer is false */
	uint64_t limit_whole; /* with limit: every record that starts before it is whole (a SYNC's
			       * reply: lk_reader_follow_whole) */
	bool known;          /* old_* leave out the blocks allocated at or before known_ns, and
			      * totals.known_* sum them (`leek watch`'s SIGUSR1) */
	int64_t known_ns;
	const char *known_mark; /* not NULL: known, and known_ns at least the time of the first mark
				 * of this name (`leek watch --from MARK`) */
	bool frees;          /* keep the frees of sampled blocks: lk_profile_free_pairs(), and the
			      * last frees_last of them, lk_profile_frees_recent() (profile-frees.c) */
	size_t frees_last;   /* `leek watch` asks for at most LK_PROFILE_MAX_RECENT_FREES */
	bool segment_only;   /* a rotated profile's segment alone; else lk_profile_load() reads the
			      * whole chain found beside it as one (lk_chain_find; `--segment-only`) */
};

#define LK_PROFILE_MAX_RECENT_FREES 65536 /* 48 bytes each: 3 MiB at most */
#define LK_PROFILE_MARKS 32 /* marks kept in the totals (`leek dump` shows every one) */

/* A CTL MARK record: `leek ctl PID mark NAME`. */
struct lk_profile_mark {
	uint64_t t_ns;                  /* since the start */
	char name[LK_CTL_NAME_MAX + 1];
};

struct lk_profile_totals {
	uint64_t duration_ns;           /* time of the last record */
	uint64_t period;                /* header period; 1 = exact */
	uint64_t samples, frees;        /* ALLOC and FREE records */
	struct lk_estimate alloc_bytes, alloc_objects;
	struct lk_estimate live_bytes_end, live_objects_end;
	struct lk_estimate peak_bytes;  /* the heap estimate at its high-water mark */
	uint64_t peak_ns;               /* when */
	uint64_t max_rss;
	uint64_t losses[LK_CNT_MAX + 1];/* last LOSS or TRAILER values */
	bool trailer;                   /* clean exit; false: the profile ends at its last complete
					 * record (crash, kill, exec) */
	uint64_t frees_unknown;         /* FREEs of blocks freed already (a damaged file) */
	uint64_t inherited;             /* INHERIT records: live in the parent at the fork */
	uint64_t max_live;              /* the most sampled blocks live at once */
	uint64_t records;               /* records read, up to the end (extensions included) */
	uint64_t tags[LK_REC_MAX_KNOWN + 1]; /* of them, each tag's (ALLOC_FIXED and FREE_FIXED
					      * as ALLOC and FREE, as the reader gives them) */
	uint64_t ext_records;           /* and extensions */
	uint64_t off_ns;                /* switched off (CTL OFF to the next ON, or to the end):
					 * nothing was sampled, so no figure counts what was
					 * allocated then (LEEK_START=off, `leek ctl PID off`) */
	uint32_t off_periods;           /* CTL OFF records that switched it off */
	bool off_at_end;                /* still off at the last record */
	uint32_t nmarks;                /* CTL MARK records; the first LK_PROFILE_MARKS in marks */
	struct lk_profile_mark marks[LK_PROFILE_MARKS];
	uint64_t end_offset;            /* the file offset after the last record */
	struct lk_estimate known_bytes, known_objects; /* opts.known: the blocks live at the end
					 * and allocated at or before known_ns, left out of old_* */
	uint32_t ncounters;             /* every counter of the last LOSS or TRAILER that named
					 * it, known to this leek or not, in the order first seen */
	struct lk_counter_value counters[LK_READ_MAX_COUNTERS];
	struct lk_chain_stats chain;    /* a rotated profile read as one: chain.segments > 0, and
					 * chain.first segments before it were deleted (LEEK_KEEP) */
};

struct lk_module_info_rec {       /* a MODULE record, kept for symbolization */
	uint64_t id, base, loaded_ns, unloaded_ns; /* unloaded_ns = UINT64_MAX while mapped */
	uint32_t nseg, build_id_len;
	const struct lk_module_seg *seg;
	const uint8_t *build_id;
	const char *path;           /* path_len bytes and a NUL (the loader's path may hold NULs) */
	uint32_t path_len;
};

struct lk_profile;

/* Reads and aggregates one profile (in two passes; a pipe is first copied to an unlinked temporary
 * file). On error returns < 0 and, if err is not NULL, a malloc'ed "offset N: ..." message in
 * *err. A profile that ends without a trailer is not an error: totals.trailer says so. */
int lk_profile_load(const char *path, const struct lk_profile_opts *opts, struct lk_profile **ret,
		    char **err);
struct lk_profile *lk_profile_free(struct lk_profile *p); /* NULL-safe, returns NULL */

/* A raw profile read while its program still writes it, in one pass (`leek run`'s summary):
 *
 *   lk_profile_follow_open(path, limit, &opts, &f, &err);   the header, below limit
 *   lk_profile_follow_step(f, limit, &err);          the records that end well before limit
 *   ...                                              (limit only grows)
 *   lk_profile_follow_finish(f, &p, &err);           the rest, once the writer has stopped
 *   lk_profile_follow_free(f);
 *
 * `limit` is a file offset before which every byte is written for good (docs/format.md, "Reading
 * a profile being written"). opts as lk_profile_load()'s (NULL: the defaults), but the profile
 * has one timeline bucket whatever opts.buckets says, so no growth verdicts; all else is what
 * lk_profile_load() gives for the finished file with the same opts. Errors as lk_profile_load()'s; after one,
 * every call returns it again. */
struct lk_profile_follow;
int lk_profile_follow_open(const char *path, uint64_t limit, const struct lk_profile_opts *opts,
			   struct lk_profile_follow **ret, char **err);
int lk_profile_follow_step(struct lk_profile_follow *f, uint64_t limit, char **err);
int lk_profile_follow_finish(struct lk_profile_follow *f, struct lk_profile **ret, char **err);
/* The file offset after the last record of the main stream read so far (after a SEGMENT's body):
 * every byte before it is written for good, thread segments' bodies too (read.h). */
uint64_t lk_profile_follow_offset(const struct lk_profile_follow *f);
/* The profile as read so far, for its modules and stacks (lk_profile_modules, lk_profile_stacks);
 * valid until the next call on f. Its estimates are not computed yet. */
const struct lk_profile *lk_profile_follow_partial(const struct lk_profile_follow *f);
struct lk_profile_follow *lk_profile_follow_free(struct lk_profile_follow *f); /* NULL-safe */
/* The heap estimate H(t) after the records read so far, its highest value yet, and the time of
 * the last record read (since start): `leek watch --high-water` between its reports. */
void lk_profile_follow_heap(const struct lk_profile_follow *f, double *now, double *peak,
			    uint64_t *t_ns);
/* And every record that starts before `whole` is whole before it: a SYNC's reply
 * (lk_reader_follow_whole; lk_profile_opts.limit_whole). Taken at the next steps, up to each
 * one's limit. Never lowers what an earlier call said. */
void lk_profile_follow_whole(struct lk_profile_follow *f, uint64_t whole);
/* The profile as read so far, with each stack's live_bytes and live_objects set to the blocks
 * live after the last record read (their value, var, observed and samples, as the end's pass sums
 * them: the same values, added in the same order, so the snapshot after the last record is the
 * finished profile's live_*; lo, hi and the others are not finished). alloc_* are the running
 * sums so far, totals.records the records read so far. `leek push`'s in-use values at each
 * interval, without ending the follower. It walks the live set once (profile-result.c's
 * profile_snapshot_live): its cost follows the blocks live now, never the records read. Valid
 * until the next call on f; NULL after a failure, with opts.window, or with an opts.at_ns other
 * than UINT64_MAX (their live_* are a snapshot of their own). */
const struct lk_profile *lk_profile_follow_snapshot(struct lk_profile_follow *f);
static inline void lk_profile_freep(struct lk_profile **p)
{
	lk_profile_free(*p);
}

const struct lk_profile_header *lk_profile_header(const struct lk_profile *p);
const struct lk_profile_totals *lk_profile_totals(const struct lk_profile *p);

/* Stacks, in stack-id order; stack 0 ("no stack") is included when a sample had none. */
size_t lk_profile_stacks(const struct lk_profile *p, const struct lk_stack_stats **ret);
size_t lk_profile_modules(const struct lk_profile *p, const struct lk_module_info_rec **ret);
size_t lk_profile_timeline(const struct lk_profile *p, const struct lk_timeline_point **ret);

/* ERROR records (format version 8): the memory errors libleek caught, in file order, the first
 * LK_PROFILE_MAX_ERRORS of them (totals.tags[LK_REC_ERROR] counts them all). A program stops at
 * its first by default (LEEK_ABORT_ON_ERROR), so more than a few is a run that went on. */
#define LK_PROFILE_MAX_ERRORS 1024
struct lk_error_event {
	uint64_t t_ns;                     /* since the start */
	uint64_t kind;                     /* enum lk_error_kind */
	uint64_t tid, addr, block_addr, block_size, block;
	uint64_t alloc_stack, free_stack, stack; /* stack ids; 0: none */
};
size_t lk_profile_errors(const struct lk_profile *p, const struct lk_error_event **ret);

/* Live sampled blocks at the end, oldest first, for `old --age` (alloc time since start; an
 * INHERITed block's time may be negative). */
struct lk_live_block {
	uint64_t block, size, stack; /* block: its number in the file */
	int64_t t_ns;
	double weight;
};
size_t lk_profile_live_blocks(const struct lk_profile *p, const struct lk_live_block **ret);

/* profile-frees.c, with opts.frees: the frees of sampled blocks, each with the stack that
 * allocated the block and, in a profile written with LEEK_FREE_STACKS, the stack that freed it
 * (0: none recorded). A block live at the end has no free; an INHERITed block's alloc_ns is before
 * the start (negative). Memory: frees_last events, and one pair for each (allocation stack, free
 * stack) that occurs, from the budget. */
struct lk_free_event {
	uint64_t block, size, tid;
	uint64_t alloc_stack, free_stack;
	int64_t alloc_ns;  /* allocation time since start */
	uint64_t free_ns;  /* free time since start */
	double weight;     /* 1/p(size): the allocations this sample stands for */
};
struct lk_free_pair {
	uint64_t alloc_stack, free_stack;
	struct lk_estimate bytes, objects; /* freed, estimated (bytes.samples: the sampled frees) */
	uint64_t life_min_ns, life_max_ns; /* over the sampled frees */
	double life_mean_ns;               /* weighted as the objects: the estimated mean lifetime */
	double life_sum_w;                 /* internal: sum of w * lifetime */
};
/* The last min(frees, frees_last) frees, oldest first. */
size_t lk_profile_frees_recent(const struct lk_profile *p, const struct lk_free_event **ret);
/* Every pair, by estimated bytes freed, largest first (ties: by stacks); estimates finished. */
size_t lk_profile_free_pairs(const struct lk_profile *p, const struct lk_free_pair **ret);
/* FREE_STACK records read: whether the profile has free stacks at all. */
uint64_t lk_profile_free_stacks_seen(const struct lk_profile *p);

/* Helpers shared with the report (pure functions, docs/sampling.md). */
double lk_sample_weight(uint64_t size, uint64_t period);          /* 1/p(s); 1 in exact mode */
void lk_estimate_finish(struct lk_estimate *e);                    /* fills lo, hi, k_eff, too_few
								    * from value, var, observed,
								    * samples */
void lk_estimate_add(struct lk_estimate *sum, const struct lk_estimate *e); /* sums of
								    * independent estimates (merge);
								    * adds value, var, observed,
								    * samples and the steps, then
								    * finishes sum */
void lk_window_add(struct lk_window *sum, const struct lk_window *w); /* each estimate's */

/* profile-change.c: the test of a change between two independent estimates (docs/sampling.md
 * section 12). base and new are sums over different samples; base_period and new_period are the
 * largest periods behind them (1: exact), used only for a side without a sample. */
struct lk_change {
	double value;      /* new - base */
	double lo, hi;     /* its 95% interval; a sampled side without a sample may hold up to
			    * about 3 periods (docs/sampling.md section 5) */
	double p;          /* two-sided p-value of "no change" */
};
void lk_change_test(const struct lk_estimate *base, uint64_t base_period,
		    const struct lk_estimate *new, uint64_t new_period, struct lk_change *ret);
/* Benjamini-Hochberg: p[0..n) sorted ascending become their adjusted values (q-values, at most
 * 1), in place; a change is significant at false discovery rate r when its q <= r. */
void lk_change_adjust(double *p, size_t n);
#define LK_CHANGE_FDR 0.05 /* the false discovery rate leek diff controls (docs/sampling.md 12) */

/* The growth verdict of one live-bytes series of n points, bucket_s seconds apart, behind which
 * stand `samples` sampled blocks (allocated or inherited); profile-growth.c has the method. */
void lk_growth_classify(const double *series, unsigned n, double bucket_s, uint64_t samples,
			struct lk_growth *ret);

#endif /* LEEK_PROFILE_H */
