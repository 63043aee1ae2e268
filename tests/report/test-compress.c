/* test-compress.c: compressed profiles end to end, through the `leek` binary: zstd, what
 * `leek run` and `leek compress` write, and gzip, what they wrote before (still read).
 *
 * `leek compress` must write FILE.zst, one zstd frame with its checksum, byte for byte what the
 * test's own libzstd makes of the profile at the level compress.c chooses (LK_COMPRESS_LEVEL_BEST
 * or _FAST, by the data). A compressed profile must read exactly as its raw bytes do (`leek dump`
 * and `leek report`, the same output, status and messages but for the file's name), in one zstd
 * frame or gzip member or several. Cut short, it must read as a crashed raw profile cut at its
 * last complete record; damaged, fail with exit 2 and the uncompressed offset. `leek compress`
 * must refuse what is not a raw profile and never overwrite a file. With libleek.so built (no
 * sanitizer), `leek run` must leave .zst files only (raw ones with --no-compress), keep its
 * program's status when compressing fails, and leave a profile that a surviving process still
 * writes alone. The rest runs under ASan too.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/membarrier.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "build-profile.h"
#include "compress.h"
#include "files.h"
#include "harness.h"
#include "leek.h"
#include "z-build.h"

static struct proc res;

/* `leek ARGS...` (NULL-terminated) in dir. */
static void leek(struct proc *p, const char *dir, const char *const *args)
{
	proc_free(p);
	leek_exec(p, dir, NULL, args, 60);
}

#define LEEK(dir, ...) leek(&res, dir, (const char *const[]){ __VA_ARGS__, NULL })

/* s with every occurrence of from replaced by to (malloc'ed). */
static char *replace_all(const char *s, const char *from, const char *to)
{
	size_t n = strlen(from), m = strlen(to), len = 0;
	char *out = malloc(strlen(s) * (m > n ? m / (n ? n : 1) + 1 : 1) + 1);
	const char *hit;

	if (!out || !n)
		FAIL("replace_all");
	while ((hit = strstr(s, from))) {
		memcpy(out + len, s, (size_t)(hit - s));
		len += (size_t)(hit - s);
		memcpy(out + len, to, m);
		len += m;
		s = hit + n;
	}
	strcpy(out + len, s);
	return out;
}

static bool exists(const char *path)
{
	return access(path, F_OK) == 0;
}

enum codec { GZIP, ZSTD, NCODECS };

static const char *const codec_name[] = { "gzip", "zstd" };
static const char *const codec_suffix[] = { ".gz", ".zst" };

/* Appends bytes [from, to) of data to out as one gzip member or zstd frame, at level 1; zstd's
 * with a block every `flush` bytes if flush is not 0. */
static void z_member(enum codec c, struct pbuf *out, const uint8_t *data, size_t from, size_t to,
		     size_t flush)
{
	if (c == GZIP)
		pb_gzip(out, data + from, to - from, 1);
	else
		pb_zstd_flushed(out, data + from, to - from, 1, flush);
}

/* A profile of a few thousand records, a trailer at its end. */
static void build_profile(struct pbuf *b)
{
	static uint64_t trailer[LK_CNT_MAX + 1];

	*b = (struct pbuf){ 0 };
	pb_simple_header(b);
	for (uint64_t i = 1; i <= 50; i++)
		pb_made_up_stack(b, i, (uint32_t)(i % 12) + 1);
	for (uint64_t i = 1; i <= 2000; i++) {
		pb_alloc(b, 1000 + i, 7 + i % 2, 0x10000 * i, 16 * (i % 100) + 1, i % 50 + 1);
		if (i % 3)
			pb_free(b, 500, 7, 0x10000 * i);
	}
	trailer[LK_CNT_SAMPLES] = 2000;
	PB_REC(b, lk_rec_counters(rec, LK_REC_TRAILER, 11, 1700000001000000000, trailer));
}

/* Output of a command on one file, with the file's path replaced by "FILE". */
struct outcome {
	int status;
	char *out, *err;
};

static void outcome_of(struct outcome *o, const char *path)
{
	o->status = res.status;
	o->out = replace_all(res.out, path, "FILE");
	o->err = replace_all(res.err, path, "FILE");
}

static void outcome_free(struct outcome *o)
{
	free(o->out);
	free(o->err);
}

/* Every reading command must say the same of raw and compressed, but for the path. */
static void expect_same_reading(const char *dir, const char *raw, const char *packed)
{
	static const char *const commands[][4] = {
		{ "dump", NULL },
		{ "dump", "--summary", NULL },
		{ "report", NULL },
		{ "report", "--format", "json", NULL },
		{ "report", "peak", "-s", NULL },
		{ "report", "timeline", "--ascii", NULL },
	};

	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		const char *args[8];
		struct outcome a, b;
		size_t n = 0;

		for (size_t k = 0; commands[i][k]; k++)
			args[n++] = commands[i][k];
		args[n + 1] = NULL;
		args[n] = raw;
		leek(&res, dir, args);
		outcome_of(&a, raw);
		args[n] = packed;
		leek(&res, dir, args);
		outcome_of(&b, packed);
		if (a.status != b.status || strcmp(a.out, b.out) || strcmp(a.err, b.err))
			FAIL("leek %s %s: raw and compressed differ:\nraw (exit %d):\n%.3000s\n%s\n"
			     "compressed (exit %d):\n%.3000s\n%s",
			     commands[i][0], commands[i][1] ? commands[i][1] : "", a.status, a.out,
			     a.err, b.status, b.out, b.err);
		if (!a.out[0])
			FAIL("leek %s: no output (exit %d, %s)", commands[i][0], a.status, a.err);
		outcome_free(&a);
		outcome_free(&b);
	}
}

static uint64_t file_size(const char *path)
{
	struct stat st;

	ASSERT_EQ(stat(path, &st), 0);
	return (uint64_t)st.st_size;
}

/* The file at path, which must be exactly one zstd frame with a content checksum, decompressed
 * into out (the test's own libzstd, not leek's reader). */
static void unzstd_file(const char *path, struct pbuf *out)
{
	size_t n;
	char *z = read_file(path, &n);
	bool whole;

	ASSERT_TRUE(n > 6 && !memcmp(z, "\x28\xb5\x2f\xfd", 4));
	ASSERT_TRUE(z[4] & 0x04); /* the frame header's Content_Checksum_flag */
	ASSERT_EQ(ZSTD_findFrameCompressedSize(z, n), n); /* one frame, nothing after it */
	*out = (struct pbuf){ 0 };
	pb_unzstd(out, z, n, &whole);
	ASSERT_TRUE(whole);
	free(z);
}

/* data zstd-compressed at `level` as compress.c does it, by the test's own libzstd: one frame, no
 * content size, the checksum, and LK_COMPRESS_LEVEL_BEST with its window (compress.h). */
static void zstd_as_leek(struct pbuf *out, const struct pbuf *data, int level)
{
	pb_zstd_window(out, data->p, data->len, level,
		       level == LK_COMPRESS_LEVEL_BEST ? LK_COMPRESS_WINDOW_LOG : 0);
}

/* The file at path is exactly data zstd-compressed at level `level` as compress.c does it; and
 * not what the other level makes, so that the level is told apart. */
static void expect_level(const char *path, const struct pbuf *data, int level)
{
	int other = level == LK_COMPRESS_LEVEL_BEST ? LK_COMPRESS_LEVEL_FAST
						    : LK_COMPRESS_LEVEL_BEST;
	struct pbuf want = { 0 }, no = { 0 }, back;
	size_t n;
	char *got;

	unzstd_file(path, &back);
	ASSERT_EQ(back.len, data->len);
	ASSERT_TRUE(memcmp(back.p, data->p, data->len) == 0);
	zstd_as_leek(&want, data, level);
	got = read_file(path, &n);
	if (n != want.len || memcmp(got, want.p, n) != 0)
		FAIL("%s: %zu bytes, not the %zu that zstd's level %d makes", path, n, want.len,
		     level);
	zstd_as_leek(&no, data, other);
	if (no.len == want.len && !memcmp(no.p, want.p, no.len))
		FAIL("%s: zstd's levels %d and %d make the same bytes", path, level, other);
	free(got);
	free(no.p);
	free(want.p);
	free(back.p);
}

/* `leek compress` of a copy of b reads as b itself. A small file is compressed at
 * LK_COMPRESS_LEVEL_BEST, whatever it holds. */
TEST(compress_then_read_same)
{
	char dir[256], raw[300], copy[300], zst[310], want[700];
	struct pb_sample s;
	struct pbuf big;

	tmp_dir(dir);
	pb_build_sample(&s);
	build_profile(&big);
	for (int i = 0; i < 2; i++) {
		const struct pbuf *b = i ? &big : &s.b;
		snprintf(raw, sizeof(raw), "%s/raw%d.lk", dir, i);
		snprintf(copy, sizeof(copy), "%s/copy%d.lk", dir, i);
		snprintf(zst, sizeof(zst), "%s.zst", copy);
		write_file(raw, b->p, b->len);
		write_file(copy, b->p, b->len);
		LEEK(dir, "compress", copy);
		if (res.status != 0)
			FAIL("leek compress: exit %d: %s", res.status, res.err);
		snprintf(want, sizeof(want), "%s -> %s (", copy, zst);
		ASSERT_CONTAINS(res.out, want);
		ASSERT_TRUE(!exists(copy) && exists(zst));
		expect_level(zst, b, LK_COMPRESS_LEVEL_BEST);
		expect_same_reading(dir, raw, zst);
	}
	free(big.p);
	free(s.b.p);
	tmp_dir_remove(dir);
}

/* size bytes of records after a header: a loop (the same block, size and site), which zstd
 * shrinks well, or, if !good, sizes and freed blocks all over the place, which it does not. */
static void add_part(struct pbuf *b, size_t size, bool good, uint64_t *x)
{
	const uint64_t addr = 0x7f0000000000;
	size_t end = b->len + size;

	while (b->len < end) {
		if (!good) {
			*x = *x * 6364136223846793005ull + 1442695040888963407ull;
			uint64_t r = *x;
			pb_alloc(b, r >> 60, 7, addr + (r >> 20 & 0xffffff0), r >> 40 & 0xffff, 0);
			uint64_t block = 1 + (r >> 20) % b->blocks;
			PB_REC(b, lk_rec_free(rec, r >> 61, b->blocks, &b->prev_free, block));
		} else {
			pb_alloc(b, 0, 7, addr, 128, 0);
			pb_free(b, 0, 7, addr);
		}
	}
}

/* `leek compress` of the first len bytes of b (a profile cut short reads, so any length is one)
 * into DIR/NAME.zst: the level it gets is `level`. */
static void expect_compressed_at(const char *dir, const char *name, const struct pbuf *b,
				 size_t len, int level)
{
	char path[300], zst[310];
	struct pbuf head = { .p = b->p, .len = len };

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(zst, sizeof(zst), "%s.zst", path);
	write_file(path, b->p, len);
	LEEK(dir, "compress", path);
	if (res.status != 0)
		FAIL("leek compress: exit %d: %s", res.status, res.err);
	expect_level(zst, &head, level);
	unlink(zst);
}

/* The level suits the data (compress.c, choose_level). 30 MiB: 6 MiB that compress well, 4 MiB
 * that do not (8 MiB in: the probe of a file of 16 MiB or more, so level 1), then 20 MiB that do
 * well again (the middle, which does not decide here). A 6 MiB file of the first part alone is
 * probed in its middle: level 9. A file of 2 MiB or less gets level 9 whatever it holds, and one
 * just larger is probed in its middle. */
TEST(compress_adaptive_level)
{
	char dir[256];
	struct pbuf b = { 0 }, bad = { 0 };
	uint64_t x = 12345;

	tmp_dir(dir);
	pb_simple_header(&b);
	add_part(&b, (6u << 20) - b.len, true, &x);
	add_part(&b, 4u << 20, false, &x);
	add_part(&b, 20u << 20, true, &x);
	expect_compressed_at(dir, "big.lk", &b, b.len, LK_COMPRESS_LEVEL_FAST);
	expect_compressed_at(dir, "head.lk", &b, 6u << 20, LK_COMPRESS_LEVEL_BEST);

	pb_simple_header(&bad);
	add_part(&bad, 3u << 20, false, &x);
	expect_compressed_at(dir, "bad.lk", &bad, 2 * LK_COMPRESS_PROBE, LK_COMPRESS_LEVEL_BEST);
	expect_compressed_at(dir, "bad1.lk", &bad, 2 * LK_COMPRESS_PROBE + 1,
			     LK_COMPRESS_LEVEL_FAST);
	free(bad.p);
	free(b.p);
	tmp_dir_remove(dir);
}

/* A compression fed while the profile is written (lk_compress_stream_feed, as `leek run`'s
 * follower does) makes the file that compressing the finished profile makes, and reads nothing at
 * or past the limit it is given: the bytes there are garbage until the limit passes them. A stream
 * dropped before its end leaves nothing behind. */
TEST(compress_stream_as_written)
{
	char dir[256], path[300], zst[310], whole[300], whole_zst[310];
	struct lk_compress_stream *s;
	struct lk_compressed c;
	struct pbuf b = { 0 };
	uint64_t x = 99;
	char *msg = NULL;
	FILE *f;

	tmp_dir(dir);
	pb_simple_header(&b);
	for (int part = 0; part < 6; part++) /* 24 MiB; the 8 MiB probe is in a bad part */
		add_part(&b, 4u << 20, part % 3 != 2, &x);
	snprintf(path, sizeof(path), "%s/grow.lk", dir);
	snprintf(zst, sizeof(zst), "%s.zst", path);
	snprintf(whole, sizeof(whole), "%s/whole.lk", dir);
	snprintf(whole_zst, sizeof(whole_zst), "%s.zst", whole);
	write_file(whole, b.p, b.len);
	ASSERT_OK(lk_compress_profile(whole, LK_COMPRESS_LEVEL, 0, &c, &msg));
	ASSERT_STREQ(c.path, whole_zst);
	ASSERT_EQ(c.raw_bytes, b.len);
	ASSERT_EQ(c.packed_bytes, file_size(whole_zst));
	expect_level(whole_zst, &b, LK_COMPRESS_LEVEL_FAST);
	free(c.path);

	uint8_t *junk = malloc(b.len);
	ASSERT_TRUE(junk != NULL);
	memset(junk, LK_REC_MAX_KNOWN + 1, b.len); /* a reserved tag, everywhere */
	write_file(path, junk, b.len);
	f = fopen(path, "r+");
	ASSERT_TRUE(f != NULL);
	ASSERT_OK(lk_compress_stream_new(path, &s));
	for (size_t limit = 0, step = 3333331; limit < b.len;) {
		size_t next = limit + step < b.len ? limit + step : b.len;
		ASSERT_EQ(fseek(f, (long)limit, SEEK_SET), 0);
		ASSERT_EQ(fwrite(b.p + limit, 1, next - limit, f), next - limit);
		ASSERT_EQ(fflush(f), 0);
		limit = next;
		ASSERT_OK(lk_compress_stream_feed(s, limit));
	}
	fclose(f);
	ASSERT_OK(lk_compress_stream_finish(s, path, LK_COMPRESS_LEVEL, 0, &c, &msg));
	ASSERT_STREQ(c.path, zst);
	ASSERT_EQ(c.raw_bytes, b.len);
	ASSERT_EQ(c.packed_bytes, file_size(zst));
	ASSERT_TRUE(c.packed_bytes < b.len / 2);
	ASSERT_TRUE(!exists(path));
	struct pbuf back;
	unzstd_file(zst, &back);
	ASSERT_EQ(back.len, b.len);
	ASSERT_TRUE(memcmp(back.p, b.p, b.len) == 0);
	size_t n1, n2;
	char *one = read_file(zst, &n1), *two = read_file(whole_zst, &n2);
	ASSERT_EQ(n1, n2);
	ASSERT_TRUE(memcmp(one, two, n1) == 0);
	free(one);
	free(two);
	free(back.p);
	free(c.path);

	/* Dropped half way: only the files that were there. */
	write_file(path, b.p, b.len);
	ASSERT_OK(lk_compress_stream_new(path, &s));
	ASSERT_OK(lk_compress_stream_feed(s, b.len / 2 + 3));
	lk_compress_stream_free(s);
	ASSERT_EQ(count_files(dir, "", ""), 3); /* whole.lk.zst, grow.lk.zst, grow.lk */
	ASSERT_EQ(count_files(dir, "grow", ""), 2);
	free(junk);
	free(b.p);
	tmp_dir_remove(dir);
}

/* gzip -c a >x; gzip -c b >>x, or zstd's: cut inside a record, as two members or frames. */
TEST(concatenated_members)
{
	char dir[256], raw[300], two_path[300];
	struct pbuf b, two;

	tmp_dir(dir);
	build_profile(&b);
	snprintf(raw, sizeof(raw), "%s/raw.lk", dir);
	write_file(raw, b.p, b.len);
	for (enum codec c = GZIP; c < NCODECS; c++) {
		two = (struct pbuf){ 0 };
		z_member(c, &two, b.p, 0, b.len / 2 + 3, 0);
		z_member(c, &two, b.p, b.len / 2 + 3, b.len, 0);
		snprintf(two_path, sizeof(two_path), "%s/two.lk%s", dir, codec_suffix[c]);
		write_file(two_path, two.p, two.len);
		expect_same_reading(dir, raw, two_path);
		free(two.p);
	}
	free(b.p);
	tmp_dir_remove(dir);
}

/* The offset in "profile ends at its last complete record at offset N". */
static unsigned long long end_offset(const char *err)
{
	const char *s = strstr(err, "last complete record at offset ");

	if (!s)
		FAIL("no \"last complete record at offset\" in:\n%s", err);
	return strtoull(s + strlen("last complete record at offset "), NULL, 10);
}

/* A compressed profile cut short (the machine died while it was being compressed) reads as the raw
 * profile cut at its last complete record: same records, warning and status. zstd's frame here in
 * blocks of 1 KiB, as a larger profile's are of 128 KiB: a cut leaves the blocks before it. */
static void expect_cut_reads_as_crashed(enum codec codec)
{
	char dir[256], cut_z[300], cut_raw[300], warn[100];
	struct pbuf b, z = { 0 };
	unsigned long long prev = 0;

	tmp_dir(dir);
	build_profile(&b);
	z_member(codec, &z, b.p, 0, b.len, 1024);
	snprintf(cut_z, sizeof(cut_z), "%s/cut.lk%s", dir, codec_suffix[codec]);
	snprintf(cut_raw, sizeof(cut_raw), "%s/cut.lk", dir);
	snprintf(warn, sizeof(warn), "cut.lk%s: warning: no trailer", codec_suffix[codec]);
	for (int quarter = 1; quarter <= 3; quarter++) {
		write_file(cut_z, z.p, z.len * (size_t)quarter / 4 + 1);
		LEEK(dir, "dump", cut_z);
		ASSERT_EQ(res.status, 0);
		ASSERT_CONTAINS(res.err, warn);
		unsigned long long n = end_offset(res.err);
		ASSERT_TRUE(n > prev && n < b.len);
		prev = n;
		write_file(cut_raw, b.p, (size_t)n);
		struct outcome x, y;
		outcome_of(&x, cut_z);
		LEEK(dir, "dump", cut_raw);
		outcome_of(&y, cut_raw);
		ASSERT_STREQ(x.out, y.out);
		ASSERT_STREQ(x.err, y.err);
		outcome_free(&x);
		outcome_free(&y);
		/* `leek report` too: status 0, the same report, and its own warning. */
		LEEK(dir, "report", "--format", "json", cut_z);
		ASSERT_EQ(res.status, 0);
		ASSERT_CONTAINS(res.err, "no trailer");
		outcome_of(&x, cut_z);
		LEEK(dir, "report", "--format", "json", cut_raw);
		outcome_of(&y, cut_raw);
		ASSERT_EQ(x.status, y.status);
		ASSERT_STREQ(x.out, y.out);
		ASSERT_STREQ(x.err, y.err);
		outcome_free(&x);
		outcome_free(&y);
	}
	/* Cut in gzip's trailer (CRC-32 and length) or zstd's checksum: every record is there, the
	 * TRAILER too. */
	write_file(cut_z, z.p, z.len - 3);
	LEEK(dir, "dump", "--summary", cut_z);
	ASSERT_EQ(res.status, 0);
	ASSERT_STREQ(res.err, "");
	/* Cut before any data: not a profile, yet. */
	write_file(cut_z, z.p, 5);
	LEEK(dir, "dump", "--summary", cut_z);
	ASSERT_EQ(res.status, 2);
	snprintf(warn, sizeof(warn), "not a leek profile (%s data cut short before any data)\n",
		 codec_name[codec]);
	ASSERT_CONTAINS(res.err, warn);
	free(z.p);
	free(b.p);
	tmp_dir_remove(dir);
}

TEST(truncated_gzip)
{
	expect_cut_reads_as_crashed(GZIP);
}

TEST(truncated_zstd)
{
	expect_cut_reads_as_crashed(ZSTD);
}

/* `leek dump --summary`, `dump` and `report` of the damaged profile at path: exit status 2, and
 * "leek: PATH: what" the one line of the dumps' stderr (the report's among its own). */
static void expect_damaged(const char *dir, const char *path, const char *what)
{
	char want[600];

	snprintf(want, sizeof(want), "leek: %s: %s\n", path, what);
	LEEK(dir, "dump", "--summary", path);
	ASSERT_EQ(res.status, 2);
	ASSERT_STREQ(res.err, want);
	LEEK(dir, "dump", path);
	ASSERT_EQ(res.status, 2);
	ASSERT_STREQ(res.err, want);
	LEEK(dir, "report", path);
	ASSERT_EQ(res.status, 2);
	ASSERT_CONTAINS(res.err, what);
	ASSERT_EQ(res.out_len, 0);
}

TEST(corrupt_gzip)
{
	char dir[256], path[300], want[400];
	struct pbuf b, gz = { 0 };
	size_t first;
	uint8_t saved;

	tmp_dir(dir);
	build_profile(&b);
	z_member(GZIP, &gz, b.p, 0, 5000, 0);
	first = gz.len;
	z_member(GZIP, &gz, b.p, 5000, b.len, 0);
	saved = gz.p[first + 10];
	gz.p[first + 10] = 0x07; /* a final block of the reserved type 3 */
	snprintf(path, sizeof(path), "%s/bad.lk.gz", dir);
	write_file(path, gz.p, gz.len);
	expect_damaged(dir, path, "gzip data corrupt after uncompressed offset 5000: invalid block "
				  "type");

	/* A wrong CRC-32 is found at the end of the member, after the last record. */
	gz.p[first + 10] = saved;
	z_member(GZIP, &gz, b.p, 0, 0, 0); /* fine: an empty member */
	write_file(path, gz.p, gz.len);
	LEEK(dir, "dump", "--summary", path);
	ASSERT_EQ(res.status, 0);
	gz.p[gz.len - 20 - 8] ^= 0x55; /* the CRC of the second member, before the empty one */
	write_file(path, gz.p, gz.len);
	LEEK(dir, "report", "--format", "json", path);
	ASSERT_EQ(res.status, 2);
	snprintf(want, sizeof(want), "gzip data corrupt after uncompressed offset %zu: incorrect "
		 "data check", b.len);
	ASSERT_CONTAINS(res.err, want);
	ASSERT_EQ(res.out_len, 0);
	free(gz.p);
	free(b.p);
	tmp_dir_remove(dir);
}

TEST(corrupt_zstd)
{
	char dir[256], path[300], want[400];
	struct pbuf b, z = { 0 };
	size_t first, end;
	uint8_t saved;

	tmp_dir(dir);
	build_profile(&b);
	z_member(ZSTD, &z, b.p, 0, 5000, 0);
	first = z.len;
	z_member(ZSTD, &z, b.p, 5000, b.len, 0);
	/* The second frame's first block (after its magic, header descriptor and window
	 * descriptor), of the reserved type 3. */
	ASSERT_EQ(z.p[first + 4], 0x04);
	saved = z.p[first + 6];
	z.p[first + 6] |= 0x06;
	snprintf(path, sizeof(path), "%s/bad.lk.zst", dir);
	write_file(path, z.p, z.len);
	expect_damaged(dir, path, "zstd data corrupt after uncompressed offset 5000: Data "
				  "corruption detected");

	/* A wrong checksum is found at the end of the frame (the offset: test-unz.c). */
	z.p[first + 6] = saved;
	z_member(ZSTD, &z, b.p, 0, 0, 0); /* fine: an empty frame */
	write_file(path, z.p, z.len);
	LEEK(dir, "dump", "--summary", path);
	ASSERT_EQ(res.status, 0);
	ASSERT_STREQ(res.err, "");
	end = z.len;
	z_member(ZSTD, &z, b.p, 0, 0, 0);
	z.p[end - 1] ^= 0x55; /* the checksum of the empty frame, before another one */
	write_file(path, z.p, z.len);
	LEEK(dir, "report", "--format", "json", path);
	ASSERT_EQ(res.status, 2);
	snprintf(want, sizeof(want), "zstd data corrupt after uncompressed offset %zu: Restored "
		 "data doesn't match checksum", b.len);
	ASSERT_CONTAINS(res.err, want);
	ASSERT_EQ(res.out_len, 0);
	z.p[end - 1] ^= 0x55;

	/* Bytes after the last frame that are not a frame. */
	pb_put(&z, "LEEK", 4);
	write_file(path, z.p, z.len);
	LEEK(dir, "dump", path);
	ASSERT_EQ(res.status, 2);
	snprintf(want, sizeof(want), "leek: %s: zstd data corrupt after uncompressed offset %zu: "
		 "Unknown frame descriptor\n", path, b.len);
	ASSERT_STREQ(res.err, want);
	free(z.p);
	free(b.p);
	tmp_dir_remove(dir);
}

TEST(compress_refuses)
{
	char dir[256], text[300], prof[300], zst[300], zst1[300], other[300], old[300];
	char want[700];
	struct pb_sample s;
	struct pbuf gz = { 0 };
	char *before;

	tmp_dir(dir);
	pb_build_sample(&s);
	snprintf(text, sizeof(text), "%s/notes.txt", dir);
	snprintf(prof, sizeof(prof), "%s/p.lk", dir);
	snprintf(zst, sizeof(zst), "%s/p.lk.zst", dir);
	snprintf(zst1, sizeof(zst1), "%s/p.lk.1.zst", dir);
	snprintf(other, sizeof(other), "%s/other.lk", dir);
	snprintf(old, sizeof(old), "%s/old.lk", dir);
	write_file(text, "LEEKPRO, almost\n", 16);

	LEEK(dir, "compress", text);
	ASSERT_EQ(res.status, 2);
	snprintf(want, sizeof(want), "leek: %s: not a leek profile (no LEEKPROF magic)\n", text);
	ASSERT_STREQ(res.err, want);
	ASSERT_EQ(res.out_len, 0);
	before = read_file(text, NULL);
	ASSERT_STREQ(before, "LEEKPRO, almost\n");
	free(before);
	ASSERT_EQ(count_files(dir, "notes", ""), 1); /* no temporary file left */

	/* Compressed once; then again, whatever its name: refused, the .zst untouched. */
	write_file(prof, s.b.p, s.b.len);
	LEEK(dir, "compress", prof);
	ASSERT_EQ(res.status, 0);
	ASSERT_TRUE(rename(zst, other) == 0);
	LEEK(dir, "compress", other);
	ASSERT_EQ(res.status, 2);
	snprintf(want, sizeof(want), "leek: %s: already zstd-compressed\n", other);
	ASSERT_STREQ(res.err, want);
	ASSERT_TRUE(exists(other));
	ASSERT_EQ(count_files(dir, "other", ""), 1);

	/* A profile gzipped by an older leek: refused as well, left as it is. */
	pb_gzip(&gz, s.b.p, s.b.len, 6);
	write_file(old, gz.p, gz.len);
	LEEK(dir, "compress", old);
	ASSERT_EQ(res.status, 2);
	snprintf(want, sizeof(want), "leek: %s: already gzip-compressed\n", old);
	ASSERT_STREQ(res.err, want);
	ASSERT_EQ(file_size(old), gz.len);
	ASSERT_EQ(count_files(dir, "old", ""), 1);

	/* A taken name is never overwritten: p.lk.zst exists, so p.lk goes to p.lk.1.zst. One bad
	 * file among good ones: the good ones are done, the status is 2. */
	write_file(zst, "keep me", 7);
	write_file(prof, s.b.p, s.b.len);
	LEEK(dir, "compress", dir, prof, "/nonexistent/x.lk");
	ASSERT_EQ(res.status, 2);
	snprintf(want, sizeof(want), "leek: %s: not a regular file\n", dir);
	ASSERT_CONTAINS(res.err, want);
	ASSERT_CONTAINS(res.err, "leek: cannot compress /nonexistent/x.lk: No such file or directory");
	snprintf(want, sizeof(want), "%s -> %s (", prof, zst1);
	ASSERT_CONTAINS(res.out, want);
	before = read_file(zst, NULL);
	ASSERT_STREQ(before, "keep me");
	free(before);
	ASSERT_TRUE(!exists(prof) && exists(zst1));
	LEEK(dir, "dump", zst1);
	ASSERT_EQ(res.status, 0);

	LEEK(dir, "compress");
	ASSERT_EQ(res.status, 1);
	LEEK(dir, "compress", "--help");
	ASSERT_EQ(res.status, 0);
	ASSERT_CONTAINS(res.out, "usage: leek compress FILE...");
	free(gz.p);
	free(s.b.p);
	tmp_dir_remove(dir);
}

/* ---- leek run: needs libleek.so and the fixtures, so not under a sanitizer ---- */

#if defined(LIBLEEK_PATH) && defined(FX_DIR)
#define FX(name) FX_DIR "/" name

/* Whether path ends with suffix. */
static bool ends_with(const char *path, const char *suffix)
{
	size_t n = strlen(path), k = strlen(suffix);

	return n > k && !strcmp(path + n - k, suffix);
}

TEST(run_leaves_zst)
{
	char dir[256], out[300], want[400];
	struct pbuf back;
	char *path;

	tmp_dir(dir);
	snprintf(out, sizeof(out), "%s/x.%%p.lk", dir);
	LEEK(dir, "run", "--period", "1", "-o", out, "--", FX("fx-exit"), "exit", "3");
	ASSERT_EQ(res.status, 3);
	path = find_one(dir, "x.", "");
	ASSERT_TRUE(ends_with(path, ".lk.zst"));
	snprintf(want, sizeof(want), "leek: %s: fx-exit, pid", path); /* the summary names it */
	ASSERT_CONTAINS(res.err, want);
	ASSERT_CONTAINS(res.err, "1 profile written");
	unzstd_file(path, &back); /* a small profile: level 9 */
	ASSERT_TRUE(back.len > 8 && !memcmp(back.p, "LEEKPROF", 8));
	expect_level(path, &back, LK_COMPRESS_LEVEL_BEST);
	free(back.p);
	LEEK(dir, "report", path);
	ASSERT_EQ(res.status, 0);
	ASSERT_CONTAINS(res.out, "fixture_exit_alloc");
	unlink(path);
	free(path);

	LEEK(dir, "run", "--no-compress", "--period", "1", "-o", out, "--", FX("fx-exit"), "exit",
	     "4");
	ASSERT_EQ(res.status, 4);
	path = find_one(dir, "x.", "");
	ASSERT_TRUE(ends_with(path, ".lk"));
	ASSERT_EQ(count_files(dir, "x.", ".zst"), 0);
	snprintf(want, sizeof(want), "leek: %s: fx-exit, pid", path);
	ASSERT_CONTAINS(res.err, want);
	free(path);

	LEEK(dir, "help", "run");
	ASSERT_CONTAINS(res.out, "--no-compress");
	tmp_dir_remove(dir);
}

/* The summary's lines below its first (which names the file, the pid and the duration), without
 * the time of the peak (malloc'ed). */
static char *summary_body(const char *err)
{
	const char *nl = strchr(err, '\n');
	char *s = strdup(nl ? nl + 1 : ""), *at, *end;

	if (!s)
		FAIL("out of memory");
	while ((at = strstr(s, "; at ")) && (end = strchr(at, '\n')))
		memmove(at, end, strlen(end) + 1);
	return s;
}

/* `leek run` reads and compresses the program's profile while it runs (run-follow.c). fx-follow
 * waits until leek holds the compression's temporary file with bytes in it, so its status 0 says
 * that the compression went on during the run (the reading goes first, at every step). The
 * summary must be the one a run without the follower prints, and the .zst the whole profile,
 * compressed at the level its data gets, as `leek compress` would. The follower runs only on a CPU
 * that nothing else wants: meson runs this test alone. */
TEST(run_follows_the_profile)
{
	char dir[256], out[300], want[400];
	char *path, *followed, *plain;
	struct pbuf back;
	size_t bound = ZSTD_compressBound(LK_COMPRESS_PROBE), best;
	void *probe;

	tmp_dir(dir);
	snprintf(out, sizeof(out), "%s/x.%%p.lk", dir);
	/* 3000 rounds: about 24 MiB of profile, past the compression's 16 MiB start. */
	LEEK(dir, "run", "--period", "1", "-o", out, "--", FX("fx-follow"), "3000", "wait");
	if (res.status != 0)
		FAIL("leek run fx-follow 3000 wait: exit %d (3: no compression under way while it "
		     "ran): %s", res.status, res.err);
	path = find_one(dir, "x.", "");
	ASSERT_TRUE(ends_with(path, ".lk.zst"));
	snprintf(want, sizeof(want), "leek: %s: fx-follow, pid", path);
	ASSERT_CONTAINS(res.err, want);
	ASSERT_CONTAINS(res.err, "3000000 samples");
	followed = summary_body(res.err);
	LEEK(dir, "dump", "--summary", path);
	ASSERT_EQ(res.status, 0);
	ASSERT_CONTAINS(res.out, "trailer:     yes");
	ASSERT_CONTAINS(res.out, "alloc=3000000 free=2997000");
	unzstd_file(path, &back);
	ASSERT_TRUE(back.len > 16u << 20);
	/* Its level is the probe's (compress.c, choose_level): level 9 if LK_COMPRESS_PROBE bytes
	 * from LK_COMPRESS_PROBE_AT shrink LK_COMPRESS_GOOD_RATIO times at level 9. */
	probe = malloc(bound);
	ASSERT_TRUE(probe != NULL);
	best = ZSTD_compress(probe, bound, back.p + LK_COMPRESS_PROBE_AT, LK_COMPRESS_PROBE,
			     LK_COMPRESS_LEVEL_BEST);
	ASSERT_TRUE(!ZSTD_isError(best));
	expect_level(path, &back,
		     LK_COMPRESS_PROBE >= best * LK_COMPRESS_GOOD_RATIO ? LK_COMPRESS_LEVEL_BEST
									: LK_COMPRESS_LEVEL_FAST);
	free(probe);
	free(back.p);
	unlink(path);
	free(path);

	LEEK(dir, "run", "--no-follow", "--period", "1", "-o", out, "--", FX("fx-follow"), "3000");
	ASSERT_EQ(res.status, 0);
	plain = summary_body(res.err);
	ASSERT_CONTAINS(plain, "fixture_follow_large");
	ASSERT_STREQ(followed, plain);
	free(followed);
	free(plain);
	LEEK(dir, "help", "run");
	ASSERT_CONTAINS(res.out, "--no-follow");
	tmp_dir_remove(dir);
}

/* A thread that allocated once and then sleeps through the run keeps its thread segment's body
 * open, and a follower stops before an open body: the compression would then begin only after
 * the exit, and fx-follow would exit 3. libleek ends such a body from another thread once the file
 * has left it behind (writer-segment.c, lk_seg_seal), with a membarrier, which a seccomp filter
 * may forbid. The summary is still the one a run without the follower prints. */
TEST(run_follows_past_an_idle_thread)
{
	char dir[256], out[300];
	char *path, *followed, *plain;

	if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) != 0)
		SKIP("no membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) here: %s",
		     strerror(errno));
	tmp_dir(dir);
	snprintf(out, sizeof(out), "%s/x.%%p.lk", dir);
	LEEK(dir, "run", "--period", "1", "-o", out, "--", FX("fx-follow"), "3000", "wait", "idle");
	if (res.status != 0)
		FAIL("leek run fx-follow 3000 wait idle: exit %d (3: no compression under way while "
		     "it ran): %s", res.status, res.err);
	path = find_one(dir, "x.", "");
	ASSERT_TRUE(ends_with(path, ".lk.zst"));
	ASSERT_CONTAINS(res.err, "3000002 samples"); /* and the thread's own block (allocate_dtv) */
	followed = summary_body(res.err);
	LEEK(dir, "dump", "--summary", path);
	ASSERT_EQ(res.status, 0);
	ASSERT_CONTAINS(res.out, "trailer:     yes");
	ASSERT_CONTAINS(res.out, "alloc=3000002 free=2997001");
	unlink(path);
	free(path);

	LEEK(dir, "run", "--no-follow", "--period", "1", "-o", out, "--", FX("fx-follow"), "3000",
	     "-", "idle");
	ASSERT_EQ(res.status, 0);
	plain = summary_body(res.err);
	ASSERT_STREQ(followed, plain);
	free(followed);
	free(plain);
	tmp_dir_remove(dir);
}

/* A program that execs another: the follower leaves the first profile, which stops changing, for
 * the exec'd program's, of the same pid. fx-follow, exec'd by sh, exits 0 only once leek compresses
 * its profile while it runs. Another process keeps a CPU busy meanwhile: on two CPUs the follower
 * then gets one only once fx-follow has written its profile and waits, and must find the file's
 * bytes final from its size alone (docs/format.md: it never grows by more than LK_GROW_MAX). */
TEST(run_follows_past_exec)
{
	char dir[256], out[300];
	char *path;
	pid_t hog;

	tmp_dir(dir);
	snprintf(out, sizeof(out), "%s/x.%%e.%%p.lk", dir);
	hog = fork();
	ASSERT_TRUE(hog >= 0);
	if (hog == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		alarm(120);
		for (;;)
			__asm__ volatile("" ::: "memory");
	}
	LEEK(dir, "run", "--period", "1", "-o", out, "--", "/bin/sh", "-c", "exec \"$0\" 3000 wait",
	     FX("fx-follow"));
	kill(hog, SIGKILL);
	waitpid(hog, NULL, 0);
	if (res.status != 0)
		FAIL("leek run sh -c 'exec fx-follow 3000 wait': exit %d (3: no compression under "
		     "way while it ran): %s", res.status, res.err);
	ASSERT_CONTAINS(res.err, "2 profiles written");
	ASSERT_EQ(count_files(dir, "x.", ".lk.zst"), 2);
	path = find_one(dir, "x.fx-follow.", "");
	ASSERT_TRUE(ends_with(path, ".lk.zst"));
	free(path);
	tmp_dir_remove(dir);
}

/* When compressing fails the profile stays raw, one warning says so, and the status is still the
 * program's. Here every name the .zst could take exists: the program made them, knowing its pid
 * ($$ in sh). */
TEST(run_compress_fails)
{
	static const char script[] = "i=1; : >\"$1/x.$$.lk.zst\"; while [ $i -lt 1000 ]; do "
				     ": >\"$1/x.$$.lk.$i.zst\"; i=$((i + 1)); done; exit 5";
	char dir[256], out[300];
	char *path;

	tmp_dir(dir);
	snprintf(out, sizeof(out), "%s/x.%%p.lk", dir);
	LEEK(dir, "run", "--period", "1", "-o", out, "--", "/bin/sh", "-c", script, "sh", dir);
	ASSERT_EQ(res.status, 5);
	path = find_one(dir, "x.", ".lk");
	ASSERT_EQ(count_files(dir, "x.", ".zst"), 1000); /* the program's, none of leek's */
	ASSERT_CONTAINS(res.err, "cannot compress it (File exists), so it stays uncompressed");
	ASSERT_CONTAINS(res.err, "1 profile written");
	free(path);
	tmp_dir_remove(dir);
}

/* A process that outlives the program still writes its profile: `leek run` leaves it raw, and
 * `leek compress` refuses it until the process has ended. */
TEST(run_leaves_a_profile_being_written)
{
	char dir[256], out[300], script[600], want[400], pidfile[300], *s;
	struct proc daemon = { 0 };
	char *path;
	int pid;

	tmp_dir(dir);
	snprintf(out, sizeof(out), "%s/x.%%p.lk", dir);
	snprintf(pidfile, sizeof(pidfile), "%s/ready", dir);
	/* The program starts fx-exit in the background and ends once it is ready (its profile
	 * written and open), with no other process in between. */
	snprintf(script, sizeof(script),
		 ": >\"$1/ready\"; %s wait >\"$1/ready\" & while ! read line <\"$1/ready\"; do :; "
		 "done; echo $! >\"$1/pid\"",
		 FX("fx-exit"));
	leek(&daemon, dir, (const char *const[]){ "run", "--period", "1", "-o", out, "--",
						   "/bin/sh", "-c", script, "sh", dir, NULL });
	ASSERT_EQ(daemon.status, 0);
	snprintf(pidfile, sizeof(pidfile), "%s/pid", dir);
	s = read_file(pidfile, NULL);
	pid = atoi(s);
	free(s);
	ASSERT_TRUE(pid > 0);
	snprintf(want, sizeof(want), ": still being written by pid %d, so it stays uncompressed",
		 pid);
	ASSERT_CONTAINS(daemon.err, want);
	/* fx-exit's profile is x.PID.lk, or x.PID.lk.1 if sh's fork child wrote one before the
	 * exec: either way the only one of that pid left raw. */
	if (asprintf(&path, "%s/x.%d.lk.1", dir, pid) < 0)
		FAIL("out of memory");
	if (!exists(path))
		path[strlen(path) - 2] = 0;
	ASSERT_TRUE(exists(path));
	snprintf(want, sizeof(want), "x.%d.lk", pid);
	ASSERT_EQ(count_files(dir, want, ".zst"), strstr(path, ".lk.1") ? 1 : 0);

	/* proc_wait() killed fx-exit with the rest of the process group: now it can be done. */
	for (int i = 0; i < 500 && kill(pid, 0) == 0; i++)
		usleep(10000);
	LEEK(dir, "compress", path);
	ASSERT_EQ(res.status, 0);
	proc_free(&daemon);
	free(path);
	tmp_dir_remove(dir);
}

/* `leek compress` refuses a profile while its process runs. */
TEST(compress_refuses_a_profile_being_written)
{
	char dir[256], out[300], want[400];
	struct timespec nap = { 0, 5 * 1000 * 1000 };
	struct proc run;
	char *path, *s;
	bool ready = false;

	tmp_dir(dir);
	snprintf(out, sizeof(out), "%s/w.%%p.lk", dir);
	leek_start(&run, dir, NULL,
		   (const char *const[]){ "run", "--period", "1", "-o", out, "--", FX("fx-exit"),
					  "wait", NULL },
		   30);
	for (int i = 0; i < 2000 && !ready; i++) {
		nanosleep(&nap, NULL);
		if (access(run.out_path, F_OK) == 0) {
			s = read_file(run.out_path, NULL);
			ready = strstr(s, "ready 1\n") != NULL;
			free(s);
		}
	}
	if (!ready) {
		kill(-run.pid, SIGKILL);
		FAIL("fx-exit wait never said it was ready");
	}
	path = find_one(dir, "w.", ".lk");
	LEEK(dir, "compress", path);
	ASSERT_EQ(res.status, 2);
	snprintf(want, sizeof(want), "leek: %s: still being written by pid ", path);
	ASSERT_CONTAINS(res.err, want);
	ASSERT_CONTAINS(res.err, "; compress it once that process has ended\n");
	ASSERT_TRUE(exists(path));
	ASSERT_EQ(count_files(dir, "w.", ".zst"), 0);
	s = read_file(path, NULL); /* unchanged */
	ASSERT_TRUE(!memcmp(s, "LEEKPROF", 8));
	free(s);

	/* SIGTERM to leek run reaches fx-exit, which dies of it; then leek run compresses. */
	ASSERT_EQ(kill(run.pid, SIGTERM), 0);
	proc_wait(&run);
	ASSERT_EQ(run.status, 128 + SIGTERM);
	ASSERT_TRUE(!exists(path));
	free(path);
	path = find_one(dir, "w.", ".lk.zst");
	proc_free(&run);
	free(path);
	tmp_dir_remove(dir);
}
#else
TEST(run_tests)
{
	SKIP("no libleek.so or fixtures in this build (a sanitizer build) for `leek run`");
}
#endif
