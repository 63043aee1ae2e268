/* read-merge.c: the one order in which the reader hands out a version 6 profile's records: the
 * main stream's in file order, and every thread segment's body's among them (format.h;
 * docs/format.md, "Thread segments").
 *
 * The main stream is read one record ahead. Before a main record goes out, every held body record
 * whose time is at most the main record's goes out, the smallest (time, segment order) first:
 * records of one clock tick, most of an exact-mode profile's, come in a fixed order, and a body's
 * record before a main record of the same time. A body record may have to wait: a FREE for the
 * ALLOC of its block, an ALLOC for the STACK record it names (its thread writes that to the main
 * stream). A FREE whose block another held segment allocates later makes that segment go first;
 * one whose block the main stream has not numbered yet, and an ALLOC whose stack it has not
 * defined yet, wait for the main stream. A main FREE of a block that a held segment allocates
 * later makes that segment go first too. When the main stream ends (a TRAILER, a zero tag, the end
 * of the file), everything held goes out. A record that still waits at a TRAILER is corruption. One
 * that waits where the stream ends without its TRAILER waits for a record that was cut off with the
 * rest of the file (a compressed profile cut short; a raw one truncated at a record's end): it goes
 * out as the file's last records do, a FREE as the free of a block that no record allocated, an
 * ALLOC with stack 0 (docs/format.md, "Thread segments"), so that the profile reads up to its cut.
 *
 * The segments form a forest: a segment whose head (its next record) frees a block that another
 * segment allocates later waits on that one, as its child, until it hands out that ALLOC. Each
 * segment knows the smallest (time, order) of the heads in its tree (min). A root is either ready
 * (the `ready` heap, by min) or parked until the main stream has handed out a block number or a
 * STACK (parked_block, parked_stack). The next body record to go out is the head of the ready root
 * of smallest min: the record that the smallest head not waiting on the main stream waits for, or
 * that head itself. So a record costs a few heap operations, and a walk up a tree of at most
 * LK_READ_SEG_WAIT_MAX segments when a FREE starts to wait, however many segments are held and
 * however many heads wait on one segment. Most records cost less: an exact profile's bodies are
 * runs of ALLOC_FIXED and FREE_FIXED records of one clock tick, which go out one after the other
 * while nothing else comes first, and a run (lk_merge_run()) hands them out straight from the
 * body, without a heap operation, where the order above would have them go anyway.
 *
 * Never: print, hold a segment after its last record went out, or return without handing out a
 * record, finding an error, or waiting for more of a followed file.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "read-internal.h"

/* Where a held segment is (lk_seg.where). */
enum where { NOWHERE, READY, PARKED_BLOCK, PARKED_STACK, WAITING };

/* Roots by min (ready), roots by what they wait for (parked), a segment's waiters by min (kids,
 * with a place field of their own). */
enum heap_kind { BY_MIN, BY_PARK, KIDS };

static bool min_before(const struct lk_seg *a, const struct lk_seg *b)
{
	return a->min_time != b->min_time ? a->min_time < b->min_time : a->min_order < b->min_order;
}

static bool heap_before(enum heap_kind k, const struct lk_seg *a, const struct lk_seg *b)
{
	if (k == BY_PARK)
		return a->park != b->park ? a->park < b->park : a->order < b->order;
	return min_before(a, b);
}

static void heap_set(struct lk_seg_heap *h, enum heap_kind k, uint32_t i, struct lk_seg *s)
{
	h->v[i] = s;
	if (k == KIDS)
		s->kpos = i;
	else
		s->hpos = i;
}

/* Moves the entry at i up or down to where its key puts it. */
static void heap_sift(struct lk_seg_heap *h, enum heap_kind k, uint32_t i)
{
	struct lk_seg *s = h->v[i];

	while (i > 0 && heap_before(k, s, h->v[(i - 1) / 2])) {
		heap_set(h, k, i, h->v[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && heap_before(k, h->v[c + 1], h->v[c]))
			c++;
		if (!heap_before(k, h->v[c], s))
			break;
		heap_set(h, k, i, h->v[c]);
		i = c;
	}
	heap_set(h, k, i, s);
}

static int heap_push(struct lk_seg_heap *h, enum heap_kind k, struct lk_seg *s)
{
	if (h->n == h->cap) { /* at most every segment held: LK_READ_SEG_OPEN_MAX */
		uint32_t cap = h->cap ? 2 * h->cap : 8;
		struct lk_seg **v = realloc(h->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		h->v = v;
		h->cap = cap;
	}
	h->v[h->n++] = s;
	heap_sift(h, k, h->n - 1);
	return 0;
}

static void heap_remove(struct lk_seg_heap *h, enum heap_kind k, struct lk_seg *s)
{
	uint32_t i = k == KIDS ? s->kpos : s->hpos;
	struct lk_seg *last = h->v[--h->n];

	if (i < h->n) {
		heap_set(h, k, i, last);
		heap_sift(h, k, i);
	}
}

/* A segment into the file-ordered array. Dropped ones leave holes, compacted when there are more
 * holes than segments: the array stays within twice the segments held. */
static int add(struct lk_merge *m, struct lk_seg *s)
{
	if (m->n == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 16;
		struct lk_seg **v = realloc(m->segs, cap * sizeof(*v));
		if (v)
			m->segs = v;
		uint64_t *f = v ? realloc(m->firsts, cap * sizeof(*f)) : NULL;
		if (!f)
			return -ENOMEM;
		m->firsts = f;
		m->cap = cap;
	}
	s->idx = m->n;
	m->segs[m->n] = s;
	m->firsts[m->n++] = s->first;
	m->live++;
	return 0;
}

static void compact(struct lk_merge *m)
{
	size_t j = 0;

	for (size_t i = 0; i < m->n; i++) {
		if (!m->segs[i])
			continue;
		m->segs[j] = m->segs[i];
		m->firsts[j] = m->firsts[i];
		m->segs[j]->idx = j;
		j++;
	}
	m->n = j;
	m->dead = 0;
	m->lo = 0; /* alloc_lo() finds its place again */
}

/* A segment whose last record went out. Nothing waits on it: whatever waited on one of its
 * ALLOCs was let go when that ALLOC went out. */
static void drop(struct lk_merge *m, struct lk_seg *s)
{
	m->segs[s->idx] = NULL;
	m->dead++;
	m->live--;
	m->count--;
	m->bytes -= s->len;
	lk_seg_free(s);
	if (m->dead > 64 && m->dead > m->live)
		compact(m);
}

/* The smallest block that a held segment has yet to allocate: the next ALLOC of the first one
 * in file order with ALLOCs left, since their ranges follow file order. lo moves past the ones
 * that have none left, which never get any again, so this costs O(1) a call in all. */
static uint64_t alloc_lo(struct lk_merge *m)
{
	while (m->lo < m->n) {
		const struct lk_seg *s = m->segs[m->lo];
		if (s && s->next_alloc - s->first < s->nalloc)
			return s->next_alloc;
		m->lo++;
	}
	return UINT64_MAX;
}

/* The held segment that has yet to hand out the ALLOC of block b, or NULL. Segments reserve
 * ranges of block numbers in file order, so the only one that can is the last one whose range
 * starts at b or before it. Most FREEs are of blocks below every range still to allocate (the
 * main stream's, or ones handed out already): those need no search. */
static struct lk_seg *allocator_of(struct lk_merge *m, uint64_t b)
{
	size_t lo = 0, hi = m->n;
	struct lk_seg *s;

	if (b < alloc_lo(m))
		return NULL;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->firsts[mid] <= b)
			lo = mid + 1;
		else
			hi = mid;
	}
	s = lo ? m->segs[lo - 1] : NULL;
	return s && b >= s->next_alloc && b - s->first < s->nalloc ? s : NULL;
}

/* The smallest key of s's tree, from its own head and its waiters'. */
static inline void set_min(struct lk_seg *s)
{
	s->min_time = s->head.time;
	s->min_order = s->order;
	if (s->kids.n && min_before(s->kids.v[0], s)) {
		s->min_time = s->kids.v[0]->min_time;
		s->min_order = s->kids.v[0]->min_order;
	}
}

static int park(struct lk_merge *m, struct lk_seg *s, enum where w, uint64_t until)
{
	s->where = (uint8_t)w;
	s->park = until;
	return heap_push(w == PARKED_BLOCK ? &m->parked_block : &m->parked_stack, BY_PARK, s);
}

/* s's head frees a block that y has yet to allocate: s waits on y, as its child, and y's tree
 * takes s's min. A cycle (y waits on s, through others) cannot come from a writer, whose thread
 * allocated a block before another one freed it. */
static int wait_on(struct lk_reader *r, struct lk_seg *s, struct lk_seg *y)
{
	struct lk_merge *m = &r->merge;
	const char *what = lk_rec_tag_name(s->head.tag);
	unsigned depth = 0;
	uint64_t *w;
	int k;

	for (const struct lk_seg *x = y; x; x = x->parent) {
		if (x == s)
			return lk_reader_fail_at(r, s->head.offset, "%s of block %" PRIu64 " that no "
						 "record allocated: thread segments wait on each "
						 "other", what, s->head.block);
		if (++depth > LK_READ_SEG_WAIT_MAX)
			return lk_reader_fail_at(r, s->head.offset, "%s of block %" PRIu64 " waits on "
						 "more than %d thread segments in turn", what,
						 s->head.block, LK_READ_SEG_WAIT_MAX);
	}
	if (!y->kids.n || s->head.block < y->wait_lo)
		y->wait_lo = s->head.block;
	k = heap_push(&y->kids, KIDS, s);
	if (k < 0)
		return lk_reader_fail(r, k, "out of memory");
	w = lk_u64map_get(&m->waiters, s->head.block);
	s->next_waiter = w ? (struct lk_seg *)(uintptr_t)*w : NULL;
	k = lk_u64map_put(&m->waiters, s->head.block, (uintptr_t)s); /* as many as segments held */
	if (k < 0)
		return lk_reader_fail(r, -ENOMEM, "out of memory");
	s->parent = y;
	s->where = WAITING;
	for (struct lk_seg *x = y; x && min_before(s, x); x = x->parent) {
		x->min_time = s->min_time;
		x->min_order = s->min_order;
		if (x->parent)
			heap_sift(&x->parent->kids, KIDS, x->kpos);
		else if (x->where == READY)
			heap_sift(&m->ready, BY_MIN, x->hpos);
	}
	return 0;
}

/* Where a root's head puts it: NOWHERE if it has none (it is done), WAITING on *y, parked until
 * the main stream has gone far enough, or READY. */
static enum where where_for(struct lk_merge *m, const struct lk_seg *s, struct lk_seg **y)
{
	const struct lk_seg_head *h = &s->head;

	if (!s->has_head)
		return NOWHERE;
	if (h->alloc)
		return h->stack > m->stacks_out && !m->cut ? PARKED_STACK : READY;
	if (h->block - s->first < s->next_alloc - s->first)
		return READY; /* its own block, handed out already (numbered when s came) */
	if ((*y = allocator_of(m, h->block)))
		return WAITING;
	return h->block > m->blocks_out && !m->cut ? PARKED_BLOCK : READY;
}

/* A root whose head has changed (or that has just come, or stopped waiting or being parked), in no
 * heap, goes where its head says. */
static int place(struct lk_reader *r, struct lk_seg *s)
{
	struct lk_merge *m = &r->merge;
	struct lk_seg *y = NULL;
	enum where w = where_for(m, s, &y);
	int k;

	s->where = NOWHERE;
	if (w == NOWHERE) {
		drop(m, s);
		return 0;
	}
	set_min(s);
	if (w == WAITING)
		return wait_on(r, s, y);
	if (w == READY) {
		s->where = READY;
		k = heap_push(&m->ready, BY_MIN, s);
	} else {
		k = park(m, s, w, w == PARKED_STACK ? s->head.stack : s->head.block);
	}
	return k < 0 ? lk_reader_fail(r, k, "out of memory") : 0;
}

/* y has handed out its ALLOC of block b: whatever waited for it is a root again. */
static int release(struct lk_reader *r, struct lk_seg *y, uint64_t b)
{
	struct lk_seg *s, *next;
	uint64_t v;

	if (!y->kids.n || b < y->wait_lo || !lk_u64map_remove(&r->merge.waiters, b, &v))
		return 0;
	for (s = (struct lk_seg *)(uintptr_t)v; s; s = next) {
		int k;
		next = s->next_waiter;
		s->next_waiter = NULL;
		heap_remove(&y->kids, KIDS, s);
		s->parent = NULL;
		k = place(r, s);
		if (k < 0)
			return k;
	}
	/* y allocates in block order, so the next block waited for is the smallest one left. */
	for (uint32_t i = 0; i < y->kids.n; i++)
		if (i == 0 || y->kids.v[i]->head.block < y->wait_lo)
			y->wait_lo = y->kids.v[i]->head.block;
	return 0;
}

/* Sets ready root s's min from its new head, and whether s stays where it is: first in the ready
 * heap, and still before both entries below it. Most often it does: a body's records of one clock
 * tick go out in a run. */
static bool stays_first(const struct lk_merge *m, struct lk_seg *s)
{
	const struct lk_seg_heap *h = &m->ready;

	if (s->hpos != 0)
		return false;
	set_min(s);
	return !(h->n > 1 && min_before(h->v[1], s)) && !(h->n > 2 && min_before(h->v[2], s));
}

/* The head of s goes out as *rec: its fields, and the block it numbers. */
static inline void emit(struct lk_merge *m, struct lk_seg *s, struct lk_record *rec)
{
	const struct lk_seg_head *h = &s->head;

	m->time_out = lk_merge_time(m, h->time);
	if (h->alloc) {
		uint64_t stack = h->stack <= m->stacks_out ? h->stack : 0; /* cut: let_go() */
		lk_read_set_alloc(rec, h->offset, m->time_out, s->tid, h->block, h->size, stack);
		s->next_alloc = h->block + 1;
	} else {
		lk_read_set_free(rec, h->offset, m->time_out, s->tid, h->block);
	}
}

/* Ready root s has stayed first with its new head (stays_first()): if that head goes out next,
 * lk_merge_next() would hand it out at its next call, and the records after it as long as nothing
 * but s changes. A run (lk_merge_run()) hands them out without asking again while that lasts:
 * while no let_go() is due and no ALLOC of s lets a waiter go (nothing else is placed during a
 * run, so its waiters stay what they are), while its head is READY, and while its records have
 * its first one's time (ALLOC_FIXED and FREE_FIXED have dt 0): s's min then stays what it is,
 * before the other ready roots and at most the pending main record's time, so s stays the one
 * whose head goes next. */
static void start_run(struct lk_reader *r, struct lk_seg *s)
{
	struct lk_merge *m = &r->merge;

	/* body_first(): a let_go() would come first (it never does here: it came before this
	 * hand_out(), whose release() parks nothing), and the pending main record may. */
	if (m->no_runs || (!m->has_pend && !r->trailer && !m->cut &&
			   (m->parked_block.n || m->parked_stack.n)))
		return;
	if (m->has_pend && m->pend.tag != LK_REC_TRAILER && s->min_time > m->pend.time_ns)
		return;
	if (s->head.alloc && s->kids.n && s->head.block >= s->wait_lo)
		return; /* release() may let a waiter go */
	m->run = s;
	m->run_head = true;
}

/* s's head has gone out, and s has its next one: s goes where that one says. Most often s stays
 * ready, its key only larger: it stays first (stays_first), and starts a run, or moves down the
 * heap where it is. 0, or < 0. */
static int settle(struct lk_reader *r, struct lk_seg *s)
{
	struct lk_merge *m = &r->merge;
	struct lk_seg *y;

	if (where_for(m, s, &y) == READY) {
		if (stays_first(m, s))
			start_run(r, s);
		else
			heap_sift(&m->ready, BY_MIN, s->hpos);
		return 0;
	}
	heap_remove(&m->ready, BY_MIN, s);
	return place(r, s);
}

/* The head of ready root s goes out as *rec. 1, or < 0. */
static int hand_out(struct lk_reader *r, struct lk_seg *s, struct lk_record *rec)
{
	uint64_t block = s->head.block;
	bool alloc = s->head.alloc;
	int k = 0;

	emit(&r->merge, s, rec);
	lk_seg_next(s);
	if (alloc)
		k = release(r, s, block);
	if (k == 0)
		k = settle(r, s);
	return k < 0 ? k : 1;
}

/* A run's end, at the record at s->pos, which it does not hand out: that record becomes s's head
 * and s goes where it says, as hand_out() would have done after the run's last record; then
 * lk_merge_next() goes on from there. 1, 0 or < 0. */
static __attribute__((noinline)) int run_end(struct lk_reader *r, struct lk_record *rec)
{
	struct lk_seg *s = r->merge.run;
	int k;

	r->merge.run = NULL;
	lk_seg_next(s);
	k = settle(r, s);
	return k < 0 ? k : lk_merge_next(r, rec);
}

/* A FREE of a block that is not s's own: where_for() == READY for it. */
static bool others_ready(struct lk_merge *m, uint64_t block)
{
	return !allocator_of(m, block) && (block <= m->blocks_out || m->cut);
}

/* After the first record, s's head, decoded by start_run()'s caller, a run takes each record
 * straight from the body, without decoding it into s->head first: s->pos is at the record to go
 * out, and s->time, last and prev are the body's state before it. Only ALLOC_FIXED and FREE_FIXED,
 * nearly all of the records of an exact profile's bodies, go this way, at dt 0, so at s->time,
 * the first one's time: an ALLOC_FIXED if its stack has gone out (or the main stream is cut:
 * let_go()) and it lets no waiter go (start_run()), a FREE_FIXED of s's own block, and, if
 * `others`, one of another segment's block that others_ready(). Anything else, and the end of
 * the body, ends the run (run_end()); s's min stays what it was (set_min() would give it again).
 *
 * Up to n records into rec[]: the number taken, 0 if the record at s->pos does not go this way.
 * The one decoding of a run's records: lk_merge_run() takes one a call, without `others`, so
 * that nothing here is called and a record costs no frame (a FREE of another segment's block
 * goes to run_other()); lk_merge_run_many() several, with `others`. Always inlined, so that each
 * gets its own code; rec is restrict so that what is read of s and m need not be loaded again
 * after each record written (-fno-strict-aliasing would have a compiler assume it may change).
 * Both read the body's state in s rather than in locals: a single record then loads only what
 * its path needs (docs/performance.md, "Reading profiles"). */
static inline __attribute__((always_inline)) size_t run_take(struct lk_merge *m,
							     struct lk_record *restrict rec,
							     size_t n, bool others)
{
	struct lk_seg *s = m->run;
	uint64_t out = lk_merge_time(m, s->time); /* every record's: s->time does not change */
	size_t i = 0;

	for (; i < n && s->pos < s->end; i++) {
		uint64_t word, block, stack;
		memcpy(&word, s->body + s->pos, 8); /* LK_SEG_PAD */
		word = le64toh(word);
		if ((word & 0xff) == LK_REC_ALLOC_FIXED) {
			stack = word >> 24 & 0xffff;
			if ((stack > m->stacks_out && !m->cut) ||
			    (s->kids.n && s->last + 1 >= s->wait_lo))
				break; /* its stack is not out yet; it would let a waiter go */
			block = ++s->last;
			s->next_alloc = block + 1;
			lk_read_set_alloc(&rec[i], s->offset + s->pos, out, s->tid, block,
				     word >> 8 & 0xffff,
				     stack <= m->stacks_out ? stack : 0 /* 0: cut (let_go()) */);
			s->pos += LK_ALLOC_FIXED_SIZE;
			continue;
		}
		if ((word & 0xff) != LK_REC_FREE_FIXED)
			break;
		block = lk_free_block(s->last, s->prev, word >> 8 & 0xffff);
		if (block - s->first >= s->next_alloc - s->first &&
		    (!others || !others_ready(m, block)))
			break; /* another segment's block, not ready (or for run_other()) */
		s->prev = block;
		lk_read_set_free(&rec[i], s->offset + s->pos, out, s->tid, block);
		s->pos += LK_FREE_FIXED_SIZE;
	}
	if (i)
		m->time_out = out;
	return i;
}

/* The record at s->pos, which run_take() without `others` did not take: a FREE of another
 * segment's block that others_ready() lets go (rare: a thread's frees are mostly of its own
 * blocks), or the run's end. noinline, as run_end(): the records before it cost no frame. */
static __attribute__((noinline)) int run_other(struct lk_reader *r, struct lk_record *rec)
{
	if (run_take(&r->merge, rec, 1, true))
		return 1;
	return run_end(r, rec);
}

/* The run's next record: its head first (release() lets nothing go: start_run()), then the
 * body's records that run_take() gives. Its calls are tail calls, so that the records cost no
 * frame. */
int lk_merge_run(struct lk_reader *r, struct lk_record *rec)
{
	struct lk_merge *m = &r->merge;

	if (m->run_head) {
		m->run_head = false;
		emit(m, m->run, rec);
		return 1;
	}
	if (run_take(m, rec, 1, false))
		return 1;
	return run_other(r, rec);
}

size_t lk_merge_run_many(struct lk_reader *r, struct lk_record *rec, size_t n)
{
	if (r->merge.run_head)
		return 0; /* lk_merge_run() gives the head */
	return run_take(&r->merge, rec, n, true);
}

/* The main stream has handed out more: what was parked until then is placed again. */
static int unpark(struct lk_reader *r)
{
	struct lk_merge *m = &r->merge;
	int k = 0;

	while (k == 0 && m->parked_block.n && m->parked_block.v[0]->park <= m->blocks_out) {
		struct lk_seg *s = m->parked_block.v[0];
		heap_remove(&m->parked_block, BY_PARK, s);
		k = place(r, s);
	}
	while (k == 0 && m->parked_stack.n && m->parked_stack.v[0]->park <= m->stacks_out) {
		struct lk_seg *s = m->parked_stack.v[0];
		heap_remove(&m->parked_stack, BY_PARK, s);
		k = place(r, s);
	}
	return k;
}

/* The waiting main record goes out as *rec; a SEGMENT's body joins the ones held. 1, or < 0. */
static int hand_out_main(struct lk_reader *r, struct lk_record *rec)
{
	struct lk_merge *m = &r->merge;
	struct lk_seg *s = m->pend_seg;
	int k = 0;

	*rec = m->pend;
	m->has_pend = false;
	m->time_out = rec->time_ns = lk_merge_time(m, rec->time_ns);
	m->blocks_out = r->blocks; /* the main stream is read one record ahead: this one */
	m->stacks_out = r->next_stack - 1;
	if (rec->tag == LK_REC_SEGMENT && s) {
		m->pend_seg = NULL;
		k = add(m, s);
		if (k < 0) {
			lk_seg_free(s);
			return lk_reader_fail(r, k, "out of memory");
		}
		k = place(r, s);
	}
	if (k == 0)
		k = unpark(r);
	return k < 0 ? k : 1;
}

/* The main stream has ended without a TRAILER, cut short, and records still wait for more of it:
 * they go out as they are (the header's comment says how), their order among the held records
 * their times'. 0, or < 0. */
static int let_go(struct lk_reader *r)
{
	struct lk_merge *m = &r->merge;
	struct lk_seg_heap *heaps[] = { &m->parked_block, &m->parked_stack };
	int k = 0;

	m->cut = true;
	for (size_t i = 0; i < 2; i++)
		while (k == 0 && heaps[i]->n) {
			struct lk_seg *s = heaps[i]->v[0];
			heap_remove(heaps[i], BY_PARK, s);
			k = place(r, s);
		}
	return k;
}

/* The main stream has ended with its TRAILER, and records still wait for more of it: the first is
 * corrupt. */
static int stuck(struct lk_reader *r)
{
	const struct lk_seg_heap *heaps[] = { &r->merge.parked_block, &r->merge.parked_stack };
	const struct lk_seg_head *h = NULL;

	for (size_t i = 0; i < 2; i++)
		for (uint32_t j = 0; j < heaps[i]->n; j++)
			if (!h || heaps[i]->v[j]->head.offset < h->offset)
				h = &heaps[i]->v[j]->head;
	if (h->alloc)
		return lk_reader_fail_at(r, h->offset, "%s names stack %" PRIu64 ", which is not "
					 "defined yet", lk_rec_tag_name(h->tag), h->stack);
	return lk_reader_fail_at(r, h->offset, "%s of block %" PRIu64 " that no record allocated",
				 lk_rec_tag_name(h->tag), h->block);
}

/* The main FREE `next` frees a block that y has yet to allocate: y's tree goes first, up to that
 * ALLOC, one record a call. */
static int free_first(struct lk_reader *r, const struct lk_record *next, struct lk_seg *y,
		      struct lk_record *rec)
{
	unsigned depth = 0;

	while (y->parent && ++depth <= LK_READ_SEG_WAIT_MAX)
		y = y->parent;
	if (y->parent)
		return lk_reader_fail_at(r, next->offset, "FREE of block %" PRIu64 " waits on more "
					 "than %d thread segments in turn", next->free.block,
					 LK_READ_SEG_WAIT_MAX);
	if (y->where != READY)
		return lk_reader_fail_at(r, next->offset, "FREE of block %" PRIu64 ", whose ALLOC in "
					 "a thread segment waits for a later record of the main "
					 "stream", next->free.block);
	return hand_out(r, y, rec);
}

/* The body record that goes out before main record `next` (NULL: the main stream has ended, and
 * everything held goes): 1 and *rec, 0 if none does, or < 0. */
static int body_first(struct lk_reader *r, const struct lk_record *next, struct lk_record *rec)
{
	struct lk_merge *m = &r->merge;
	bool end = !next || next->tag == LK_REC_TRAILER; /* nothing follows a TRAILER */
	struct lk_seg *y;
	int k;

	if (!next && !r->trailer && !m->cut && (m->parked_block.n || m->parked_stack.n) &&
	    (k = let_go(r)) < 0)
		return k;
	if (m->ready.n && (end || m->ready.v[0]->min_time <= next->time_ns))
		return hand_out(r, m->ready.v[0], rec);
	if (end && (m->parked_block.n || m->parked_stack.n))
		return stuck(r);
	if (next && next->tag == LK_REC_FREE && (y = allocator_of(m, next->free.block)))
		return free_first(r, next, y, rec);
	return 0;
}

int lk_merge_next(struct lk_reader *r, struct lk_record *rec)
{
	struct lk_merge *m = &r->merge;
	int k;

	if (r->state == ST_FAILED)
		return r->err;
	if (m->run)
		return lk_merge_run(r, rec);
	if (!m->has_pend && !m->main_done) {
		k = lk_reader_main(r, &m->pend);
		if (k < 0 || (k == 0 && r->state != ST_END))
			return k; /* 0: followed, nothing more for now */
		m->has_pend = k > 0;
		m->main_done = k == 0;
	}
	k = body_first(r, m->has_pend ? &m->pend : NULL, rec);
	if (k != 0)
		return k;
	return m->has_pend ? hand_out_main(r, rec) : 0;
}

void lk_merge_done(struct lk_merge *m)
{
	for (size_t i = 0; i < m->n; i++)
		lk_seg_free(m->segs[i]);
	lk_seg_free(m->pend_seg);
	free(m->segs);
	free(m->firsts);
	free(m->ready.v);
	free(m->parked_block.v);
	free(m->parked_stack.v);
	lk_u64map_done(&m->waiters);
	*m = (struct lk_merge){ 0 };
}
