/* fuzz-reader.c: the profile reader's fuzz target (issue 5: the reader must survive anything).
 *
 * LLVMFuzzerTestOneInput() reads the input as a whole profile from memory, raw or, when it starts
 * with zstd's or gzip's magic, decompressed (lk_reader_open_memory decides), twice: with
 * lk_reader_next on one reader and lk_reader_skip on another. Beyond the sanitizers' checks it
 * aborts when the reader breaks its contract (read.h):
 *   - more records than the input can hold: one per byte, or per byte that the codec's largest
 *     ratio makes of it (test-damage.c's bounds: deflate's 1032:1, zstd's 32768:1); more means a
 *     loop;
 *   - a record whose offset does not lie before the end offset, or, but for an ALLOC or a FREE
 *     (which may come from a thread segment's body, out of file order), does not grow;
 *   - an error without a message;
 *   - lk_reader_skip disagreeing with lk_reader_next (record count, times, result, end offset);
 *   - an input that is not compressed reading differently once gzipped, or zstd-compressed
 *     (read-z.c's window against the raw bytes in place): offsets are the uncompressed
 *     profile's, so every result is equal.
 * Built by scripts/fuzz with clang's libFuzzer, and by meson with gcc into replay.c, which runs
 * every file of tests/fuzz/corpus through it in CI. It never prints and keeps no state.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>
#include <zstd.h>

#include "read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (!(x))                                                                          \
			abort();                                                                   \
	} while (0)

struct outcome {
	int r;
	bool trailer;
	uint64_t n, end, last_time;
	uint64_t time_sum; /* of every record's time: cheap to compare, and sensitive to each */
};

static bool is_gzip(const uint8_t *data, size_t size)
{
	return size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
}

static bool is_zstd(const uint8_t *data, size_t size)
{
	return size >= 4 && data[0] == 0x28 && data[1] == 0xb5 && data[2] == 0x2f &&
	       data[3] == 0xfd;
}

static uint64_t records_max(const uint8_t *data, size_t size)
{
	if (is_gzip(data, size))
		return (uint64_t)size * 1032 + 4096;
	if (is_zstd(data, size))
		return (uint64_t)size * 32768 + 4096; /* a 128 KiB RLE block from 4 bytes */
	return (uint64_t)size + 1;
}

static void read_all(const uint8_t *data, size_t size, bool skip, struct outcome *o)
{
	struct lk_reader *rd = lk_reader_new();
	uint64_t max = records_max(data, size), last_off = 0, max_off = 0;
	struct lk_record rec;

	CHECK(rd);
	*o = (struct outcome){ 0 };
	o->r = lk_reader_open_memory(rd, data, size);
	if (o->r >= 0)
		CHECK(lk_reader_header(rd));
	while (o->r >= 0) {
		uint64_t t;

		if (skip)
			o->r = lk_reader_skip(rd, &t);
		else {
			o->r = lk_reader_next(rd, &rec);
			t = rec.time_ns;
		}
		if (o->r <= 0)
			break;
		CHECK(++o->n <= max);
		if (!skip && rec.tag != LK_REC_ALLOC && rec.tag != LK_REC_FREE) {
			CHECK(last_off == 0 || rec.offset > last_off);
			last_off = rec.offset;
		}
		if (!skip) {
			CHECK(lk_rec_tag_name(rec.tag) || rec.tag == LK_READ_EXT);
			max_off = rec.offset > max_off ? rec.offset : max_off;
		}
		o->time_sum += t;
		o->last_time = t;
	}
	if (o->r < 0) {
		CHECK(lk_reader_error(rd)[0] != '\0');
		uint64_t t;

		/* the same error again on later calls */
		CHECK((skip ? lk_reader_skip(rd, &t) : lk_reader_next(rd, &rec)) == o->r);
	} else {
		o->trailer = lk_reader_has_trailer(rd);
		o->end = lk_reader_end_offset(rd);
		CHECK(o->n == 0 || max_off < o->end || skip);
	}
	lk_reader_free(rd);
}

static bool same(const struct outcome *a, const struct outcome *b)
{
	return a->r == b->r && a->n == b->n && a->time_sum == b->time_sum &&
	       a->last_time == b->last_time && a->trailer == b->trailer && a->end == b->end;
}

/* data as one gzip member, or NULL (out of memory); free() it. */
static uint8_t *gzip(const uint8_t *data, size_t size, size_t *gz_size)
{
	z_stream zs = { 0 };
	uint8_t *out;
	uLong cap;

	if (deflateInit2(&zs, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return NULL;
	cap = deflateBound(&zs, size) + 64;
	out = malloc(cap);
	if (!out) {
		deflateEnd(&zs);
		return NULL;
	}
	zs.next_in = (Bytef *)data;
	zs.avail_in = (uInt)size;
	zs.next_out = out;
	zs.avail_out = (uInt)cap;
	CHECK(deflate(&zs, Z_FINISH) == Z_STREAM_END);
	*gz_size = zs.total_out;
	deflateEnd(&zs);
	return out;
}

/* data as one zstd frame with its checksum, as compress.c writes it (streamed: no content size),
 * or NULL (out of memory); free() it. */
static uint8_t *zstd(const uint8_t *data, size_t size, size_t *z_size)
{
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	size_t cap = ZSTD_compressBound(size) + 64, left;
	uint8_t *out = malloc(cap);
	ZSTD_inBuffer in = { data, size, 0 };
	ZSTD_outBuffer o = { out, cap, 0 };

	if (!cc || !out) {
		ZSTD_freeCCtx(cc);
		free(out);
		return NULL;
	}
	CHECK(!ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, 1)));
	CHECK(!ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1)));
	while (in.pos < in.size)
		CHECK(!ZSTD_isError(ZSTD_compressStream2(cc, &o, &in, ZSTD_e_continue)));
	do {
		left = ZSTD_compressStream2(cc, &o, &in, ZSTD_e_end);
		CHECK(!ZSTD_isError(left));
	} while (left > 0);
	*z_size = o.pos;
	ZSTD_freeCCtx(cc);
	return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct outcome next, skip, packed;

	read_all(data, size, false, &next);
	read_all(data, size, true, &skip);
	CHECK(same(&next, &skip));
	if (!is_gzip(data, size) && !is_zstd(data, size) && size <= 1024 * 1024) {
		for (int codec = 0; codec < 2; codec++) {
			size_t z_size;
			uint8_t *z = codec ? zstd(data, size, &z_size) : gzip(data, size, &z_size);

			if (z) {
				read_all(z, z_size, false, &packed);
				CHECK(same(&next, &packed));
				free(z);
			}
		}
	}
	return 0;
}
