/* test-unz.c: reading compressed profiles, zstd and gzip (src/cli/read/read-z.c, read.c's window).
 *
 * Every case runs for both codecs: zstd, what `leek run` writes, and gzip, what it wrote before
 * (old profiles must still read). The raw profile read by the same reader is the reference:
 * compressed, in one gzip member or zstd frame or several, from memory, a file or a pipe, it must
 * give the same records at the same (uncompressed) offsets. Cut at every compressed byte it must
 * read exactly the records that the surviving bytes hold whole (as the codec's own library
 * decompresses them), and end like a crashed raw profile; damaged, it must fail with the codec's
 * error and the uncompressed offset reached. Runs under ASan and UBSan too.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "build-profile.h"
#include "harness.h"
#include "read-z.h"
#include "read.h"
#include "z-build.h"

enum codec { GZIP, ZSTD, NCODECS };

static const char *const codec_name[] = { "gzip", "zstd" }; /* in the reader's messages */

/* Appends b's bytes [from, to) to out as one gzip member or zstd frame; zstd's with a block every
 * flush bytes if flush is not 0 (gzip's inflater gives out every byte it can anyway). */
static void member_flushed(enum codec c, struct pbuf *out, const struct pbuf *b, size_t from,
			   size_t to, int level, size_t flush)
{
	const uint8_t *p = b->p ? b->p + from : NULL;

	if (c == GZIP)
		pb_gzip(out, p, to - from, level);
	else
		pb_zstd_flushed(out, p, to - from, level, flush);
}

static void member(enum codec c, struct pbuf *out, const struct pbuf *b, size_t from, size_t to,
		   int level)
{
	member_flushed(c, out, b, from, to, level, 0);
}

static struct pbuf packed_flushed(enum codec c, const struct pbuf *b, int level, size_t flush)
{
	struct pbuf out = { 0 };

	member_flushed(c, &out, b, 0, b->len, level, flush);
	return out;
}

static struct pbuf packed(enum codec c, const struct pbuf *b, int level)
{
	return packed_flushed(c, b, level, 0);
}

/* How many bytes the codec's own library gets out of the first n bytes of z; *whole: whether
 * those n bytes end with a complete member or frame. */
static size_t unpackable(enum codec c, const struct pbuf *z, size_t n, bool *whole)
{
	return c == GZIP ? pb_gunzip(NULL, z->p, n, whole) : pb_unzstd(NULL, z->p, n, whole);
}

/* A profile larger than the reader's window (and than the inflater's input buffer), with an
 * extension record larger than the window in the middle. */
static void build_big(struct pbuf *b)
{
	static uint8_t ext[3 * LK_READ_BUF / 2];

	*b = (struct pbuf){ 0 };
	pb_simple_header(b);
	for (uint64_t i = 1; i <= 3000; i++) {
		pb_made_up_stack(b, i, (uint32_t)(i % 41));
		pb_alloc(b, i, 7 + i % 3, 0x10000 * i, i * 3, i);
		if (i % 2 && i > 1)
			pb_free(b, 2, 7, 0x10000 * (i - 1));
		if (i == 1500) {
			uint8_t hdr[1 + LK_VARINT_MAX] = { 0x90 };
			pb_put(b, hdr, 1 + lk_varint_put(hdr + 1, sizeof(ext)));
			for (size_t k = 0; k < sizeof(ext); k++)
				ext[k] = (uint8_t)(k * 7 + k / 251);
			pb_put(b, ext, sizeof(ext));
		}
	}
}

/* What one reading gave: every record's tag, offset and time, and a few fields, then how it
 * ended. */
struct reading {
	int open, last;             /* lk_reader_open*()'s result, then the last lk_reader_next()'s */
	size_t n;
	struct {
		uint8_t tag;
		uint64_t offset, time_ns, a, b;
	} rec[20000];
	uint64_t end_offset;
	bool trailer;
	char error[256];
};

static void record_of(struct reading *out, const struct lk_record *rec)
{
	ASSERT_TRUE(out->n < sizeof(out->rec) / sizeof(out->rec[0]));
	memset(&out->rec[out->n], 0, sizeof(out->rec[0])); /* memcmp'ed, padding included */
	out->rec[out->n].tag = (uint8_t)rec->tag;
	out->rec[out->n].offset = rec->offset;
	out->rec[out->n].time_ns = rec->time_ns;
	switch (rec->tag) {
	case LK_REC_ALLOC:
		out->rec[out->n].a = rec->alloc.block ^ rec->alloc.tid << 48;
		out->rec[out->n].b = rec->alloc.size ^ rec->alloc.stack << 32;
		break;
	case LK_REC_FREE:
		out->rec[out->n].a = rec->free.block ^ rec->free.tid << 48;
		break;
	case LK_REC_STACK:
		out->rec[out->n].a = rec->stack.nframes;
		out->rec[out->n].b = rec->stack.nframes ? rec->stack.frames[rec->stack.nframes - 1] : 0;
		break;
	case LK_REC_MODULE:
		out->rec[out->n].a = rec->module.path_len;
		out->rec[out->n].b = rec->module.path_len ? (uint8_t)rec->module.path[0] : 0;
		break;
	default:
		break;
	}
	out->n++;
}

enum way { MEMORY, FILE_, PIPE };

static void read_all(struct reading *out, struct lk_reader *rd, int open)
{
	struct lk_record rec;
	int r = open;

	out->open = open;
	out->n = 0;
	while (r >= 0 && (r = lk_reader_next(rd, &rec)) > 0)
		record_of(out, &rec);
	out->last = r;
	out->end_offset = lk_reader_end_offset(rd);
	out->trailer = lk_reader_has_trailer(rd);
	snprintf(out->error, sizeof(out->error), "%s", lk_reader_error(rd));
}

static void write_path(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ(write(fd, p, n), (ssize_t)n);
	ASSERT_EQ(close(fd), 0);
}

static void read_way(struct reading *out, const void *p, size_t n, enum way way)
{
	struct lk_reader *rd = lk_reader_new();
	char path[] = "/tmp/leek-test-unz-XXXXXX";
	int pipefd[2], status, fd;
	pid_t pid;

	ASSERT_TRUE(rd);
	switch (way) {
	case MEMORY:
		read_all(out, rd, lk_reader_open_memory(rd, p, n));
		break;
	case FILE_:
		fd = mkstemp(path);
		ASSERT_TRUE(fd >= 0);
		close(fd);
		write_path(path, p, n);
		read_all(out, rd, lk_reader_open(rd, path));
		unlink(path);
		break;
	case PIPE: /* in odd-sized writes: every short read must be handled */
		ASSERT_OK(pipe(pipefd));
		pid = fork();
		ASSERT_TRUE(pid >= 0);
		if (pid == 0) {
			close(pipefd[0]);
			for (size_t off = 0; off < n; off += 777) {
				size_t k = n - off < 777 ? n - off : 777;
				if (write(pipefd[1], (const uint8_t *)p + off, k) != (ssize_t)k)
					_exit(1);
			}
			_exit(0);
		}
		close(pipefd[1]);
		read_all(out, rd, lk_reader_open_fd(rd, pipefd[0]));
		close(pipefd[0]);
		ASSERT_EQ(waitpid(pid, &status, 0), pid);
		break;
	}
	lk_reader_free(rd);
}

/* got must be want's first n records, with the same ending if n is all of them. */
static void expect_prefix(const struct reading *got, const struct reading *want, size_t n)
{
	ASSERT_EQ(got->n, n);
	for (size_t i = 0; i < n; i++) {
		if (memcmp(&got->rec[i], &want->rec[i], sizeof(got->rec[i])) != 0)
			FAIL("record %zu (offset %llu) differs", i,
			     (unsigned long long)want->rec[i].offset);
	}
}

static void expect_same(const struct reading *got, const struct reading *want)
{
	ASSERT_EQ(got->open, want->open);
	ASSERT_EQ(got->last, want->last);
	expect_prefix(got, want, want->n);
	ASSERT_EQ(got->end_offset, want->end_offset);
	ASSERT_EQ(got->trailer, want->trailer);
	ASSERT_STREQ(got->error, want->error);
}

static struct reading raw, got;

TEST(same_records_every_way)
{
	static const int levels[NCODECS][3] = { { 1, 6, 9 }, { 1, 9, 19 } };
	struct pb_sample s;
	struct pbuf big, z;

	pb_build_sample(&s);
	build_big(&big);
	ASSERT_TRUE(big.len > 4 * LK_READ_BUF);
	for (enum codec c = GZIP; c < NCODECS; c++) {
		read_way(&raw, s.b.p, s.b.len, MEMORY);
		ASSERT_EQ(raw.last, 0);
		ASSERT_TRUE(raw.trailer);
		for (int i = 0; i < 3; i++) {
			z = packed(c, &s.b, levels[c][i]);
			for (enum way w = MEMORY; w <= PIPE; w++) {
				read_way(&got, z.p, z.len, w);
				expect_same(&got, &raw);
			}
			free(z.p);
		}

		read_way(&raw, big.p, big.len, MEMORY);
		ASSERT_EQ(raw.last, 0);
		z = packed(c, &big, 1);
		for (enum way w = MEMORY; w <= PIPE; w++) {
			read_way(&got, z.p, z.len, w);
			expect_same(&got, &raw);
		}
		free(z.p);
	}
	free(big.p);
	free(s.b.p);
}

/* The first pass of a report: lk_reader_skip() over a compressed file, then a second reader over
 * the same descriptor from its start (profile-input.c's rewind), must agree with the raw file. */
TEST(skip_and_reread)
{
	struct pbuf big, z;
	uint64_t t, traw = 0, tz = 0;
	size_t nraw = 0, nz = 0;
	int r;

	build_big(&big);
	struct lk_reader *a = lk_reader_new();
	ASSERT_OK(lk_reader_open_memory(a, big.p, big.len));
	while ((r = lk_reader_skip(a, &t)) > 0)
		nraw++, traw = t;
	ASSERT_EQ(r, 0);
	for (enum codec c = GZIP; c < NCODECS; c++) {
		char path[] = "/tmp/leek-test-unz-XXXXXX";
		int fd = mkstemp(path);

		ASSERT_TRUE(fd >= 0);
		z = packed(c, &big, 1);
		write_path(path, z.p, z.len);
		unlink(path);
		for (int pass = 0; pass < 2; pass++) {
			struct lk_reader *b = lk_reader_new();
			ASSERT_EQ(lseek(fd, 0, SEEK_SET), 0);
			ASSERT_OK(lk_reader_open_fd(b, fd));
			for (nz = 0; (r = lk_reader_skip(b, &t)) > 0; nz++)
				tz = t;
			ASSERT_EQ(r, 0);
			ASSERT_EQ(nz, nraw);
			ASSERT_EQ(tz, traw);
			ASSERT_EQ(lk_reader_end_offset(b), lk_reader_end_offset(a));
			lk_reader_free(b);
		}
		close(fd);
		free(z.p);
	}
	lk_reader_free(a);
	free(big.p);
}

/* gzip allows members one after the other (gzip -c a >x; gzip -c b >>x), zstd frames (zstd -c a
 * >x; zstd -c b >>x): split anywhere, even inside a record or the header, with an empty member or
 * frame among them, the profile is the same. */
TEST(concatenated_members)
{
	struct pb_sample s;
	struct pbuf big, z;

	pb_build_sample(&s);
	build_big(&big);
	for (enum codec c = GZIP; c < NCODECS; c++) {
		read_way(&raw, s.b.p, s.b.len, MEMORY);
		for (size_t cut = 0; cut <= s.b.len; cut++) {
			z = (struct pbuf){ 0 };
			member(c, &z, &s.b, 0, cut, 1);
			member(c, &z, &s.b, cut, cut, 6);
			member(c, &z, &s.b, cut, s.b.len, 6);
			read_way(&got, z.p, z.len, MEMORY);
			expect_same(&got, &raw);
			free(z.p);
		}

		/* Members larger than the window, read from a pipe. */
		read_way(&raw, big.p, big.len, MEMORY);
		z = (struct pbuf){ 0 };
		member(c, &z, &big, 0, big.len / 3, 1);
		member(c, &z, &big, big.len / 3, big.len / 3 + 5, 1);
		member(c, &z, &big, big.len / 3 + 5, big.len, 9);
		read_way(&got, z.p, z.len, PIPE);
		expect_same(&got, &raw);
		free(z.p);
	}
	free(big.p);
	free(s.b.p);
}

/* Records of want that end within the first u bytes. */
static size_t whole_records(const struct reading *want, size_t u, uint64_t end)
{
	size_t n = 0;

	while (n < want->n && (n + 1 < want->n ? want->rec[n + 1].offset : end) <= u)
		n++;
	return n;
}

/* Cut at compressed byte c: the records whole in what the codec's own library gets out of the
 * bytes left, then the end, as a crashed raw profile; or, while the header itself is incomplete,
 * an error. A cut at the end of a member or frame leaves a complete stream, which reads exactly as
 * its raw bytes would: a record cut there is corruption, as in a raw file. */
static void check_cut(enum codec codec, const struct pbuf *z, size_t c, const struct reading *want,
		      uint64_t len, size_t header_size, enum way way)
{
	bool whole;
	size_t u = unpackable(codec, z, c, &whole), n = whole_records(want, u, len);

	read_way(&got, z->p, c, way);
	if (u < header_size) {
		ASSERT_TRUE(got.open == -EMEDIUMTYPE || got.open == -EBADMSG);
		ASSERT_TRUE(*got.error);
		return;
	}
	if (whole && n < want->n && want->rec[n].offset < u) {
		expect_prefix(&got, want, n);
		ASSERT_EQ(got.last, -EBADMSG);
		ASSERT_CONTAINS(got.error, "cut by the end of the file");
		return;
	}
	if (got.last != 0 || got.n != n)
		FAIL("%s cut at compressed byte %zu (%zu decompressed): %zu records, last %d (%s); "
		     "want %zu records and 0", codec_name[codec], c, u, got.n, got.last, got.error,
		     n);
	expect_prefix(&got, want, n);
	ASSERT_STREQ(got.error, "");
	if (u >= len) { /* only gzip's trailer or zstd's checksum is missing: every record */
		ASSERT_EQ(got.trailer, want->trailer);
		return;
	}
	ASSERT_TRUE(!got.trailer);
	ASSERT_EQ(got.end_offset, n ? (n < want->n ? want->rec[n].offset : len) : header_size);
}

/* How many of the cuts of z left part of the profile, not all of it: a cut that reads as a
 * crashed profile. Makes sure that a test of cuts tests them. */
static size_t partial_cuts(enum codec codec, const struct pbuf *z, size_t step, size_t header_size,
			   uint64_t len)
{
	size_t n = 0;
	bool whole;

	for (size_t c = 0; c < z->len; c += step) {
		size_t u = unpackable(codec, z, c, &whole);
		n += u > header_size && u < len;
	}
	return n;
}

TEST(cut_at_every_byte)
{
	struct pb_sample s;
	struct pbuf z;

	pb_build_sample(&s);
	read_way(&raw, s.b.p, s.b.len, MEMORY);
	for (enum codec c = GZIP; c < NCODECS; c++) {
		for (int level = 1; level <= 9; level += 8) {
			/* zstd gives out a block once it is whole: many small ones here */
			for (size_t flush = 0; flush <= (c == ZSTD ? 37 : 0); flush += 37) {
				z = packed_flushed(c, &s.b, level, flush);
				if (flush)
					ASSERT_TRUE(partial_cuts(c, &z, 1, s.header_size, s.b.len) >
						    s.nrec);
				for (size_t k = 0; k < z.len; k++)
					check_cut(c, &z, k, &raw, s.b.len, s.header_size, MEMORY);
				free(z.p);
			}
		}
		/* Cut in a second member or frame too, from a file. */
		z = (struct pbuf){ 0 };
		member_flushed(c, &z, &s.b, 0, s.b.len / 2, 1, 29);
		member_flushed(c, &z, &s.b, s.b.len / 2, s.b.len, 1, 29);
		for (size_t k = 0; k < z.len; k++)
			check_cut(c, &z, k, &raw, s.b.len, s.header_size, k % 5 ? MEMORY : FILE_);
		free(z.p);
	}
	free(s.b.p);
}

/* A large profile cut in many places: inside STACKs, ALLOCs, FREEs and the extension record
 * that is larger than the window, and from a pipe. zstd's frame: in its own blocks (128 KiB), and
 * in blocks of 4099 bytes. */
TEST(cut_big)
{
	struct pbuf big, z;
	size_t header_size;

	build_big(&big);
	read_way(&raw, big.p, big.len, MEMORY);
	header_size = raw.rec[0].offset;
	for (enum codec c = GZIP; c < NCODECS; c++) {
		for (size_t flush = 0; flush <= (c == ZSTD ? 4099 : 0); flush += 4099) {
			z = packed_flushed(c, &big, 1, flush);
			ASSERT_TRUE(partial_cuts(c, &z, 997, header_size, big.len) > 2);
			for (size_t k = 0; k < z.len; k += 997)
				check_cut(c, &z, k, &raw, big.len, header_size,
					  k % 3 ? MEMORY : PIPE);
			free(z.p);
		}
	}
	free(big.p);
}

static void expect_error(const struct pbuf *z, const char *want)
{
	read_way(&got, z->p, z->len, MEMORY);
	ASSERT_TRUE(got.open == -EBADMSG || got.last == -EBADMSG);
	ASSERT_STREQ(got.error, want);
	read_way(&got, z->p, z->len, FILE_);
	ASSERT_TRUE(got.open == -EBADMSG || got.last == -EBADMSG);
	ASSERT_STREQ(got.error, want);
}

/* The offset of the first block header of the zstd frame at p (RFC 8878, 3.1.1.1): after the
 * magic, the frame header descriptor, the window descriptor unless it is a single segment, the
 * dictionary id and the content size. */
static size_t zstd_first_block(const uint8_t *p, size_t n)
{
	static const uint8_t did[] = { 0, 1, 2, 4 }, fcs[] = { 0, 2, 4, 8 };
	uint8_t fhd;
	size_t k;

	ASSERT_TRUE(n > 5);
	fhd = p[4];
	k = 5 + !(fhd & 0x20) + did[fhd & 3] + fcs[fhd >> 6] + (fhd >> 6 == 0 && (fhd & 0x20));
	ASSERT_TRUE(k + 3 <= n);
	return k;
}

/* The size of the block whose 3-byte header is at p, header included. */
static size_t zstd_block_size(const uint8_t *p)
{
	uint32_t h = p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16;
	uint32_t type = h >> 1 & 3;

	ASSERT_TRUE(type != 3);
	return 3 + (type == 1 ? 1 : h >> 3); /* an RLE block: its size is the bytes it makes */
}

/* A zstd block header of the reserved type 3 (RFC 8878, 3.1.1.2.2). */
#define ZSTD_RESERVED_BLOCK 0x06

/* Breaks the first block of the gzip member or zstd frame at p: zlib writes a 10-byte header
 * with no name, so byte 10 starts the first deflate block, and 0x07 makes it final (1) of the
 * reserved type 3; zstd's first block header gets the reserved type. */
static void break_first_block(enum codec c, uint8_t *p, size_t n)
{
	if (c == GZIP)
		p[10] = 0x07;
	else
		p[zstd_first_block(p, n)] |= ZSTD_RESERVED_BLOCK;
}

/* A damaged first block, of the only member or frame, then of the second: the first one's bytes
 * were read (both codecs return at the end of a member or frame, so the offset is exact). */
TEST(corrupt_first_block)
{
	static const char *const words[] = { "invalid block type", "Data corruption detected" };
	struct pb_sample s;
	char want[256];

	pb_build_sample(&s);
	for (enum codec c = 0; c < NCODECS; c++) {
		struct pbuf z = packed(c, &s.b, 1);
		size_t first;

		break_first_block(c, z.p, z.len);
		snprintf(want, sizeof(want), "%s data corrupt after uncompressed offset 0: %s",
			 codec_name[c], words[c]);
		expect_error(&z, want);
		free(z.p);

		z = (struct pbuf){ 0 };
		member(c, &z, &s.b, 0, s.off[5], 1);
		first = z.len;
		member(c, &z, &s.b, s.off[5], s.b.len, 1);
		break_first_block(c, z.p + first, z.len - first);
		snprintf(want, sizeof(want), "%s data corrupt after uncompressed offset %zu: %s",
			 codec_name[c], s.off[5], words[c]);
		expect_error(&z, want);
		free(z.p);
	}
	free(s.b.p);
}

/* z, whole members or frames of codec c holding b, followed by bytes that are not one: "LEEK",
 * its first byte alone, and a member or frame of the other codec. Each fails with want. z is as
 * it was after. */
static void expect_trailing_junk(enum codec c, struct pbuf *z, const struct pbuf *b,
				 const char *want)
{
	size_t end = z->len;

	pb_put(z, "LEEK", 4);
	expect_error(z, want);
	z->len = end + 1;
	expect_error(z, want);
	z->len = end;
	member(c == GZIP ? ZSTD : GZIP, z, b, 0, b->len, 1);
	expect_error(z, want);
	z->len = end;
}

TEST(corrupt_gzip)
{
	struct pb_sample s;
	struct pbuf gz;
	char want[256];

	pb_build_sample(&s);
	/* The CRC-32, then the length, at the end of the member: found after the last record. */
	gz = packed(GZIP, &s.b, 1);
	gz.p[gz.len - 8] ^= 1;
	snprintf(want, sizeof(want),
		 "gzip data corrupt after uncompressed offset %zu: incorrect data check", s.b.len);
	expect_error(&gz, want);
	gz.p[gz.len - 8] ^= 1;
	gz.p[gz.len - 1] ^= 1;
	snprintf(want, sizeof(want),
		 "gzip data corrupt after uncompressed offset %zu: incorrect length check", s.b.len);
	expect_error(&gz, want);
	gz.p[gz.len - 1] ^= 1;

	/* Bytes after the last member that are not a member: anything, or a zstd frame. */
	snprintf(want, sizeof(want),
		 "gzip data corrupt after uncompressed offset %zu: bytes after the last member "
		 "that are not another gzip member", s.b.len);
	expect_trailing_junk(GZIP, &gz, &s.b, want);
	free(gz.p);
	free(s.b.p);
}

/* The reader on damaged zstd data, damage that zstd finds where the uncompressed profile reaches
 * `at` (from memory and from a file): "zstd data corrupt after uncompressed offset N: what", with
 * N exactly `at`, and every record of want that ends before N read. On an error
 * ZSTD_decompressStream() hands back nothing it decoded in that call, so the reader gives it no
 * more than one block's input a call (read-z.c): a version that gives it more loses the records
 * of the blocks before the damaged one and names an earlier offset. Returns N from the file. */
static size_t expect_zstd_error(const struct pbuf *z, const char *what, size_t at,
				const struct reading *want)
{
	static const char prefix[] = "zstd data corrupt after uncompressed offset ";
	unsigned long long n = 0;

	for (enum way w = MEMORY; w <= FILE_; w++) {
		char tail[128], *end;

		read_way(&got, z->p, z->len, w);
		ASSERT_TRUE(got.open == -EBADMSG || got.last == -EBADMSG);
		if (strncmp(got.error, prefix, strlen(prefix)) != 0)
			FAIL("\"%s\" is not \"%sN: %s\"", got.error, prefix, what);
		n = strtoull(got.error + strlen(prefix), &end, 10);
		snprintf(tail, sizeof(tail), ": %s", what);
		ASSERT_STREQ(end, tail);
		if (n != at)
			FAIL("\"%s\": the damage is at %zu", got.error, at);
		ASSERT_EQ(got.n, whole_records(want, (size_t)n, want->end_offset));
		expect_prefix(&got, want, got.n);
	}
	return (size_t)n;
}

TEST(corrupt_zstd)
{
	struct pb_sample s;
	struct pbuf z;
	size_t at, blocks = 0;
	char want[256];

	pb_build_sample(&s);
	read_way(&raw, s.b.p, s.b.len, MEMORY);
	/* In a frame of blocks of 37 bytes, each block in turn (the last, empty, block ends the
	 * frame). */
	z = packed_flushed(ZSTD, &s.b, 9, 37);
	at = zstd_first_block(z.p, z.len);
	while (at < z.len - 4) { /* 4: the checksum */
		size_t size = zstd_block_size(z.p + at);
		uint8_t saved = z.p[at];
		z.p[at] |= ZSTD_RESERVED_BLOCK;
		expect_zstd_error(&z, "Data corruption detected",
				  blocks * 37 < s.b.len ? blocks * 37 : s.b.len, &raw);
		z.p[at] = saved;
		at += size;
		blocks++;
	}
	ASSERT_EQ(at, z.len - 4);
	ASSERT_TRUE(blocks > s.b.len / 37);
	read_way(&got, z.p, z.len, MEMORY); /* each block restored */
	expect_same(&got, &raw);

	/* The content checksum, at the end of the frame: found after the last record. */
	z.p[z.len - 1] ^= 0x40;
	expect_zstd_error(&z, "Restored data doesn't match checksum", s.b.len, &raw);
	z.p[z.len - 1] ^= 0x40;

	/* Bytes after the last frame that are not a frame: anything, even one byte, or a gzip
	 * member. zstd returns at the end of a frame, so the offset is exact. */
	snprintf(want, sizeof(want), "zstd data corrupt after uncompressed offset %zu: Unknown "
		 "frame descriptor", s.b.len);
	expect_trailing_junk(ZSTD, &z, &s.b, want);
	free(z.p);
	free(s.b.p);
}

/* Damage inside a compressed block of a large profile, wherever zstd's own decoder says that it
 * is damage (elsewhere only the checksum tells): leek's reader must say what zstd says, after no
 * more than the bytes before that block. */
TEST(corrupt_zstd_block)
{
	static uint8_t buf[1 << 17];
	struct pbuf big, z;
	size_t at, size, tried = 0, found = 0;

	build_big(&big);
	read_way(&raw, big.p, big.len, MEMORY);
	z = packed(ZSTD, &big, 1);
	at = zstd_first_block(z.p, z.len);
	at += zstd_block_size(z.p + at); /* the second block: after the first one's 128 KiB */
	size = zstd_block_size(z.p + at);
	ASSERT_EQ(z.p[at] >> 1 & 3, 2); /* compressed */
	for (size_t k = 3; k < size && found < 24; k += 1 + size / 97, tried++) {
		ZSTD_DStream *ds = ZSTD_createDStream();
		ZSTD_inBuffer in = { z.p, z.len, 0 };
		size_t r;

		z.p[at + k] ^= 0xa5;
		do {
			ZSTD_outBuffer o = { buf, sizeof(buf), 0 };
			r = ZSTD_decompressStream(ds, &o, &in);
		} while (!ZSTD_isError(r) && r != 0);
		ZSTD_freeDStream(ds);
		if (ZSTD_isError(r) && ZSTD_getErrorCode(r) != ZSTD_error_checksum_wrong) {
			expect_zstd_error(&z, ZSTD_getErrorName(r), 128 * 1024, &raw);
			found++;
		}
		z.p[at + k] ^= 0xa5;
	}
	if (found < 3)
		FAIL("%zu of %zu changes that zstd finds", found, tried);
	free(z.p);
	free(big.p);
}

/* Damage that only the checksum finds, where the data it makes has a zero tag (the end of a
 * crashed profile, in a raw file): the stream is read on to its checksum, so that the reader says
 * it is damaged, after every record before that zero, rather than end the profile there as if its
 * writer had crashed. The stream is the profile with record 5's tag zeroed, compressed, and the
 * whole profile's checksum in place of its own. */
TEST(damage_that_looks_like_the_end)
{
	static const char *const words[] = { "incorrect data check",
					     "Restored data doesn't match checksum" };
	struct pb_sample s;
	char want[256];

	pb_build_sample(&s);
	read_way(&raw, s.b.p, s.b.len, MEMORY);
	for (enum codec c = 0; c < NCODECS; c++) {
		struct pbuf zeroed = { 0 }, good = packed(c, &s.b, 1), bad;
		size_t sum = c == GZIP ? 8 : 4; /* gzip: CRC-32, length; zstd: XXH64's low half */

		pb_put(&zeroed, s.b.p, s.b.len);
		zeroed.p[s.off[5]] = 0;
		bad = packed(c, &zeroed, 1);
		read_way(&got, bad.p, bad.len, MEMORY); /* its own checksum: a crashed profile */
		ASSERT_EQ(got.last, 0);
		ASSERT_EQ(got.end_offset, s.off[5]);
		memcpy(bad.p + bad.len - sum, good.p + good.len - sum, sum);
		snprintf(want, sizeof(want), "%s data corrupt after uncompressed offset %zu: %s",
			 codec_name[c], s.b.len, words[c]);
		expect_error(&bad, want);
		for (enum way w = MEMORY; w <= PIPE; w++) {
			read_way(&got, bad.p, bad.len, w);
			ASSERT_EQ(got.last, -EBADMSG);
			expect_prefix(&got, &raw, 5);
		}
		free(zeroed.p);
		free(good.p);
		free(bad.p);
	}
	free(s.b.p);
}

/* A frame names its window: leek reads up to 2^LK_ZSTD_WINDOW_LOG_MAX bytes, as zstd(1) does by
 * default, and refuses more before it takes the memory. */
TEST(zstd_window)
{
	struct pb_sample s;
	struct pbuf z;

	pb_build_sample(&s);
	read_way(&raw, s.b.p, s.b.len, MEMORY);
	z = packed(ZSTD, &s.b, 1);
	/* Magic, then the frame header descriptor: no content size, not a single segment (so a
	 * window descriptor follows), a checksum. The window: 2^(10 + exponent) (no mantissa). */
	ASSERT_EQ(z.p[4], 0x04);
	z.p[5] = (LK_ZSTD_WINDOW_LOG_MAX - 10) << 3;
	read_way(&got, z.p, z.len, MEMORY);
	expect_same(&got, &raw);
	z.p[5] = (LK_ZSTD_WINDOW_LOG_MAX + 1 - 10) << 3;
	expect_error(&z, "zstd data corrupt after uncompressed offset 0: Frame requires too much "
			 "memory for decoding");
	free(z.p);
	free(s.b.p);
}

TEST(empty_and_foreign)
{
	struct pbuf empty = { 0 }, text = { 0 }, z;
	char want[128];

	pb_put(&text, "hello, world\n", 13);
	for (enum codec c = GZIP; c < NCODECS; c++) {
		z = packed(c, &empty, 1);
		read_way(&got, z.p, z.len, MEMORY);
		ASSERT_EQ(got.open, -EMEDIUMTYPE);
		snprintf(want, sizeof(want), "not a leek profile (%s data empty)", codec_name[c]);
		ASSERT_STREQ(got.error, want);
		snprintf(want, sizeof(want),
			 "not a leek profile (%s data cut short before any data)", codec_name[c]);
		for (size_t n = c == GZIP ? 2 : 4; n < z.len; n++) { /* from the magic on */
			read_way(&got, z.p, n, n % 2 ? FILE_ : PIPE);
			ASSERT_EQ(got.open, -EMEDIUMTYPE);
			ASSERT_STREQ(got.error, want);
		}
		free(z.p);

		/* A compressed file that is not a profile is told apart by what it holds. */
		z = packed(c, &text, 6);
		read_way(&got, z.p, z.len, PIPE);
		ASSERT_EQ(got.open, -EMEDIUMTYPE);
		ASSERT_STREQ(got.error, "not a leek profile (bad magic)");
		free(z.p);
	}
	free(text.p);
}
