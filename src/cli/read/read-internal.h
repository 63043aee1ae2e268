/* read-internal.h: the reader's state, shared by read.c (window, header), read-record.c (the main
 * stream's records), read-segment.c (a thread segment's body) and read-merge.c (the order in which
 * records are handed out); and the decoder of a checked body's records, inline for read-merge.c.
 *
 * Nothing outside those files may include this: the rest of the CLI sees read.h only (a test may,
 * to look inside: tests/unit/test-segments.c turns the merge's runs off).
 */
#ifndef LEEK_READ_INTERNAL_H
#define LEEK_READ_INTERNAL_H

#include <endian.h>
#include <inttypes.h>
#include <string.h>

#include "read.h"
#include "u64map.h"

enum lk_reader_state { ST_NEW, ST_RECORDS, ST_AFTER_TRAILER, ST_END, ST_FAILED };

/* The next record of a thread segment's body, decoded (read-segment.c). */
struct lk_seg_head {
	uint64_t offset, time;   /* time: the body's own, from its SEGMENT's */
	uint64_t block;          /* an ALLOC's number, or the block a FREE frees */
	uint64_t size, stack;    /* an ALLOC's */
	uint8_t tag;             /* as written: ALLOC, FREE, ALLOC_FIXED or FREE_FIXED */
	bool alloc;
};

struct lk_seg_heap {
	struct lk_seg **v;
	uint32_t n, cap;
};

/* A thread segment whose body is held, until its last record is handed out. read-segment.c reads
 * and checks it, lk_seg_next() decodes it; read-merge.c decides when each record goes. */
struct lk_seg {
	uint8_t *body;            /* len bytes, read whole, then LK_SEG_PAD zero bytes */
	uint32_t len, end, pos;   /* its records end at end; the next one to decode starts at pos */
	uint64_t offset, order;   /* of body[0]; of its SEGMENT record (ties go to the earlier) */
	uint64_t tid, first;      /* first: the number its first ALLOC gives its block */
	uint64_t nalloc;          /* its ALLOCs: blocks first to first + nalloc - 1 */
	uint64_t time, last, prev; /* the body's coding state after the head: its time, its last
				    * ALLOC's block (first - 1 before one), its last FREE's (the same) */
	struct lk_seg_head head;  /* the next record to hand out, if has_head */
	bool has_head;
	uint64_t next_alloc;      /* the block of the next ALLOC to hand out */

	/* read-merge.c: a forest of segments, each waiting on the one that allocates the block its
	 * head frees (parent), with the smallest (time, order) of the heads in its tree. */
	struct lk_seg *parent, *next_waiter; /* next_waiter: another segment waiting on that block */
	struct lk_seg_heap kids;  /* the segments waiting on this one, by min */
	uint64_t wait_lo;         /* the smallest block they wait for, if kids.n */
	uint32_t kpos, hpos;      /* place in parent's kids, in the reader's ready or parked heap */
	uint8_t where;            /* read-merge.c's enum where */
	uint64_t park;            /* parked until the main stream hands out this block or stack */
	uint64_t min_time, min_order;
	size_t idx;               /* in lk_merge.segs */
};

/* Thread segments held, and the main record that waits for their records (read-merge.c). */
struct lk_merge {
	struct lk_seg **segs;      /* held, in file order; NULL where one was dropped */
	uint64_t *firsts;          /* their first blocks, kept after a drop: sorted, for lookups */
	size_t n, cap, dead;
	size_t live;               /* segments in segs */
	size_t lo;                 /* segs before it have no ALLOC left to hand out (alloc_lo()) */
	struct lk_seg_heap ready, parked_block, parked_stack;
	struct lk_u64map waiters;  /* block -> the last segment set waiting on its ALLOC */
	uint64_t count, bytes;     /* held segments and body bytes, a pending one included */
	struct lk_seg *pend_seg;   /* the body of the pending SEGMENT record, if it has records */
	struct lk_record pend;     /* a main record read and not handed out yet, if has_pend */
	bool has_pend, main_done;
	bool cut;                  /* the main stream ended without a TRAILER: nothing waits (let_go) */
	struct lk_seg *run;        /* a ready root whose records go out in a run, or NULL
				    * (lk_merge_run) */
	bool run_head;             /* its head, decoded, goes first; then the records after it */
	bool no_runs;              /* every record by the general path: tests/unit/test-segments.c
				    * compares the two */
	uint64_t blocks_out;       /* blocks numbered by the main records handed out */
	uint64_t stacks_out;       /* the last STACK id handed out */
	uint64_t time_out;         /* the time of the last record handed out through the merge */
};

struct lk_reader {
	enum lk_reader_state state;
	int fd, own_fd;          /* fd < 0: reading from memory */
	struct lk_unz *unz;      /* a compressed profile, decompressed into buf (read-z.h); or NULL */
	int unz_err;             /* its data is damaged where the uncompressed bytes reach */
	uint64_t unz_err_at;     /* this offset: the window ends there (lk_reader_damaged) */
	uint8_t *buf;            /* the window's storage, for fds and compressed profiles */
	const uint8_t *p, *end;  /* unread bytes in the window */
	uint64_t offset;         /* file offset of p */
	bool eof;                /* nothing beyond end */
	uint64_t limit;          /* lk_reader_follow(): nothing read from here on; or UINT64_MAX */
	uint64_t whole;          /* lk_reader_follow_whole(): a record starting before it ends by it */
	int err;
	char error[256];

	struct lk_profile_header hdr;
	char *strings;           /* exe, NUL, cmdline, NUL */
	uint64_t time_ns, next_stack, last_module, end_offset;
	uint64_t tid;            /* of the last THREAD record */
	uint64_t blocks, prev_free; /* ALLOC and INHERIT records so far; the last FREE's block */
	bool thread, trailer;    /* a THREAD record was read; a TRAILER */
	bool free_by_age;        /* version 4's FREE block code (format.h); version 3's step alone */
	bool fixed;              /* version 5's ALLOC_FIXED and FREE_FIXED are known tags */
	bool segments;           /* version 6's SEGMENT is a known tag */
	bool free_stacks;        /* version 7's FREE_STACK is a known tag */
	bool ctl;                /* version 7's CTL is a known tag */
	bool errors;             /* version 8's ERROR is a known tag */
	bool followed;           /* lk_reader_follow() was called: bodies are read with pread */
	struct lk_u64map loaded; /* module id -> 1 while loaded */
	struct lk_merge merge;   /* read-merge.c */
	struct lk_chain *chain;  /* read-chain.c: the segments of a rotated profile, or NULL */

	/* What the pointers of the last lk_record point at. */
	uint64_t frames[LK_MAX_FRAMES];
	struct lk_module_seg seg[LK_MAX_SEGMENTS];
	uint8_t build_id[LK_MAX_BUILD_ID];
	char path[LK_MAX_PATH + 1];
	struct lk_counter_value counters[LK_READ_MAX_COUNTERS];
};

/* Records the error and moves to ST_FAILED; returns err. */
int lk_reader_fail(struct lk_reader *r, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#define lk_reader_fail_at(r, off, fmt, ...)                                                        \
	lk_reader_fail(r, -EBADMSG, "offset %" PRIu64 ": " fmt, (uint64_t)(off), ##__VA_ARGS__)

/* Makes at least `want` (<= LK_READ_BUF) bytes available, unless the input ends first. */
int lk_reader_fill(struct lk_reader *r, size_t want);

/* The damage that ended a compressed profile's input (unz_err, at unz_err_at), now that the
 * reader has read everything before it: "<codec> data corrupt after uncompressed offset N: ...",
 * ST_FAILED, the error. */
int lk_reader_damaged(struct lk_reader *r);

/* Reads a compressed profile on to the end of its stream, past where its records end, so that
 * damage there (a wrong checksum) is found: 0, or lk_reader_damaged()'s error. */
int lk_reader_drain(struct lk_reader *r);

/* A record cut by the end of the input, its tag at `offset`: "offset N: <what> cut by the end of
 * the file", -EBADMSG. Except for a compressed stream that was itself cut short (a compression
 * that a crash interrupted): that ends the profile before the record, as a zero tag would, and
 * leaves the reader in ST_END, where lk_reader_next() returns 0; and for one whose data is
 * damaged there, lk_reader_damaged(). */
int lk_reader_cut(struct lk_reader *r, uint64_t offset, const char *what_fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Following a profile still written, and short of a whole record before the limit: the caller
 * stops here, for now (lk_reader_follow()). */
static inline bool lk_reader_waits(const struct lk_reader *r)
{
	size_t n = (size_t)(r->end - r->p);

	return r->limit != UINT64_MAX && n < LK_READ_RECORD_MAX &&
	       !(r->offset < r->whole && r->offset + n >= r->whole);
}

/* The next record of the main stream, with none of the merge: lk_reader_next() before version 6
 * (read-record.c). */
int lk_reader_main(struct lk_reader *r, struct lk_record *rec);

/* Reads the body of the SEGMENT record in rec (its fields filled, its `hdr` bytes not consumed
 * yet), `skip` bytes after it, and consumes both into merge.pend_seg (NULL if it holds no
 * record); its records' times count from t. 1; 0 following, where the body is not complete yet
 * (nothing consumed); or < 0 (read-segment.c). */
int lk_seg_read(struct lk_reader *r, const struct lk_record *rec, size_t hdr, uint64_t skip,
		uint64_t t);
/* Zero bytes after a body's own: a fixed record is read as a word, even the body's last one. */
#define LK_SEG_PAD 8

/* A varint that lk_seg_read() has checked: it ends within the body, in at most 10 bytes. */
static inline const uint8_t *lk_seg_varint(const uint8_t *q, uint64_t *ret)
{
	uint64_t v = *q & 0x7f;

	for (unsigned shift = 7; *q++ & 0x80; shift += 7)
		v |= (uint64_t)(*q & 0x7f) << shift;
	*ret = v;
	return q;
}

/* Decodes the body's next record into s->head; has_head false past its last. Every record before
 * s->end passed lk_seg_read()'s checks, so this decodes without a bound or a check: it runs once a
 * record a pass, where the checks run once a body. Inline: read-merge.c calls it for nearly every
 * record of a profile of threads, and a call would cost a good part of what it does. */
static inline __attribute__((always_inline)) void lk_seg_next(struct lk_seg *s)
{
	const uint8_t *p = s->body + s->pos, *q = p + 1;
	struct lk_seg_head *h = &s->head;
	uint64_t word, dt = 0, x, y = 0;

	s->has_head = s->pos < s->end;
	if (!s->has_head)
		return;
	memcpy(&word, p, 8); /* LK_SEG_PAD: within the buffer, even at its end */
	word = le64toh(word);
	h->offset = s->offset + s->pos;
	h->tag = p[0];
	switch (p[0]) {
	case LK_REC_ALLOC_FIXED: /* dt 0 */
		h->alloc = true;
		h->time = s->time;
		h->block = ++s->last;
		h->size = word >> 8 & 0xffff;
		h->stack = word >> 24 & 0xffff;
		s->pos += LK_ALLOC_FIXED_SIZE;
		return;
	case LK_REC_FREE_FIXED:
		h->alloc = false;
		h->time = s->time;
		h->block = s->prev = lk_free_block(s->last, s->prev, word >> 8 & 0xffff);
		s->pos += LK_FREE_FIXED_SIZE;
		return;
	case LK_REC_ALLOC:
		q = lk_seg_varint(lk_seg_varint(lk_seg_varint(q, &dt), &x), &y);
		h->alloc = true;
		h->block = ++s->last;
		h->size = x;
		h->stack = y;
		break;
	default: /* LK_REC_FREE: the checks let no other tag through */
		q = lk_seg_varint(lk_seg_varint(q, &dt), &x);
		h->alloc = false;
		h->block = s->prev = lk_free_block(s->last, s->prev, x);
		break;
	}
	s->time += dt; /* wraps like the writer's sum, as the main stream's does */
	h->time = s->time;
	s->pos += (uint32_t)(q - p);
}
struct lk_seg *lk_seg_free(struct lk_seg *s); /* accepts NULL, returns NULL */

/* lk_reader_next() from a SEGMENT record on, and while any body is held (read-merge.c). */
int lk_merge_next(struct lk_reader *r, struct lk_record *rec);
/* lk_merge_next() while merge.run is set: the next record of a body whose records go out in a
 * run, with none of the checks that the run's start made for all of them (read-merge.c). */
int lk_merge_run(struct lk_reader *r, struct lk_record *rec);
/* Up to n records of the run into rec[], as lk_merge_run() would give them, as long as each goes
 * straight from the body; the number given, 0 if the next one does not (lk_merge_run() then
 * knows what to do with it). */
size_t lk_merge_run_many(struct lk_reader *r, struct lk_record *rec, size_t n);
void lk_merge_done(struct lk_merge *m);

/* Nothing held and no main record waiting: the main stream's records go out as they are read. */
static inline bool lk_merge_idle(const struct lk_merge *m)
{
	return !m->live && !m->has_pend;
}

/* A main record's time as handed out, past the merge: never before the last one handed out. */
static inline uint64_t lk_merge_time(const struct lk_merge *m, uint64_t t)
{
	return t > m->time_out ? t : m->time_out;
}

static inline size_t lk_reader_avail(const struct lk_reader *r)
{
	return (size_t)(r->end - r->p);
}

static inline void lk_reader_consume(struct lk_reader *r, size_t n)
{
	r->p += n;
	r->offset += n;
}

/* An ALLOC or FREE into *rec, field by field: the rest of the union keeps what it held. A compound
 * literal would clear all of it, 96 bytes a record, for the few fields these two tags define
 * (read.h); that cost 15% of reading an exact profile of redis-server
 * (bench/read-records.c under callgrind: 1 313 M instructions, 1 118 M without). */
static inline __attribute__((always_inline)) void
lk_read_set_alloc(struct lk_record *rec, uint64_t offset, uint64_t time_ns, uint64_t tid,
		  uint64_t block, uint64_t size, uint64_t stack)
{
	rec->tag = LK_REC_ALLOC;
	rec->offset = offset;
	rec->time_ns = time_ns;
	rec->alloc.tid = tid;
	rec->alloc.block = block;
	rec->alloc.size = size;
	rec->alloc.stack = stack;
}

static inline __attribute__((always_inline)) void
lk_read_set_free(struct lk_record *rec, uint64_t offset, uint64_t time_ns, uint64_t tid,
		 uint64_t block)
{
	rec->tag = LK_REC_FREE;
	rec->offset = offset;
	rec->time_ns = time_ns;
	rec->free.tid = tid;
	rec->free.block = block;
	rec->free.stack = 0;
}

/* read-chain.c: what lk_reader_next() and lk_reader_next_many() do for a chain. */
int lk_chain_next(struct lk_reader *r, struct lk_record *rec);
int lk_chain_next_many(struct lk_reader *r, struct lk_record *rec, unsigned n);
void lk_chain_release(struct lk_chain *c);

#endif /* LEEK_READ_INTERNAL_H */
