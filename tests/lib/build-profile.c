/* build-profile.c: profiles built in memory with the writer's encoders (see build-profile.h).
 *
 * Test-only: aborts on out-of-memory, and never calls the harness, so that bench/ can build it
 * too.
 */
#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include "build-profile.h"

static struct pb_block *find(struct pbuf *b, uint64_t addr)
{
	size_t mask = b->map_size - 1, i = (addr * 0x9e3779b97f4a7c15ull >> 32) & mask;

	while (b->map[i].block && b->map[i].addr != addr)
		i = (i + 1) & mask;
	return &b->map[i];
}

uint64_t pb_new_block(struct pbuf *b, uint64_t addr)
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
				*find(b, old[i].addr) = old[i];
		free(old);
	}
	struct pb_block *e = find(b, addr);
	b->map_used += !e->block;
	*e = (struct pb_block){ addr, ++b->blocks };
	return e->block;
}

uint64_t pb_block_at(struct pbuf *b, uint64_t addr)
{
	struct pb_block *e = b->map_size ? find(b, addr) : NULL;

	if (!e || !e->block)
		abort();
	return e->block;
}

void pb_put(struct pbuf *b, const void *data, size_t n)
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

void pb_zeros(struct pbuf *b, size_t n)
{
	while (n--)
		pb_put(b, "", 1);
}

void pb_thread(struct pbuf *b, uint64_t tid)
{
	if (b->thread && b->tid == tid)
		return;
	PB_REC(b, lk_rec_thread(rec, tid));
	b->tid = tid;
	b->thread = true;
}

size_t pb_alloc(struct pbuf *b, uint64_t dt, uint64_t tid, uint64_t addr, uint64_t size,
		uint64_t stack)
{
	pb_thread(b, tid);
	pb_new_block(b, addr);
	return PB_REC(b, lk_rec_alloc(rec, dt, size, stack));
}

size_t pb_free(struct pbuf *b, uint64_t dt, uint64_t tid, uint64_t addr)
{
	uint64_t block = pb_block_at(b, addr);

	pb_thread(b, tid);
	return PB_REC(b, lk_rec_free(rec, dt, b->blocks, &b->prev_free, block));
}

size_t pb_inherit(struct pbuf *b, uint64_t addr, uint64_t size, uint64_t stack,
		  uint64_t alloc_monotonic_ns)
{
	pb_new_block(b, addr);
	return PB_REC(b, lk_rec_inherit(rec, size, stack, alloc_monotonic_ns));
}

size_t pb_made_up_stack(struct pbuf *b, uint64_t id, uint32_t n)
{
	uint64_t frames[40];

	if (n > sizeof(frames) / sizeof(frames[0]))
		abort();
	for (uint32_t k = 0; k < n; k++)
		frames[k] = 0x400000 + id * 0x40 + (uint64_t)k * 0x1000;
	return PB_REC(b, lk_rec_stack(rec, id, frames, n));
}

void pb_header(struct pbuf *b, const struct pb_header *ph)
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

void pb_simple_header(struct pbuf *b)
{
	pb_header(b, &(struct pb_header){ .pid = 1, .period = 524288, .exe = "/x" });
}

void pb_build_sample(struct pb_sample *s)
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

size_t pb_live(struct pbuf *b, size_t n)
{
	static const uint64_t frames[] = { 0x401234, 0x402000 };
	size_t first;

	pb_header(b, &(struct pb_header){ .flags = LK_HDR_EXACT, .period = 1, .pid = 7,
					  .exe = "/usr/bin/live" });
	PB_REC(b, lk_rec_stack(rec, 1, frames, 2));
	PB_REC(b, lk_rec_thread(rec, 1));
	first = b->len;
	for (size_t i = 0; i < n; i++)
		PB_REC(b, lk_rec_alloc(rec, 0, 16, 1));
	return first;
}
