/* test-segments.c: version 6's thread segments as the reader hands them out (read-segment.c,
 * read-merge.c; docs/format.md, "Thread segments").
 *
 * Profiles are built with the writer's encoders (build-profile.h's pb_segment and pb_seg_*): by
 * hand, where every record's place in the merged order is worked out below, and at random as a
 * writer of several threads leaves them, where every record must come out once, with its own
 * thread, block and time, each FREE after its block's ALLOC, each ALLOC after its STACK. Both ways
 * of reading (lk_reader_next, lk_reader_skip), raw and compressed, whole and followed while the
 * file is written, must agree. The corrupt bodies are in test-reader-errors.c.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "build-profile.h"
#include "harness.h"
#include "read-internal.h" /* lk_merge.no_runs: runs_change_nothing */
#include "read.h"
#include "z-build.h"

/* A record as handed out, with the fields a test checks. */
struct got {
	uint8_t tag;
	uint64_t offset, time, tid, block, size, stack;
};

static void take(struct got *g, const struct lk_record *rec)
{
	*g = (struct got){ .tag = (uint8_t)rec->tag, .offset = rec->offset, .time = rec->time_ns };
	switch (rec->tag) {
	case LK_REC_ALLOC:
		g->tid = rec->alloc.tid;
		g->block = rec->alloc.block;
		g->size = rec->alloc.size;
		g->stack = rec->alloc.stack;
		break;
	case LK_REC_FREE:
		g->tid = rec->free.tid;
		g->block = rec->free.block;
		break;
	case LK_REC_THREAD:
		g->tid = rec->thread.tid;
		break;
	case LK_REC_STACK:
		g->stack = rec->stack.id;
		break;
	case LK_REC_INHERIT:
		g->block = rec->inherit.block;
		break;
	case LK_REC_SEGMENT:
		g->tid = rec->segment.tid;
		g->block = rec->segment.first_block;
		g->size = rec->segment.blocks;
		g->stack = rec->segment.length;
		break;
	default:
		break;
	}
}

/* Every record of rd into got[] (at most max); returns the last result. */
static int read_all(struct lk_reader *rd, struct got *got, size_t max, size_t *n)
{
	struct lk_record rec;
	int r;

	for (*n = 0; (r = lk_reader_next(rd, &rec)) > 0; ++*n) {
		ASSERT_TRUE(*n < max);
		take(&got[*n], &rec);
	}
	return r;
}

static struct lk_reader *open_mem(const struct pbuf *b)
{
	struct lk_reader *rd = lk_reader_new();

	ASSERT_TRUE(rd);
	ASSERT_OK(lk_reader_open_memory(rd, b->p, b->len));
	return rd;
}

/* Reads b from memory, both ways: lk_reader_skip must give next's times, result and end. */
static int read_mem(const struct pbuf *b, struct got *got, size_t max, size_t *n)
{
	struct lk_reader *rd = open_mem(b), *sk = open_mem(b);
	uint64_t t, end;
	size_t i = 0;
	int r, k;

	r = read_all(rd, got, max, n);
	end = lk_reader_end_offset(rd);
	while ((k = lk_reader_skip(sk, &t)) > 0) {
		ASSERT_TRUE(i < *n);
		ASSERT_EQ(t, got[i].time);
		i++;
	}
	ASSERT_EQ(k, r);
	ASSERT_EQ(i, *n);
	ASSERT_EQ(lk_reader_end_offset(sk), end);
	ASSERT_STREQ(lk_reader_error(sk), lk_reader_error(rd));
	lk_reader_free(rd);
	lk_reader_free(sk);
	return r;
}

static void expect_same(const struct got *a, const struct got *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		ASSERT_EQ(a[i].tag, b[i].tag);
		ASSERT_EQ(a[i].offset, b[i].offset);
		ASSERT_EQ(a[i].time, b[i].time);
		ASSERT_EQ(a[i].tid, b[i].tid);
		ASSERT_EQ(a[i].block, b[i].block);
		ASSERT_EQ(a[i].size, b[i].size);
		ASSERT_EQ(a[i].stack, b[i].stack);
	}
}

/* Two threads' segments over the same clock ticks, with the main thread around them:
 *
 *   main stream                    A (tid 100, blocks 3-6)     B (tid 200, blocks 7-9)
 *   INHERIT (block 1)
 *   STACK 1, THREAD 1
 *   t10 ALLOC block 2
 *   t20 SEGMENT A, SEGMENT B       t20 ALLOC 3 (stack 2)       t25 ALLOC 7
 *   STACK 2                        t25 FREE 7 (B's)            t25 FREE 3 (A's)
 *   t30 ALLOC block 10             t25 ALLOC 4                 t25 ALLOC_FIXED 8
 *   t35 FREE 5 (A's)               t35 ALLOC 5                 t25 FREE_FIXED 8
 *   t50 RSS, TRAILER               SEG_END                     zeros (its thread died)
 *
 * A's ALLOC of block 3 waits for STACK 2, read after both SEGMENTs. At t25 A's FREE of block 7
 * comes before B's records in segment order, but its ALLOC is B's first record: that goes first.
 * Blocks 6 and 9 are reserved and never allocated; the next main ALLOC numbers block 10. The main
 * FREE of block 5 at t35 comes after A's ALLOC of it at t35: a body's record goes before the main
 * stream's of the same time. */
static size_t build_two(struct pbuf *b, struct got *want)
{
	static const uint64_t none[LK_CNT_MAX + 1];
	struct pb_seg a, s;
	size_t n = 0, at[8];

	*b = (struct pbuf){ 0 };
	pb_simple_header(b);
#define WANT(tag, off, t, tid, block, size, stack)                                                 \
	(want[n++] = (struct got){ tag, off, t, tid, block, size, stack })
	WANT(LK_REC_INHERIT, pb_inherit(b, 0x1, 8, 0, 0), 0, 0, 1, 0, 0);
	WANT(LK_REC_STACK, pb_made_up_stack(b, 1, 2), 0, 0, 0, 0, 1);
	size_t alloc2 = pb_alloc(b, 10, 1, 0x2, 10, 1);
	WANT(LK_REC_THREAD, alloc2 - 2, 0, 1, 0, 0, 0);
	WANT(LK_REC_ALLOC, alloc2, 10, 1, 2, 10, 1);
	WANT(LK_REC_SEGMENT, pb_segment(b, &a, 10, 100, 4, 0, 64), 20, 100, 3, 4, 64);
	WANT(LK_REC_SEGMENT, pb_segment(b, &s, 0, 200, 3, 5, 64), 20, 200, 7, 3, 64);
	WANT(LK_REC_STACK, pb_made_up_stack(b, 2, 1), 20, 0, 0, 0, 2);
	at[0] = pb_seg_alloc(b, &a, 0, 0xa1, 100, 2);
	at[1] = pb_seg_alloc(b, &s, 5, 0xb1, 700, 1);
	at[2] = pb_seg_free(b, &a, 5, 0xb1);
	at[3] = pb_seg_alloc(b, &a, 0, 0xa3, 300, 1);
	at[4] = pb_seg_alloc(b, &a, 10, 0xa4, 400, 1);
	pb_seg_end(b, &a);
	at[5] = pb_seg_free(b, &s, 0, 0xa1);
	at[6] = pb_seg_alloc_fixed(b, &s, 0xb3, 800, 1);
	at[7] = pb_seg_free_fixed(b, &s, 0xb3);
	WANT(LK_REC_ALLOC, at[0], 20, 100, 3, 100, 2);
	WANT(LK_REC_ALLOC, at[1], 25, 200, 7, 700, 1);
	WANT(LK_REC_FREE, at[2], 25, 100, 7, 0, 0);
	WANT(LK_REC_ALLOC, at[3], 25, 100, 4, 300, 1);
	WANT(LK_REC_FREE, at[5], 25, 200, 3, 0, 0);
	WANT(LK_REC_ALLOC, at[6], 25, 200, 8, 800, 1);
	WANT(LK_REC_FREE, at[7], 25, 200, 8, 0, 0);
	WANT(LK_REC_ALLOC, pb_alloc(b, 10, 1, 0x10, 1000, 2), 30, 1, 10, 1000, 2);
	WANT(LK_REC_ALLOC, at[4], 35, 100, 5, 400, 1);
	WANT(LK_REC_FREE, pb_free(b, 5, 1, 0xa4), 35, 1, 5, 0, 0);
	WANT(LK_REC_RSS, PB_REC(b, lk_rec_pair(rec, LK_REC_RSS, 15, 4096)), 50, 0, 0, 0, 0);
	WANT(LK_REC_TRAILER, PB_REC(b, lk_rec_counters(rec, LK_REC_TRAILER, 0, 1, none)), 50, 0, 0,
	     0, 0);
#undef WANT
	ASSERT_EQ(b->blocks, 10);
	return n;
}

TEST(two_threads_merged)
{
	struct got want[32], got[32];
	struct pbuf b;
	size_t n, nwant = build_two(&b, want);

	ASSERT_EQ(read_mem(&b, got, 32, &n), 0);
	ASSERT_EQ(n, nwant);
	expect_same(got, want, n);
	struct lk_reader *rd = open_mem(&b);
	ASSERT_EQ(read_all(rd, got, 32, &n), 0);
	ASSERT_TRUE(lk_reader_has_trailer(rd));
	ASSERT_EQ(lk_reader_end_offset(rd), b.len);
	lk_reader_free(rd);
	free(b.p);
}

/* A main FREE of a block whose ALLOC, in a body, has a later time: the ALLOC goes first, and the
 * FREE and the records after it take its time, so that time never goes backwards. */
TEST(main_free_of_a_later_body_alloc)
{
	struct got got[16];
	struct pb_seg a;
	struct pbuf b = { 0 };
	size_t n, at[2], seg, th, fr, rss;

	pb_simple_header(&b);
	pb_made_up_stack(&b, 1, 1);
	seg = pb_segment(&b, &a, 10, 5, 2, 0, 32);
	at[0] = pb_seg_alloc(&b, &a, 10, 0xa, 16, 1); /* t20, block 1 */
	at[1] = pb_seg_alloc(&b, &a, 0, 0xb, 32, 1);  /* t20, block 2 */
	fr = pb_free(&b, 5, 1, 0xa);                   /* t15 */
	th = fr - 2;
	rss = PB_REC(&b, lk_rec_pair(rec, LK_REC_RSS, 0, 1));
	ASSERT_EQ(read_mem(&b, got, 16, &n), 0);
	ASSERT_EQ(n, 7);
	ASSERT_EQ(got[1].offset, seg);
	ASSERT_EQ(got[1].time, 10);
	ASSERT_EQ(got[2].offset, th);
	ASSERT_EQ(got[2].time, 10);
	ASSERT_EQ(got[3].offset, at[0]); /* before the FREE of its block */
	ASSERT_EQ(got[3].time, 20);
	ASSERT_EQ(got[3].tid, 5);
	ASSERT_EQ(got[4].offset, fr);
	ASSERT_EQ(got[4].tag, LK_REC_FREE);
	ASSERT_EQ(got[4].block, 1);
	ASSERT_EQ(got[4].tid, 1);
	ASSERT_EQ(got[4].time, 20); /* 15 as written */
	ASSERT_EQ(got[5].offset, rss);
	ASSERT_EQ(got[5].time, 20);
	ASSERT_EQ(got[6].offset, at[1]); /* at the end of the main stream */
	ASSERT_EQ(got[6].block, 2);
	ASSERT_EQ(got[6].time, 20);
	free(b.p);
}

/* Where a body's records end: at SEG_END (what follows it is never read), at a zero tag (a thread
 * that stopped: what follows the zero is never read either), or at the body's end, full. A body
 * of no record, and one of no byte, hand out their SEGMENT alone; numbers go on past what each
 * SEGMENT reserved, used or not. */
TEST(body_ends)
{
	static const uint8_t junk[] = { 0x03, 0xff, 0x2a, 0x0d };
	struct pb_seg s[5];
	struct got got[32];
	struct pbuf b = { 0 };
	size_t n, full;

	pb_simple_header(&b);
	pb_made_up_stack(&b, 1, 1);
	pb_segment(&b, &s[0], 1, 7, 2, 0, 16); /* blocks 1-2 */
	pb_seg_alloc(&b, &s[0], 0, 0x10, 1, 1);
	pb_seg_end(&b, &s[0]);
	pb_seg_put(&b, &s[0], junk, sizeof(junk));
	pb_segment(&b, &s[1], 1, 8, 3, 0, 16); /* blocks 3-5 */
	pb_seg_alloc(&b, &s[1], 0, 0x20, 2, 1);
	s[1].pos++; /* a zero tag */
	pb_seg_put(&b, &s[1], junk, sizeof(junk));
	pb_segment(&b, &s[2], 1, 9, 0, 0, 4); /* nothing reserved, nothing written */
	pb_segment(&b, &s[3], 1, 10, 0, 7, 0); /* no body at all, after 7 bytes of skip */
	full = pb_segment(&b, &s[4], 1, 11, 2, 0, 5 + 3); /* blocks 6-7: full to its end */
	pb_seg_alloc_fixed(&b, &s[4], 0x30, 3, 1);
	pb_seg_free_fixed(&b, &s[4], 0x10);
	pb_alloc(&b, 1, 1, 0x40, 4, 1); /* block 8 */
	ASSERT_EQ(read_mem(&b, got, 32, &n), 0);
	ASSERT_EQ(n, 12); /* STACK, 5 SEGMENTs, 4 body records, THREAD, ALLOC */
	static const struct {
		uint8_t tag;
		uint64_t time, tid, block;
	} want[] = {
		{ LK_REC_STACK, 0, 0, 0 },     { LK_REC_SEGMENT, 1, 7, 1 },
		{ LK_REC_ALLOC, 1, 7, 1 },     { LK_REC_SEGMENT, 2, 8, 3 },
		{ LK_REC_ALLOC, 2, 8, 3 },     { LK_REC_SEGMENT, 3, 9, 6 },
		{ LK_REC_SEGMENT, 4, 10, 6 },  { LK_REC_SEGMENT, 5, 11, 6 },
		{ LK_REC_ALLOC, 5, 11, 6 },    { LK_REC_FREE, 5, 11, 1 },
		{ LK_REC_THREAD, 5, 1, 0 },    { LK_REC_ALLOC, 6, 1, 8 },
	};
	for (size_t i = 0; i < n; i++) {
		ASSERT_EQ(got[i].tag, want[i].tag);
		ASSERT_EQ(got[i].time, want[i].time);
		ASSERT_EQ(got[i].tid, want[i].tid);
		ASSERT_EQ(got[i].block, want[i].block);
	}
	ASSERT_EQ(got[7].offset, full);
	free(b.p);
}

/* A version 5 file has no segments: its records read exactly as before, and tags 13 and 14 are
 * unknown there (test-reader-errors.c checks the messages). */
TEST(version_5_reads_as_before)
{
	struct got got6[32], got5[32];
	struct pbuf b = { 0 };
	uint16_t v5 = htole16(5);
	size_t n6, n5;

	pb_simple_header(&b);
	pb_made_up_stack(&b, 1, 3);
	pb_inherit(&b, 0x5, 5, 1, 0);
	for (uint64_t i = 1; i <= 10; i++)
		pb_alloc(&b, i, i % 3, 0x100 * i, i, 1);
	for (uint64_t i = 1; i <= 10; i += 2)
		pb_free(&b, 1, i % 2, 0x100 * i);
	ASSERT_EQ(read_mem(&b, got6, 32, &n6), 0);
	memcpy(b.p + 8, &v5, 2); /* little-endian */
	ASSERT_EQ(read_mem(&b, got5, 32, &n5), 0);
	ASSERT_EQ(n5, n6);
	expect_same(got5, got6, n5);
	for (size_t i = 1; i < n5; i++)
		ASSERT_TRUE(got5[i].offset > got5[i - 1].offset); /* file order, as ever */
	free(b.p);
}

/* pb_threads' profiles: what every record must be, and that each comes once. */
struct check {
	const struct pb_event *ev;
	size_t nev;
	size_t *order; /* ev indexes, by offset */
};

static const struct pb_event *event_at(const struct check *c, uint64_t offset)
{
	size_t lo = 0, hi = c->nev;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (c->ev[c->order[mid]].offset < offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->nev && c->ev[c->order[lo]].offset == offset ? &c->ev[c->order[lo]] : NULL;
}

static const struct pb_event *sort_ev;

static int cmp_offset(const void *x, const void *y)
{
	size_t a = *(const size_t *)x, b = *(const size_t *)y;

	return sort_ev[a].offset < sort_ev[b].offset ? -1 : sort_ev[a].offset > sort_ev[b].offset;
}

/* Every ALLOC and FREE as written, once; each FREE of a live block, each ALLOC of a defined
 * stack; times as written (the writer's clock is one clock, so nothing waits past its time). */
static void check_threads(const struct pb_event *ev, size_t nev, uint64_t blocks,
			  const struct got *got, size_t n)
{
	struct check c = { ev, nev, calloc(nev, sizeof(size_t)) };
	uint8_t *live = calloc(blocks + 1, 1), *seen = calloc(nev, 1);
	uint64_t stacks = 0, last = 0;
	size_t events = 0;

	ASSERT_TRUE(c.order && live && seen);
	for (size_t i = 0; i < nev; i++)
		c.order[i] = i;
	sort_ev = ev;
	qsort(c.order, nev, sizeof(size_t), cmp_offset);
	for (size_t i = 0; i < n; i++) {
		const struct got *g = &got[i];
		ASSERT_TRUE(g->time >= last);
		last = g->time;
		if (g->tag == LK_REC_STACK)
			stacks = g->stack;
		if (g->tag != LK_REC_ALLOC && g->tag != LK_REC_FREE)
			continue;
		const struct pb_event *e = event_at(&c, g->offset);
		ASSERT_TRUE(e);
		ASSERT_TRUE(!seen[e - ev]);
		seen[e - ev] = 1;
		events++;
		ASSERT_EQ(g->tag, e->tag);
		ASSERT_EQ(g->tid, e->tid);
		ASSERT_EQ(g->block, e->block);
		ASSERT_EQ(g->time, e->time);
		ASSERT_TRUE(g->block >= 1 && g->block <= blocks);
		if (g->tag == LK_REC_ALLOC) {
			ASSERT_EQ(g->size, e->size);
			ASSERT_EQ(g->stack, e->stack);
			ASSERT_TRUE(g->stack <= stacks);
			ASSERT_TRUE(!live[g->block]);
			live[g->block] = 1;
		} else {
			ASSERT_TRUE(live[g->block]);
			live[g->block] = 0;
		}
	}
	ASSERT_EQ(events, nev);
	free(c.order);
	free(live);
	free(seen);
}

TEST(threads_at_random)
{
	enum { EVENTS = 20000, MAX = 3 * EVENTS };
	struct pb_event *ev = calloc(EVENTS, sizeof(*ev));
	struct got *got = calloc(MAX, sizeof(*got)), *z = calloc(MAX, sizeof(*z));

	ASSERT_TRUE(ev && got && z);
	for (uint64_t seed = 1; seed <= 6; seed++) {
		struct pbuf b = { 0 }, packed = { 0 };
		unsigned threads = 1 + (unsigned)(seed * 3 % 8);
		size_t body = seed % 2 ? 96 : 4096, nrec, n, nz;
		bool crash = seed % 3 == 0;

		nrec = pb_threads(&b, seed, EVENTS, threads, body, crash, ev);
		ASSERT_EQ(read_mem(&b, got, MAX, &n), 0);
		ASSERT_EQ(n, nrec);
		check_threads(ev, EVENTS, b.blocks, got, n);
		/* The same, compressed: the body follows its record, so it streams. */
		pb_zstd_flushed(&packed, b.p, b.len, 3, 4000);
		ASSERT_EQ(read_mem(&packed, z, MAX, &nz), 0);
		ASSERT_EQ(nz, n);
		expect_same(z, got, n);
		free(packed.p);
		free(b.p);
	}
	free(ev);
	free(got);
	free(z);
}

/* A compressed profile of threads cut short reads like a crashed one, up to the cut: a body's FREE
 * of a block that a main ALLOC past the cut numbered, and a body's ALLOC of a stack defined past
 * it, go out as the file's last records (a free of a block never allocated; stack 0), and never
 * make the file read as corrupt. Every record read is one of the whole file's (found by its
 * offset), each FREE after its block's ALLOC if that was read. Fails before read-merge.c's
 * let_go, with "FREE of block N that no record allocated". */
static int by_offset(const void *a, const void *b)
{
	const struct got *x = a, *y = b;

	return x->offset != y->offset ? (x->offset < y->offset ? -1 : 1) : x->tag - y->tag;
}

TEST(threads_cut_like_a_crash)
{
	enum { EVENTS = 3000, MAX = 3 * EVENTS };
	struct pb_event *ev = calloc(EVENTS, sizeof(*ev));
	struct got *all = calloc(MAX, sizeof(*all)), *got = calloc(MAX, sizeof(*got));
	size_t let_go = 0, cuts = 0;

	ASSERT_TRUE(ev && all && got);
	for (uint64_t seed = 1; seed <= 3; seed++) {
		struct pbuf b = { 0 }, packed = { 0 };
		size_t nall, n;

		pb_threads(&b, seed, EVENTS, 3, 4096, false, ev);
		ASSERT_EQ(read_mem(&b, all, MAX, &nall), 0);
		qsort(all, nall, sizeof(*all), by_offset);
		uint8_t *seen = calloc(b.blocks + 1, 1);
		ASSERT_TRUE(seen);
		pb_zstd_flushed(&packed, b.p, b.len, 3, 200);
		for (size_t c = 0; c < packed.len; c += 1 + packed.len / 500) {
			struct pbuf cut = packed;
			cut.len = c;
			struct lk_reader *rd = lk_reader_new();
			ASSERT_TRUE(rd);
			bool opened = lk_reader_open_memory(rd, cut.p, cut.len) == 0;
			lk_reader_free(rd);
			if (!opened)
				continue; /* the header itself is cut */
			cuts++;
			ASSERT_EQ(read_mem(&cut, got, MAX, &n), 0);
			ASSERT_TRUE(n <= nall);
			memset(seen, 0, b.blocks + 1);
			for (size_t i = 0; i < n; i++) {
				const struct got *g = &got[i];
				const struct got *w = bsearch(g, all, nall, sizeof(*all), by_offset);
				if (!w)
					FAIL("cut at %zu: record %zu (tag %d at offset %" PRIu64 ") is "
					     "not the whole file's", c, i, g->tag, g->offset);
				ASSERT_EQ(g->block, w->block);
				ASSERT_EQ(g->time, w->time);
				if (g->tag == LK_REC_ALLOC) {
					ASSERT_EQ(g->size, w->size);
					ASSERT_TRUE(g->stack == w->stack || g->stack == 0);
					let_go += g->stack != w->stack;
					seen[g->block] = 1;
				} else if (g->tag == LK_REC_FREE) {
					let_go += !seen[g->block];
				}
			}
		}
		free(seen);
		free(packed.p);
		free(b.p);
	}
	ASSERT_TRUE(cuts > 1000);
	ASSERT_TRUE(let_go > 0); /* the cuts met records that wait on the main stream */
	free(ev);
	free(all);
	free(got);
}

/* What one reading of a profile gave, with the merge's runs (read-merge.c's lk_merge_run) or
 * without them, every record then going by the general path. */
struct reading {
	struct got *got;
	size_t n;
	int r;
	uint64_t end;
	char error[256];
};

/* Every record of rd into got[], through lk_reader_next_many() asking for 1 to 16 at a time;
 * returns the last result. */
static int read_many(struct lk_reader *rd, struct got *got, size_t max, size_t *n)
{
	struct lk_record rec[16];
	int r;

	*n = 0;
	for (unsigned ask = 1; (r = lk_reader_next_many(rd, rec, ask)) > 0; ask = ask % 16 + 1) {
		ASSERT_TRUE(r <= (int)ask);
		for (int i = 0; i < r; i++) {
			ASSERT_TRUE(*n < max);
			/* Only the last may hold pointers, which the next call may overwrite. */
			if (i < r - 1)
				ASSERT_TRUE(rec[i].tag != LK_REC_STACK && rec[i].tag != LK_REC_MODULE &&
					    rec[i].tag != LK_REC_LOSS && rec[i].tag != LK_REC_TRAILER);
			take(&got[(*n)++], &rec[i]);
		}
	}
	return r;
}

/* With runs or without; through lk_reader_next() or, if many, lk_reader_next_many() (with runs,
 * lk_merge_run_many()). */
static void read_runs(const struct pbuf *b, bool runs, bool many, size_t max,
		      struct reading *out)
{
	struct lk_reader *rd = lk_reader_new();

	ASSERT_TRUE(rd);
	out->n = 0;
	out->r = lk_reader_open_memory(rd, b->p, b->len); /* the header may be cut */
	rd->merge.no_runs = !runs;
	if (out->r == 0 && many)
		out->r = read_many(rd, out->got, max, &out->n);
	else if (out->r == 0)
		out->r = read_all(rd, out->got, max, &out->n);
	out->end = lk_reader_end_offset(rd);
	snprintf(out->error, sizeof(out->error), "%s", lk_reader_error(rd));
	lk_reader_free(rd);
}

static void expect_runs_same(const struct pbuf *b, size_t max, struct reading *with,
			     struct reading *without)
{
	read_runs(b, false, false, max, without);
	/* Without runs, lk_reader_next_many() takes the main stream's ALLOC and FREE itself
	 * (fast_record), and must read as lk_reader_next() does; with runs, both ways. */
	for (int k = 0; k < 3; k++) {
		read_runs(b, k > 0, k != 1, max, with);
		ASSERT_EQ(with->r, without->r);
		ASSERT_EQ(with->n, without->n);
		expect_same(with->got, without->got, with->n);
		ASSERT_EQ(with->end, without->end);
		ASSERT_STREQ(with->error, without->error);
	}
}

/* A run hands out one body's records without asking the general path each time, and ends where
 * that path would do anything else: its next record waits for a STACK or a block, lets a waiter
 * go, or is not the next one any more (another body's, or the main record's, comes first), the
 * body ends, a record is not a fixed one, the main stream is cut. Profiles of threads at random,
 * whole, cut short (raw and compressed) and crashed, must read the same with runs and without,
 * one record a call and several (lk_reader_next_many()). */
TEST(runs_change_nothing)
{
	enum { EVENTS = 4000, MAX = 3 * EVENTS };
	struct reading with = { .got = calloc(MAX, sizeof(struct got)) };
	struct reading without = { .got = calloc(MAX, sizeof(struct got)) };
	size_t records = 0, failed = 0;

	ASSERT_TRUE(with.got && without.got);
	for (uint64_t seed = 1; seed <= 48; seed++) {
		struct pbuf b = { 0 }, packed = { 0 };
		unsigned threads = 1 + (unsigned)(seed % 8);
		size_t body = seed % 3 == 0 ? 64 : seed % 3 == 1 ? 512 : 8192;

		pb_threads(&b, seed, EVENTS, threads, body, seed % 4 == 0, NULL);
		expect_runs_same(&b, MAX, &with, &without);
		records += with.n;
		for (size_t c = 0; seed % 8 == 1 && c < b.len; c += 1 + b.len / 97) {
			struct pbuf cut = b;
			cut.len = c;
			expect_runs_same(&cut, MAX, &with, &without);
			failed += with.r < 0;
		}
		if (seed % 8 == 2) {
			pb_zstd_flushed(&packed, b.p, b.len, 3, 300);
			for (size_t c = packed.len / 2; c < packed.len; c += 1 + packed.len / 41) {
				struct pbuf cut = packed;
				cut.len = c;
				expect_runs_same(&cut, MAX, &with, &without);
			}
			free(packed.p);
		}
		free(b.p);
	}
	ASSERT_TRUE(records > 48 * EVENTS);
	ASSERT_TRUE(failed > 0); /* raw cuts inside a record */
	free(with.got);
	free(without.got);
}

/* Whole profiles through a file and a zstd stream give the records read from memory. */
TEST(compressed_and_file)
{
	struct got want[32], got[32];
	struct pbuf b, packed = { 0 };
	char path[] = "/tmp/leek-test-XXXXXX";
	size_t nwant = build_two(&b, want), n;
	int fd = mkstemp(path);

	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ(write(fd, b.p, b.len), (ssize_t)b.len);
	close(fd);
	struct lk_reader *rd = lk_reader_new();
	ASSERT_OK(lk_reader_open(rd, path));
	unlink(path);
	ASSERT_EQ(read_all(rd, got, 32, &n), 0);
	ASSERT_EQ(n, nwant);
	expect_same(got, want, n);
	lk_reader_free(rd);

	pb_zstd_flushed(&packed, b.p, b.len, 3, 7);
	ASSERT_EQ(read_mem(&packed, got, 32, &n), 0);
	ASSERT_EQ(n, nwant);
	expect_same(got, want, n);
	free(packed.p);
	free(b.p);
}

/* ---- following a file being written (lk_reader_follow) ---- */

static void put_at(int fd, const void *p, size_t n, size_t at)
{
	ASSERT_EQ(pwrite(fd, p, n, (off_t)at), (ssize_t)n);
}

/* Reads what the follower may now, into got[*n...]; returns the last result. */
static int follow_some(struct lk_reader *rd, uint64_t limit, struct got *got, size_t max,
		       size_t *n)
{
	struct lk_record rec;
	int r;

	ASSERT_OK(lk_reader_follow(rd, limit));
	while ((r = lk_reader_next(rd, &rec)) > 0) {
		ASSERT_TRUE(*n < max);
		take(&got[(*n)++], &rec);
	}
	return r;
}

/* A thread's body that is not complete stops the follower before its SEGMENT record, whatever
 * the limit, until its SEG_END is stored; then its records come, merged as in a whole file. The
 * body's first bytes were in the follower's window before the thread stored them: a follower
 * that trusted its window would read them as zeros. */
TEST(follow_waits_for_a_body)
{
	struct got want[64], got[64];
	struct pb_seg a;
	struct pbuf b = { 0 };
	size_t n = 0, nwant, seg, end, tail;
	int fd = memfd_create("followed", MFD_CLOEXEC);
	char path[64];

	ASSERT_TRUE(fd >= 0);
	pb_simple_header(&b);
	pb_made_up_stack(&b, 1, 1);
	pb_alloc(&b, 5, 1, 0x1, 8, 1);
	seg = pb_segment(&b, &a, 5, 77, 4, 0, 128);
	pb_free(&b, 10, 1, 0x1);
	pb_alloc(&b, 0, 1, 0x2, 8, 1);
	tail = b.len;
	pb_zeros(&b, 2 * LK_READ_RECORD_MAX); /* what the writer has grown the file by */
	put_at(fd, b.p, b.len, 0);            /* the body all zeros: its thread has written nothing */

	/* The thread's records: at t10 and t20, around the main ones at t20. */
	struct pbuf done = { 0 };
	pb_put(&done, b.p, b.len);
	pb_seg_alloc(&done, &a, 0, 0xa, 16, 1);
	pb_seg_free(&done, &a, 10, 0xa);
	end = a.pos;
	pb_seg_alloc(&done, &a, 0, 0xb, 16, 1);
	pb_seg_end(&done, &a);
	done.len = tail;
	nwant = 0;
	ASSERT_EQ(read_mem(&done, want, 64, &nwant), 0);
	ASSERT_EQ(nwant, 9); /* STACK THREAD ALLOC SEGMENT, the body's 3, the main FREE and ALLOC */

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	struct lk_reader *rd = lk_reader_new();
	ASSERT_OK(lk_reader_follow(rd, b.len));
	ASSERT_OK(lk_reader_open(rd, path));
	ASSERT_EQ(follow_some(rd, b.len, got, 64, &n), 0);
	ASSERT_EQ(n, 3); /* STACK, THREAD, ALLOC: not the SEGMENT */
	ASSERT_EQ(lk_reader_end_offset(rd), seg);

	/* Two records stored, no SEG_END: still not complete. */
	put_at(fd, done.p + a.body, end, a.body);
	ASSERT_EQ(follow_some(rd, b.len, got, 64, &n), 0);
	ASSERT_EQ(n, 3);
	ASSERT_EQ(lk_reader_end_offset(rd), seg);

	/* The rest, then SEG_END: the body is complete. */
	put_at(fd, done.p + a.body + end, a.pos - end, a.body + end);
	ASSERT_EQ(follow_some(rd, b.len, got, 64, &n), 0);
	ASSERT_TRUE(n > 3);
	ASSERT_TRUE(lk_reader_end_offset(rd) > a.body + a.length);
	ASSERT_EQ(follow_some(rd, UINT64_MAX, got, 64, &n), 0);
	ASSERT_EQ(n, nwant);
	expect_same(got, want, n);
	ASSERT_EQ(lk_reader_end_offset(rd), tail);
	lk_reader_free(rd);
	close(fd);
	free(b.p);
	free(done.p);
}

/* A body full to its end, with no SEG_END, is complete too; a body that its thread never ended
 * is read at the end as a whole file's is. And the records match a whole read, step by step. */
TEST(follow_full_and_unended_bodies)
{
	struct got want[64], got[64];
	struct pb_seg a, c;
	struct pbuf b = { 0 };
	size_t n = 0, nwant, tail;
	int fd = memfd_create("followed", MFD_CLOEXEC);
	char path[64];

	ASSERT_TRUE(fd >= 0);
	pb_simple_header(&b);
	pb_made_up_stack(&b, 1, 1);
	pb_segment(&b, &a, 1, 7, 2, 0, 2 * LK_ALLOC_FIXED_SIZE); /* full after two fixed ALLOCs */
	pb_segment(&b, &c, 1, 8, 2, 0, 64);                       /* never ended */
	pb_seg_alloc_fixed(&b, &a, 0x1, 1, 1);
	pb_seg_alloc_fixed(&b, &a, 0x2, 2, 1);
	pb_seg_alloc(&b, &c, 0, 0x3, 3, 1);
	PB_REC(&b, lk_rec_pair(rec, LK_REC_RSS, 5, 1));
	tail = b.len;
	pb_zeros(&b, 2 * LK_READ_RECORD_MAX);
	put_at(fd, b.p, b.len, 0);
	b.len = tail;
	ASSERT_EQ(read_mem(&b, want, 64, &nwant), 0);
	ASSERT_EQ(nwant, 7);

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	struct lk_reader *rd = lk_reader_new();
	ASSERT_OK(lk_reader_follow(rd, tail + 2 * LK_READ_RECORD_MAX));
	ASSERT_OK(lk_reader_open(rd, path));
	ASSERT_EQ(follow_some(rd, tail + 2 * LK_READ_RECORD_MAX, got, 64, &n), 0);
	ASSERT_EQ(n, 2); /* STACK, the full body's SEGMENT; the next body is not ended */
	ASSERT_EQ(got[1].tag, LK_REC_SEGMENT);
	ASSERT_EQ(lk_reader_end_offset(rd), c.at);
	ASSERT_EQ(follow_some(rd, UINT64_MAX, got, 64, &n), 0); /* the writer has stopped */
	ASSERT_EQ(n, nwant);
	expect_same(got, want, n);
	lk_reader_free(rd);
	close(fd);
	free(b.p);
}
