/* read-internal.h: the reader's state, shared by read.c (window, header) and read-record.c.
 *
 * Nothing outside those two files may include this: the rest of the CLI sees read.h only.
 */
#ifndef LEEK_READ_INTERNAL_H
#define LEEK_READ_INTERNAL_H

#include <inttypes.h>

#include "read.h"
#include "u64map.h"

enum lk_reader_state { ST_NEW, ST_RECORDS, ST_AFTER_TRAILER, ST_END, ST_FAILED };

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
	struct lk_u64map loaded; /* module id -> 1 while loaded */

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
	return r->limit != UINT64_MAX && (size_t)(r->end - r->p) < LK_READ_RECORD_MAX;
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

#endif /* LEEK_READ_INTERNAL_H */
