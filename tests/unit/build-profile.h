/* build-profile.h: builds profiles in memory for the unit tests, with record.h's encoders (the
 * writer's own), so a test reads exactly the bytes libleek would write.
 *
 * Tests speak of blocks by address, as a program does; the builder numbers them as the writer
 * does (format.h): pb_alloc() gives the block at addr the next number, pb_free() frees the last
 * block allocated at addr, even if it was freed already (a damaged file's double FREE).
 *
 * Test-only: aborts on out-of-memory, never frees on failure paths (the harness forks).
 */
#ifndef LEEK_TEST_BUILD_PROFILE_H
#define LEEK_TEST_BUILD_PROFILE_H

#include <endian.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"

struct pb_block {
	uint64_t addr, block; /* block 0: an empty entry */
};

struct pbuf {
	uint8_t *p;
	size_t len, cap;
	uint64_t blocks, prev_free, tid; /* the writer's state: ALLOC and INHERIT records, the last
					  * FREE's block, the thread of the last ALLOC or FREE */
	bool thread;                     /* a THREAD record was written: tid holds */
	struct pb_block *map;            /* addr -> its last block: open addressing */
	size_t map_size, map_used;
};

static inline struct pb_block *pb_find(struct pbuf *b, uint64_t addr)
{
	size_t mask = b->map_size - 1, i = (addr * 0x9e3779b97f4a7c15ull >> 32) & mask;

	while (b->map[i].block && b->map[i].addr != addr)
		i = (i + 1) & mask;
	return &b->map[i];
}

/* A new block at addr, as an ALLOC or INHERIT about to be appended: its number. */
static inline uint64_t pb_new_block(struct pbuf *b, uint64_t addr)
{
	if (2 * (b->map_used + 1) > b->map_size) {
		struct pb_block *old = b->map;
		size_t n = b->map_size;
		b->map_size = n ? 2 * n : 64;
		b->map = calloc(b->map_size, sizeof(*b->map));
		if (!b->map)
			abort();
		for (size_t i = 0; i < n; i++)
			if (old[i].block)
				*pb_find(b, old[i].addr) = old[i];
		free(old);
	}
	struct pb_block *e = pb_find(b, addr);
	b->map_used += !e->block;
	*e = (struct pb_block){ addr, ++b->blocks };
	return e->block;
}

/* The last block allocated at addr; aborts if none was (a test's mistake). */
static inline uint64_t pb_block_at(struct pbuf *b, uint64_t addr)
{
	struct pb_block *e = b->map_size ? pb_find(b, addr) : NULL;

	if (!e || !e->block)
		abort();
	return e->block;
}

static inline void pb_put(struct pbuf *b, const void *data, size_t n)
{
	if (n == 0) /* data may be NULL then, and memcpy must not see it */
		return;
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 64;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
}

static inline void pb_zeros(struct pbuf *b, size_t n)
{
	while (n--)
		pb_put(b, "", 1);
}

/* Appends one encoded record: pass an encoder call writing into rec, e.g.
 * PB_REC(b, lk_rec_pair(rec, LK_REC_RSS, 1, 4096)). Evaluates to the record's offset. */
#define PB_REC(b, call)                                                                            \
	({                                                                                         \
		static uint8_t rec[LK_MODULE_MAX];                                                 \
		size_t _off = (b)->len, _n = (call);                                               \
		pb_put((b), rec, _n);                                                              \
		_off;                                                                              \
	})

/* ALLOC and FREE as libleek writes them: a THREAD record first if tid is not the thread of the
 * previous one. Return the ALLOC's or FREE's offset. */
static inline void pb_thread(struct pbuf *b, uint64_t tid)
{
	if (b->thread && b->tid == tid)
		return;
	PB_REC(b, lk_rec_thread(rec, tid));
	b->tid = tid;
	b->thread = true;
}

static inline size_t pb_alloc(struct pbuf *b, uint64_t dt, uint64_t tid, uint64_t addr,
			      uint64_t size, uint64_t stack)
{
	pb_thread(b, tid);
	pb_new_block(b, addr);
	return PB_REC(b, lk_rec_alloc(rec, dt, size, stack));
}

static inline size_t pb_free(struct pbuf *b, uint64_t dt, uint64_t tid, uint64_t addr)
{
	uint64_t block = pb_block_at(b, addr);

	pb_thread(b, tid);
	return PB_REC(b, lk_rec_free(rec, dt, b->blocks, &b->prev_free, block));
}

/* INHERIT of a block at addr, numbered like an ALLOC. */
static inline size_t pb_inherit(struct pbuf *b, uint64_t addr, uint64_t size, uint64_t stack,
				uint64_t alloc_monotonic_ns)
{
	pb_new_block(b, addr);
	return PB_REC(b, lk_rec_inherit(rec, size, stack, alloc_monotonic_ns));
}

struct pb_header {
	uint32_t flags, pid, ppid;
	uint64_t period, start_realtime_ns, start_monotonic_ns, session, seed;
	const char *exe, *cmdline;
	size_t cmdline_len;
};

static inline void pb_header(struct pbuf *b, const struct pb_header *ph)
{
	size_t exe_len = strlen(ph->exe), size = LK_HEADER_FIXED_SIZE + exe_len + ph->cmdline_len;
	struct lk_file_header h = {
		.magic = LK_FORMAT_MAGIC,
		.version = htole16(LK_FORMAT_VERSION),
		.fixed_size = htole16(LK_HEADER_FIXED_SIZE),
		.header_size = htole32((uint32_t)((size + 7) & ~(size_t)7)),
		.flags = htole32(ph->flags),
		.pid = htole32(ph->pid),
		.ppid = htole32(ph->ppid),
		.clock = htole32(LK_CLOCK_MONOTONIC),
		.period = htole64(ph->period),
		.start_realtime_ns = htole64(ph->start_realtime_ns),
		.start_monotonic_ns = htole64(ph->start_monotonic_ns),
		.session = htole64(ph->session),
		.seed = htole64(ph->seed),
		.page_size = htole32(4096),
		.max_frames = htole32(LK_MAX_FRAMES),
		.exe_len = htole32((uint32_t)exe_len),
		.cmdline_len = htole32((uint32_t)ph->cmdline_len),
	};

	pb_put(b, &h, sizeof(h));
	pb_put(b, ph->exe, exe_len);
	pb_put(b, ph->cmdline, ph->cmdline_len);
	pb_zeros(b, ((size + 7) & ~(size_t)7) - size);
}

/* A minimal valid header: pid 1, period 512 KiB, exe "/x", no command line. */
static inline void pb_simple_header(struct pbuf *b)
{
	pb_header(b, &(struct pb_header){ .pid = 1, .period = 524288, .exe = "/x" });
}

#define PB_MAX_RECORDS 64
#define PB_CMDLINE "prog\0-x\0a b"
#define PB_FRAMES1 { 0x555555555123, 0x7f0000012345, 0x555555555000 }

/* The round-trip profile: one of every record (tests/unit/test-format.c checks each field),
 * and the offset of each record, then the profile's length. */
struct pb_sample {
	struct pbuf b;
	size_t header_size, nrec, off[PB_MAX_RECORDS];
};

static inline void pb_build_sample(struct pb_sample *s)
{
	static const uint64_t frames1[] = PB_FRAMES1;
	static const char cmdline[] = PB_CMDLINE;
	static uint64_t frames2[LK_MAX_FRAMES], loss[LK_CNT_MAX + 1], trailer[LK_CNT_MAX + 1];
	struct lk_module_info m1 = { .id = 1, .base = 0x555555554000, .nseg = 2,
				     .seg = { { 0, 0x1000 }, { 0x2000, 0x5a0 } },
				     .build_id_len = 20, .path = "/usr/bin/prog", .path_len = 13 };
	struct lk_module_info m2 = { .id = 2, .base = 0x7f0000000000, .nseg = 1,
				     .seg = { { 0x1000, 0x20000 } }, .path = "/lib/libc.so.6",
				     .path_len = 14 };
	struct lk_module_info m4 = { .id = 4, .base = 0x7f1000000000, .path = "" };
	struct pbuf *b = &s->b;

	for (int i = 0; i < 20; i++)
		m1.build_id[i] = (uint8_t)(0xa0 + i);
	for (int i = 0; i < LK_MAX_FRAMES; i++) /* extremes: zigzag deltas that wrap */
		frames2[i] = i % 3 == 0 ? UINT64_MAX - (uint64_t)i : i % 3 == 1 ? (uint64_t)i : 0;
	loss[LK_CNT_ARENA_FULL] = 3;
	loss[LK_CNT_RECORDS_DROPPED] = 1;
	trailer[LK_CNT_SAMPLES] = 3;
	trailer[LK_CNT_FREES] = 1;
	trailer[LK_CNT_ARENA_FULL] = 3;

	*s = (struct pb_sample){ 0 };
	pb_header(b, &(struct pb_header){ .flags = LK_HDR_FORKED, .pid = 4242, .ppid = 4241,
					  .period = 524288,
					  .start_realtime_ns = 1700000000123456789,
					  .start_monotonic_ns = 1000000000, .session = 77,
					  .seed = 99, .exe = "/usr/bin/prog", .cmdline = cmdline,
					  .cmdline_len = sizeof(cmdline) - 1 });
	s->header_size = b->len;
#define REC(call) (s->off[s->nrec++] = PB_REC(b, call))
	REC(lk_rec_module(rec, 5, &m1));
	REC(lk_rec_module(rec, 0, &m2));
	REC(lk_rec_stack(rec, 1, frames1, 3));
	REC(lk_rec_stack(rec, 2, frames2, LK_MAX_FRAMES));
	REC(lk_rec_stack(rec, 3, NULL, 0));
	REC(lk_rec_thread(rec, 42));
	REC(lk_rec_alloc(rec, 100, 128, 1));                  /* block 1 */
	REC(lk_rec_thread(rec, 43));
	REC(lk_rec_alloc(rec, 7, UINT64_MAX, 0));             /* block 2 */
	REC(lk_rec_thread(rec, 42));
	REC(lk_rec_alloc(rec, 1, 1 << 20, 2));                /* block 3 */
	REC(lk_rec_thread(rec, 43));
	REC(lk_rec_free(rec, 50, 3, &b->prev_free, 2));       /* its age: 1 */
	REC(lk_rec_pair(rec, LK_REC_UNLOAD, 3, 2));
	REC(lk_rec_pair(rec, LK_REC_RSS, 9, 123456789));
	REC(lk_rec_counters(rec, LK_REC_LOSS, 2, 0, loss));
	REC((rec[0] = 0x81, rec[1] = 5, memcpy(rec + 2, "hello", 5), 7));
	REC((rec[0] = 0xff, rec[1] = 0, 2));
	REC(lk_rec_inherit(rec, 64, 3, 500));                 /* block 4 */
	REC(lk_rec_free(rec, 0, 4, &b->prev_free, 1));        /* a step back (-1) */
	REC(lk_rec_module(rec, 1, &m4));
	REC(lk_rec_counters(rec, LK_REC_TRAILER, 11, 1700000001000000000, trailer));
#undef REC
	s->off[s->nrec] = b->len;
}

#endif /* LEEK_TEST_BUILD_PROFILE_H */
