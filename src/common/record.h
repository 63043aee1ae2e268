/* record.h: encoders for profile records (include/leek/format.h, docs/format.md).
 *
 * The preload writer builds each record in a stack buffer with these, then commits it; the unit
 * tests use them to build profiles for the reader. They only fill the caller's buffer: no
 * allocation, no I/O. Each returns the record's length, tag included, and never writes more than
 * the LK_*_MAX bound beside it.
 */
#ifndef LEEK_RECORD_H
#define LEEK_RECORD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "leek/format.h"
#include "varint.h"

#define LK_THREAD_MAX (1 + LK_VARINT_MAX)
#define LK_ALLOC_MAX (1 + 3 * LK_VARINT_MAX)
#define LK_FREE_MAX (1 + 2 * LK_VARINT_MAX)
#define LK_FREE_STACK_MAX (1 + 3 * LK_VARINT_MAX)
#define LK_INHERIT_MAX (1 + 3 * LK_VARINT_MAX)
#define LK_STACK_MAX (1 + (2 + LK_MAX_FRAMES) * LK_VARINT_MAX)
#define LK_MODULE_MAX                                                                              \
	(1 + (5 + 2 * LK_MAX_SEGMENTS) * LK_VARINT_MAX + LK_MAX_BUILD_ID + LK_MAX_PATH)
#define LK_COUNTERS_MAX (1 + (3 + 2 * LK_CNT_MAX) * LK_VARINT_MAX)
#define LK_SEGMENT_MAX (1 + 5 * LK_VARINT_MAX)
#define LK_CTL_MAX (1 + 3 * LK_VARINT_MAX + LK_CTL_NAME_MAX)
#define LK_ERROR_MAX (1 + 10 * LK_VARINT_MAX)

struct lk_module_seg {
	uint64_t start, len; /* relative to the module's base */
};

struct lk_module_info {
	uint64_t id, base;
	uint32_t nseg, build_id_len, path_len;
	struct lk_module_seg seg[LK_MAX_SEGMENTS];
	uint8_t build_id[LK_MAX_BUILD_ID];
	const char *path;
};

/* THREAD: the ALLOC and FREE records that follow were made by thread tid. */
static inline size_t lk_rec_thread(uint8_t *b, uint64_t tid)
{
	b[0] = LK_REC_THREAD;
	return 1 + lk_varint_put(b + 1, tid);
}

/* ALLOC: its block is numbered by its place among the file's ALLOC and INHERIT records, not in
 * the record (format.h). */
static inline size_t lk_rec_alloc(uint8_t *b, uint64_t dt, uint64_t size, uint64_t stack)
{
	size_t n = 1;

	b[0] = LK_REC_ALLOC;
	n += lk_varint_put(b + n, dt);
	n += lk_varint_put(b + n, size);
	n += lk_varint_put(b + n, stack);
	return n;
}

/* FREE's block_code (format.h): the block's age among the `blocks` numbered so far, odd, or its
 * step from prev, the block of the file's previous FREE, even; whichever is smaller. Both are
 * small for most FREEs, but for different ones: a block freed soon after it was allocated has a
 * small age wherever the previous FREE was, and a run of blocks allocated together and freed
 * together has steps of one. For a block numbered already (block <= blocks < 2^63) the code
 * never overflows, and lk_free_block() gives the block back. */
static inline uint64_t lk_free_code(uint64_t blocks, uint64_t prev, uint64_t block)
{
	uint64_t age = blocks - block, step = lk_zigzag((int64_t)(block - prev));

	return age < step ? age << 1 | 1 : step << 1;
}

static inline uint64_t lk_free_block(uint64_t blocks, uint64_t prev, uint64_t code)
{
	return code & 1 ? blocks - (code >> 1) : prev + (uint64_t)lk_unzigzag(code >> 1);
}

/* FREE codes its block against `blocks`, the blocks numbered in the file so far, and *prev, the
 * block of the file's previous FREE (0 at the start of a file), and sets *prev to it. A caller
 * that may fail to store the record passes a copy, and keeps it only once the record is stored. */
static inline size_t lk_rec_free(uint8_t *b, uint64_t dt, uint64_t blocks, uint64_t *prev,
				 uint64_t block)
{
	size_t n = 1;

	b[0] = LK_REC_FREE;
	n += lk_varint_put(b + n, dt);
	n += lk_varint_put(b + n, lk_free_code(blocks, *prev, block));
	*prev = block;
	return n;
}

/* FREE_STACK (version 7): a FREE, coded as lk_rec_free codes it, and the stack that freed the
 * block. */
static inline size_t lk_rec_free_stack(uint8_t *b, uint64_t dt, uint64_t blocks, uint64_t *prev,
				       uint64_t block, uint64_t stack)
{
	size_t n = lk_rec_free(b, dt, blocks, prev, block);

	b[0] = LK_REC_FREE_STACK;
	return n + lk_varint_put(b + n, stack);
}

/* ALLOC_FIXED and FREE_FIXED (format.h): an ALLOC and a FREE at dt 0 whose fields fit their
 * fixed widths (size and stack below 2^16; a code below 2^16). The record as a little-endian
 * word, its tag in the low byte and zeros past its end: the profile writer stores it whole
 * (src/preload/writer.c); lk_rec_*_fixed write its bytes. */
#define LK_ALLOC_FIXED_SIZE 5
#define LK_FREE_FIXED_SIZE 3

static inline uint64_t lk_rec_alloc_fixed_word(uint64_t size, uint64_t stack)
{
	return LK_REC_ALLOC_FIXED | size << 8 | stack << 24;
}

static inline uint64_t lk_rec_free_fixed_word(uint64_t code)
{
	return LK_REC_FREE_FIXED | code << 8;
}

static inline size_t lk_rec_word_put(uint8_t *b, uint64_t word, size_t n)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(word >> (8 * i));
	return n;
}

static inline size_t lk_rec_alloc_fixed(uint8_t *b, uint64_t size, uint64_t stack)
{
	return lk_rec_word_put(b, lk_rec_alloc_fixed_word(size, stack), LK_ALLOC_FIXED_SIZE);
}

static inline size_t lk_rec_free_fixed(uint8_t *b, uint64_t blocks, uint64_t *prev,
				       uint64_t block)
{
	uint64_t code = lk_free_code(blocks, *prev, block);

	*prev = block;
	return lk_rec_word_put(b, lk_rec_free_fixed_word(code), LK_FREE_FIXED_SIZE);
}

/* SEGMENT (format.h): the body of `length` bytes that starts `skip` bytes after this record holds
 * thread tid's ALLOC and FREE records, numbering `blocks` blocks at most. */
static inline size_t lk_rec_segment(uint8_t *b, uint64_t dt, uint64_t tid, uint64_t blocks,
				    uint64_t skip, uint64_t length)
{
	size_t n = 1;

	b[0] = LK_REC_SEGMENT;
	n += lk_varint_put(b + n, dt);
	n += lk_varint_put(b + n, tid);
	n += lk_varint_put(b + n, blocks);
	n += lk_varint_put(b + n, skip);
	n += lk_varint_put(b + n, length);
	return n;
}

/* INHERIT: a block that was live in the parent when this process forked. */
static inline size_t lk_rec_inherit(uint8_t *b, uint64_t size, uint64_t stack,
				    uint64_t alloc_monotonic_ns)
{
	size_t n = 1;

	b[0] = LK_REC_INHERIT;
	n += lk_varint_put(b + n, size);
	n += lk_varint_put(b + n, stack);
	n += lk_varint_put(b + n, alloc_monotonic_ns);
	return n;
}

static inline size_t lk_rec_stack(uint8_t *b, uint64_t id, const uint64_t *frames, uint32_t nframes)
{
	size_t n = 1;
	uint64_t prev = 0;

	if (nframes > LK_MAX_FRAMES)
		nframes = LK_MAX_FRAMES;
	b[0] = LK_REC_STACK;
	n += lk_varint_put(b + n, id);
	n += lk_varint_put(b + n, nframes);
	for (uint32_t i = 0; i < nframes; i++) {
		n += lk_varint_put(b + n, lk_zigzag((int64_t)(frames[i] - prev)));
		prev = frames[i];
	}
	return n;
}

static inline size_t lk_rec_module(uint8_t *b, uint64_t dt, const struct lk_module_info *m)
{
	size_t n = 1;
	uint32_t nseg = m->nseg > LK_MAX_SEGMENTS ? LK_MAX_SEGMENTS : m->nseg;
	uint32_t idlen = m->build_id_len > LK_MAX_BUILD_ID ? LK_MAX_BUILD_ID : m->build_id_len;
	uint32_t plen = m->path_len > LK_MAX_PATH ? LK_MAX_PATH : m->path_len;

	b[0] = LK_REC_MODULE;
	n += lk_varint_put(b + n, dt);
	n += lk_varint_put(b + n, m->id);
	n += lk_varint_put(b + n, m->base);
	n += lk_varint_put(b + n, nseg);
	for (uint32_t i = 0; i < nseg; i++) {
		n += lk_varint_put(b + n, m->seg[i].start);
		n += lk_varint_put(b + n, m->seg[i].len);
	}
	n += lk_varint_put(b + n, idlen);
	memcpy(b + n, m->build_id, idlen);
	n += idlen;
	n += lk_varint_put(b + n, plen);
	memcpy(b + n, m->path, plen);
	n += plen;
	return n;
}

/* UNLOAD and RSS share a shape: dt and one value. */
static inline size_t lk_rec_pair(uint8_t *b, uint8_t tag, uint64_t dt, uint64_t v)
{
	size_t n = 1;

	b[0] = tag;
	n += lk_varint_put(b + n, dt);
	n += lk_varint_put(b + n, v);
	return n;
}

/* LOSS (LK_REC_LOSS) or TRAILER (LK_REC_TRAILER, with end_realtime_ns); counters[i] is the value
 * of counter i, i = 1..LK_CNT_MAX; zero counters are left out. */
static inline size_t lk_rec_counters(uint8_t *b, uint8_t tag, uint64_t dt, uint64_t end_realtime_ns,
				     const uint64_t counters[LK_CNT_MAX + 1])
{
	size_t n = 1;
	uint64_t count = 0;

	b[0] = tag;
	n += lk_varint_put(b + n, dt);
	if (tag == LK_REC_TRAILER)
		n += lk_varint_put(b + n, end_realtime_ns);
	for (int i = 1; i <= LK_CNT_MAX; i++)
		count += counters[i] != 0;
	n += lk_varint_put(b + n, count);
	for (int i = 1; i <= LK_CNT_MAX; i++) {
		if (!counters[i])
			continue;
		n += lk_varint_put(b + n, (uint64_t)i);
		n += lk_varint_put(b + n, counters[i]);
	}
	return n;
}

/* CTL (version 7): kind (enum lk_ctl_cmd) and, for a mark, its name of len bytes (at most
 * LK_CTL_NAME_MAX; 0 for ON and OFF). */
static inline size_t lk_rec_ctl(uint8_t *b, uint64_t dt, uint64_t kind, const char *name,
				size_t len)
{
	size_t n = 1;

	if (len > LK_CTL_NAME_MAX)
		len = LK_CTL_NAME_MAX;
	b[0] = LK_REC_CTL;
	n += lk_varint_put(b + n, dt);
	n += lk_varint_put(b + n, kind);
	n += lk_varint_put(b + n, len);
	memcpy(b + n, name, len);
	return n + len;
}

/* ERROR (version 8): a memory error (format.h, enum lk_error_kind), its fields in record order. */
struct lk_error_info {
	uint64_t tid, kind, addr, block_addr, block_size, block, alloc_stack, free_stack, stack;
};

static inline size_t lk_rec_error(uint8_t *b, uint64_t dt, const struct lk_error_info *e)
{
	const uint64_t v[] = { dt, e->tid, e->kind, e->addr, e->block_addr, e->block_size,
			       e->block, e->alloc_stack, e->free_stack, e->stack };
	size_t n = 1;

	b[0] = LK_REC_ERROR;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		n += lk_varint_put(b + n, v[i]);
	return n;
}

#endif /* LEEK_RECORD_H */
