/* profile.c: reads one profile in two passes and aggregates it (profile.h): per stack, allocated
 * and live estimates with their intervals, a live-bytes series and a growth verdict; for the
 * process, the heap timeline, its peak, losses and RSS.
 *
 * Pass 1 only reads (lk_reader_skip()), to learn what pass 2 must know in advance: the number of
 * records and the duration, so that the timeline's buckets are fixed from the start ([0, duration]
 * cut into equal parts, bucket b ending at duration * (b + 1) / buckets and holding the records at
 * or before its end). Pass 2 replays everything, and snapshots the live set per stack when the
 * selected time (opts.at_ns) passes, at each bucket's end (series) and at the end (live, old).
 * With opts.window it also snapshots the set, and each stack's allocations so far, when
 * opts.from_ns passes (struct lk_window; profile-result.c): no record costs more for it.
 * Each time the estimated heap H(t) rises above its highest level so far, pass 2 marks the live
 * set, which then keeps aside the blocks that leave it (profile-live.c): at the end, the set at
 * the last mark is the set right after the record at which H(t) first reached its maximum (peak).
 * Both passes stop after the same number of records, so a profile still being written reads
 * consistently. Reading alone is fast (tens of millions of records a second), so the extra pass
 * costs little, and memory stays bounded by the stacks, the modules, the live blocks and the
 * buckets, never by the number of records.
 *
 * Looking up the live blocks is what costs most, the cache misses of a large heap's table above
 * all. So pass 2 reads a few records ahead of the one it applies (struct ahead).
 *
 * H(t) is summed in fixed point (profile-internal.h), so the same set of live blocks always gives
 * the same value: the maximum is found without rounding, and a stack's series returns to exactly
 * its old value when its blocks are freed. Never prints; errors are "offset N: ...".
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "budget.h"
#include "profile-internal.h"

/* What pass 1 learns. */
struct first_pass {
	uint64_t records, duration_ns;
};

/* Pass 2's state beyond the profile itself. */
struct second_pass {
	struct live_set ls;
	uint64_t ends[LK_TIMELINE_BUCKETS]; /* each bucket's end */
	unsigned bucket;                    /* the current one */
	lk_q128 bucket_max;                 /* the highest H(t) in it so far */
	uint64_t rss;                       /* the last RSS record */
	bool at_done;                       /* live_* taken */
	bool from_done;                     /* the window's from_* taken (opts.window) */
	lk_q128 peak;                       /* the highest H(t) so far (the mark) */
	uint64_t peak_ns;                   /* the time of the record that first reached it */
	uint64_t last_ns;                   /* the time of the last record applied */
	bool off;                           /* switched off (CTL OFF) */
	uint64_t off_since;                 /* since when */
};

/* Pass 2 reads records ahead of the ones it applies, and asks the cache for the live-set entry of
 * each ALLOC, FREE and INHERIT as it is read, so that the entry is there when the record is
 * applied: the table of a large heap does not fit in the cache, and a miss costs more than
 * decoding a record. It reads AHEAD records, then applies them: each entry is asked for AHEAD
 * records' work before it is needed, as a ring of AHEAD records would, at less cost a record. The
 * reader's pointers (STACK, MODULE, LOSS, TRAILER) live until its next record, so nothing is read
 * past such a record before it is applied. */
#define AHEAD 16

struct ahead {
	struct lk_reader *rd;
	struct lk_record rec[AHEAD]; /* read, to be applied in order */
	uint64_t left;               /* records still to read: as many as pass 1 read */
	int r;                       /* 1 while the reader has more, then its last return */
};

static void ahead_init(struct ahead *ah, struct lk_reader *rd, uint64_t records)
{
	ah->rd = rd;
	ah->left = records;
	ah->r = 1;
}

/* Reads the next records into ah->rec (lk_reader_next_many(): up to AHEAD, and up to one that
 * holds pointers): how many; 0 once the reader has no more (ah->r says why) or pass 1's count is
 * reached. */
static unsigned ahead_read(struct ahead *ah, const struct live_set *ls)
{
	unsigned n;

	if (ah->r <= 0 || ah->left == 0)
		return 0;
	ah->r = lk_reader_next_many(ah->rd, ah->rec, ah->left < AHEAD ? (unsigned)ah->left : AHEAD);
	if (ah->r <= 0)
		return 0;
	n = (unsigned)ah->r;
	ah->left -= n;
	for (unsigned i = 0; i < n; i++) {
		const struct lk_record *rec = &ah->rec[i];
		if (rec->tag == LK_REC_ALLOC)
			live_set_prefetch(ls, rec->alloc.block);
		else if (rec->tag == LK_REC_FREE)
			live_set_prefetch(ls, rec->free.block);
		else if (rec->tag == LK_REC_INHERIT)
			live_set_prefetch(ls, rec->inherit.block);
	}
	return n;
}

static int64_t inherit_time(const struct lk_profile *p, const struct lk_record *rec)
{
	/* Usually before the start: the wrapped difference, read as a signed number. */
	return (int64_t)(rec->inherit.alloc_monotonic_ns - p->header.h.start_monotonic_ns);
}

static int copy_header(struct lk_profile *p, const struct lk_reader *rd)
{
	const struct lk_profile_header *h = lk_reader_header(rd);
	size_t n = (size_t)h->h.exe_len + h->h.cmdline_len + 2;

	p->strings = malloc(n);
	if (!p->strings)
		return -ENOMEM;
	memcpy(p->strings, h->exe, n); /* exe, NUL, cmdline, NUL: one block in the reader */
	p->header = *h;
	p->header.exe = p->strings;
	p->header.cmdline = p->strings + h->h.exe_len + 1;
	/* Exact mode weighs 1 whatever the period field says (docs/sampling.md section 6). */
	p->totals.period = h->h.flags & LK_HDR_EXACT ? 1 : h->h.period;
	return 0;
}

/* "mark NAME is not in the profile; its marks: a, b, c": -ENOENT, with the message in *msg. */
static int no_mark(char **msg, const char *name, const char *seen)
{
	return profile_fail(msg, -ENOENT, "no mark '%s' in the profile (%s%s)", name,
			    *seen ? "its marks: " : "it has no mark; `leek ctl PID mark NAME` makes one",
			    seen);
}

/* Pass 1 with every record read whole, for the times of opts.at_mark, opts.from_mark and
 * opts.known_mark: each the first mark of its name. */
static int first_pass_marks(struct lk_profile *p, struct lk_reader *rd, struct first_pass *a,
			    char **msg)
{
	bool at = !p->opts.at_mark, from = !p->opts.from_mark, known = !p->opts.known_mark;
	char seen[256] = "";
	struct lk_record rec;
	int r;

	while ((r = lk_reader_next(rd, &rec)) > 0) {
		a->records++;
		a->duration_ns = rec.time_ns;
		if (rec.tag != LK_REC_CTL || rec.ctl.kind != LK_CTL_MARK)
			continue;
		if (!at && !strcmp(rec.ctl.name, p->opts.at_mark)) {
			p->opts.at_ns = rec.time_ns;
			at = true;
		}
		if (!from && !strcmp(rec.ctl.name, p->opts.from_mark)) {
			p->opts.from_ns = rec.time_ns;
			from = true;
		}
		if (!known && !strcmp(rec.ctl.name, p->opts.known_mark)) {
			if (!p->opts.known || p->opts.known_ns < (int64_t)rec.time_ns)
				p->opts.known_ns = (int64_t)rec.time_ns;
			p->opts.known = known = true;
		}
		if (strlen(seen) + rec.ctl.name_len + 8 < sizeof(seen))
			snprintf(seen + strlen(seen), sizeof(seen) - strlen(seen), "%s%s",
				 *seen ? ", " : "", rec.ctl.name);
	}
	if (r < 0)
		return r;
	if (!at)
		return no_mark(msg, p->opts.at_mark, seen);
	if (!from)
		return no_mark(msg, p->opts.from_mark, seen);
	if (!known)
		return no_mark(msg, p->opts.known_mark, seen);
	if (p->opts.window && p->opts.from_ns > p->opts.at_ns)
		return profile_fail(msg, -EINVAL, "mark '%s' comes after mark '%s' in the profile",
				    p->opts.from_mark ? p->opts.from_mark : "(--from)",
				    p->opts.at_mark ? p->opts.at_mark : "(--to)");
	return 0;
}

static int first_pass(struct lk_profile *p, int fd, struct first_pass *a, char **msg)
{
	struct lk_reader *rd;
	uint64_t t;
	int r;

	r = p->chain.n ? profile_open_chain(p, &rd, msg)
		       : profile_open_reader(fd, p->opts.limit, p->opts.limit_whole, &rd, msg);
	if (r < 0)
		return r;
	r = copy_header(p, rd);
	if (p->opts.at_mark || p->opts.from_mark || p->opts.known_mark)
		r = r < 0 ? r : first_pass_marks(p, rd, a, msg);
	else
		while (r >= 0 && (r = lk_reader_skip(rd, &t)) > 0) {
			a->records++;
			a->duration_ns = t;
		}
	if (r < 0)
		profile_fail_reader(msg, rd, r); /* unless a message is there already */
	p->totals.trailer = lk_reader_has_trailer(rd);
	lk_reader_free(rd);
	return r < 0 ? r : 0;
}

/* Closes the current bucket at the state after its last record, and opens the next one. */
static void close_bucket(struct lk_profile *p, struct second_pass *sp)
{
	unsigned b = sp->bucket;
	struct lk_timeline_point *t = &p->timeline[b];

	t->t_ns = sp->ends[b];
	t->heap_bytes = (double)sp->ls.heap_q / LIVE_Q_ONE;
	t->heap_max = (double)sp->bucket_max / LIVE_Q_ONE;
	t->rss_bytes = sp->rss;
	for (size_t i = 0; i < p->nstacks; i++)
		p->stacks[i].series[b] = (double)p->runs[i].live_q / LIVE_Q_ONE;
	if (b + 1 < p->nbuckets) {
		sp->bucket++;
		sp->bucket_max = sp->ls.heap_q; /* the level the next bucket starts at */
	}
}

static void unlive(struct lk_profile *p, const struct second_pass *sp, const struct live_block *b)
{
	struct stack_run *run = &p->runs[b->stack];

	run->live_q -= live_q_of(&sp->ls, b->size);
	if (--run->live_n == 0)
		run->live_q = 0;
}

/* ALLOC, or INHERIT: live, but allocated before the fork, so not counted as allocated here. */
static int add_live(struct lk_profile *p, struct second_pass *sp, const struct lk_record *rec,
		    const char **what)
{
	bool alloc = rec->tag == LK_REC_ALLOC;
	uint64_t block = alloc ? rec->alloc.block : rec->inherit.block;
	uint64_t size = alloc ? rec->alloc.size : rec->inherit.size;
	uint64_t stack = alloc ? rec->alloc.stack : rec->inherit.stack;
	struct live_weight wt;
	struct stack_run *run;
	int r;

	if (stack >= p->nstacks) /* the reader checks this; a second line of defence */
		return -EBADMSG;
	if (sp->ls.count >= LK_PROFILE_MAX_LIVE) {
		_Static_assert(LK_PROFILE_MAX_LIVE == 1u << 25, "the message's number");
		*what = "more than 33554432 sampled blocks live at once: leek's limit";
		return -E2BIG;
	}
	r = live_set_add(&sp->ls, block, size, (uint32_t)stack,
			 alloc ? (int64_t)rec->time_ns : inherit_time(p, rec));
	if (r < 0)
		return r;
	run = &p->runs[stack];
	run->live_q += live_q_of(&sp->ls, size);
	run->live_n++;
	if (stack == 0)
		p->stack0_used = true;
	if (alloc && sp->ls.period <= 1) {
		profile_add_exact(&p->stacks[stack].alloc_bytes, &p->stacks[stack].alloc_objects,
				  size);
		p->totals.samples++;
	} else if (alloc) {
		wt = live_weigh(&sp->ls, size);
		profile_add_block(&p->stacks[stack].alloc_bytes, &p->stacks[stack].alloc_objects,
				  size, &wt);
		p->totals.samples++;
	} else {
		run->inherited++;
		p->totals.inherited++;
	}
	return 0;
}

static void set_losses(struct lk_profile *p, const struct lk_record *rec)
{
	struct lk_profile_totals *t = &p->totals;

	/* Absolute values; a counter that is left out is zero, and counters never fall, so a
	 * value once seen stays until a later record gives another. */
	for (uint32_t i = 0; i < rec->counters.n; i++) {
		const struct lk_counter_value *c = &rec->counters.v[i];
		uint32_t k = 0;
		if (c->id <= LK_CNT_MAX)
			t->losses[c->id] = c->value;
		while (k < t->ncounters && t->counters[k].id != c->id)
			k++;
		if (k < LK_READ_MAX_COUNTERS) {
			t->counters[k] = *c;
			t->ncounters += k == t->ncounters;
		}
	}
}

/* The free of b kept (opts.frees): out of line, so that apply_free stays small without it. */
static __attribute__((noinline)) int keep_free(struct lk_profile *p, const struct second_pass *sp,
					       const struct live_block *b,
					       const struct lk_record *rec)
{
	struct live_weight wt = live_weigh(&sp->ls, b->size);

	return profile_frees_add(p, b, rec, wt.w, wt.v1);
}

/* FREE: H(t) only falls. 0, or with opts.frees, -ENOMEM or -E2BIG (the budget). */
static int apply_free(struct lk_profile *p, struct second_pass *sp, const struct lk_record *rec)
{
	struct live_block b;

	p->totals.frees++;
	if (live_set_remove(&sp->ls, rec->free.block, &b)) {
		unlive(p, sp, &b);
		if (__builtin_expect(p->opts.frees, 0))
			return keep_free(p, sp, &b, rec);
	} else {
		p->totals.frees_unknown++;
	}
	return 0;
}

/* CTL: an off period begins or ends, or a mark. An OFF while off, or an ON while on, changes
 * nothing (libleek writes neither, a damaged file might). */
static void apply_ctl(struct lk_profile *p, struct second_pass *sp, const struct lk_record *rec)
{
	struct lk_profile_totals *t = &p->totals;

	if (rec->ctl.kind == LK_CTL_OFF && !sp->off) {
		sp->off = true;
		sp->off_since = rec->time_ns;
		t->off_periods++;
	} else if (rec->ctl.kind == LK_CTL_ON && sp->off) {
		sp->off = false;
		t->off_ns += rec->time_ns - sp->off_since;
	} else if (rec->ctl.kind == LK_CTL_MARK) {
		if (t->nmarks < LK_PROFILE_MARKS) {
			t->marks[t->nmarks].t_ns = rec->time_ns;
			memcpy(t->marks[t->nmarks].name, rec->ctl.name, rec->ctl.name_len + 1);
		}
		t->nmarks++;
	}
}

/* An ERROR, kept if it is among the first LK_PROFILE_MAX_ERRORS; 0 or -ENOMEM/-E2BIG. */
static int add_error(struct lk_profile *p, const struct lk_record *rec)
{
	if (p->nerrors == LK_PROFILE_MAX_ERRORS)
		return 0;
	int k = lk_budget_grow((void **)&p->errors, &p->errors_cap, p->nerrors + 1,
			       sizeof(*p->errors));
	if (k < 0)
		return k;
	p->errors[p->nerrors++] = (struct lk_error_event){
		.t_ns = rec->time_ns, .kind = rec->error.kind, .tid = rec->error.tid,
		.addr = rec->error.addr, .block_addr = rec->error.block_addr,
		.block_size = rec->error.block_size, .block = rec->error.block,
		.alloc_stack = rec->error.alloc_stack, .free_stack = rec->error.free_stack,
		.stack = rec->error.stack,
	};
	return 0;
}

static int apply(struct lk_profile *p, struct second_pass *sp, const struct lk_record *rec,
		 const char **what)
{
	switch (rec->tag) {
	case LK_REC_ALLOC:
	case LK_REC_INHERIT:
		return add_live(p, sp, rec, what);
	case LK_REC_FREE:
		return apply_free(p, sp, rec);
	case LK_REC_STACK:
		return profile_add_stack(p, rec, what);
	case LK_REC_MODULE:
		return profile_add_module(p, rec, what);
	case LK_REC_UNLOAD:
		profile_unload_module(p, rec);
		return 0;
	case LK_REC_RSS:
		sp->rss = rec->rss.bytes;
		if (rec->rss.bytes > p->totals.max_rss)
			p->totals.max_rss = rec->rss.bytes;
		return 0;
	case LK_REC_LOSS:
	case LK_REC_TRAILER:
		set_losses(p, rec);
		return 0;
	case LK_REC_CTL:
		apply_ctl(p, sp, rec);
		return 0;
	case LK_REC_ERROR:
		return add_error(p, rec);
	default: /* extensions */
		return 0;
	}
}

/* The time after which a record first has more to do than be applied: opts.from_ns and
 * opts.at_ns, if their snapshots are not taken yet, or the current bucket's end, if another one
 * follows. */
static uint64_t next_check(const struct lk_profile *p, const struct second_pass *sp)
{
	uint64_t t = sp->at_done ? UINT64_MAX : p->opts.at_ns;

	if (p->opts.window && !sp->from_done && p->opts.from_ns < t)
		t = p->opts.from_ns;
	if (sp->bucket + 1 < p->nbuckets && sp->ends[sp->bucket] < t)
		t = sp->ends[sp->bucket];
	return t;
}

/* What is due before a record at time t is applied: the snapshots at from_ns and at_ns, and the
 * buckets that end before t. Returns the next time to look again (next_check). Out of line, so
 * that replay()'s loop keeps its registers for the records. */
static __attribute__((noinline)) uint64_t pass_moments(struct lk_profile *p,
							struct second_pass *sp, uint64_t t)
{
	if (p->opts.window && !sp->from_done && t > p->opts.from_ns) {
		profile_snapshot_from(p, &sp->ls);
		sp->from_done = true;
	}
	if (!sp->at_done && t > p->opts.at_ns) {
		profile_snapshot_live(p, &sp->ls);
		sp->at_done = true;
	}
	while (sp->bucket + 1 < p->nbuckets && t > sp->ends[sp->bucket])
		close_bucket(p, sp);
	return next_check(p, sp);
}

/* Applies records until the reader has no more (0) or fails (< 0, *msg set): the body of pass 2,
 * and of each step of a followed profile. */
static int replay(struct lk_profile *p, struct second_pass *sp, struct ahead *ah, char **msg)
{
	uint64_t check_ns = next_check(p, sp);
	unsigned n;

	while ((n = ahead_read(ah, &sp->ls)) > 0) {
		for (unsigned i = 0; i < n; i++) {
			const struct lk_record *rec = &ah->rec[i];
			const char *what = NULL;
			int r;

			if (rec->time_ns > check_ns) /* rarely: a bucket's end, from_ns, at_ns */
				check_ns = pass_moments(p, sp, rec->time_ns);
			if (rec->tag == LK_REC_FREE) {
				/* H(t) does not rise: no new peak, nor bucket maximum. */
				r = apply_free(p, sp, rec);
				if (__builtin_expect(r < 0, 0))
					return r == -E2BIG ? profile_fail_budget(msg, r, rec->offset,
										 p, &sp->ls)
							   : profile_fail_record(msg, rec, r, NULL);
			} else {
				r = apply(p, sp, rec, &what);
				if (r >= 0 && sp->ls.heap_q > sp->peak) { /* the first time this
									     * level is reached */
					sp->peak = sp->ls.heap_q;
					sp->peak_ns = rec->time_ns;
					r = live_set_mark(&sp->ls);
				}
				if (r == -E2BIG && !what) /* beyond the budget (the limits name
							   * themselves) */
					return profile_fail_budget(msg, r, rec->offset, p, &sp->ls);
				if (r < 0) {
					profile_fail_record(msg, rec, r, what);
					return r;
				}
				if (sp->ls.heap_q > sp->bucket_max) /* converted once, at the end */
					sp->bucket_max = sp->ls.heap_q;
			}
			p->totals.records++;
			if (rec->tag <= LK_REC_MAX_KNOWN)
				p->totals.tags[rec->tag]++;
			else
				p->totals.ext_records++;
			sp->last_ns = rec->time_ns;
		}
	}
	if (ah->r < 0) {
		profile_fail_reader(msg, ah->rd, ah->r);
		return ah->r;
	}
	return 0;
}

/* After the last record: the buckets closed, and the end's pass (profile_finish). */
static int end_replay(struct lk_profile *p, struct second_pass *sp, uint64_t duration_ns)
{
	p->totals.peak_ns = sp->peak_ns;
	if (sp->off) { /* off to the end */
		p->totals.off_ns += duration_ns > sp->off_since ? duration_ns - sp->off_since : 0;
		p->totals.off_at_end = true;
	}
	if (p->opts.window && !sp->from_done) /* from_ns at or after the last record */
		profile_snapshot_from(p, &sp->ls);
	while (sp->bucket + 1 < p->nbuckets) /* the buckets after the last record */
		close_bucket(p, sp);
	close_bucket(p, sp);
	live_set_drop_table(&sp->ls); /* no block is looked up from here on: room for the list */
	profile_frees_finish(p);
	return profile_finish(p, &sp->ls, duration_ns, !sp->at_done);
}

static int second_pass(struct lk_profile *p, int fd, const struct first_pass *a,
		       struct second_pass *sp, char **msg)
{
	struct lk_reader *rd;
	struct ahead ah;
	uint64_t end;
	int r;

	r = p->chain.n ? profile_open_chain(p, &rd, msg)
		       : profile_open_reader(fd, p->opts.limit, p->opts.limit_whole, &rd, msg);
	if (r < 0)
		return r;
	for (unsigned b = 0; b < p->nbuckets; b++)
		sp->ends[b] = (uint64_t)((unsigned __int128)a->duration_ns * (b + 1) / p->nbuckets);
	ahead_init(&ah, rd, a->records);
	r = replay(p, sp, &ah, msg);
	end = p->totals.end_offset = lk_reader_end_offset(rd);
	lk_reader_chain_stats(rd, &p->totals.chain);
	lk_reader_free(rd);
	if (r < 0)
		return r;
	r = end_replay(p, sp, a->duration_ns);
	if (r == -E2BIG) /* the list of the blocks live at the end */
		return profile_fail_budget(msg, r, end, p, &sp->ls);
	return r;
}

static struct lk_profile *profile_new(const struct lk_profile_opts *opts, char **msg)
{
	struct lk_profile *p = calloc(1, sizeof(*p));

	if (!p) {
		profile_fail(msg, -ENOMEM, "out of memory");
		return NULL;
	}
	p->opts = opts ? *opts : (struct lk_profile_opts){ .at_ns = UINT64_MAX };
	p->nbuckets = p->opts.buckets && p->opts.buckets < LK_TIMELINE_BUCKETS
			      ? p->opts.buckets
			      : LK_TIMELINE_BUCKETS;
	p->nstacks = 1; /* stack 0, "no stack" */
	p->stacks = lk_budget_calloc(1, sizeof(*p->stacks));
	p->runs = lk_budget_calloc(1, sizeof(*p->runs));
	p->stacks_cap = p->runs_cap = 1; /* NULL gives nothing back (lk_budget_free) */
	if (p->opts.window) {
		p->windows = lk_budget_calloc(1, sizeof(*p->windows));
		p->windows_cap = 1;
	}
	if (!p->stacks || !p->runs || (p->opts.window && !p->windows)) {
		profile_fail(msg, -ENOMEM, "out of memory");
		return lk_profile_free(p);
	}
	return p;
}

/* A failure's return: r, with its message in *err (or freed; "out of memory" for -ENOMEM). */
static int give_error(int r, char *msg, char **err)
{
	if (r == -ENOMEM)
		profile_fail(&msg, r, "out of memory");
	if (err)
		*err = msg;
	else
		free(msg);
	return r;
}

int lk_profile_load(const char *path, const struct lk_profile_opts *opts, struct lk_profile **ret,
		    char **err)
{
	struct second_pass sp = { 0 };
	struct first_pass a = { 0 };
	struct lk_profile *p;
	char *msg = NULL;
	int fd = -1, r;

	p = profile_new(opts, &msg);
	if (!p)
		return give_error(-ENOMEM, msg, err);
	r = p->opts.segment_only ? 0 : lk_chain_find(path, &p->chain, &msg);
	if (r >= 0 && p->opts.limit) /* the limit is the named file's: the chain ends with it */
		while (p->chain.n > p->chain.named + 1)
			free(p->chain.paths[--p->chain.n]);
	if (r >= 0 && p->chain.n == 1 && p->chain.segments[0] == 0)
		lk_chain_files_done(&p->chain); /* segment 0 alone: a file of its own */
	if (r >= 0 && !p->chain.n)
		r = profile_open_input(path, &fd, &msg);
	if (r >= 0)
		r = first_pass(p, fd, &a, &msg);
	if (r >= 0) {
		live_set_init(&sp.ls, p->totals.period);
		r = second_pass(p, fd, &a, &sp, &msg);
		live_set_done(&sp.ls);
		if (r >= 0)
			profile_sort_live(p);
	}
	if (fd >= 0)
		close(fd);
	if (r < 0) {
		lk_profile_free(p);
		return give_error(r, msg, err);
	}
	*ret = p;
	return 0;
}

/* ---- a profile followed while it is written ----
 *
 * One pass, as its records become safe to read (lk_profile_follow_step's limit), and the rest
 * after its writer has stopped. With no first pass there is no duration to cut the timeline by,
 * so a followed profile has one bucket: everything but the timeline and the growth verdicts is
 * what lk_profile_load() gives (tests/unit/test-profile.c). */
struct lk_profile_follow {
	struct lk_profile *p;
	int fd;
	struct lk_reader *rd;
	struct second_pass sp;
	struct ahead ah;
	char *msg; /* the first failure; every later call returns it */
	int err;
	bool live;  /* sp.ls to be given back */
	uint64_t whole; /* lk_profile_follow_whole's: given to the reader at each step, after the
			 * step's limit (the reader holds it to the limit it has then) */
};

const struct lk_profile *lk_profile_follow_partial(const struct lk_profile_follow *f)
{
	return f->p;
}

struct lk_profile_follow *lk_profile_follow_free(struct lk_profile_follow *f)
{
	if (!f)
		return NULL;
	lk_reader_free(f->rd);
	if (f->fd >= 0)
		close(f->fd);
	if (f->live)
		live_set_done(&f->sp.ls);
	lk_profile_free(f->p);
	free(f->msg);
	free(f);
	return NULL;
}

static int follow_fail(struct lk_profile_follow *f, int r, char **err)
{
	if (r == -ENOMEM && !f->msg)
		profile_fail(&f->msg, r, "out of memory");
	f->err = r;
	if (err)
		*err = f->msg ? strdup(f->msg) : NULL;
	return r;
}

int lk_profile_follow_open(const char *path, uint64_t limit, const struct lk_profile_opts *opts,
			   struct lk_profile_follow **ret, char **err)
{
	struct lk_profile_opts one = opts ? *opts : (struct lk_profile_opts){ .at_ns = UINT64_MAX };
	struct lk_profile_follow *f = calloc(1, sizeof(*f));

	one.buckets = 1; /* no first pass, so no duration to cut the timeline by */
	struct stat st;
	char *msg = NULL;
	int r;

	if (!f)
		return give_error(-ENOMEM, msg, err);
	f->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (f->fd < 0 || fstat(f->fd, &st) < 0) {
		r = -errno;
		profile_fail(&msg, r, "%s", strerror(errno));
	} else if (!S_ISREG(st.st_mode)) {
		r = profile_fail(&msg, -EINVAL, "not a regular file, so it cannot be followed");
	} else if (!(f->p = profile_new(&one, &msg))) {
		r = -ENOMEM;
	} else if (!(f->rd = lk_reader_new())) {
		r = profile_fail(&msg, -ENOMEM, "out of memory");
	} else {
		r = lk_reader_follow(f->rd, limit);
		if (r >= 0)
			r = lk_reader_open_fd(f->rd, f->fd);
		if (r >= 0)
			r = copy_header(f->p, f->rd);
		if (r < 0 && !msg)
			profile_fail_reader(&msg, f->rd, r);
		if (r >= 0) {
			live_set_init(&f->sp.ls, f->p->totals.period);
			f->live = true;
		}
	}
	if (r < 0) {
		lk_profile_follow_free(f);
		return give_error(r, msg, err);
	}
	f->sp.ends[0] = UINT64_MAX;            /* the one bucket ends with the last record */
	ahead_init(&f->ah, f->rd, UINT64_MAX);
	*ret = f;
	return 0;
}

void lk_profile_follow_heap(const struct lk_profile_follow *f, double *now, double *peak,
			    uint64_t *t_ns)
{
	*now = (double)f->sp.ls.heap_q / LIVE_Q_ONE;
	*peak = (double)f->sp.peak / LIVE_Q_ONE;
	*t_ns = f->sp.last_ns;
}

uint64_t lk_profile_follow_offset(const struct lk_profile_follow *f)
{
	return lk_reader_end_offset(f->rd);
}

int lk_profile_follow_step(struct lk_profile_follow *f, uint64_t limit, char **err)
{
	int r;

	if (f->err)
		return follow_fail(f, f->err, err);
	r = lk_reader_follow(f->rd, limit);
	if (r >= 0) {
		lk_reader_follow_whole(f->rd, f->whole); /* 0 unless lk_profile_follow_whole */
		f->ah.r = 1; /* the reader stopped for now, not for good */
		r = replay(f->p, &f->sp, &f->ah, &f->msg);
	}
	return r < 0 ? follow_fail(f, r, err) : 0;
}

void lk_profile_follow_whole(struct lk_profile_follow *f, uint64_t whole)
{
	if (whole > f->whole)
		f->whole = whole;
}

/* The live set walked into live_* (profile_snapshot_live, as the end's pass walks it) while the
 * follower goes on: live_* are the follower's own fields, which no step reads and which
 * lk_profile_follow_finish() sums again from zero when opts.at_ns is the end (sp.at_done then
 * stays false), so a snapshot changes nothing that comes after it. Another at_ns keeps its own
 * snapshot in live_*, which this one would overwrite: refused. */
const struct lk_profile *lk_profile_follow_snapshot(struct lk_profile_follow *f)
{
	if (f->err || f->p->opts.window || f->p->opts.at_ns != UINT64_MAX)
		return NULL;
	profile_snapshot_live(f->p, &f->sp.ls);
	return f->p;
}

int lk_profile_follow_finish(struct lk_profile_follow *f, struct lk_profile **ret, char **err)
{
	int r = lk_profile_follow_step(f, UINT64_MAX, err);

	if (r < 0)
		return r;
	f->p->totals.trailer = lk_reader_has_trailer(f->rd);
	f->p->totals.end_offset = lk_reader_end_offset(f->rd);
	f->sp.ends[0] = f->sp.last_ns;
	r = end_replay(f->p, &f->sp, f->sp.last_ns);
	if (r == -E2BIG)
		profile_fail_budget(&f->msg, r, lk_reader_end_offset(f->rd), f->p, &f->sp.ls);
	if (r < 0)
		return follow_fail(f, r, err);
	live_set_done(&f->sp.ls);
	f->live = false;
	profile_sort_live(f->p);
	*ret = f->p;
	f->p = NULL;
	f->err = -EALREADY;
	return 0;
}
