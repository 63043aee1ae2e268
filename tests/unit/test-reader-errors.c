/* test-reader-errors.c: every check the reader makes, one broken profile each
 * (src/cli/read/read.c).
 *
 * Each case builds a valid header and a few records with record.h's encoders, breaks one thing,
 * and checks the exact "offset N: ..." message, so that a changed check shows up here.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

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
	EXPECT_ERROR(&b, fmt("offset %zu: unknown record tag 0x0d", at));
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
