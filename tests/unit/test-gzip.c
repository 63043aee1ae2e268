/* test-gzip.c: reading gzip-compressed profiles (src/cli/read-gz.c, read.c's window).
 *
 * The raw profile read by the same reader is the reference: compressed, in one member or several,
 * from memory, a file or a pipe, it must give the same records at the same (uncompressed)
 * offsets. Cut at every compressed byte it must read exactly the records that the surviving
 * bytes hold whole, and end like a crashed raw profile; damaged, it must fail with the gzip error
 * and the uncompressed offset reached. Runs under ASan and UBSan too.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "build-profile.h"
#include "harness.h"
#include "gz-build.h"
#include "read.h"

/* Appends b's bytes [from, to) to out as one gzip member. */
static void gz_member(struct pbuf *out, const struct pbuf *b, size_t from, size_t to, int level)
{
	pb_gzip(out, b->p ? b->p + from : NULL, to - from, level);
}

static struct pbuf gz_all(const struct pbuf *b, int level)
{
	struct pbuf out = { 0 };

	gz_member(&out, b, 0, b->len, level);
	return out;
}

/* How many bytes zlib gets out of the first n bytes of a gzip stream (the members it holds);
 * *whole: whether those n bytes end with a complete member. */
static size_t inflatable(const struct pbuf *gz, size_t n, bool *whole)
{
	static uint8_t buf[1 << 16];
	z_stream zs = { 0 };
	size_t total = 0;
	int k = Z_OK;

	ASSERT_EQ(inflateInit2(&zs, 16 + MAX_WBITS), Z_OK);
	zs.next_in = gz->p;
	zs.avail_in = (uInt)n;
	for (;;) {
		zs.next_out = buf;
		zs.avail_out = sizeof(buf);
		k = inflate(&zs, Z_NO_FLUSH);
		total += sizeof(buf) - zs.avail_out;
		if (k == Z_STREAM_END && zs.avail_in > 0)
			inflateReset(&zs); /* the next member */
		else if (k != Z_OK || (zs.avail_out > 0 && zs.avail_in == 0))
			break; /* the end of a member or of the input, or no progress */
	}
	*whole = k == Z_STREAM_END;
	inflateEnd(&zs);
	return total;
}

/* A profile larger than the reader's window (and than the inflater's input buffer), with an
 * extension record larger than the window in the middle. */
static void build_big(struct pbuf *b)
{
	static uint8_t ext[3 * LK_READ_BUF / 2];
	uint64_t frames[40];

	*b = (struct pbuf){ 0 };
	pb_simple_header(b);
	for (uint64_t i = 1; i <= 3000; i++) {
		for (int k = 0; k < 40; k++)
			frames[k] = 0x400000 + i * 0x40 + (uint64_t)k * 0x1000;
		PB_REC(b, lk_rec_stack(rec, i, frames, (uint32_t)(i % 41)));
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
	char path[] = "/tmp/leek-test-gz-XXXXXX";
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
			lk_test_fail(__FILE__, __LINE__, "record %zu (offset %llu) differs", i,
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
	struct pb_sample s;
	struct pbuf big, gz;

	pb_build_sample(&s);
	read_way(&raw, s.b.p, s.b.len, MEMORY);
	ASSERT_EQ(raw.last, 0);
	ASSERT_TRUE(raw.trailer);
	for (int level = 1; level <= 9; level += 8) {
		gz = gz_all(&s.b, level);
		for (enum way w = MEMORY; w <= PIPE; w++) {
			read_way(&got, gz.p, gz.len, w);
			expect_same(&got, &raw);
		}
		free(gz.p);
	}

	build_big(&big);
	ASSERT_TRUE(big.len > 4 * LK_READ_BUF);
	read_way(&raw, big.p, big.len, MEMORY);
	ASSERT_EQ(raw.last, 0);
	gz = gz_all(&big, 1);
	for (enum way w = MEMORY; w <= PIPE; w++) {
		read_way(&got, gz.p, gz.len, w);
		expect_same(&got, &raw);
	}
	free(gz.p);
	free(big.p);
	free(s.b.p);
}

/* The first pass of a report: lk_reader_skip() over a compressed file, then a second reader over
 * the same descriptor from its start (profile-input.c's rewind), must agree with the raw file. */
TEST(skip_and_reread)
{
	char path[] = "/tmp/leek-test-gz-XXXXXX";
	struct pbuf big, gz;
	uint64_t t, traw = 0, tgz = 0;
	size_t nraw = 0, ngz = 0;
	int fd = mkstemp(path), r;

	ASSERT_TRUE(fd >= 0);
	build_big(&big);
	gz = gz_all(&big, 1);
	write_path(path, gz.p, gz.len);
	unlink(path);

	struct lk_reader *a = lk_reader_new();
	ASSERT_OK(lk_reader_open_memory(a, big.p, big.len));
	while ((r = lk_reader_skip(a, &t)) > 0)
		nraw++, traw = t;
	ASSERT_EQ(r, 0);
	for (int pass = 0; pass < 2; pass++) {
		struct lk_reader *b = lk_reader_new();
		ASSERT_EQ(lseek(fd, 0, SEEK_SET), 0);
		ASSERT_OK(lk_reader_open_fd(b, fd));
		for (ngz = 0; (r = lk_reader_skip(b, &t)) > 0; ngz++)
			tgz = t;
		ASSERT_EQ(r, 0);
		ASSERT_EQ(ngz, nraw);
		ASSERT_EQ(tgz, traw);
		ASSERT_EQ(lk_reader_end_offset(b), lk_reader_end_offset(a));
		lk_reader_free(b);
	}
	lk_reader_free(a);
	close(fd);
	free(gz.p);
	free(big.p);
}

/* gzip allows members one after the other (gzip -c a >x; gzip -c b >>x): split anywhere, even
 * inside a record or the header, with an empty member among them, the profile is the same. */
TEST(concatenated_members)
{
	struct pb_sample s;
	struct pbuf big, gz;

	pb_build_sample(&s);
	read_way(&raw, s.b.p, s.b.len, MEMORY);
	for (size_t cut = 0; cut <= s.b.len; cut++) {
		gz = (struct pbuf){ 0 };
		gz_member(&gz, &s.b, 0, cut, 1);
		gz_member(&gz, &s.b, cut, cut, 6);
		gz_member(&gz, &s.b, cut, s.b.len, 6);
		read_way(&got, gz.p, gz.len, MEMORY);
		expect_same(&got, &raw);
		free(gz.p);
	}

	/* Members larger than the window, read from a pipe. */
	build_big(&big);
	read_way(&raw, big.p, big.len, MEMORY);
	gz = (struct pbuf){ 0 };
	gz_member(&gz, &big, 0, big.len / 3, 1);
	gz_member(&gz, &big, big.len / 3, big.len / 3 + 5, 1);
	gz_member(&gz, &big, big.len / 3 + 5, big.len, 9);
	read_way(&got, gz.p, gz.len, PIPE);
	expect_same(&got, &raw);
	free(gz.p);
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

/* Cut at compressed byte c: the records whole in what zlib can inflate, then the end, as a crashed
 * raw profile; or, while the header itself is incomplete, an error. A cut at the end of a member
 * leaves a complete gzip stream, which reads exactly as its raw bytes would: a record cut there
 * is corruption, as in a raw file. */
static void check_cut(const struct pbuf *gz, size_t c, const struct reading *want, uint64_t len,
		      size_t header_size, enum way way)
{
	bool whole;
	size_t u = inflatable(gz, c, &whole), n = whole_records(want, u, len);

	read_way(&got, gz->p, c, way);
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
		lk_test_fail(__FILE__, __LINE__,
			     "cut at compressed byte %zu (%zu inflatable): %zu records, last %d "
			     "(%s); want %zu records and 0", c, u, got.n, got.last, got.error, n);
	expect_prefix(&got, want, n);
	ASSERT_STREQ(got.error, "");
	if (u >= len) { /* only the gzip trailer is missing: every record is there */
		ASSERT_EQ(got.trailer, want->trailer);
		return;
	}
	ASSERT_TRUE(!got.trailer);
	ASSERT_EQ(got.end_offset, n ? (n < want->n ? want->rec[n].offset : len) : header_size);
}

TEST(cut_at_every_byte)
{
	struct pb_sample s;
	struct pbuf gz;

	pb_build_sample(&s);
	read_way(&raw, s.b.p, s.b.len, MEMORY);
	for (int level = 1; level <= 9; level += 8) {
		gz = gz_all(&s.b, level);
		for (size_t c = 0; c < gz.len; c++)
			check_cut(&gz, c, &raw, s.b.len, s.header_size, MEMORY);
		free(gz.p);
	}
	/* Cut in a second member too, from a file. */
	gz = (struct pbuf){ 0 };
	gz_member(&gz, &s.b, 0, s.b.len / 2, 1);
	gz_member(&gz, &s.b, s.b.len / 2, s.b.len, 1);
	for (size_t c = 0; c < gz.len; c++)
		check_cut(&gz, c, &raw, s.b.len, s.header_size, c % 5 ? MEMORY : FILE_);
	free(gz.p);
	free(s.b.p);
}

/* A large profile cut in many places: inside STACKs, ALLOCs, FREEs and the extension record
 * that is larger than the window, and from a pipe. */
TEST(cut_big)
{
	struct pbuf big, gz;
	size_t header_size;

	build_big(&big);
	read_way(&raw, big.p, big.len, MEMORY);
	header_size = raw.rec[0].offset;
	gz = gz_all(&big, 1);
	for (size_t c = 0; c < gz.len; c += 997)
		check_cut(&gz, c, &raw, big.len, header_size, c % 3 ? MEMORY : PIPE);
	free(gz.p);
	free(big.p);
}

static void expect_error(const struct pbuf *gz, const char *want)
{
	read_way(&got, gz->p, gz->len, MEMORY);
	ASSERT_TRUE(got.open == -EBADMSG || got.last == -EBADMSG);
	ASSERT_STREQ(got.error, want);
	read_way(&got, gz->p, gz->len, FILE_);
	ASSERT_TRUE(got.open == -EBADMSG || got.last == -EBADMSG);
	ASSERT_STREQ(got.error, want);
}

TEST(corrupt)
{
	struct pb_sample s;
	struct pbuf gz;
	size_t first;
	char want[256];

	pb_build_sample(&s);
	/* zlib writes a 10-byte header with no name: byte 10 starts the first deflate block, and
	 * 0x07 makes it final (1) of the reserved type 3. */
	gz = gz_all(&s.b, 1);
	gz.p[10] = 0x07;
	expect_error(&gz, "gzip data corrupt after uncompressed offset 0: invalid block type");
	free(gz.p);

	/* The same in a second member: the first one's bytes were read. */
	gz = (struct pbuf){ 0 };
	gz_member(&gz, &s.b, 0, s.off[5], 1);
	first = gz.len;
	gz_member(&gz, &s.b, s.off[5], s.b.len, 1);
	gz.p[first + 10] = 0x07;
	snprintf(want, sizeof(want),
		 "gzip data corrupt after uncompressed offset %zu: invalid block type", s.off[5]);
	expect_error(&gz, want);
	free(gz.p);

	/* The CRC-32, then the length, at the end of the member: found after the last record. */
	gz = gz_all(&s.b, 1);
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

	/* Bytes after the last member that are not a member. */
	pb_put(&gz, "LEEK", 4);
	snprintf(want, sizeof(want),
		 "gzip data corrupt after uncompressed offset %zu: bytes after the last member "
		 "that are not another gzip member", s.b.len);
	expect_error(&gz, want);
	free(gz.p);
	free(s.b.p);
}

TEST(empty_and_foreign)
{
	struct pbuf empty = { 0 }, gz = { 0 };

	gz_member(&gz, &empty, 0, 0, 1);
	read_way(&got, gz.p, gz.len, MEMORY);
	ASSERT_EQ(got.open, -EMEDIUMTYPE);
	ASSERT_STREQ(got.error, "not a leek profile (gzip data empty)");
	read_way(&got, gz.p, 5, FILE_);
	ASSERT_EQ(got.open, -EMEDIUMTYPE);
	ASSERT_STREQ(got.error, "not a leek profile (gzip data cut short before any data)");
	free(gz.p);

	/* A gzip file that is not a profile is told apart by what it holds. */
	struct pbuf text = { 0 };
	pb_put(&text, "hello, world\n", 13);
	gz = gz_all(&text, 6);
	read_way(&got, gz.p, gz.len, PIPE);
	ASSERT_EQ(got.open, -EMEDIUMTYPE);
	ASSERT_STREQ(got.error, "not a leek profile (bad magic)");
	free(gz.p);
	free(text.p);
}
