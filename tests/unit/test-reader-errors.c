/* test-reader-errors.c: every check the reader makes, one broken profile each
 * (src/cli/read/read.c).
 *
 * Each case builds a valid header and a few records with record.h's encoders, breaks one thing,
 * and checks the exact "offset N: ..." message, so that a changed check shows up here. The thread
 * segments' checks (read-segment.c, read-merge.c) come last.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build-profile.h"
#include "harness.h"
#include "read.h"

/* Reads b to the end; returns the final result and leaves the message in msg. */
static int read_all(const struct pbuf *b, char *msg, size_t size, size_t *nrec)
{
	struct lk_reader *rd = lk_reader_new();
	struct lk_record rec;
	int r;

	ASSERT_TRUE(rd);
	*nrec = 0;
	r = lk_reader_open_memory(rd, b->p, b->len);
	while (r >= 0 && (r = lk_reader_next(rd, &rec)) > 0)
		++*nrec;
	snprintf(msg, size, "%s", lk_reader_error(rd));
	lk_reader_free(rd);
	return r;
}

#define EXPECT_ERROR(b, text)                                                                      \
	do {                                                                                       \
		char _msg[256];                                                                    \
		size_t _n;                                                                         \
		ASSERT_EQ(read_all(b, _msg, sizeof(_msg), &_n), -EBADMSG);                         \
		ASSERT_STREQ(_msg, text);                                                          \
	} while (0)

static size_t off_of(const struct pbuf *b)
{
	return b->len;
}

static char *fmt(const char *f, size_t off)
{
	static char buf[256];

	snprintf(buf, sizeof(buf), f, off);
	return buf;
}

TEST(unknown_tag)
{
	struct pbuf b = { 0 };

	pb_simple_header(&b);
	size_t at = off_of(&b);
	pb_put(&b, "\x2a\x01\x02", 3);
	EXPECT_ERROR(&b, fmt("offset %zu: unknown record tag 0x2a", at));
	b.p[at] = LK_REC_MAX_KNOWN + 1; /* the first reserved tag */
	EXPECT_ERROR(&b, fmt("offset %zu: unknown record tag 0x12", at));
	b.p[at] = 0x7f;
	EXPECT_ERROR(&b, fmt("offset %zu: unknown record tag 0x7f", at));
	free(b.p);
}

TEST(stack_sequence)
{
	static const uint64_t fr[] = { 1, 2 };
	struct pbuf b = { 0 };

	pb_simple_header(&b);
	PB_REC(&b, lk_rec_stack(rec, 1, fr, 2));
	size_t at = PB_REC(&b, lk_rec_stack(rec, 3, fr, 2));
	EXPECT_ERROR(&b, fmt("offset %zu: STACK id 3 out of sequence (expected 2)", at));
	free(b.p);

	b = (struct pbuf){ 0 };
	pb_simple_header(&b);
	at = PB_REC(&b, lk_rec_stack(rec, 0, fr, 2));
	EXPECT_ERROR(&b, fmt("offset %zu: STACK id 0 out of sequence (expected 1)", at));
	free(b.p);
}

TEST(undefined_stack)
{
	static const uint64_t fr[] = { 1 };
	struct pbuf b = { 0 };
	size_t n;
	char msg[256];

	pb_simple_header(&b);
	pb_alloc(&b, 1, 1, 0x1000, 8, 0); /* 0: no stack, fine */
	PB_REC(&b, lk_rec_stack(rec, 1, fr, 1));
	pb_alloc(&b, 1, 1, 0x2000, 8, 1);
	ASSERT_EQ(read_all(&b, msg, sizeof(msg), &n), 0);
	ASSERT_EQ(n, 4); /* THREAD, ALLOC, STACK, ALLOC */
	size_t at = pb_alloc(&b, 1, 1, 0x3000, 8, 2);
	EXPECT_ERROR(&b, fmt("offset %zu: ALLOC names stack 2, which is not defined yet", at));
	b.len = at;
	at = PB_REC(&b, lk_rec_inherit(rec, 8, 9, 0));
	EXPECT_ERROR(&b, fmt("offset %zu: INHERIT names stack 9, which is not defined yet", at));
	free(b.p);
}

/* A FREE names a block that an ALLOC or INHERIT before it numbered: block 0, a block not numbered
 * yet, and a difference that wraps below 0 are corruption, near the start (the general path) and
 * far from it (the fast path's hand-over). */
TEST(free_of_unnumbered_block)
{
	static const uint64_t bad[] = { 0, 3, 1000, UINT64_MAX };
	struct pbuf b = { 0 };
	char msg[256], want[256];
	size_t n, at;

	for (int far = 0; far < 2; far++) {
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			uint64_t prev = 0;
			b = (struct pbuf){ 0 };
			pb_simple_header(&b);
			for (int k = 0; far && k < 2000; k++)
				PB_REC(&b, lk_rec_pair(rec, LK_REC_RSS, 1, 4096));
			pb_alloc(&b, 1, 1, 0x1000, 8, 0);
			pb_alloc(&b, 1, 1, 0x2000, 8, 0);
			PB_REC(&b, lk_rec_free(rec, 1, 2, &prev, 2));
			ASSERT_EQ(read_all(&b, msg, sizeof(msg), &n), 0);
			at = PB_REC(&b, lk_rec_free(rec, 1, 2, &prev, bad[i]));
			pb_zeros(&b, far ? 2 * LK_READ_RECORD_MAX : 0);
			snprintf(want, sizeof(want), "offset %zu: FREE of block %" PRIu64 ", but "
				 "blocks 1 to 2 are all the file has allocated", at, bad[i]);
			EXPECT_ERROR(&b, want);
			free(b.p);
		}
	}
}

TEST(modules)
{
	struct lk_module_info m = { .id = 1, .path = "/a", .path_len = 2 };
	struct pbuf b = { 0 };
	size_t at, n;
	char msg[256];

	pb_simple_header(&b);
	PB_REC(&b, lk_rec_module(rec, 0, &m));
	m.id = 5;
	PB_REC(&b, lk_rec_module(rec, 0, &m));
	PB_REC(&b, lk_rec_pair(rec, LK_REC_UNLOAD, 0, 1));
	ASSERT_EQ(read_all(&b, msg, sizeof(msg), &n), 0);

	size_t good = b.len;
	at = PB_REC(&b, lk_rec_pair(rec, LK_REC_UNLOAD, 0, 1)); /* twice */
	EXPECT_ERROR(&b, fmt("offset %zu: UNLOAD of module 1, which is not loaded", at));
	b.len = good;
	at = PB_REC(&b, lk_rec_pair(rec, LK_REC_UNLOAD, 0, 7)); /* never loaded */
	EXPECT_ERROR(&b, fmt("offset %zu: UNLOAD of module 7, which is not loaded", at));
	b.len = good;
	m.id = 5;
	at = PB_REC(&b, lk_rec_module(rec, 0, &m)); /* reused */
	EXPECT_ERROR(&b, fmt("offset %zu: MODULE id 5 is not above the previous one (5): ids are "
			     "assigned in order from 1 and never reused", at));
	b.len = good;
	m.id = 0;
	at = PB_REC(&b, lk_rec_module(rec, 0, &m));
	EXPECT_ERROR(&b, fmt("offset %zu: MODULE id 0 is not above the previous one (5): ids are "
			     "assigned in order from 1 and never reused", at));
	free(b.p);
}

/* Counts past the format's limits, written by hand since the encoders cap them. */
TEST(limits)
{
	uint8_t raw[64], *p;
	struct pbuf b = { 0 };
	size_t at;

	pb_simple_header(&b);
	at = b.len;
	p = raw;
	*p++ = LK_REC_STACK;
	p += lk_varint_put(p, 1);
	p += lk_varint_put(p, LK_MAX_FRAMES + 1);
	pb_put(&b, raw, (size_t)(p - raw));
	EXPECT_ERROR(&b, fmt("offset %zu: STACK of 129 frames (at most 128)", at));

	static const struct {
		uint64_t nseg, idlen, plen;
		const char *msg;
	} m[] = {
		{ LK_MAX_SEGMENTS + 1, 0, 0, "offset %zu: MODULE with 17 segments (at most 16)" },
		{ 0, LK_MAX_BUILD_ID + 1, 0,
		  "offset %zu: MODULE build-id of 65 bytes (at most 64)" },
		{ 0, 0, LK_MAX_PATH + 1, "offset %zu: MODULE path of 4097 bytes (at most 4096)" },
		{ 0, 0, UINT64_MAX, "offset %zu: MODULE path of 18446744073709551615 bytes "
				    "(at most 4096)" },
	};
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		static uint8_t big[LK_MODULE_MAX + 256];
		b.len = at;
		p = big;
		*p++ = LK_REC_MODULE;
		p += lk_varint_put(p, 0);
		p += lk_varint_put(p, 1);
		p += lk_varint_put(p, 0x1000);
		p += lk_varint_put(p, m[i].nseg);
		for (uint64_t k = 0; k < m[i].nseg; k++)
			*p++ = 0, *p++ = 0;
		p += lk_varint_put(p, m[i].idlen);
		if (m[i].idlen <= LK_MAX_BUILD_ID + 1)
			p += m[i].idlen;
		p += lk_varint_put(p, m[i].plen);
		pb_put(&b, big, (size_t)(p - big));
		pb_zeros(&b, 4200);
		EXPECT_ERROR(&b, fmt(m[i].msg, at));
	}

	b.len = at;
	p = raw;
	*p++ = LK_REC_LOSS;
	p += lk_varint_put(p, 0);
	p += lk_varint_put(p, LK_READ_MAX_COUNTERS + 1);
	pb_put(&b, raw, (size_t)(p - raw));
	EXPECT_ERROR(&b, fmt("offset %zu: LOSS with 65 counters (at most 64)", at));
	free(b.p);
}

TEST(bad_varints)
{
	struct pbuf b = { 0 };

	pb_simple_header(&b);
	size_t at = b.len;
	/* 11 bytes of continuation: longer than any uint64. */
	pb_put(&b, "\x06\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", 12);
	EXPECT_ERROR(&b, fmt("offset %zu: RSS record holds a varint over 64 bits", at));
	b.len = at;
	/* 10 bytes whose last one carries bits past 2^64. */
	pb_put(&b, "\x06\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02", 12);
	EXPECT_ERROR(&b, fmt("offset %zu: RSS record holds a varint over 64 bits", at));
	b.len = at;
	/* The largest valid one reads fine. */
	pb_put(&b, "\x06\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12);
	char msg[256];
	size_t n;
	ASSERT_EQ(read_all(&b, msg, sizeof(msg), &n), 0);
	ASSERT_EQ(n, 1);
	free(b.p);
}

TEST(truncated_extension)
{
	struct pbuf b = { 0 };
	char msg[256];
	size_t n;

	pb_simple_header(&b);
	size_t at = b.len;
	pb_put(&b, "\xc0\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11); /* 2^64-1 bytes */
	pb_put(&b, "abc", 3);
	EXPECT_ERROR(&b, fmt("offset %zu: extension record 0xc0 of 18446744073709551615 bytes "
			     "cut by the end of the file", at));
	b.len = at;
	pb_put(&b, "\x80\x03" "abc", 5); /* exact: fine, then EOF */
	ASSERT_EQ(read_all(&b, msg, sizeof(msg), &n), 0);
	ASSERT_EQ(n, 1);
	free(b.p);
}

static void patch_header(struct pbuf *b, size_t off, const void *v, size_t n)
{
	memcpy(b->p + off, v, n);
}

TEST(bad_headers)
{
	struct pbuf b = { 0 };
	char msg[256];
	size_t n;
	uint16_t v16;
	uint32_t v32;
	uint64_t v64 = 0;

	pb_simple_header(&b);
	v16 = htole16(LK_FORMAT_VERSION + 1);
	patch_header(&b, 8, &v16, 2);
	struct lk_reader *rd = lk_reader_new();
	ASSERT_EQ(lk_reader_open_memory(rd, b.p, b.len), -EPROTONOSUPPORT);
	snprintf(msg, sizeof(msg), "offset 8: profile format version %d; this leek reads versions "
		 "3 to %d (a newer leek wrote it)", LK_FORMAT_VERSION + 1, LK_FORMAT_VERSION);
	ASSERT_STREQ(lk_reader_error(rd), msg);
	lk_reader_free(rd);

	free(b.p);
	b = (struct pbuf){ 0 };
	pb_simple_header(&b);
	v16 = htole16(96);
	patch_header(&b, 10, &v16, 2);
	EXPECT_ERROR(&b, "offset 10: header fixed size is 96, not 88");

	free(b.p);
	b = (struct pbuf){ 0 };
	pb_simple_header(&b);
	v32 = htole32(89);
	patch_header(&b, 12, &v32, 4);
	EXPECT_ERROR(&b, "offset 12: header size 89 does not hold its 2 bytes of strings (or is "
			 "not a multiple of 8 up to 1048576)");
	v32 = htole32(88); /* too small for the exe path */
	patch_header(&b, 12, &v32, 4);
	EXPECT_ERROR(&b, "offset 12: header size 88 does not hold its 2 bytes of strings (or is "
			 "not a multiple of 8 up to 1048576)");
	v32 = htole32(96);
	patch_header(&b, 12, &v32, 4);
	v32 = htole32(LK_MAX_PATH + 1);
	patch_header(&b, 80, &v32, 4);
	EXPECT_ERROR(&b, "offset 80: exe path of 4097 bytes (at most 4096)");
	v32 = htole32(2);
	patch_header(&b, 80, &v32, 4);
	v32 = htole32(2);
	patch_header(&b, 28, &v32, 4);
	EXPECT_ERROR(&b, "offset 28: unknown clock 2");
	v32 = htole32(LK_CLOCK_MONOTONIC);
	patch_header(&b, 28, &v32, 4);
	patch_header(&b, 32, &v64, 8);
	EXPECT_ERROR(&b, "offset 32: sampling period 0");
	v64 = htole64(1);
	patch_header(&b, 32, &v64, 8);
	ASSERT_EQ(read_all(&b, msg, sizeof(msg), &n), 0);

	/* A header that promises more than the file holds. */
	v32 = htole32(104);
	patch_header(&b, 12, &v32, 4);
	EXPECT_ERROR(&b, "offset 0: header cut by the end of the file at offset 96 (header size "
			 "104)");
	free(b.p);
}

TEST(no_records_at_all)
{
	struct pbuf b = { 0 };
	char msg[256];
	size_t n;

	pb_simple_header(&b);
	ASSERT_EQ(read_all(&b, msg, sizeof(msg), &n), 0);
	ASSERT_EQ(n, 0);
	ASSERT_STREQ(msg, "");
	free(b.p);
}

/* Versions 1 (tid and absolute addresses in every ALLOC and FREE) and 2 (address differences)
 * are refused as a whole. */
TEST(older_versions)
{
	for (uint16_t v = 1; v <= 2; v++) {
		struct pbuf b = { 0 };
		uint16_t v16 = htole16(v);
		char want[256];

		pb_simple_header(&b);
		/* A version-1 ALLOC: dt tid addr size stack; as version 2, dt addr size stack and
		 * the start of another record. */
		pb_put(&b, "\x01\x05\x2a\x80\x80\x04\x10\x00", 8);
		patch_header(&b, 8, &v16, 2);
		struct lk_reader *rd = lk_reader_new();
		ASSERT_EQ(lk_reader_open_memory(rd, b.p, b.len), -EPROTONOSUPPORT);
		snprintf(want, sizeof(want), "offset 8: profile format version %u; this leek reads "
			 "versions 3 to %d (record it again with this leek)", v, LK_FORMAT_VERSION);
		ASSERT_STREQ(lk_reader_error(rd), want);
		ASSERT_EQ(lk_reader_next(rd, &(struct lk_record){ 0 }), -EPROTONOSUPPORT);
		ASSERT_TRUE(!lk_reader_header(rd));
		lk_reader_free(rd);
		free(b.p);
	}
}

/* Version 3 differs from 4 only in a FREE's block: the step from the previous FREE's alone,
 * zigzag(block - prev), which version 4 would read as other blocks (6 as a step of +3 from 0, 3
 * as 1 old, 2 as a step of -1). */
TEST(version_3_is_read)
{
	static const uint64_t fr[] = { 1 }, want[] = { 3, 1, 2 };
	struct pbuf b = { 0 };
	uint16_t v16 = htole16(3);
	struct lk_record got;

	pb_simple_header(&b);
	patch_header(&b, 8, &v16, 2);
	PB_REC(&b, lk_rec_stack(rec, 1, fr, 1));
	for (int i = 0; i < 3; i++)
		pb_alloc(&b, 0, 7, 0x1000 * (uint64_t)(i + 1), 8, 1);
	pb_put(&b, "\x02\x00\x06" "\x02\x00\x03" "\x02\x00\x02", 9); /* +3, -2, +1 */
	for (int fast = 0; fast < 2; fast++) {
		if (fast)
			pb_zeros(&b, 2 * LK_READ_RECORD_MAX); /* room for the fast path */
		struct lk_reader *rd = lk_reader_new();
		ASSERT_OK(lk_reader_open_memory(rd, b.p, b.len));
		ASSERT_EQ(lk_reader_header(rd)->h.version, 3);
		for (int k = 0; k < 5; k++) /* the STACK, the THREAD, the ALLOCs */
			ASSERT_EQ(lk_reader_next(rd, &got), 1);
		for (int k = 0; k < 3; k++) {
			ASSERT_EQ(lk_reader_next(rd, &got), 1);
			ASSERT_EQ(got.tag, LK_REC_FREE);
			ASSERT_EQ(got.free.block, want[k]);
		}
		ASSERT_EQ(lk_reader_next(rd, &got), 0);
		lk_reader_free(rd);
	}
	free(b.p);
}

/* ALLOC_FIXED and FREE_FIXED: read as ALLOC and FREE; cut off, or in a file older than version 5,
 * an error at their tag. */
TEST(fixed_records)
{
	static const uint64_t fr[] = { 1 };
	struct pbuf b = { 0 };
	struct lk_record got;
	size_t at, n;
	char msg[256];

	pb_simple_header(&b);
	PB_REC(&b, lk_rec_stack(rec, 1, fr, 1));
	PB_REC(&b, lk_rec_thread(rec, 7));
	PB_REC(&b, lk_rec_alloc(rec, 5, 100000, 1)); /* block 1, at t = 5 */
	PB_REC(&b, lk_rec_alloc_fixed(rec, 65535, 1)); /* block 2 */
	at = PB_REC(&b, lk_rec_free_fixed(rec, 2, &b.prev_free, 1));
	struct lk_reader *rd = lk_reader_new();
	ASSERT_OK(lk_reader_open_memory(rd, b.p, b.len));
	for (int k = 0; k < 3; k++)
		ASSERT_EQ(lk_reader_next(rd, &got), 1);
	ASSERT_EQ(lk_reader_next(rd, &got), 1);
	ASSERT_EQ(got.tag, LK_REC_ALLOC);
	ASSERT_EQ(got.time_ns, 5);
	ASSERT_EQ(got.alloc.tid, 7);
	ASSERT_EQ(got.alloc.block, 2);
	ASSERT_EQ(got.alloc.size, 65535);
	ASSERT_EQ(got.alloc.stack, 1);
	ASSERT_EQ(lk_reader_next(rd, &got), 1);
	ASSERT_EQ(got.tag, LK_REC_FREE);
	ASSERT_EQ(got.offset, at);
	ASSERT_EQ(got.time_ns, 5);
	ASSERT_EQ(got.free.block, 1);
	ASSERT_EQ(lk_reader_next(rd, &got), 0);
	lk_reader_free(rd);

	b.len = at + 2;
	EXPECT_ERROR(&b, fmt("offset %zu: FREE_FIXED record cut by the end of the file", at));
	b.len = at - 5 + 4;
	EXPECT_ERROR(&b, fmt("offset %zu: ALLOC_FIXED record cut by the end of the file", at - 5));
	b.len = at + 3;
	uint16_t v16 = htole16(4);
	patch_header(&b, 8, &v16, 2);
	ASSERT_EQ(read_all(&b, msg, sizeof(msg), &n), -EBADMSG);
	ASSERT_EQ(n, 3);
	snprintf(msg, sizeof(msg), "offset %zu: unknown record tag 0x0b in a version 4 profile "
		 "(version 5 has it)", at - 5);
	EXPECT_ERROR(&b, msg);
	free(b.p);
}

/* ALLOC and FREE belong to the last THREAD record's thread: before the first, they are nobody's. */
TEST(event_before_thread)
{
	static const uint64_t fr[] = { 1 };
	struct pbuf b = { 0 };
	char msg[256];
	size_t at, n;

	pb_simple_header(&b);
	PB_REC(&b, lk_rec_stack(rec, 1, fr, 1));
	at = PB_REC(&b, lk_rec_alloc(rec, 3, 8, 1));
	EXPECT_ERROR(&b, fmt("offset %zu: ALLOC before any THREAD record", at));
	ASSERT_EQ(read_all(&b, msg, sizeof(msg), &n), -EBADMSG);
	ASSERT_EQ(n, 1); /* the STACK */
	b.len = at;
	at = PB_REC(&b, lk_rec_free(rec, 3, 1, &b.prev_free, 1));
	EXPECT_ERROR(&b, fmt("offset %zu: FREE before any THREAD record", at));

	/* An INHERIT has no thread: it may come first (a forked child's file starts with them). */
	b.len = at;
	b.prev_free = 0;
	PB_REC(&b, lk_rec_inherit(rec, 8, 1, 5));
	PB_REC(&b, lk_rec_thread(rec, 9));
	PB_REC(&b, lk_rec_free(rec, 3, 1, &b.prev_free, 1));
	ASSERT_EQ(read_all(&b, msg, sizeof(msg), &n), 0);
	ASSERT_EQ(n, 4);

	/* Far from the start, where the reader's fast path runs, it is the same error. */
	b.len = at;
	for (int i = 0; i < 2000; i++)
		PB_REC(&b, lk_rec_pair(rec, LK_REC_RSS, 1, 4096));
	at = PB_REC(&b, lk_rec_alloc(rec, 3, 8, 1));
	pb_zeros(&b, 2 * LK_READ_RECORD_MAX);
	EXPECT_ERROR(&b, fmt("offset %zu: ALLOC before any THREAD record", at));
	free(b.p);
}

/* A THREAD record is a tag and a varint; either may be cut off or broken. */
TEST(broken_thread)
{
	struct pbuf b = { 0 };
	size_t at;

	pb_simple_header(&b);
	at = PB_REC(&b, lk_rec_thread(rec, 123456));
	b.len = at + 1; /* the tag alone */
	EXPECT_ERROR(&b, fmt("offset %zu: THREAD record cut by the end of the file", at));
	b.len = at + 3; /* the tag and 2 of the tid's 3 bytes */
	EXPECT_ERROR(&b, fmt("offset %zu: THREAD record cut by the end of the file", at));
	b.len = at;
	pb_put(&b, "\x0a\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", 12);
	EXPECT_ERROR(&b, fmt("offset %zu: THREAD record holds a varint over 64 bits", at));
	free(b.p);
}

/* ---- thread segments (version 6): read-segment.c and read-merge.c ---- */

#define EXPECT_ERRORF(b, ...)                                                                      \
	do {                                                                                       \
		char _want[512];                                                                   \
		snprintf(_want, sizeof(_want), __VA_ARGS__);                                       \
		EXPECT_ERROR(b, _want);                                                            \
	} while (0)

/* A SEGMENT record with any fields, written by hand past the encoder's sense. */
static size_t put_segment(struct pbuf *b, uint64_t dt, uint64_t tid, uint64_t blocks,
			  uint64_t skip, uint64_t length)
{
	return PB_REC(b, lk_rec_segment(rec, dt, tid, blocks, skip, length));
}

/* Its fields, checked before anything is allocated or read; and cut short. */
TEST(segment_fields)
{
	struct pbuf b = { 0 };
	size_t at;

	pb_simple_header(&b);
	at = put_segment(&b, 0, 1, 0, 0, LK_SEG_MAX + 1);
	EXPECT_ERRORF(&b, "offset %zu: SEGMENT body of 1048577 bytes (at most 1048576)", at);
	b.len = at;
	put_segment(&b, 0, 1, 0, 0, UINT64_MAX);
	EXPECT_ERRORF(&b, "offset %zu: SEGMENT body of 18446744073709551615 bytes (at most "
		      "1048576)", at);
	b.len = at;
	put_segment(&b, 0, 1, 0, LK_SEG_SKIP_MAX + 1, 8);
	EXPECT_ERRORF(&b, "offset %zu: SEGMENT skips 65537 bytes before its body (at most 65536)",
		      at);
	b.len = at;
	put_segment(&b, 0, 1, 9, 0, 8);
	EXPECT_ERRORF(&b, "offset %zu: SEGMENT reserves 9 blocks for a body of 8 bytes", at);

	/* Cut: in the record, in its skip, in its body. */
	b.len = at;
	put_segment(&b, 0, 1, 8, 3, 8);
	size_t whole = b.len;
	b.len = at + 3;
	EXPECT_ERRORF(&b, "offset %zu: SEGMENT record cut by the end of the file", at);
	b.len = whole;
	pb_zeros(&b, 2);
	EXPECT_ERRORF(&b, "offset %zu: SEGMENT record's body of 8 bytes cut by the end of the file",
		      at);
	pb_zeros(&b, 3 + 7 - 2);
	EXPECT_ERRORF(&b, "offset %zu: SEGMENT record's body of 8 bytes cut by the end of the file",
		      at);
	pb_zeros(&b, 1); /* whole: an empty body */
	char msg[256];
	size_t n;
	ASSERT_EQ(read_all(&b, msg, sizeof(msg), &n), 0);
	ASSERT_EQ(n, 1);
	free(b.p);
}

/* SEGMENT and SEG_END are unknown before version 6; SEG_END is never the main stream's. */
TEST(segment_tags)
{
	struct pbuf b = { 0 };
	uint16_t v5 = htole16(5);
	size_t at;

	pb_simple_header(&b);
	at = b.len;
	pb_put(&b, "\x0e", 1);
	EXPECT_ERRORF(&b, "offset %zu: SEG_END record outside a thread segment's body", at);
	patch_header(&b, 8, &v5, 2);
	EXPECT_ERRORF(&b, "offset %zu: unknown record tag 0x0e in a version 5 profile (version 6 "
		      "has it)", at);
	b.len = at;
	put_segment(&b, 0, 1, 0, 0, 0);
	EXPECT_ERRORF(&b, "offset %zu: unknown record tag 0x0d in a version 5 profile (version 6 "
		      "has it)", at);
	free(b.p);
}

/* What a body may hold: ALLOC, FREE, their fixed forms and SEG_END, each whole inside it, and no
 * more ALLOCs than its SEGMENT reserved blocks. */
TEST(segment_body_records)
{
	static const struct {
		const char *bytes;
		size_t n, bad; /* the body's bytes; where the record at fault starts */
		const char *msg;
	} cases[] = {
		{ "\x03\x01\x01\x00", 4, 0, "record tag 0x03 in the body of the SEGMENT at offset "
					    "%zu, which holds only ALLOC, FREE, ALLOC_FIXED, "
					    "FREE_FIXED and SEG_END" },
		{ "\x01\x00\x08\x00\x0d", 5, 4, "record tag 0x0d in the body of the SEGMENT at "
						"offset %zu, which holds only ALLOC, FREE, "
						"ALLOC_FIXED, FREE_FIXED and SEG_END" },
		{ "\x81\x00", 2, 0, "record tag 0x81 in the body of the SEGMENT at offset %zu, which "
				    "holds only ALLOC, FREE, ALLOC_FIXED, FREE_FIXED and SEG_END" },
		{ "\x01\x00\x08", 3, 0, "ALLOC record crosses the end of its SEGMENT's body at "
					"offset %zu" },
		{ "\x0b\x08\x00\x00", 4, 0, "ALLOC_FIXED record crosses the end of its SEGMENT's "
					    "body at offset %zu" },
		{ "\x01\x00\x08\x00\x02\x00\x80", 7, 4, "FREE record crosses the end of its SEGMENT's "
							"body at offset %zu" },
		{ "\x01\x00\x08\x00\x0c\x01", 6, 4, "FREE_FIXED record crosses the end of its "
						    "SEGMENT's body at offset %zu" },
		{ "\x02\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", 12, 0,
		  "FREE record holds a varint over 64 bits" },
		{ "\x01\x00\x08\x00" "\x0b\x08\x00\x00\x00" "\x01\x00\x08\x00", 13, 9,
		  "ALLOC beyond the 2 blocks that its SEGMENT (offset %zu) reserved" },
		/* read-segment.c's scan_fixed() checks the fixed ones in place */
		{ "\x0b\x08\x00\x00\x00" "\x0b\x08\x00\x00\x00" "\x0b\x08\x00\x00\x00", 15, 10,
		  "ALLOC_FIXED beyond the 2 blocks that its SEGMENT (offset %zu) reserved" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pbuf b = { 0 };
		struct pb_seg s;
		char want[512], m[400];

		pb_simple_header(&b);
		pb_segment(&b, &s, 1, 7, 2, 0, cases[i].n);
		pb_seg_put(&b, &s, cases[i].bytes, cases[i].n);
		/* The offset a message names is the body's end, or the SEGMENT's. */
		snprintf(m, sizeof(m), cases[i].msg,
			 strstr(cases[i].msg, "crosses") ? s.body + s.length : s.at);
		snprintf(want, sizeof(want), "offset %zu: %s", s.body + cases[i].bad, m);
		EXPECT_ERROR(&b, want);
	}
	/* One reserved block and one ALLOC: fine; a second ALLOC: "1 block". */
	struct pbuf b = { 0 };
	struct pb_seg s;
	pb_simple_header(&b);
	pb_segment(&b, &s, 1, 7, 1, 0, 16);
	pb_seg_alloc(&b, &s, 0, 0x1, 8, 0);
	char msg[256];
	size_t n;
	ASSERT_EQ(read_all(&b, msg, sizeof(msg), &n), 0);
	ASSERT_EQ(n, 2);
	size_t at = pb_seg_alloc(&b, &s, 0, 0x2, 8, 0);
	EXPECT_ERRORF(&b, "offset %zu: ALLOC beyond the 1 block that its SEGMENT (offset %zu) "
		      "reserved", at, s.at);
	free(b.p);
}

/* The TRAILER that ends a profile whose writer finished. */
static void put_trailer(struct pbuf *b)
{
	static const uint64_t none[LK_CNT_MAX + 1];

	PB_REC(b, lk_rec_counters(rec, LK_REC_TRAILER, 0, 1, none));
}

/* A body's FREE of a block that nothing allocates: block 0; one of its own blocks before its
 * ALLOC (at once: nothing can come between); one never numbered (at the TRAILER, when nothing
 * more can allocate it). An ALLOC of a stack never defined fails at the TRAILER too. Without the
 * TRAILER the last two are what a profile cut short leaves (a main ALLOC or STACK past the cut),
 * and read as a crashed profile's last records: test-segments.c's threads_cut_like_a_crash. */
TEST(segment_frees_and_stacks)
{
	struct pbuf b = { 0 };
	struct pb_seg s;
	uint8_t rec[LK_FREE_MAX];
	uint64_t prev;
	size_t at;

	pb_simple_header(&b);
	pb_segment(&b, &s, 1, 7, 2, 0, 16);
	prev = s.prev;
	at = pb_seg_put(&b, &s, rec, lk_rec_free(rec, 0, s.last, &prev, 0));
	EXPECT_ERRORF(&b, "offset %zu: FREE of block 0 that no record allocated", at);

	b = (struct pbuf){ 0 };
	pb_simple_header(&b);
	pb_segment(&b, &s, 1, 7, 2, 0, 16); /* blocks 1 and 2 */
	pb_seg_alloc(&b, &s, 0, 0x1, 8, 0);
	prev = s.prev;
	at = pb_seg_put(&b, &s, rec, lk_rec_free(rec, 0, s.last, &prev, 2));
	EXPECT_ERRORF(&b, "offset %zu: FREE of block 2 that no record allocated", at);

	/* The same as FREE_FIXED, which read-segment.c's scan_fixed() checks in place. */
	b = (struct pbuf){ 0 };
	pb_simple_header(&b);
	pb_segment(&b, &s, 1, 7, 2, 0, 16);
	pb_seg_alloc_fixed(&b, &s, 0x1, 8, 0);
	prev = s.prev;
	at = pb_seg_put(&b, &s, rec, lk_rec_free_fixed(rec, s.last, &prev, 0));
	EXPECT_ERRORF(&b, "offset %zu: FREE_FIXED of block 0 that no record allocated", at);

	b = (struct pbuf){ 0 };
	pb_simple_header(&b);
	pb_segment(&b, &s, 1, 7, 2, 0, 16); /* blocks 1 and 2 */
	pb_seg_alloc_fixed(&b, &s, 0x1, 8, 0);
	prev = s.prev;
	at = pb_seg_put(&b, &s, rec, lk_rec_free_fixed(rec, s.last, &prev, 2));
	EXPECT_ERRORF(&b, "offset %zu: FREE_FIXED of block 2 that no record allocated", at);

	b = (struct pbuf){ 0 };
	pb_simple_header(&b);
	pb_segment(&b, &s, 1, 7, 2, 0, 16);
	pb_seg_alloc(&b, &s, 0, 0x1, 8, 0);
	prev = s.prev;
	at = pb_seg_put(&b, &s, rec, lk_rec_free(rec, 0, s.last, &prev, 1000));
	pb_made_up_stack(&b, 1, 1);
	pb_alloc(&b, 5, 1, 0x3, 8, 1); /* block 3, not 1000 */
	char msg[256];
	size_t n;
	ASSERT_EQ(read_all(&b, msg, sizeof(msg), &n), 0); /* cut short: the FREE goes out too */
	ASSERT_EQ(n, 6);
	put_trailer(&b);
	ASSERT_EQ(read_all(&b, msg, sizeof(msg), &n), -EBADMSG);
	ASSERT_EQ(n, 5); /* SEGMENT, its ALLOC, STACK, THREAD, ALLOC */
	snprintf(msg, sizeof(msg), "offset %zu: FREE of block 1000 that no record allocated", at);
	EXPECT_ERROR(&b, msg);

	b = (struct pbuf){ 0 };
	pb_simple_header(&b);
	pb_segment(&b, &s, 1, 7, 2, 0, 16);
	at = pb_seg_alloc_fixed(&b, &s, 0x1, 8, 3);
	pb_made_up_stack(&b, 1, 1);
	pb_made_up_stack(&b, 2, 1);
	ASSERT_EQ(read_all(&b, msg, sizeof(msg), &n), 0);
	ASSERT_EQ(n, 4); /* SEGMENT, STACK, STACK, and the ALLOC with stack 0 */
	put_trailer(&b);
	EXPECT_ERRORF(&b, "offset %zu: ALLOC_FIXED names stack 3, which is not defined yet", at);
	free(b.p);
}

/* Two bodies whose first FREEs free each other's later ALLOCs: neither can go first. */
TEST(segments_waiting_on_each_other)
{
	struct pbuf b = { 0 };
	struct pb_seg s1, s2;
	size_t at;

	pb_simple_header(&b);
	pb_segment(&b, &s1, 1, 7, 2, 0, 16); /* blocks 1, 2 */
	pb_segment(&b, &s2, 0, 8, 2, 0, 16); /* blocks 3, 4 */
	uint8_t rec[LK_FREE_MAX];
	uint64_t prev = s1.prev;
	at = pb_seg_put(&b, &s1, rec, lk_rec_free(rec, 0, s1.last, &prev, 4));
	s1.prev = prev;
	pb_seg_alloc(&b, &s1, 0, 0x1, 8, 0);
	pb_seg_alloc(&b, &s1, 0, 0x2, 8, 0);
	pb_seg_free(&b, &s2, 0, 0x2);
	pb_seg_alloc(&b, &s2, 0, 0x3, 8, 0);
	pb_seg_alloc(&b, &s2, 0, 0x4, 8, 0);
	EXPECT_ERRORF(&b, "offset %zu: FREE of block 4 that no record allocated: thread segments "
		      "wait on each other", at);
	free(b.p);
}

/* A main FREE whose ALLOC, in a body, waits for a STACK that comes after the FREE. */
TEST(main_free_before_its_alloc_can_come)
{
	struct pbuf b = { 0 };
	struct pb_seg s;
	size_t at;

	pb_simple_header(&b);
	pb_segment(&b, &s, 1, 7, 1, 0, 16);
	pb_seg_alloc(&b, &s, 0, 0x1, 8, 1);
	at = pb_free(&b, 0, 1, 0x1);
	pb_made_up_stack(&b, 1, 1);
	EXPECT_ERRORF(&b, "offset %zu: FREE of block 1, whose ALLOC in a thread segment waits for "
		      "a later record of the main stream", at);
	free(b.p);
}

/* A FREE that waits on more than LK_READ_SEG_WAIT_MAX segments in turn: each of k bodies frees the
 * next one's block before allocating its own, and one more frees the first one's. */
TEST(segments_waiting_in_a_long_chain)
{
	enum { K = LK_READ_SEG_WAIT_MAX + 10 };
	static struct pb_seg s[K + 1];
	struct pbuf b = { 0 };
	size_t at;

	pb_simple_header(&b);
	for (int i = 0; i <= K; i++)
		pb_segment(&b, &s[i], i == 0, 100 + (uint64_t)i, i < K, 0, 16);
	pb_seg_alloc(&b, &s[K - 1], 99, (uint64_t)K, 8, 0);
	for (int i = K - 2; i >= 0; i--) {
		pb_seg_free(&b, &s[i], 99, (uint64_t)i + 2);
		pb_seg_alloc(&b, &s[i], 0, (uint64_t)i + 1, 8, 0);
	}
	at = pb_seg_free(&b, &s[K], 99, 1);
	EXPECT_ERRORF(&b, "offset %zu: FREE of block 1 waits on more than %d thread segments in "
		      "turn", at, LK_READ_SEG_WAIT_MAX);
	/* Without the last one, the chain unwinds at the end, every FREE after its ALLOC. */
	s[K].pos = 0;
	memset(b.p + s[K].body, 0, s[K].length);
	char msg[256];
	size_t n;
	ASSERT_EQ(read_all(&b, msg, sizeof(msg), &n), 0);
	ASSERT_EQ(n, (K + 1) + 2 * K - 1);
	free(b.p);
}

/* Bodies held at once: LK_READ_SEG_OPEN_MAX of them, whose records wait for a later time. */
TEST(segments_open_at_once)
{
	struct pbuf b = { 0 };
	struct pb_seg s;
	size_t at = 0;

	pb_simple_header(&b);
	pb_made_up_stack(&b, 1, 1);
	for (int i = 0; i <= LK_READ_SEG_OPEN_MAX; i++) {
		at = pb_segment(&b, &s, 0, 1, 1, 0, 5);
		pb_seg_alloc(&b, &s, 1000, (uint64_t)i + 1, 8, 1);
	}
	EXPECT_ERRORF(&b, "offset %zu: more than %d thread segments open at once", at,
		      LK_READ_SEG_OPEN_MAX);
	b.len = at; /* one fewer: all held, then all handed out at the end */
	char msg[256];
	size_t n;
	ASSERT_EQ(read_all(&b, msg, sizeof(msg), &n), 0);
	ASSERT_EQ(n, 1 + 2 * (size_t)LK_READ_SEG_OPEN_MAX);
	free(b.p);
}

/* And LK_READ_SEG_BYTES_MAX bytes of bodies: 257 of the longest, from a sparse file (the zeros
 * after each body's one record take no memory). */
TEST(segment_bytes_open_at_once)
{
	static const uint8_t alloc[] = { LK_REC_ALLOC, 0xe8, 0x07, 8, 0 }; /* dt 1000 */
	char path[] = "/tmp/leek-test-XXXXXX", msg[256];
	uint8_t seg[LK_SEGMENT_MAX];
	int fd = mkstemp(path), r;
	struct pbuf b = { 0 };
	struct lk_record rec;
	size_t at = 0, off, n = 0;

	ASSERT_TRUE(fd >= 0);
	pb_simple_header(&b);
	ASSERT_EQ(pwrite(fd, b.p, b.len, 0), (ssize_t)b.len);
	off = b.len;
	for (unsigned i = 0; i <= LK_READ_SEG_BYTES_MAX / LK_SEG_MAX; i++) {
		size_t k = lk_rec_segment(seg, 0, 1, 1, 0, LK_SEG_MAX);
		at = off;
		ASSERT_EQ(pwrite(fd, seg, k, (off_t)off), (ssize_t)k);
		ASSERT_EQ(pwrite(fd, alloc, sizeof(alloc), (off_t)(off + k)), (ssize_t)sizeof(alloc));
		off += k + LK_SEG_MAX;
	}
	ASSERT_EQ(ftruncate(fd, (off_t)off), 0);
	struct lk_reader *rd = lk_reader_new();
	ASSERT_OK(lk_reader_open(rd, path));
	unlink(path);
	close(fd);
	while ((r = lk_reader_next(rd, &rec)) > 0)
		n++;
	ASSERT_EQ(r, -EBADMSG);
	ASSERT_EQ(n, LK_READ_SEG_BYTES_MAX / LK_SEG_MAX); /* their SEGMENTs: the ALLOCs wait */
	snprintf(msg, sizeof(msg), "offset %zu: more than %u bytes of thread segments open at once",
		 at, LK_READ_SEG_BYTES_MAX);
	ASSERT_STREQ(lk_reader_error(rd), msg);
	lk_reader_free(rd);
	free(b.p);
}
