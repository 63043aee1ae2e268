/* test-format.c: the profile format round trip and the reader's robustness (src/cli/read/read.c).
 *
 * A profile built with record.h's encoders must read back field for field, from memory, a file
 * and a pipe. Cut at every byte, padded with zeros, flipped at random or full of noise, it must
 * give a clean partial result or an error naming an offset: never a crash or a hang (the
 * harness forks each test and arms an alarm, and the ASan build runs this too).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "build-profile.h"
#include "harness.h"
#include "read.h"

static struct lk_reader *open_mem(const void *p, size_t n, int *ret)
{
	struct lk_reader *rd = lk_reader_new();

	ASSERT_TRUE(rd);
	*ret = lk_reader_open_memory(rd, p, n);
	return rd;
}

/* Reads to the end; returns the last lk_reader_next() result and counts the records. */
static int drain(struct lk_reader *rd, size_t *count)
{
	struct lk_record rec;
	int r;

	*count = 0;
	while ((r = lk_reader_next(rd, &rec)) > 0)
		++*count;
	return r;
}

static void check_sample(struct lk_reader *rd, const struct pb_sample *s)
{
	static const uint64_t frames1[] = PB_FRAMES1;
	static const char cmdline[] = PB_CMDLINE;
	const struct lk_profile_header *h = lk_reader_header(rd);
	struct lk_record rec;
	size_t i = 0;

	ASSERT_TRUE(h);
	ASSERT_EQ(h->h.version, LK_FORMAT_VERSION);
	ASSERT_EQ(h->h.flags, LK_HDR_FORKED);
	ASSERT_EQ(h->h.pid, 4242);
	ASSERT_EQ(h->h.ppid, 4241);
	ASSERT_EQ(h->h.period, 524288);
	ASSERT_EQ(h->h.start_realtime_ns, 1700000000123456789);
	ASSERT_EQ(h->h.start_monotonic_ns, 1000000000);
	ASSERT_EQ(h->h.session, 77);
	ASSERT_EQ(h->h.seed, 99);
	ASSERT_EQ(h->h.header_size, s->header_size);
	ASSERT_STREQ(h->exe, "/usr/bin/prog");
	ASSERT_EQ(h->h.cmdline_len, sizeof(cmdline) - 1);
	ASSERT_TRUE(memcmp(h->cmdline, cmdline, sizeof(cmdline)) == 0);

#define NEXT(t)                                                                                    \
	do {                                                                                       \
		ASSERT_EQ(lk_reader_next(rd, &rec), 1);                                            \
		ASSERT_EQ(rec.tag, t);                                                             \
		ASSERT_EQ(rec.offset, s->off[i]);                                                  \
		i++;                                                                               \
	} while (0)
	NEXT(LK_REC_MODULE);
	ASSERT_EQ(rec.time_ns, 5);
	ASSERT_EQ(rec.module.id, 1);
	ASSERT_EQ(rec.module.base, 0x555555554000);
	ASSERT_EQ(rec.module.nseg, 2);
	ASSERT_EQ(rec.module.seg[1].start, 0x2000);
	ASSERT_EQ(rec.module.seg[1].len, 0x5a0);
	ASSERT_EQ(rec.module.build_id_len, 20);
	ASSERT_EQ(rec.module.build_id[19], 0xa0 + 19);
	ASSERT_EQ(rec.module.path_len, 13);
	ASSERT_STREQ(rec.module.path, "/usr/bin/prog");
	NEXT(LK_REC_MODULE);
	ASSERT_EQ(rec.time_ns, 5);
	ASSERT_EQ(rec.module.id, 2);
	ASSERT_EQ(rec.module.nseg, 1);
	ASSERT_EQ(rec.module.seg[0].len, 0x20000);
	ASSERT_EQ(rec.module.build_id_len, 0);
	ASSERT_STREQ(rec.module.path, "/lib/libc.so.6");
	NEXT(LK_REC_STACK);
	ASSERT_EQ(rec.stack.id, 1);
	ASSERT_EQ(rec.stack.nframes, 3);
	for (int k = 0; k < 3; k++)
		ASSERT_EQ(rec.stack.frames[k], frames1[k]);
	NEXT(LK_REC_STACK);
	ASSERT_EQ(rec.stack.id, 2);
	ASSERT_EQ(rec.stack.nframes, LK_MAX_FRAMES);
	for (int k = 0; k < LK_MAX_FRAMES; k++)
		ASSERT_EQ(rec.stack.frames[k], k % 3 == 0 ? UINT64_MAX - (uint64_t)k
					       : k % 3 == 1 ? (uint64_t)k : 0);
	NEXT(LK_REC_STACK);
	ASSERT_EQ(rec.stack.id, 3);
	ASSERT_EQ(rec.stack.nframes, 0);
	NEXT(LK_REC_THREAD);
	ASSERT_EQ(rec.time_ns, 5);
	ASSERT_EQ(rec.thread.tid, 42);
	NEXT(LK_REC_ALLOC);
	ASSERT_EQ(rec.time_ns, 105);
	ASSERT_EQ(rec.alloc.tid, 42);
	ASSERT_EQ(rec.alloc.block, 1);
	ASSERT_EQ(rec.alloc.size, 128);
	ASSERT_EQ(rec.alloc.stack, 1);
	NEXT(LK_REC_THREAD);
	ASSERT_EQ(rec.thread.tid, 43);
	NEXT(LK_REC_ALLOC);
	ASSERT_EQ(rec.time_ns, 112);
	ASSERT_EQ(rec.alloc.tid, 43);
	ASSERT_EQ(rec.alloc.block, 2);
	ASSERT_EQ(rec.alloc.size, UINT64_MAX);
	ASSERT_EQ(rec.alloc.stack, 0);
	NEXT(LK_REC_THREAD);
	ASSERT_EQ(rec.thread.tid, 42);
	NEXT(LK_REC_ALLOC);
	ASSERT_EQ(rec.alloc.tid, 42);
	ASSERT_EQ(rec.alloc.block, 3);
	ASSERT_EQ(rec.alloc.size, 1 << 20);
	ASSERT_EQ(rec.alloc.stack, 2);
	NEXT(LK_REC_THREAD);
	ASSERT_EQ(rec.time_ns, 113);
	NEXT(LK_REC_FREE);
	ASSERT_EQ(rec.time_ns, 163);
	ASSERT_EQ(rec.free.tid, 43);
	ASSERT_EQ(rec.free.block, 2);
	NEXT(LK_REC_UNLOAD);
	ASSERT_EQ(rec.time_ns, 166);
	ASSERT_EQ(rec.unload.id, 2);
	NEXT(LK_REC_RSS);
	ASSERT_EQ(rec.time_ns, 175);
	ASSERT_EQ(rec.rss.bytes, 123456789);
	NEXT(LK_REC_LOSS);
	ASSERT_EQ(rec.time_ns, 177);
	ASSERT_EQ(rec.counters.n, 2);
	ASSERT_EQ(rec.counters.v[0].id, LK_CNT_ARENA_FULL);
	ASSERT_EQ(rec.counters.v[0].value, 3);
	ASSERT_EQ(rec.counters.v[1].id, LK_CNT_RECORDS_DROPPED);
	ASSERT_EQ(rec.counters.v[1].value, 1);
	NEXT(LK_READ_EXT);
	ASSERT_EQ(rec.ext.tag, 0x81);
	ASSERT_EQ(rec.ext.len, 5);
	NEXT(LK_READ_EXT);
	ASSERT_EQ(rec.ext.tag, 0xff);
	ASSERT_EQ(rec.ext.len, 0);
	NEXT(LK_REC_INHERIT);
	ASSERT_EQ(rec.time_ns, 177);
	ASSERT_EQ(rec.inherit.block, 4);
	ASSERT_EQ(rec.inherit.size, 64);
	ASSERT_EQ(rec.inherit.stack, 3);
	ASSERT_EQ(rec.inherit.alloc_monotonic_ns, 500);
	NEXT(LK_REC_FREE);
	ASSERT_EQ(rec.time_ns, 177);
	ASSERT_EQ(rec.free.tid, 43);
	ASSERT_EQ(rec.free.block, 1);
	NEXT(LK_REC_MODULE);
	ASSERT_EQ(rec.module.id, 4);
	ASSERT_EQ(rec.module.nseg, 0);
	ASSERT_EQ(rec.module.path_len, 0);
	NEXT(LK_REC_TRAILER);
	ASSERT_EQ(rec.time_ns, 189);
	ASSERT_EQ(rec.counters.end_realtime_ns, 1700000001000000000);
	ASSERT_EQ(rec.counters.n, 3);
	ASSERT_EQ(rec.counters.v[0].id, LK_CNT_ARENA_FULL);
	ASSERT_EQ(rec.counters.v[1].id, LK_CNT_SAMPLES);
	ASSERT_EQ(rec.counters.v[1].value, 3);
	ASSERT_EQ(rec.counters.v[2].id, LK_CNT_FREES);
#undef NEXT
	ASSERT_EQ(i, s->nrec);
	ASSERT_EQ(lk_reader_next(rd, &rec), 0);
	ASSERT_EQ(lk_reader_next(rd, &rec), 0);
	ASSERT_TRUE(lk_reader_has_trailer(rd));
	ASSERT_EQ(lk_reader_end_offset(rd), s->b.len);
	ASSERT_STREQ(lk_reader_error(rd), "");
}

TEST(round_trip_memory)
{
	struct pb_sample s;
	int r;

	pb_build_sample(&s);
	struct lk_reader *rd = open_mem(s.b.p, s.b.len, &r);
	ASSERT_OK(r);
	check_sample(rd, &s);
	lk_reader_free(rd);
	free(s.b.p);
}

static void write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "we");

	ASSERT_TRUE(f);
	ASSERT_EQ(fwrite(p, 1, n, f), n);
	ASSERT_EQ(fclose(f), 0);
}

TEST(round_trip_file)
{
	char path[] = "/tmp/leek-test-XXXXXX";
	struct pb_sample s;
	int fd = mkstemp(path);

	ASSERT_TRUE(fd >= 0);
	close(fd);
	pb_build_sample(&s);
	pb_zeros(&s.b, 3000); /* zero padding after the trailer is allowed */
	write_file(path, s.b.p, s.b.len);
	s.b.len -= 3000;

	struct lk_reader *rd = lk_reader_new();
	ASSERT_OK(lk_reader_open(rd, path));
	unlink(path);
	check_sample(rd, &s);
	lk_reader_free(rd);
	free(s.b.p);
}


/* The record (or the header, -1) that byte `cut` falls in. */
static long record_at(const struct pb_sample *s, size_t cut)
{
	if (cut < s->header_size)
		return -1;
	for (size_t i = 0; i < s->nrec; i++)
		if (cut < s->off[i + 1])
			return (long)i;
	return (long)s->nrec;
}

TEST(truncated_at_every_byte)
{
	struct pb_sample s;
	char want[64];
	size_t n;
	int r;

	pb_build_sample(&s);
	for (size_t cut = 0; cut < s.b.len; cut++) {
		uint8_t *copy = malloc(cut + 1); /* exactly cut bytes, so ASan sees any overread */
		memcpy(copy, s.b.p, cut);
		struct lk_reader *rd = open_mem(copy, cut, &r);
		long i = record_at(&s, cut);
		if (cut == 0) {
			ASSERT_EQ(r, -EMEDIUMTYPE);
			ASSERT_STREQ(lk_reader_error(rd), "not a leek profile (empty file)");
		} else if (i < 0) {
			ASSERT_EQ(r, -EBADMSG);
			ASSERT_CONTAINS(lk_reader_error(rd), "offset 0: header cut");
		} else {
			ASSERT_OK(r);
			r = drain(rd, &n);
			if (cut == s.off[i]) { /* at a record boundary: clean, no trailer */
				ASSERT_EQ(r, 0);
				ASSERT_EQ(n, (size_t)i);
				ASSERT_TRUE(!lk_reader_has_trailer(rd));
				ASSERT_EQ(lk_reader_end_offset(rd), cut);
			} else { /* inside record i: an error naming where it starts */
				ASSERT_EQ(r, -EBADMSG);
				ASSERT_EQ(n, (size_t)i);
				snprintf(want, sizeof(want), "offset %zu: ", s.off[i]);
				ASSERT_CONTAINS(lk_reader_error(rd), want);
				ASSERT_CONTAINS(lk_reader_error(rd), "cut by the end of the file");
			}
		}
		lk_reader_free(rd);
		free(copy);
	}
	free(s.b.p);
}

/* The writer stores the tag last: a crash leaves zeros, or a payload whose tag is still 0. */
TEST(zero_padding_and_unfinished_records)
{
	struct pb_sample s;
	struct pbuf b;
	size_t n;
	int r;

	pb_build_sample(&s);
	for (size_t i = 0; i < s.nrec; i++) {
		for (int kind = 0; kind < 3; kind++) {
			size_t len = s.off[i + 1] - s.off[i];
			b = (struct pbuf){ 0 };
			pb_put(&b, s.b.p, s.off[i]);
			if (kind > 0) { /* record i written but for its tag, whole or in part */
				pb_zeros(&b, 1);
				size_t part = kind == 1 ? len - 1 : (len - 1) / 2;
				pb_put(&b, s.b.p + s.off[i] + 1, part);
			}
			pb_zeros(&b, kind == 2 ? 0 : 4096);
			struct lk_reader *rd = open_mem(b.p, b.len, &r);
			ASSERT_OK(r);
			ASSERT_EQ(drain(rd, &n), 0);
			ASSERT_EQ(n, i);
			ASSERT_TRUE(!lk_reader_has_trailer(rd));
			ASSERT_EQ(lk_reader_end_offset(rd), s.off[i]);
			lk_reader_free(rd);
			free(b.p);
		}
	}
	free(s.b.p);
}

TEST(data_after_trailer)
{
	struct pb_sample s;
	char want[64];
	size_t n;
	int r;

	pb_build_sample(&s);
	pb_zeros(&s.b, 5000);
	s.b.p[s.b.len - 7] = 1;
	struct lk_reader *rd = open_mem(s.b.p, s.b.len, &r);
	ASSERT_OK(r);
	ASSERT_EQ(drain(rd, &n), -EBADMSG);
	ASSERT_EQ(n, s.nrec);
	snprintf(want, sizeof(want), "offset %zu: data after the TRAILER", s.b.len - 7);
	ASSERT_CONTAINS(lk_reader_error(rd), want);
	lk_reader_free(rd);
	free(s.b.p);
}

static uint64_t xorshift(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* Whatever a bit flip does, the reader ends, with each record consuming input. */
TEST(random_bit_flips)
{
	struct pb_sample s;
	uint64_t x = 0x1eec5eedull;
	size_t n;
	int r;

	pb_build_sample(&s);
	uint8_t *copy = malloc(s.b.len);
	for (int iter = 0; iter < 30000; iter++) {
		memcpy(copy, s.b.p, s.b.len);
		int flips = 1 + (int)(xorshift(&x) % 4);
		for (int f = 0; f < flips; f++) {
			/* Mostly in the records: the header rarely survives a flip. */
			size_t at = xorshift(&x) % 8 ? s.header_size + xorshift(&x) %
							(s.b.len - s.header_size)
						    : xorshift(&x) % s.b.len;
			copy[at] ^= (uint8_t)(1u << (xorshift(&x) % 8));
		}
		struct lk_reader *rd = open_mem(copy, s.b.len, &r);
		if (r >= 0) {
			r = drain(rd, &n);
			ASSERT_TRUE(n <= s.b.len);
			ASSERT_TRUE(r == 0 || r == -EBADMSG);
			ASSERT_TRUE(r == 0 || strncmp(lk_reader_error(rd), "offset ", 7) == 0);
		}
		lk_reader_free(rd);
	}
	free(copy);
	free(s.b.p);
}

/* Noise after a valid header: most of it is caught at once, none of it may crash. */
TEST(random_records)
{
	uint64_t x = 0xfeedfaceull;
	struct pbuf b = { 0 };
	size_t n, hs;
	int r;

	pb_simple_header(&b);
	hs = b.len;
	for (int iter = 0; iter < 20000; iter++) {
		b.len = hs;
		size_t len = xorshift(&x) % 64;
		for (size_t i = 0; i < len; i++) {
			uint8_t v = (uint8_t)xorshift(&x);
			if (i == 0 && iter % 2) /* half start with a known tag */
				v = (uint8_t)(1 + v % LK_REC_MAX_KNOWN);
			pb_put(&b, &v, 1);
		}
		struct lk_reader *rd = open_mem(b.p, b.len, &r);
		ASSERT_OK(r);
		r = drain(rd, &n);
		ASSERT_TRUE(n <= len);
		ASSERT_TRUE(r == 0 || r == -EBADMSG);
		lk_reader_free(rd);
	}
	free(b.p);
}

static void expect_foreign(const void *p, size_t n, const char *what)
{
	int r;
	struct lk_reader *rd = open_mem(p, n, &r);

	ASSERT_EQ(r, -EMEDIUMTYPE);
	ASSERT_CONTAINS(lk_reader_error(rd), "not a leek profile");
	ASSERT_CONTAINS(lk_reader_error(rd), what);
	ASSERT_EQ(lk_reader_next(rd, &(struct lk_record){ 0 }), -EMEDIUMTYPE);
	lk_reader_free(rd);
}

TEST(foreign_files)
{
	struct lk_reader *rd = lk_reader_new();

	expect_foreign("", 0, "empty file");
	expect_foreign("hello, world\n", 13, "bad magic");
	expect_foreign("LEEX", 4, "bad magic");
	expect_foreign("\x7f" "ELF\2\1\1\0\0\0\0\0\0\0\0\0", 16, "bad magic");
	/* An ELF file from disk, through the fd path. */
	ASSERT_EQ(lk_reader_open(rd, "/proc/self/exe"), -EMEDIUMTYPE);
	ASSERT_STREQ(lk_reader_error(rd), "not a leek profile (bad magic)");
	lk_reader_free(rd);

	rd = lk_reader_new();
	ASSERT_EQ(lk_reader_open(rd, "/nonexistent/leek.lk"), -ENOENT);
	ASSERT_STREQ(lk_reader_error(rd), strerror(ENOENT));
	lk_reader_free(rd);
	rd = lk_reader_new();
	ASSERT_EQ(lk_reader_open(rd, "/"), -EISDIR);
	lk_reader_free(rd);
	rd = lk_reader_new();
	ASSERT_EQ(lk_reader_open(rd, "/dev/null"), -EMEDIUMTYPE);
	lk_reader_free(rd);
}

/* A profile larger than the reader's window, with an extension record larger than it too. */
static void build_big(struct pbuf *b, size_t *nrec)
{
	static uint8_t ext[3 * LK_READ_BUF];

	*b = (struct pbuf){ 0 };
	pb_simple_header(b);
	*nrec = 0;
	for (uint64_t i = 1; i <= 3000; i++) {
		pb_made_up_stack(b, i, (uint32_t)(i % 41));
		*nrec += 2 + !b->thread;
		pb_alloc(b, i, 7, 0x10000 * i, i * 3, i);
		if (i == 1500) {
			uint8_t hdr[1 + LK_VARINT_MAX] = { 0x90 };
			pb_put(b, hdr, 1 + lk_varint_put(hdr + 1, sizeof(ext)));
			memset(ext, 0xab, sizeof(ext));
			pb_put(b, ext, sizeof(ext));
			++*nrec;
		}
	}
}

/* Reads both readers in step; every record must agree. */
static void compare_readers(struct lk_reader *a, struct lk_reader *b, size_t nrec)
{
	struct lk_record ra, rb;
	size_t n = 0;
	int x, y;

	while ((x = lk_reader_next(a, &ra)) > 0) {
		y = lk_reader_next(b, &rb);
		ASSERT_EQ(y, 1);
		ASSERT_EQ(ra.tag, rb.tag);
		ASSERT_EQ(ra.offset, rb.offset);
		ASSERT_EQ(ra.time_ns, rb.time_ns);
		if (ra.tag == LK_REC_STACK) {
			ASSERT_EQ(ra.stack.nframes, rb.stack.nframes);
			ASSERT_EQ(ra.stack.nframes, ra.stack.id % 41);
		} else if (ra.tag == LK_REC_ALLOC) {
			ASSERT_EQ(ra.alloc.block, rb.alloc.block);
			ASSERT_EQ(ra.alloc.block, ra.alloc.stack); /* one ALLOC a stack, in order */
			ASSERT_EQ(ra.alloc.size, ra.alloc.stack * 3);
			ASSERT_EQ(rb.alloc.tid, 7);
		} else if (ra.tag == LK_REC_THREAD) {
			ASSERT_EQ(rb.thread.tid, 7);
		} else {
			ASSERT_EQ(ra.ext.len, 3 * LK_READ_BUF);
			ASSERT_EQ(rb.ext.len, 3 * LK_READ_BUF);
		}
		n++;
	}
	ASSERT_EQ(x, 0);
	ASSERT_EQ(lk_reader_next(b, &rb), 0);
	ASSERT_EQ(n, nrec);
	ASSERT_TRUE(!lk_reader_has_trailer(a) && !lk_reader_has_trailer(b));
}

TEST(big_profile_file_and_pipe)
{
	char path[] = "/tmp/leek-test-XXXXXX";
	struct lk_reader *mem, *rd;
	struct pbuf b;
	size_t nrec;
	int fd = mkstemp(path), pipefd[2], status;

	ASSERT_TRUE(fd >= 0);
	close(fd);
	build_big(&b, &nrec);
	ASSERT_TRUE(b.len > 4 * LK_READ_BUF);
	write_file(path, b.p, b.len);

	mem = open_mem(b.p, b.len, &fd);
	rd = lk_reader_new();
	ASSERT_OK(lk_reader_open(rd, path));
	unlink(path);
	compare_readers(mem, rd, nrec);
	lk_reader_free(mem);
	lk_reader_free(rd);

	/* Through a pipe, in odd-sized writes: every short read must be handled. */
	ASSERT_OK(pipe(pipefd));
	pid_t pid = fork();
	ASSERT_TRUE(pid >= 0);
	if (pid == 0) {
		close(pipefd[0]);
		for (size_t off = 0; off < b.len; off += 777) {
			size_t k = b.len - off < 777 ? b.len - off : 777;
			if (write(pipefd[1], b.p + off, k) != (ssize_t)k)
				_exit(1);
		}
		_exit(0);
	}
	close(pipefd[1]);
	mem = open_mem(b.p, b.len, &fd);
	rd = lk_reader_new();
	ASSERT_OK(lk_reader_open_fd(rd, pipefd[0]));
	compare_readers(mem, rd, nrec);
	lk_reader_free(mem);
	lk_reader_free(rd);
	close(pipefd[0]);
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_EQ(status, 0);
	free(b.p);
}

 /* The fast path for ALLOC, FREE and THREAD (read-record.c) against the values written: every
  * varint length from 1 to 10 bytes, longer encodings of the same values (zero groups after the
  * last one), FREEs of blocks before and after the previous FREE's, and the records it hands to the
  * general path, in a profile far larger than LK_READ_RECORD_MAX so that the fast path runs; from
  * memory and through a file's window; by lk_reader_next() and by lk_reader_skip(). */
struct fast_rec {
	uint8_t tag;
	uint64_t offset, time, f[4]; /* ALLOC: tid block size stack; FREE: tid block; THREAD: tid;
					RSS: bytes */
};

/* v as a varint, then `pad` more bytes (zero groups) as long as it stays within 10. */
static size_t put_padded(uint8_t *p, uint64_t v, unsigned pad)
{
	size_t n = lk_varint_put(p, v);

	while (pad-- && n < LK_VARINT_MAX) {
		p[n - 1] |= 0x80;
		p[n++] = 0;
	}
	return n;
}

/* A value of 0 to 64 bits, so that every encoded length comes up. */
static uint64_t any_width(uint64_t *x)
{
	unsigned w = (unsigned)(xorshift(x) % 65);

	return w ? xorshift(x) >> (64 - w) : 0;
}

/* Padding for one field in four: longer than it needs to be. */
static unsigned any_pad(uint64_t *x)
{
	return xorshift(x) % 4 ? 0 : (unsigned)(xorshift(x) % 4);
}

#define FAST_STACKS 300
#define FAST_RECORDS 20000

enum fast_defect {
	FAST_FINE,
	FAST_UNDEFINED_STACK,
	FAST_VARINT_11,
	FAST_VARINT_OVERFLOW,
	FAST_FREE_UNNUMBERED, /* a FREE of the block after the last one numbered */
	FAST_FIXED_UNDEFINED_STACK, /* the same two in ALLOC_FIXED and FREE_FIXED */
	FAST_FIXED_FREE_UNNUMBERED
};

/* FAST_RECORDS random THREAD, ALLOC, FREE and RSS records after FAST_STACKS stacks, a THREAD
 * first, half the ALLOCs and FREEs in their fixed form (dt 0); record `at` is an ALLOC (a FREE
 * for the *_FREE_UNNUMBERED defects; fixed for the FAST_FIXED_ ones) with the defect, if any. */
static void build_fast(struct pbuf *b, struct fast_rec *want, size_t at, enum fast_defect defect)
{
	uint64_t x = 0x5eed0f5a57ull, time = 0, frame = 0x401000, tid = 0, blocks = 0, prev = 0;
	uint8_t enc[1 + 4 * LK_VARINT_MAX + 1];

	*b = (struct pbuf){ 0 };
	pb_simple_header(b);
	for (uint64_t id = 1; id <= FAST_STACKS; id++)
		PB_REC(b, lk_rec_stack(rec, id, &frame, 1));
	for (size_t i = 0; i < FAST_RECORDS; i++) {
		struct fast_rec *w = &want[i];
		unsigned kind = (unsigned)(xorshift(&x) % 20), nf, n = 1;
		uint64_t dt = any_width(&x), v[3]; /* the fields after dt, as written */

		w->tag = i == 0      ? LK_REC_THREAD
			 : kind < 12 ? LK_REC_ALLOC
			 : kind < 18 ? LK_REC_FREE
			 : kind < 19 ? LK_REC_THREAD
				     : LK_REC_RSS;
		if (w->tag == LK_REC_FREE && blocks == 0)
			w->tag = LK_REC_ALLOC; /* nothing to free yet */
		bool unnumbered = defect == FAST_FREE_UNNUMBERED ||
				  defect == FAST_FIXED_FREE_UNNUMBERED;
		if (i == at && defect != FAST_FINE)
			w->tag = unnumbered ? LK_REC_FREE : LK_REC_ALLOC;
		bool fixed = w->tag != LK_REC_THREAD && w->tag != LK_REC_RSS &&
			     (i == at ? defect >= FAST_FIXED_UNDEFINED_STACK : xorshift(&x) % 2);
		nf = w->tag == LK_REC_ALLOC ? 2 : 1;
		for (unsigned k = 0; k < nf; k++)
			v[k] = any_width(&x);
		if (w->tag == LK_REC_ALLOC)
			v[1] = xorshift(&x) % (FAST_STACKS + 1);
		if (i == at) { /* a record the fast path would take, but for its defect */
			dt &= 0xffff;
			for (unsigned k = 0; k < nf; k++)
				v[k] &= 0xffffffff;
		}
		if (fixed) {
			v[0] &= 0xffff; /* the size (a FREE's is replaced below) */
			if (i == at && defect == FAST_FIXED_UNDEFINED_STACK)
				v[1] = FAST_STACKS + 1;
		}
		uint64_t code_prev = prev, block = 0;
		if (w->tag == LK_REC_FREE) { /* a block numbered already, or the next one */
			block = i == at && unnumbered ? blocks + 1 : 1 + xorshift(&x) % blocks;
			v[0] = lk_free_code(blocks, prev, block);
			prev = block;
		}
		if (w->tag == LK_REC_THREAD || fixed)
			dt = 0; /* it has none */
		enc[0] = w->tag;
		if (fixed)
			n = (unsigned)(w->tag == LK_REC_ALLOC
					       ? lk_rec_alloc_fixed(enc, v[0], v[1])
					       : lk_rec_free_fixed(enc, blocks, &code_prev, block));
		else if (w->tag != LK_REC_THREAD)
			n += put_padded(enc + n, dt, i == at ? 0 : any_pad(&x));
		for (unsigned k = 0; k < nf && !fixed; k++) {
			uint8_t *f = enc + n;
			n += put_padded(f, v[k], i == at ? 0 : any_pad(&x));
			if (i != at)
				continue;
			if (k == 0 && defect == FAST_VARINT_11) { /* 10 bytes and one more */
				n = (unsigned)(f - enc) + put_padded(f, v[k], 10) + 1;
				f[9] |= 0x80;
				f[10] = 0;
			} else if (k == 0 && defect == FAST_VARINT_OVERFLOW) { /* 2^64 and more */
				n = (unsigned)(f - enc) + put_padded(f, UINT64_MAX, 0);
				f[9] = 2;
			} else if (k == 1 && defect == FAST_UNDEFINED_STACK) {
				n = (unsigned)(f - enc) + put_padded(f, FAST_STACKS + 1, 0);
			}
		}
		/* What the reader must make of it. */
		switch (w->tag) {
		case LK_REC_THREAD:
			tid = w->f[0] = v[0];
			break;
		case LK_REC_ALLOC:
			w->f[0] = tid;
			w->f[1] = ++blocks;
			w->f[2] = v[0];
			w->f[3] = v[1];
			break;
		case LK_REC_FREE:
			w->f[0] = tid;
			w->f[1] = prev;
			break;
		default:
			w->f[0] = v[0];
			break;
		}
		w->offset = b->len;
		w->time = time += dt;
		pb_put(b, enc, n);
	}
}

/* Reads rd to the end with lk_reader_next() (skip false) or lk_reader_skip(), comparing with
 * want; returns the last result and the records read. */
static int read_fast(struct lk_reader *rd, bool skip, const struct fast_rec *want, size_t *count)
{
	struct lk_record r;
	uint64_t t;
	int k;

	for (*count = 0;; ++*count) {
		k = skip ? lk_reader_skip(rd, &t) : lk_reader_next(rd, &r);
		if (k <= 0)
			return k;
		const struct fast_rec *w = &want[*count];
		if (skip) {
			ASSERT_EQ(t, w->time);
			continue;
		}
		ASSERT_EQ(r.tag, w->tag);
		ASSERT_EQ(r.offset, w->offset);
		ASSERT_EQ(r.time_ns, w->time);
		if (w->tag == LK_REC_ALLOC) {
			ASSERT_EQ(r.alloc.tid, w->f[0]);
			ASSERT_EQ(r.alloc.block, w->f[1]);
			ASSERT_EQ(r.alloc.size, w->f[2]);
			ASSERT_EQ(r.alloc.stack, w->f[3]);
		} else if (w->tag == LK_REC_FREE) {
			ASSERT_EQ(r.free.tid, w->f[0]);
			ASSERT_EQ(r.free.block, w->f[1]);
		} else if (w->tag == LK_REC_THREAD) {
			ASSERT_EQ(r.thread.tid, w->f[0]);
		} else {
			ASSERT_EQ(r.rss.bytes, w->f[0]);
		}
	}
}

/* Both ways through the whole profile, from memory and from a file; an error must be the same
 * message after the same number of records both ways. */
static void check_fast(const struct pbuf *b, const struct fast_rec *want, size_t nrec,
		       int result, const char *msg)
{
	char path[] = "/tmp/leek-test-XXXXXX";
	int fd = mkstemp(path), r;
	size_t n;

	ASSERT_TRUE(fd >= 0);
	close(fd);
	write_file(path, b->p, b->len);
	for (int way = 0; way < 4; way++) {
		struct lk_reader *rd = way < 2 ? open_mem(b->p, b->len, &r) : lk_reader_new();
		if (way >= 2)
			r = lk_reader_open(rd, path);
		ASSERT_OK(r);
		for (int i = 0; i < FAST_STACKS; i++) /* to the records of interest */
			ASSERT_EQ(lk_reader_next(rd, &(struct lk_record){ 0 }), 1);
		ASSERT_EQ(read_fast(rd, way % 2, want, &n), result);
		ASSERT_EQ(n, nrec);
		ASSERT_STREQ(lk_reader_error(rd), msg);
		if (result == 0)
			ASSERT_EQ(lk_reader_end_offset(rd), b->len);
		lk_reader_free(rd);
	}
	unlink(path);
}

TEST(fast_path_records)
{
	static struct fast_rec want[FAST_RECORDS];
	static const struct {
		enum fast_defect defect;
		const char *msg;
	} broken[] = {
		{ FAST_UNDEFINED_STACK, "ALLOC names stack 301, which is not defined yet" },
		{ FAST_VARINT_11, "ALLOC record holds a varint over 64 bits" },
		{ FAST_VARINT_OVERFLOW, "ALLOC record holds a varint over 64 bits" },
		{ FAST_FREE_UNNUMBERED, NULL },
		{ FAST_FIXED_UNDEFINED_STACK, "ALLOC_FIXED names stack 301, which is not defined yet" },
		{ FAST_FIXED_FREE_UNNUMBERED, NULL },
	};
	struct pbuf b;
	char msg[256];

	build_fast(&b, want, 0, FAST_FINE);
	ASSERT_TRUE(b.len > 16 * LK_READ_RECORD_MAX);
	check_fast(&b, want, FAST_RECORDS, 0, "");
	free(b.p);

	/* Broken in the middle, where the fast path runs: the general path's messages. */
	for (size_t i = 0; i < sizeof(broken) / sizeof(broken[0]); i++) {
		build_fast(&b, want, FAST_RECORDS / 2, broken[i].defect);
		if (broken[i].msg)
			snprintf(msg, sizeof(msg), "offset %" PRIu64 ": %s",
				 want[FAST_RECORDS / 2].offset, broken[i].msg);
		else
			snprintf(msg, sizeof(msg), "offset %" PRIu64 ": FREE of block %" PRIu64
				 ", but blocks 1 to %" PRIu64 " are all the file has allocated",
				 want[FAST_RECORDS / 2].offset, want[FAST_RECORDS / 2].f[1],
				 want[FAST_RECORDS / 2].f[1] - 1);
		check_fast(&b, want, FAST_RECORDS / 2, -EBADMSG, msg);
		free(b.p);
	}
}

TEST(names)
{
	ASSERT_STREQ(lk_rec_tag_name(LK_REC_ALLOC), "ALLOC");
	ASSERT_STREQ(lk_rec_tag_name(LK_REC_TRAILER), "TRAILER");
	ASSERT_STREQ(lk_rec_tag_name(LK_REC_THREAD), "THREAD");
	ASSERT_STREQ(lk_rec_tag_name(LK_REC_SEGMENT), "SEGMENT");
	ASSERT_STREQ(lk_rec_tag_name(LK_REC_SEG_END), "SEG_END");
	ASSERT_TRUE(!lk_rec_tag_name(LK_REC_MAX_KNOWN + 1));
	ASSERT_STREQ(lk_rec_tag_name(0x80), "EXT");
	ASSERT_TRUE(!lk_rec_tag_name(0x2a));
	ASSERT_TRUE(!lk_rec_tag_name(0));
	ASSERT_STREQ(lk_counter_name(LK_CNT_ARENA_FULL), "arena_full");
	ASSERT_STREQ(lk_counter_name(LK_CNT_FREES), "frees");
	ASSERT_TRUE(!lk_counter_name(0));
	ASSERT_TRUE(!lk_counter_name(LK_CNT_MAX + 1));
}

/* Two threads (and now and then a third) allocating and freeing each other's blocks, as libleek
 * writes them: a THREAD record whenever the thread changes. Every ALLOC and FREE must come back
 * with its own thread and block, on the fast path (most of the file) and on the general one
 * (its last LK_READ_RECORD_MAX bytes), and lk_reader_skip() must keep the same state. */
TEST(thread_switching)
{
	enum { N = 10000, BLOCKS = 64 };
	static struct {
		uint8_t tag;
		uint64_t offset, tid, block;
	} want[N];
	uint64_t x = 0x7417eadull, block[BLOCKS] = { 0 };
	struct pbuf b = { 0 };
	size_t threads = 0, nrec = 0;

	pb_simple_header(&b);
	for (size_t i = 0; i < N; i++) {
		uint64_t r = xorshift(&x), tid = r % 16 == 0 ? 300 : r % 2 ? 100 : 200;
		unsigned k = (unsigned)(r >> 8) % BLOCKS;
		size_t before = b.len;
		bool thread = !b.thread || b.tid != tid;
		if (block[k]) { /* whoever runs now frees it, whoever allocated it */
			want[i].block = pb_block_at(&b, block[k]);
			want[i].offset = pb_free(&b, 0, tid, block[k]);
			want[i].tag = LK_REC_FREE;
			block[k] = 0;
		} else {
			block[k] = 0x7f0000000000 + i * 16;
			want[i].offset = pb_alloc(&b, r >> 40 & 3, tid, block[k], 24, 0);
			want[i].tag = LK_REC_ALLOC;
			want[i].block = b.blocks;
		}
		want[i].tid = tid;
		ASSERT_EQ(want[i].offset != before, thread); /* a THREAD record came first */
		threads += thread;
	}
	ASSERT_TRUE(threads > N / 3 && b.len > 4 * LK_READ_RECORD_MAX);

	for (int way = 0; way < 2; way++) {
		struct lk_record got;
		uint64_t t;
		size_t i = 0;
		int r;
		struct lk_reader *rd = open_mem(b.p, b.len, &r);

		ASSERT_OK(r);
		nrec = 0;
		for (;;) {
			/* Way 1 skips every other record: what skip() leaves must be next()'s. */
			r = way && nrec % 2 ? lk_reader_skip(rd, &t) : lk_reader_next(rd, &got);
			if (r <= 0)
				break;
			if (way && nrec++ % 2)
				continue;
			nrec += !way;
			if (got.tag == LK_REC_THREAD)
				continue;
			while (i < N && want[i].offset < got.offset) /* matched by offset */
				i++;
			ASSERT_TRUE(i < N);
			ASSERT_EQ(got.offset, want[i].offset);
			ASSERT_EQ(got.tag, want[i].tag);
			if (got.tag == LK_REC_ALLOC) {
				ASSERT_EQ(got.alloc.tid, want[i].tid);
				ASSERT_EQ(got.alloc.block, want[i].block);
			} else {
				ASSERT_EQ(got.free.tid, want[i].tid);
				ASSERT_EQ(got.free.block, want[i].block);
			}
		}
		ASSERT_EQ(r, 0);
		ASSERT_EQ(nrec, N + threads);
		ASSERT_EQ(lk_reader_end_offset(rd), b.len);
		lk_reader_free(rd);
	}
	free(b.p);
}

/* Block numbers: ALLOC and INHERIT are numbered 1, 2, 3, ... in file order, and a FREE names its
 * block by the smaller of its age among the blocks numbered so far (odd) and its step from the
 * previous FREE's block, 0 at the start (even): the block after the previous FREE's costs 1 byte,
 * and so does the newest block wherever the previous FREE was. */
TEST(block_numbers)
{
	/* 300 blocks (INHERIT first, like a forked child's file), then FREEs of these. */
	static const uint64_t freed[] = { 200, 201, 202, 1, 300, 299, 150 };
	/* Each FREE's length: tag, dt, then its code: 200 is 100 old (2 * 100 + 1 = 201, two
	 * bytes; its step 2 * zigzag(200) = 800), 201 and 202 a step of +1 (4, one byte), 1 is 299
	 * old (599, two), 300 is the newest (1, one), 299 a step of -1 (2 * zigzag(-1) = 2, one;
	 * it is one old too, and a tie goes to the step), 150 is 150 old (301, two; its step of
	 * -149, 594). */
	static const size_t len[] = { 4, 3, 3, 4, 3, 3, 4 };
	struct pbuf b = { 0 };
	size_t off[8], n = sizeof(freed) / sizeof(freed[0]), k;
	uint64_t prev = 0;
	struct lk_record got;
	int r;

	pb_simple_header(&b);
	PB_REC(&b, lk_rec_inherit(rec, 8, 0, 0));
	PB_REC(&b, lk_rec_thread(rec, 5));
	for (int i = 2; i <= 300; i++)
		PB_REC(&b, lk_rec_alloc(rec, 0, (uint64_t)i, 0));
	for (size_t i = 0; i < n; i++) {
		off[i] = PB_REC(&b, lk_rec_free(rec, 0, 300, &prev, freed[i]));
		ASSERT_EQ(b.len - off[i], len[i]);
	}
	ASSERT_EQ(b.p[off[1] + 2], 4); /* the block after the previous FREE's: 2 * zigzag(1) */
	ASSERT_EQ(b.p[off[4] + 2], 1); /* the newest block: 2 * 0 + 1 */
	ASSERT_EQ(b.p[off[5] + 2], 2); /* a step of -1 */
	pb_zeros(&b, 2 * LK_READ_RECORD_MAX); /* then again with the fast path */

	for (int pass = 0; pass < 2; pass++) {
		struct lk_reader *rd = open_mem(b.p, pass ? b.len : b.len - 2 * LK_READ_RECORD_MAX,
						&r);
		ASSERT_OK(r);
		ASSERT_EQ(lk_reader_next(rd, &got), 1);
		ASSERT_EQ(got.tag, LK_REC_INHERIT);
		ASSERT_EQ(got.inherit.block, 1);
		ASSERT_EQ(lk_reader_next(rd, &got), 1);
		ASSERT_EQ(got.tag, LK_REC_THREAD);
		for (k = 2; k <= 300; k++) {
			ASSERT_EQ(lk_reader_next(rd, &got), 1);
			ASSERT_EQ(got.tag, LK_REC_ALLOC);
			ASSERT_EQ(got.alloc.block, k);
			ASSERT_EQ(got.alloc.size, k);
		}
		for (k = 0; k < n; k++) {
			ASSERT_EQ(lk_reader_next(rd, &got), 1);
			ASSERT_EQ(got.offset, off[k]);
			ASSERT_EQ(got.tag, LK_REC_FREE);
			ASSERT_EQ(got.free.block, freed[k]);
			ASSERT_EQ(got.free.tid, 5);
		}
		ASSERT_EQ(lk_reader_next(rd, &got), 0);
		lk_reader_free(rd);
	}
	free(b.p);
}

/* FREE_STACK (version 7): a FREE whose block is coded as a FREE's, and the stack that freed it;
 * the reader hands it on as a FREE with free.stack. Unknown in a version 6 profile, an error when
 * its stack is not defined yet, a crash's end when it is cut, and not a record of a thread
 * segment's body. */
TEST(free_stack_records)
{
	struct lk_record got;
	struct pbuf b = { 0 };
	size_t at[3], count;
	int r;

	pb_simple_header(&b);
	pb_made_up_stack(&b, 1, 3);
	pb_made_up_stack(&b, 2, 4);
	pb_alloc(&b, 5, 7, 0x1000, 64, 1);
	pb_alloc(&b, 0, 7, 0x2000, 64, 1);
	pb_alloc(&b, 0, 7, 0x3000, 64, 1);
	at[0] = pb_free_stack(&b, 9, 7, 0x2000, 2);
	at[1] = pb_free(&b, 0, 7, 0x1000);
	at[2] = pb_free_stack(&b, 1, 8, 0x3000, 0); /* stack 0: the unwinder found none */

	struct lk_reader *rd = open_mem(b.p, b.len, &r);
	ASSERT_OK(r);
	for (int i = 0; i < 3;) {
		ASSERT_EQ(lk_reader_next(rd, &got), 1);
		if (got.tag != LK_REC_FREE)
			continue;
		ASSERT_EQ(got.offset, at[i]);
		ASSERT_EQ(got.free.block, i == 0 ? 2 : i == 1 ? 1 : 3);
		ASSERT_EQ(got.free.stack, i == 0 ? 2 : 0);
		ASSERT_EQ(got.free.tid, i == 2 ? 8 : 7);
		if (i == 0)
			ASSERT_EQ(got.time_ns, 14);
		i++;
	}
	ASSERT_EQ(lk_reader_next(rd, &got), 0);
	ASSERT_STREQ(lk_rec_tag_name(LK_REC_FREE_STACK), "FREE_STACK");
	lk_reader_free(rd);

	/* Cut inside the first FREE_STACK: an error that names where it starts; its tag not
	 * stored yet (a crash): the end, after the record before it. */
	char want[64];
	snprintf(want, sizeof(want), "offset %zu: FREE_STACK record", at[0]);
	rd = open_mem(b.p, at[0] + 2, &r);
	ASSERT_OK(r);
	ASSERT_EQ(drain(rd, &count), -EBADMSG);
	ASSERT_CONTAINS(lk_reader_error(rd), want);
	ASSERT_CONTAINS(lk_reader_error(rd), "cut by the end of the file");
	lk_reader_free(rd);
	b.p[at[0]] = 0;
	rd = open_mem(b.p, b.len, &r);
	ASSERT_OK(r);
	ASSERT_EQ(drain(rd, &count), 0);
	ASSERT_EQ(lk_reader_end_offset(rd), at[0]);
	lk_reader_free(rd);
	b.p[at[0]] = LK_REC_FREE_STACK;

	/* A version 6 profile has no such tag. */
	b.p[8] = 6;
	rd = open_mem(b.p, b.len, &r);
	ASSERT_OK(r);
	ASSERT_TRUE(drain(rd, &count) < 0);
	ASSERT_TRUE(strstr(lk_reader_error(rd), "version 7 has it"));
	lk_reader_free(rd);
	b.p[8] = LK_FORMAT_VERSION;

	/* A stack not defined yet. */
	free(b.p);
	b = (struct pbuf){ 0 };
	pb_simple_header(&b);
	pb_made_up_stack(&b, 1, 3);
	pb_alloc(&b, 5, 7, 0x1000, 64, 1);
	at[0] = pb_free_stack(&b, 0, 7, 0x1000, 2);
	rd = open_mem(b.p, b.len, &r);
	ASSERT_OK(r);
	ASSERT_TRUE(drain(rd, &count) < 0);
	ASSERT_TRUE(strstr(lk_reader_error(rd), "FREE_STACK names stack 2, which is not defined"));
	lk_reader_free(rd);

	/* Not in a thread segment's body. */
	free(b.p);
	b = (struct pbuf){ 0 };
	struct pb_seg s;
	uint8_t rec[LK_FREE_STACK_MAX];
	uint64_t prev = 0;
	pb_simple_header(&b);
	pb_made_up_stack(&b, 1, 3);
	pb_segment(&b, &s, 1, 9, 4, 0, 64);
	pb_seg_alloc(&b, &s, 0, 0x1000, 64, 1);
	pb_seg_put(&b, &s, rec, lk_rec_free_stack(rec, 0, s.first, &prev, s.first, 1));
	pb_seg_end(&b, &s);
	rd = open_mem(b.p, b.len, &r);
	ASSERT_OK(r);
	ASSERT_TRUE(drain(rd, &count) < 0);
	lk_reader_free(rd);
	free(b.p);
}

/* ERROR (version 8): its fields as written, each stack written before it, a known kind, a block
 * numbered already; `leek report errors` reads them (tests/preload/test-errors.c). */
TEST(error_records)
{
	struct lk_record got;
	struct pbuf b = { 0 };
	size_t count;
	int r;
	const struct lk_error_info e = { .tid = 7, .kind = LK_ERR_DOUBLE_FREE, .addr = 0x1020,
					 .block_addr = 0x1020, .block_size = 1013, .block = 1,
					 .alloc_stack = 1, .free_stack = 0, .stack = 2 };

	pb_simple_header(&b);
	pb_made_up_stack(&b, 1, 3);
	pb_made_up_stack(&b, 2, 4);
	pb_alloc(&b, 5, 7, 0x1000, 64, 1);
	size_t at = PB_REC(&b, lk_rec_error(rec, 9, &e));

	struct lk_reader *rd = open_mem(b.p, b.len, &r);
	ASSERT_OK(r);
	do
		ASSERT_EQ(lk_reader_next(rd, &got), 1);
	while (got.tag != LK_REC_ERROR);
	ASSERT_EQ(got.offset, at);
	ASSERT_EQ(got.time_ns, 14);
	ASSERT_EQ(got.error.tid, 7);
	ASSERT_EQ(got.error.kind, LK_ERR_DOUBLE_FREE);
	ASSERT_EQ(got.error.addr, 0x1020);
	ASSERT_EQ(got.error.block_addr, 0x1020);
	ASSERT_EQ(got.error.block_size, 1013);
	ASSERT_EQ(got.error.block, 1);
	ASSERT_EQ(got.error.alloc_stack, 1);
	ASSERT_EQ(got.error.free_stack, 0);
	ASSERT_EQ(got.error.stack, 2);
	ASSERT_EQ(lk_reader_next(rd, &got), 0);
	ASSERT_STREQ(lk_rec_tag_name(LK_REC_ERROR), "ERROR");
	ASSERT_STREQ(lk_error_kind_name(LK_ERR_DOUBLE_FREE), "double-free");
	ASSERT_STREQ(lk_error_kind_name(99), "unknown");
	lk_reader_free(rd);

	/* A version 7 profile has no such tag. */
	b.p[8] = 7;
	rd = open_mem(b.p, b.len, &r);
	ASSERT_OK(r);
	ASSERT_TRUE(drain(rd, &count) < 0);
	ASSERT_CONTAINS(lk_reader_error(rd), "unknown record tag 0x11 in a version 7 profile "
					     "(version 8 has it)");
	lk_reader_free(rd);
	b.p[8] = LK_FORMAT_VERSION;
	free(b.p);

	/* A stack not written yet, an unknown kind, a block not numbered yet. */
	static const struct {
		uint64_t kind, block, stack;
		const char *want;
	} bad[] = {
		{ LK_ERR_DOUBLE_FREE, 0, 3, "ERROR names stack 3, which is not defined yet" },
		{ LK_ERR_MAX + 1, 0, 1, "ERROR record of unknown kind 9" },
		{ 0, 0, 1, "ERROR record of unknown kind 0" },
		{ LK_ERR_INVALID_FREE, 2, 1, "ERROR record names block 2, of 1 so far" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct lk_error_info x = e;
		x.kind = bad[i].kind;
		x.block = bad[i].block;
		x.stack = bad[i].stack;
		b = (struct pbuf){ 0 };
		pb_simple_header(&b);
		pb_made_up_stack(&b, 1, 3);
		pb_alloc(&b, 5, 7, 0x1000, 64, 1);
		PB_REC(&b, lk_rec_error(rec, 0, &x));
		rd = open_mem(b.p, b.len, &r);
		ASSERT_OK(r);
		ASSERT_TRUE(drain(rd, &count) < 0);
		ASSERT_CONTAINS(lk_reader_error(rd), bad[i].want);
		lk_reader_free(rd);
		free(b.p);
	}
}
