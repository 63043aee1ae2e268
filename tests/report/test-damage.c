/* test-damage.c: a real profile, cut at every byte and damaged at random, must never get the
 * reader to crash, hang or read past what is there (issue 5: the reader must survive anything).
 *
 * The profiles: with libleek.so built (no sanitizer), one recorded by `leek run --period 1` of
 * fixtures/fx-golden.c (about 1.5 KB: MODULE, STACK, THREAD, ALLOC, FREE, RSS and TRAILER
 * records as libleek writes them); always tests/lib/build-profile.h's sample (every record
 * type, LOSS, UNLOAD, INHERIT and extensions too); and always seed-fork of tests/fuzz/corpus, a
 * forked child's profile that libleek wrote, so that a sanitizer build reads one too.
 *
 * The pass rules, against the records of the whole profile (each decoded into a text holding
 * every field, and its offset):
 *   - Cut at byte N, read in process (lk_reader_next, and lk_reader_skip apart): at a record
 *     boundary, exactly the records before N, then the end, without a trailer, and an end offset
 *     of N; inside a record, exactly the records before it, then -EBADMSG naming the offset of
 *     its tag; inside the header, a failed open with a message. Every record returned is the
 *     whole profile's record at the same offset, field for field.
 *   - Cut at about 20 offsets (inside the header, a MODULE, an ALLOC, at boundaries):
 *     `leek dump --summary`, `leek report`, `leek diff CUT CUT` and `leek diff --from=0 CUT` exit
 *     0 with the "no trailer" warning (dump's naming the end offset) at a boundary, or 2 with
 *     "offset N" inside a record; never a signal. `leek export` says what report says, word for
 *     word, with its status.
 *   - 2000 single-bit flips and 500 overwrites of 1 to 16 random bytes, with a fixed seed: the
 *     reader ends, or fails with a message ("offset N: ..." unless it is not a leek profile),
 *     after at most one record per byte, at increasing offsets inside the file; lk_reader_skip
 *     gives the same result. 31 of them (every 83rd) through the binaries: exit 0 or 2, never
 *     a signal (or the 1 of a sanitizer report), and export's stderr and status report's.
 *   - The same profile compressed (read-z.c), with zstd (what `leek run` writes, here in blocks
 *     of 61 bytes so that a cut leaves some of them whole) and with gzip (what it wrote before),
 *     cut at every byte: a prefix of the raw records, or an error with a message; the trailer
 *     only after every record; some cuts that read as a crashed profile. Then the same random
 *     damage, with the codec's largest ratio (deflate's 1032:1; zstd's 32768:1, a 128 KiB RLE
 *     block from 4 bytes) as the bound on records.
 * A hang fails through the harness's alarm. Under ASan and UBSan (this is suite unit) every
 * memory error is fatal.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "build-profile.h"
#include "files.h"
#include "harness.h"
#include "leek.h"
#include "read.h"
#include "util.h"
#include "z-build.h"

#ifndef CORPUS_DIR
#error "meson passes CORPUS_DIR, tests/fuzz/corpus"
#endif

/* A profile read to its end: each record as text, and its offset. */
struct readout {
	int r;            /* lk_reader_next's last result, or open's */
	bool trailer;
	uint64_t end;     /* lk_reader_end_offset */
	size_t n;
	char **text;
	uint64_t *off;
	char error[256];
};

static char *describe(const struct lk_record *rec)
{
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);

	if (!f)
		FAIL("out of memory");
	fprintf(f, "@%" PRIu64 " tag %u t %" PRIu64 ":", rec->offset, rec->tag, rec->time_ns);
	switch ((unsigned)rec->tag) {
	case LK_REC_ALLOC:
		fprintf(f, " tid %" PRIu64 " block %" PRIu64 " size %" PRIu64 " stack %" PRIu64,
			rec->alloc.tid, rec->alloc.block, rec->alloc.size, rec->alloc.stack);
		break;
	case LK_REC_FREE:
		fprintf(f, " tid %" PRIu64 " block %" PRIu64, rec->free.tid, rec->free.block);
		break;
	case LK_REC_THREAD:
		fprintf(f, " tid %" PRIu64, rec->thread.tid);
		break;
	case LK_REC_STACK:
		fprintf(f, " id %" PRIu64 " n %" PRIu32 ":", rec->stack.id, rec->stack.nframes);
		for (uint32_t i = 0; i < rec->stack.nframes; i++)
			fprintf(f, " %#" PRIx64, rec->stack.frames[i]);
		break;
	case LK_REC_MODULE:
		fprintf(f, " id %" PRIu64 " base %#" PRIx64 " seg", rec->module.id,
			rec->module.base);
		for (uint32_t i = 0; i < rec->module.nseg; i++)
			fprintf(f, " %#" PRIx64 "+%#" PRIx64, (uint64_t)rec->module.seg[i].start,
				(uint64_t)rec->module.seg[i].len);
		fputs(" build-id ", f);
		for (uint32_t i = 0; i < rec->module.build_id_len; i++)
			fprintf(f, "%02x", rec->module.build_id[i]);
		fprintf(f, " path %" PRIu32 " ", rec->module.path_len);
		fwrite(rec->module.path, 1, rec->module.path_len, f);
		break;
	case LK_REC_UNLOAD:
		fprintf(f, " id %" PRIu64, rec->unload.id);
		break;
	case LK_REC_RSS:
		fprintf(f, " bytes %" PRIu64, rec->rss.bytes);
		break;
	case LK_REC_LOSS:
	case LK_REC_TRAILER:
		fprintf(f, " end %" PRIu64 " n %" PRIu32 ":", rec->counters.end_realtime_ns,
			rec->counters.n);
		for (uint32_t i = 0; i < rec->counters.n; i++)
			fprintf(f, " %" PRIu64 "=%" PRIu64, rec->counters.v[i].id,
				rec->counters.v[i].value);
		break;
	case LK_REC_INHERIT:
		fprintf(f, " block %" PRIu64 " size %" PRIu64 " stack %" PRIu64 " at %" PRIu64,
			rec->inherit.block, rec->inherit.size, rec->inherit.stack,
			rec->inherit.alloc_monotonic_ns);
		break;
	case LK_READ_EXT:
		fprintf(f, " ext %#x len %" PRIu64, rec->ext.tag, rec->ext.len);
		break;
	default:
		fprintf(f, " unexpected tag");
		break;
	}
	if (fclose(f) != 0)
		FAIL("out of memory");
	return s;
}

static void readout_free(struct readout *o)
{
	for (size_t i = 0; i < o->n; i++)
		free(o->text[i]);
	free(o->text);
	free(o->off);
	*o = (struct readout){ 0 };
}

/* Reads data[0..len) in process, keeping at most max records (more fails the test: a loop). */
static void read_profile(const uint8_t *data, size_t len, size_t max, struct readout *o)
{
	_cleanup_(lk_reader_freep) struct lk_reader *rd = lk_reader_new();
	struct lk_record rec;

	*o = (struct readout){ 0 };
	if (!rd)
		FAIL("out of memory");
	o->r = lk_reader_open_memory(rd, data, len);
	while (o->r >= 0 && (o->r = lk_reader_next(rd, &rec)) > 0) {
		if (o->n == max)
			FAIL("more than %zu records from %zu bytes: the reader loops", max, len);
		if ((o->n & (o->n - 1)) == 0) { /* 0, 1, 2, 4, ...: double */
			o->text = realloc(o->text, (2 * o->n + 1) * sizeof(*o->text));
			o->off = realloc(o->off, (2 * o->n + 1) * sizeof(*o->off));
			if (!o->text || !o->off)
				FAIL("out of memory");
		}
		o->off[o->n] = rec.offset;
		o->text[o->n++] = describe(&rec);
	}
	o->trailer = lk_reader_has_trailer(rd);
	o->end = lk_reader_end_offset(rd);
	snprintf(o->error, sizeof(o->error), "%s", lk_reader_error(rd));
}

/* The same through lk_reader_skip: its result and number of records. */
static int skip_profile(const uint8_t *data, size_t len, size_t max, size_t *n)
{
	_cleanup_(lk_reader_freep) struct lk_reader *rd = lk_reader_new();
	uint64_t t;
	int r;

	if (!rd)
		FAIL("out of memory");
	*n = 0;
	r = lk_reader_open_memory(rd, data, len);
	while (r >= 0 && (r = lk_reader_skip(rd, &t)) > 0)
		if (++*n > max)
			FAIL("lk_reader_skip: more than %zu records from %zu bytes", max, len);
	return r;
}

static bool has_any_offset(const char *msg)
{
	const char *s = strstr(msg, "offset ");
	return s && s[7] >= '0' && s[7] <= '9';
}

/* Index of the first record of full at or after offset at (full->n if none). */
static size_t first_at(const struct readout *full, uint64_t at)
{
	size_t k = 0;

	while (k < full->n && full->off[k] < at)
		k++;
	return k;
}

/* ---- the binaries ---- */

static struct proc res;

static void leek(const char *dir, const char *cmd, const char *opt, const char *path)
{
	proc_free(&res);
	leek_exec(&res, dir, NULL,
		  (const char *const[]){ cmd, opt ? opt : path, opt ? path : NULL, NULL }, 30);
}

/* `leek diff PATH PATH`: the file on both sides, read twice. */
static void leek_diff_itself(const char *dir, const char *path)
{
	proc_free(&res);
	leek_exec(&res, dir, NULL, (const char *const[]){ "diff", path, path, NULL }, 30);
}

/* Status 0 or 2, and never a sanitizer's report. */
static void expect_survived(const char *what)
{
	if ((res.status != 0 && res.status != 2) || strstr(res.err, "Sanitizer"))
		FAIL("%s: %s: exit %d, stderr:\n%.3000s", what, res.argv0, res.status, res.err);
}

/* `leek export --format folded` of path says what `leek report` of it said (in res), word for
 * word, with the same status; res is export's then. */
static void same_as_report(const char *dir, const char *path, const char *what)
{
	char *err = strdup(res.err);
	int status = res.status;

	if (!err)
		FAIL("out of memory");
	proc_free(&res);
	leek_exec(&res, dir, NULL,
		  (const char *const[]){ "export", "--format", "folded", path, NULL }, 30);
	if (res.status != status || strcmp(res.err, err) != 0)
		FAIL("%s: export: exit %d, stderr:\n%s\nreport: exit %d, stderr:\n%s", what,
		     res.status, res.err, status, err);
	free(err);
}

/* header: bytes before the first record; cut: the length of the cut file. */
static void binaries_on_cut(const char *dir, const uint8_t *data, const struct readout *full,
			    uint64_t header, size_t cut)
{
	char path[300], what[128], want[80];
	size_t k = first_at(full, cut);
	bool boundary = cut == header || (k < full->n && full->off[k] == cut) || cut == full->end;

	snprintf(path, sizeof(path), "%s/cut.lk", dir);
	write_file(path, data, cut);
	for (int i = 0; i < 5; i++) {
		snprintf(what, sizeof(what), "cut at %zu of %" PRIu64 " (header %" PRIu64 ")", cut,
			 full->end, header);
		if (i == 0)
			leek(dir, "dump", "--summary", path);
		else if (i == 1)
			leek(dir, "report", NULL, path);
		else if (i == 2)
			same_as_report(dir, path, what);
		else if (i == 3)
			leek_diff_itself(dir, path);
		else
			leek(dir, "diff", "--from=0", path);
		expect_survived(what);
		if (cut < header) {
			if (res.status != 2)
				FAIL("%s: %s: exit %d", what, res.argv0, res.status);
		} else if (boundary && cut < full->end) {
			snprintf(want, sizeof(want), "at offset %zu ", cut);
			if (res.status != 0 || !strstr(res.err, "warning: no trailer") ||
			    (i == 0 && !strstr(res.err, want)))
				FAIL("%s: %s: expected exit 0 and the no-trailer warning%s%s; got "
				     "exit %d, stderr:\n%s",
				     what, res.argv0, i == 0 ? " with " : "", i == 0 ? want : "",
				     res.status, res.err);
		} else if (!boundary) {
			if (res.status != 2 || !leek_says_offset(res.err, full->off[k - 1]))
				FAIL("%s: %s: expected exit 2 and \"offset %" PRIu64 "\"; got exit "
				     "%d, stderr:\n%s",
				     what, res.argv0, full->off[k - 1], res.status, res.err);
		}
	}
}

/* ---- the damage ---- */

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Cuts data at every byte; the binaries at about 20 of them. */
static void cut_everywhere(const char *name, const uint8_t *data, size_t len)
{
	struct readout full, cut;
	char dir[256];
	uint64_t header;
	size_t picks[64], npicks = 0;

	read_profile(data, len, len, &full);
	if (full.r != 0 || !full.trailer || full.end != len || full.n < 10)
		FAIL("%s: the whole profile: r %d, trailer %d, end %" PRIu64
		     " of %zu, %zu records: %s",
		     name, full.r, full.trailer, full.end, len, full.n, full.error);
	header = full.off[0];

	for (size_t c = 0; c < len; c++) {
		size_t k = first_at(&full, c), nskip;
		bool boundary = c == header || (k < full.n && full.off[k] == c);

		read_profile(data, c, full.n, &cut);
		/* The records read: a prefix of the whole profile's, each ending by c. */
		if (cut.n > full.n)
			FAIL("%s: cut at %zu: %zu records, the whole has %zu", name, c, cut.n,
			     full.n);
		for (size_t i = 0; i < cut.n; i++) {
			uint64_t end = i + 1 < full.n ? full.off[i + 1] : full.end;
			if (cut.off[i] != full.off[i] || strcmp(cut.text[i], full.text[i]))
				FAIL("%s: cut at %zu: record %zu is\n  %s\n"
				     "but in the whole profile\n  %s",
				     name, c, i, cut.text[i], full.text[i]);
			if (end > c)
				FAIL("%s: cut at %zu: record %zu (%s) ends at %" PRIu64, name, c, i,
				     cut.text[i], end);
		}
		if (c < header) {
			if (cut.r >= 0 || cut.n || !*cut.error ||
			    (cut.r != -EMEDIUMTYPE && !has_any_offset(cut.error)))
				FAIL("%s: cut at %zu, inside the %" PRIu64
				     "-byte header: r %d, %zu records, \"%s\"",
				     name, c, header, cut.r, cut.n, cut.error);
		} else if (boundary) {
			if (cut.r != 0 || cut.trailer || cut.n != k || cut.end != c)
				FAIL("%s: cut at %zu, a record boundary: r %d \"%s\", trailer %d, "
				     "%zu records of %zu, end offset %" PRIu64,
				     name, c, cut.r, cut.error, cut.trailer, cut.n, k, cut.end);
		} else {
			if (cut.r != -EBADMSG || cut.n != k - 1 ||
			    !leek_says_offset(cut.error, full.off[k - 1]))
				FAIL("%s: cut at %zu, inside the record at %" PRIu64
				     ": r %d \"%s\", %zu records (expected %zu)",
				     name, c, full.off[k - 1], cut.r, cut.error, cut.n, k - 1);
		}
		if (skip_profile(data, c, full.n, &nskip) != cut.r || nskip != cut.n)
			FAIL("%s: cut at %zu: lk_reader_skip gives %zu records, lk_reader_next %zu",
			     name, c, nskip, cut.n);
		readout_free(&cut);
	}

	/* The binaries: the header, a boundary and the middle of each of the first records, the
	 * middle of the first ALLOC and of the last MODULE, and the end. */
	picks[npicks++] = 0;
	picks[npicks++] = 5;
	picks[npicks++] = header / 2;
	picks[npicks++] = header - 1;
	picks[npicks++] = header;
	for (size_t i = 0; i + 1 < full.n && npicks < 12; i++) {
		picks[npicks++] = full.off[i + 1];
		picks[npicks++] = (full.off[i] + full.off[i + 1] + 1) / 2;
	}
	for (size_t i = 0; i + 1 < full.n; i++) {
		unsigned tag = data[full.off[i]];
		if (tag == LK_REC_ALLOC || (tag == LK_REC_MODULE && data[full.off[i + 1]] != tag)) {
			picks[npicks++] = full.off[i] + 2;
			picks[npicks++] = full.off[i + 1] - 1;
			if (npicks > 20)
				break;
		}
	}
	picks[npicks++] = full.off[full.n - 1]; /* before the trailer */
	picks[npicks++] = len - 1;              /* inside it */
	tmp_dir(dir);
	for (size_t i = 0; i < npicks; i++)
		binaries_on_cut(dir, data, &full, header, picks[i]);
	tmp_dir_remove(dir);
	readout_free(&full);
}

/* Flips and overwrites data at random; the binaries on 31 of them. max: the most records the
 * damaged data may hold (one a byte for a raw profile). */
static void damage_randomly(const char *name, const uint8_t *data, size_t len, size_t max)
{
	uint8_t *p = malloc(len);
	uint64_t seed = 0x6c65656b; /* "leek": fixed, so a failure repeats */
	char dir[256], path[300], what[160];
	size_t ran = 0;

	if (!p)
		FAIL("out of memory");
	tmp_dir(dir);
	snprintf(path, sizeof(path), "%s/damaged.lk", dir);
	for (int round = 0; round < 2500; round++) {
		struct readout o;
		size_t at = rng_next(&seed) % len, n = 1, nskip;

		memcpy(p, data, len);
		if (round < 2000) {
			p[at] ^= (uint8_t)(1u << (rng_next(&seed) % 8));
			snprintf(what, sizeof(what), "%s: round %d: bit flipped at %zu", name,
				 round, at);
		} else {
			n = 1 + rng_next(&seed) % 16;
			for (size_t i = 0; i < n && at + i < len; i++)
				p[at + i] = (uint8_t)rng_next(&seed);
			snprintf(what, sizeof(what), "%s: round %d: %zu bytes overwritten at %zu",
				 name, round, n, at);
		}
		read_profile(p, len, max, &o);
		if (o.r < 0 && (!*o.error || (o.r != -EMEDIUMTYPE && !has_any_offset(o.error))))
			FAIL("%s: r %d with message \"%s\"", what, o.r, o.error);
		for (size_t i = 0; i < o.n; i++)
			if (o.off[i] >= max || (i && o.off[i] <= o.off[i - 1]))
				FAIL("%s: record %zu at offset %" PRIu64 " (previous %" PRIu64 ")",
				     what, i, o.off[i], i ? o.off[i - 1] : 0);
		if (o.r == 0 && o.end > max)
			FAIL("%s: end offset %" PRIu64 " past the %zu bytes", what, o.end, max);
		if (skip_profile(p, len, max, &nskip) != o.r || nskip != o.n)
			FAIL("%s: lk_reader_skip gives %zu records, lk_reader_next %zu (r %d)",
			     what, nskip, o.n, o.r);
		readout_free(&o);
		if (round % 83 == 0) {
			write_file(path, p, len);
			leek(dir, "dump", "--summary", path);
			expect_survived(what);
			leek(dir, "report", NULL, path);
			expect_survived(what);
			same_as_report(dir, path, what);
			leek_diff_itself(dir, path);
			expect_survived(what);
			leek(dir, "diff", "--from=0", path);
			expect_survived(what);
			ran++;
		}
	}
	ASSERT_EQ(ran, 31);
	tmp_dir_remove(dir);
	free(p);
}

enum codec { GZIP, ZSTD };

static const char *const codec_name[] = { "gzip", "zstd" };

/* The compressed form of data, cut at every byte: a prefix of the raw profile's records, and the
 * trailer only with every record. The codec's own library says how many bytes the cut leaves (u):
 * with the header whole, a stream cut short reads as a crashed profile, exactly the records whole
 * within u and no error; a complete stream (cut at the end of a member or frame) reads as its raw
 * bytes would, a record cut there being corruption. Then damaged at random: it must survive,
 * nothing more (a record decoded from damaged data may be wrong before the CRC-32 or checksum is
 * checked). */
static void z_everywhere(enum codec codec, const char *name, const uint8_t *data, size_t len)
{
	struct readout full, cut;
	struct pbuf z = { 0 };
	const char *cn = codec_name[codec];
	size_t crashed = 0;
	char what[160];

	if (codec == GZIP)
		pb_gzip(&z, data, len, 6);
	else
		pb_zstd_flushed(&z, data, len, 9, 61);
	read_profile(data, len, len, &full);
	for (size_t c = 0; c <= z.len; c++) {
		size_t nskip, k = 0, u;
		bool whole, ok;

		u = codec == GZIP ? pb_gunzip(NULL, z.p, c, &whole) : pb_unzstd(NULL, z.p, c, &whole);
		while (k < full.n && (k + 1 < full.n ? full.off[k + 1] : full.end) <= u)
			k++; /* the records whole within u */
		read_profile(z.p, c, full.n, &cut);
		for (size_t i = 0; i < cut.n; i++)
			if (cut.off[i] != full.off[i] || strcmp(cut.text[i], full.text[i]))
				FAIL("%s, %s cut at %zu: record %zu is\n  %s\nbut in the whole "
				     "profile\n  %s",
				     name, cn, c, i, cut.text[i], full.text[i]);
		if ((cut.r < 0 && !*cut.error) || (cut.r == 0 && cut.trailer && cut.n != full.n) ||
		    (c == z.len && (cut.r != 0 || !cut.trailer || cut.n != full.n)))
			FAIL("%s, %s cut at %zu of %zu: r %d \"%s\", trailer %d, %zu records "
			     "of %zu",
			     name, cn, c, z.len, cut.r, cut.error, cut.trailer, cut.n, full.n);
		if (u < full.off[0]) /* the header is not whole: an error */
			ok = cut.r < 0;
		else if (whole && k < full.n && full.off[k] < u) /* complete, a record cut */
			ok = cut.r == -EBADMSG && cut.n == k;
		else /* cut short, or complete at a record's end */
			ok = cut.r == 0 && cut.n == k && cut.trailer == (k == full.n);
		if (!ok)
			FAIL("%s, %s cut at %zu of %zu (%zu bytes%s of %zu): r %d \"%s\", trailer "
			     "%d, %zu records; %zu are whole",
			     name, cn, c, z.len, u, whole ? ", complete" : "", len, cut.r, cut.error,
			     cut.trailer, cut.n, k);
		crashed += cut.r == 0 && !cut.trailer && cut.n > 0;
		if (skip_profile(z.p, c, full.n, &nskip) != cut.r || nskip != cut.n)
			FAIL("%s, %s cut at %zu: lk_reader_skip gives %zu records, "
			     "lk_reader_next %zu",
			     name, cn, c, nskip, cut.n);
		readout_free(&cut);
	}
	if (crashed < full.n / 4)
		FAIL("%s, %s: only %zu cuts of %zu read as a crashed profile", name, cn, crashed,
		     z.len);
	/* Decompressed, a damaged stream may be longer than the profile, but not more than the
	 * codec's largest ratio allows. */
	snprintf(what, sizeof(what), "%s, %s", name, cn);
	damage_randomly(what, z.p, z.len, z.len * (codec == GZIP ? 1032 : 32768) + 4096);
	readout_free(&full);
	free(z.p);
}

/* What a test does with a whole profile. */
enum check { CUT, DAMAGED, GZIPPED, ZSTDED };

static void check(enum check c, const char *name, const uint8_t *data, size_t len)
{
	switch (c) {
	case CUT:
		cut_everywhere(name, data, len);
		break;
	case DAMAGED:
		damage_randomly(name, data, len, len);
		break;
	case GZIPPED:
		z_everywhere(GZIP, name, data, len);
		break;
	case ZSTDED:
		z_everywhere(ZSTD, name, data, len);
		break;
	}
}

/* build-profile.c's round-trip sample: every record type, LOSS, UNLOAD and extensions too. */
static void check_sample(enum check c)
{
	struct pb_sample s;

	pb_build_sample(&s);
	check(c, "build-profile.c's sample", s.b.p, s.b.len);
	free(s.b.p);
}

TEST(sample_cut)
{
	check_sample(CUT);
}

TEST(sample_damaged)
{
	check_sample(DAMAGED);
}

TEST(sample_gzip)
{
	check_sample(GZIPPED);
}

TEST(sample_zstd)
{
	check_sample(ZSTDED);
}

/* A profile that libleek wrote, kept in the fuzz corpus: fork.c's forked child in exact mode
 * (INHERIT records, FREEs of inherited blocks, MODULE, STACK, THREAD, ALLOC, RSS, TRAILER). It is
 * read in every build, a sanitizer's too, where no program can run under libleek to record one. A
 * format version that stops reading it wants the corpus recorded again (tests/fuzz). */
static void check_corpus(enum check c)
{
	size_t len;
	char *data = read_file(CORPUS_DIR "/seed-fork", &len);

	check(c, "seed-fork", (const uint8_t *)data, len);
	free(data);
}

TEST(corpus_cut)
{
	check_corpus(CUT);
}

TEST(corpus_damaged)
{
	check_corpus(DAMAGED);
}

TEST(corpus_gzip)
{
	check_corpus(GZIPPED);
}

TEST(corpus_zstd)
{
	check_corpus(ZSTDED);
}

#if defined(LIBLEEK_PATH) && defined(FX_DIR)
/* fx-golden in exact mode, recorded raw by `leek run`. */
static void check_recorded(enum check c)
{
	char dir[256], out[300], *path, *data;
	size_t len;

	tmp_dir(dir);
	snprintf(out, sizeof(out), "%s/golden.%%p.lk", dir);
	proc_free(&res);
	leek_exec(&res, dir, NULL,
		  (const char *const[]){ "run", "--period", "1", "--no-compress", "-o", out, "--",
					 FX_DIR "/fx-golden", NULL },
		  60);
	if (res.status != 0)
		FAIL("leek run fx-golden: exit %d, stderr:\n%s", res.status, res.err);
	path = find_one(dir, "golden.", "");
	data = read_file(path, &len);
	free(path);
	tmp_dir_remove(dir);
	check(c, "fx-golden's profile", (const uint8_t *)data, len);
	free(data);
}

TEST(recorded_cut)
{
	check_recorded(CUT);
}

TEST(recorded_damaged)
{
	check_recorded(DAMAGED);
}

TEST(recorded_gzip)
{
	check_recorded(GZIPPED);
}

TEST(recorded_zstd)
{
	check_recorded(ZSTDED);
}
#else
TEST(recorded_profile)
{
	SKIP("no libleek.so or fixtures in this build (a sanitizer build) to record a profile");
}
#endif
