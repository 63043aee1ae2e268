/* profile.c: reads one profile in two passes and aggregates it (profile.h): per stack, allocated
 * and live estimates with their intervals, a live-bytes series and a growth verdict; for the
 * process, the heap timeline, its peak, losses and RSS.
 *
 * Pass 1 replays the live set alone, to learn what pass 2 must know in advance: the duration, so
 * that the timeline's buckets are fixed from the start ([0, duration] cut into equal parts, bucket
 * b ending at duration * (b + 1) / buckets and holding the records at or before its end), and the
 * record at which the estimated heap H(t) first reaches its maximum. Pass 2 replays everything,
 * and snapshots the live set per stack when the selected time (opts.at_ns) passes, right after
 * the peak's record, at each bucket's end (series) and at the end (live, old). Both passes stop
 * after the same number of records, so a profile still being written reads consistently. The
 * reader is fast (tens of millions of records a second), so the extra pass costs little, and
 * memory stays bounded by the stacks, the modules, the live blocks and the buckets, never by the
 * number of records.
 *
 * H(t) is summed in fixed point (profile-internal.h), so the same set of live blocks always gives
 * the same value: the peak found in pass 1 is the peak of pass 2, and a stack's series returns to
 * exactly its old value when its blocks are freed. Never prints; errors are "offset N: ...".
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profile-internal.h"

/* What pass 1 learns. */
struct first_pass {
	uint64_t records, duration_ns, peak_rec, peak_ns;
};

/* Pass 2's state beyond the profile itself. */
struct second_pass {
	struct live_set ls;
	uint64_t ends[LK_TIMELINE_BUCKETS]; /* each bucket's end */
	unsigned bucket;                    /* the current one */
	uint64_t rss;                       /* the last RSS record */
	bool at_done;                       /* live_* taken */
};

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

static int first_pass(struct lk_profile *p, int fd, struct first_pass *a, char **msg)
{
	struct lk_reader *rd;
	struct lk_record rec;
	struct live_set ls;
	struct live_block b;
	lk_q128 best = 0;
	int r;

	r = profile_open_reader(fd, &rd, msg);
	if (r < 0)
		return r;
	r = copy_header(p, rd);
	live_set_init(&ls, p->totals.period);
	while (r >= 0 && (r = lk_reader_next(rd, &rec)) > 0) {
		a->records++;
		a->duration_ns = rec.time_ns;
		if (rec.tag == LK_REC_ALLOC || rec.tag == LK_REC_INHERIT) {
			bool alloc = rec.tag == LK_REC_ALLOC;
			uint64_t addr = alloc ? rec.alloc.addr : rec.inherit.addr;
			live_set_remove(&ls, addr, NULL);
			r = live_set_add(&ls, addr, alloc ? rec.alloc.size : rec.inherit.size, 0, 0,
					 &b);
			if (r < 0)
				profile_fail_record(msg, &rec, r, NULL);
		} else if (rec.tag == LK_REC_FREE) {
			live_set_remove(&ls, rec.free.addr, NULL);
		}
		if (ls.heap_q > best) { /* the first time the maximum is reached */
			best = ls.heap_q;
			a->peak_rec = a->records;
			a->peak_ns = rec.time_ns;
		}
	}
	if (r < 0)
		profile_fail_reader(msg, rd, r); /* unless a message is there already */
	p->totals.trailer = lk_reader_has_trailer(rd);
	live_set_done(&ls);
	lk_reader_free(rd);
	return r < 0 ? r : 0;
}

/* Closes the current bucket at the state after its last record, and opens the next one. */
static void close_bucket(struct lk_profile *p, struct second_pass *sp)
{
	unsigned b = sp->bucket;
	double heap = (double)sp->ls.heap_q / LIVE_Q_ONE;
	struct lk_timeline_point *t = &p->timeline[b];

	t->t_ns = sp->ends[b];
	t->heap_bytes = heap;
	t->rss_bytes = sp->rss;
	for (size_t i = 0; i < p->nstacks; i++)
		p->stacks[i].series[b] = (double)p->runs[i].live_q / LIVE_Q_ONE;
	if (b + 1 < p->nbuckets) {
		sp->bucket++;
		p->timeline[b + 1].heap_max = heap; /* the level the next bucket starts at */
	}
}

static void unlive(struct lk_profile *p, const struct live_block *b)
{
	struct stack_run *run = &p->runs[b->stack];

	run->live_q -= live_q(b);
	if (--run->live_n == 0)
		run->live_q = 0;
}

/* ALLOC, or INHERIT: live, but allocated before the fork, so not counted as allocated here. */
static int add_live(struct lk_profile *p, struct second_pass *sp, const struct lk_record *rec)
{
	bool alloc = rec->tag == LK_REC_ALLOC;
	uint64_t addr = alloc ? rec->alloc.addr : rec->inherit.addr;
	uint64_t size = alloc ? rec->alloc.size : rec->inherit.size;
	uint64_t stack = alloc ? rec->alloc.stack : rec->inherit.stack;
	struct live_block b;
	struct stack_run *run;
	int r;

	if (stack >= p->nstacks) /* the reader checks this; a second line of defence */
		return -EBADMSG;
	/* Live already: its FREE is missing. The old block is gone now, unseen. */
	if (live_set_remove(&sp->ls, addr, &b))
		unlive(p, &b);
	r = live_set_add(&sp->ls, addr, size, (uint32_t)stack,
			 alloc ? (int64_t)rec->time_ns : inherit_time(p, rec), &b);
	if (r < 0)
		return r;
	run = &p->runs[stack];
	run->live_q += live_q(&b);
	run->live_n++;
	if (stack == 0)
		p->stack0_used = true;
	if (alloc) {
		profile_add_block(&p->stacks[stack].alloc_bytes, &p->stacks[stack].alloc_objects,
				  &b);
		p->totals.samples++;
	} else {
		run->inherited++;
		p->totals.inherited++;
	}
	return 0;
}

static void set_losses(struct lk_profile *p, const struct lk_record *rec)
{
	/* Absolute values; a counter that is left out is zero, and counters never fall, so a
	 * value once seen stays until a later record gives another. */
	for (uint32_t i = 0; i < rec->counters.n; i++)
		if (rec->counters.v[i].id <= LK_CNT_MAX)
			p->totals.losses[rec->counters.v[i].id] = rec->counters.v[i].value;
}

static int apply(struct lk_profile *p, struct second_pass *sp, const struct lk_record *rec,
		 const char **what)
{
	struct live_block b;

	switch (rec->tag) {
	case LK_REC_ALLOC:
	case LK_REC_INHERIT:
		return add_live(p, sp, rec);
	case LK_REC_FREE:
		p->totals.frees++;
		if (live_set_remove(&sp->ls, rec->free.addr, &b))
			unlive(p, &b);
		else
			p->totals.frees_unknown++;
		return 0;
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
	default: /* extensions */
		return 0;
	}
}

static int second_pass(struct lk_profile *p, int fd, const struct first_pass *a,
		       struct second_pass *sp, char **msg)
{
	struct lk_reader *rd;
	struct lk_record rec;
	uint64_t n = 0;
	int r;

	r = profile_open_reader(fd, &rd, msg);
	if (r < 0)
		return r;
	for (unsigned b = 0; b < p->nbuckets; b++)
		sp->ends[b] = (uint64_t)((unsigned __int128)a->duration_ns * (b + 1) / p->nbuckets);
	while (n < a->records && (r = lk_reader_next(rd, &rec)) > 0) {
		const char *what = NULL;
		double heap;

		if (!sp->at_done && rec.time_ns > p->opts.at_ns) {
			profile_snapshot(p, &sp->ls, PROFILE_SNAP_LIVE, 0);
			sp->at_done = true;
		}
		while (sp->bucket + 1 < p->nbuckets && rec.time_ns > sp->ends[sp->bucket])
			close_bucket(p, sp);
		r = apply(p, sp, &rec, &what);
		if (r < 0) {
			profile_fail_record(msg, &rec, r, what);
			break;
		}
		if (++n == a->peak_rec)
			profile_snapshot(p, &sp->ls, PROFILE_SNAP_PEAK, 0);
		heap = (double)sp->ls.heap_q / LIVE_Q_ONE;
		if (heap > p->timeline[sp->bucket].heap_max)
			p->timeline[sp->bucket].heap_max = heap;
	}
	if (r < 0)
		profile_fail_reader(msg, rd, r);
	lk_reader_free(rd);
	if (r < 0)
		return r;
	p->totals.records = n;
	p->totals.peak_ns = a->peak_ns;
	while (sp->bucket + 1 < p->nbuckets) /* the buckets after the last record */
		close_bucket(p, sp);
	close_bucket(p, sp);
	if (!sp->at_done)
		profile_snapshot(p, &sp->ls, PROFILE_SNAP_LIVE, 0);
	return 0;
}

int lk_profile_load(const char *path, const struct lk_profile_opts *opts, struct lk_profile **ret,
		    char **err)
{
	struct second_pass sp = { 0 };
	struct first_pass a = { 0 };
	struct lk_profile *p;
	char *msg = NULL;
	int fd = -1, r;

	p = calloc(1, sizeof(*p));
	if (!p) {
		if (err)
			*err = strdup("out of memory");
		return -ENOMEM;
	}
	p->opts = opts ? *opts : (struct lk_profile_opts){ .at_ns = UINT64_MAX };
	p->nbuckets = p->opts.buckets && p->opts.buckets < LK_TIMELINE_BUCKETS
			      ? p->opts.buckets
			      : LK_TIMELINE_BUCKETS;
	p->nstacks = 1; /* stack 0, "no stack" */
	p->stacks = calloc(1, sizeof(*p->stacks));
	p->runs = calloc(1, sizeof(*p->runs));
	p->stacks_cap = p->runs_cap = 1;
	r = p->stacks && p->runs ? profile_open_input(path, &fd, &msg) : -ENOMEM;
	if (r >= 0)
		r = first_pass(p, fd, &a, &msg);
	if (r >= 0) {
		live_set_init(&sp.ls, p->totals.period);
		r = second_pass(p, fd, &a, &sp, &msg);
		if (r >= 0)
			r = profile_finish(p, &sp.ls, a.duration_ns);
		live_set_done(&sp.ls);
	}
	if (fd >= 0)
		close(fd);
	if (r < 0) {
		if (r == -ENOMEM)
			profile_fail(&msg, r, "out of memory");
		if (err)
			*err = msg;
		else
			free(msg);
		lk_profile_free(p);
		return r;
	}
	*ret = p;
	return 0;
}
