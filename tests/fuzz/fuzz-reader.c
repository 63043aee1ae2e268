/* fuzz-reader.c: the profile reader's fuzz target (issue 5: the reader must survive anything).
 *
 * LLVMFuzzerTestOneInput() reads the input as a whole profile from memory, raw or, when it starts
 * with gzip's magic, inflated (lk_reader_open_memory decides), twice: with lk_reader_next on one
 * reader and lk_reader_skip on another. Beyond the sanitizers' checks it aborts when the reader
 * breaks its contract (read.h):
 *   - more records than the input can hold: one per byte, or per byte that deflate's largest
 *     ratio (1032:1) makes of it for gzip (test-damage.c's bound); more means a loop;
 *   - a record whose offset does not grow, or does not lie before the end offset;
 *   - an error without a message;
 *   - lk_reader_skip disagreeing with lk_reader_next (record count, times, result, end offset);
 *   - an input that is not gzip reading differently once gzipped (read-gz.c's window against
 *     the raw bytes in place): offsets are the uncompressed profile's, so every result is equal.
 * Built by scripts/fuzz with clang's libFuzzer, and by meson with gcc into replay.c, which runs
 * every file of tests/fuzz/corpus through it in CI. It never prints and keeps no state.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

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

static uint64_t records_max(const uint8_t *data, size_t size)
{
	bool gz = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;

	return gz ? (uint64_t)size * 1032 + 4096 : (uint64_t)size + 1;
}

static void read_all(const uint8_t *data, size_t size, bool skip, struct outcome *o)
{
	struct lk_reader *rd = lk_reader_new();
	uint64_t max = records_max(data, size), last_off = 0;
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
		if (!skip) {
			CHECK(o->n == 1 || rec.offset > last_off);
			last_off = rec.offset;
			CHECK(lk_rec_tag_name(rec.tag) || rec.tag == LK_READ_EXT);
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
		CHECK(o->n == 0 || last_off < o->end || skip);
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct outcome next, skip, gz;
	bool is_gz = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;

	read_all(data, size, false, &next);
	read_all(data, size, true, &skip);
	CHECK(same(&next, &skip));
	if (!is_gz && size <= 1024 * 1024) {
		size_t gz_size;
		uint8_t *z = gzip(data, size, &gz_size);

		if (z) {
			read_all(z, gz_size, false, &gz);
			CHECK(same(&next, &gz));
			free(z);
		}
	}
	return 0;
}
