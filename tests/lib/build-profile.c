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

/* addr's block is number `block` from now on. */
static void set_block(struct pbuf *b, uint64_t addr, uint64_t block)
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
	*e = (struct pb_block){ addr, block };
}

uint64_t pb_new_block(struct pbuf *b, uint64_t addr)
{
	set_block(b, addr, ++b->blocks);
	return b->blocks;
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
	static const uint8_t zeros[4096];

	for (size_t k; n > 0; n -= k) {
		k = n < sizeof(zeros) ? n : sizeof(zeros);
		pb_put(b, zeros, k);
	}
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

size_t pb_free_stack(struct pbuf *b, uint64_t dt, uint64_t tid, uint64_t addr, uint64_t stack)
{
	uint64_t block = pb_block_at(b, addr);

	pb_thread(b, tid);
	return PB_REC(b, lk_rec_free_stack(rec, dt, b->blocks, &b->prev_free, block, stack));
}

size_t pb_inherit(struct pbuf *b, uint64_t addr, uint64_t size, uint64_t stack,
		  uint64_t alloc_monotonic_ns)
{
	pb_new_block(b, addr);
	return PB_REC(b, lk_rec_inherit(rec, size, stack, alloc_monotonic_ns));
}

size_t pb_segment(struct pbuf *b, struct pb_seg *s, uint64_t dt, uint64_t tid, uint64_t blocks,
		  uint64_t skip, uint64_t length)
{
	*s = (struct pb_seg){ .length = length, .tid = tid, .first = b->blocks + 1,
			      .blocks = blocks, .last = b->blocks, .prev = b->blocks };
	s->at = PB_REC(b, lk_rec_segment(rec, dt, tid, blocks, skip, length));
	pb_zeros(b, skip);
	s->body = b->len;
	pb_zeros(b, length);
	b->blocks += blocks;
	return s->at;
}

size_t pb_seg_put(struct pbuf *b, struct pb_seg *s, const void *data, size_t n)
{
	size_t at = s->body + s->pos;

	if (s->pos + n > s->length)
		abort();
	memcpy(b->p + at, data, n);
	s->pos += n;
	return at;
}

size_t pb_seg_alloc(struct pbuf *b, struct pb_seg *s, uint64_t dt, uint64_t addr, uint64_t size,
		    uint64_t stack)
{
	uint8_t rec[LK_ALLOC_MAX];

	set_block(b, addr, ++s->last);
	return pb_seg_put(b, s, rec, lk_rec_alloc(rec, dt, size, stack));
}

size_t pb_seg_free(struct pbuf *b, struct pb_seg *s, uint64_t dt, uint64_t addr)
{
	uint8_t rec[LK_FREE_MAX];

	return pb_seg_put(b, s, rec, lk_rec_free(rec, dt, s->last, &s->prev, pb_block_at(b, addr)));
}

size_t pb_seg_alloc_fixed(struct pbuf *b, struct pb_seg *s, uint64_t addr, uint64_t size,
			  uint64_t stack)
{
	uint8_t rec[LK_ALLOC_FIXED_SIZE];

	if (size > 0xffff || stack > 0xffff)
		abort();
	set_block(b, addr, ++s->last);
	return pb_seg_put(b, s, rec, lk_rec_alloc_fixed(rec, size, stack));
}

size_t pb_seg_free_fixed(struct pbuf *b, struct pb_seg *s, uint64_t addr)
{
	uint64_t block = pb_block_at(b, addr);
	uint8_t rec[LK_FREE_FIXED_SIZE];

	if (lk_free_code(s->last, s->prev, block) > 0xffff)
		abort();
	return pb_seg_put(b, s, rec, lk_rec_free_fixed(rec, s->last, &s->prev, block));
}

size_t pb_seg_end(struct pbuf *b, struct pb_seg *s)
{
	static const uint8_t end = LK_REC_SEG_END;

	return pb_seg_put(b, s, &end, 1);
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
		.version = htole16(ph->version ? ph->version : LK_FORMAT_VERSION),
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

static uint64_t xorshift(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

#define PB_THREADS_MAX 64

/* One thread of pb_threads(): its open segment, and the time of its body's last record. */
struct pb_thread {
	struct pb_seg seg;
	uint64_t t, allocs;
	bool open;
};

size_t pb_threads(struct pbuf *b, uint64_t seed, size_t events, unsigned threads, size_t body,
		  bool crash, struct pb_event *ev)
{
	static const uint64_t none[LK_CNT_MAX + 1];
	struct pb_thread th[PB_THREADS_MAX] = { 0 };
	uint64_t x = seed * 0x9e3779b97f4a7c15ull | 1, t = 0, main_t = 0, stacks = 0, next_addr = 1;
	uint64_t *live = calloc(events + 1, sizeof(*live));
	size_t nlive = 0, nrec = 0;

	if (!live || threads > PB_THREADS_MAX || body < 64)
		abort();
	pb_header(b, &(struct pb_header){ .flags = LK_HDR_EXACT | LK_HDR_COARSE_TIME, .pid = 9,
					  .period = 1, .exe = "/usr/bin/threads" });
	for (size_t i = 0; i < events; i++) {
		uint64_t r = xorshift(&x), actor = r % (threads + 1), stack, addr, size;
		bool alloc = nlive == 0 || (r >> 8) % 2, fixed = (r >> 9) % 2;
		struct pb_event e = { .tid = 1 };

		t += (r >> 10) % 4 == 0 ? 1 + (r >> 12) % 3 : 0;
		if (actor == threads && (r >> 14) % 8 == 0) { /* the main stream's own */
			PB_REC(b, lk_rec_pair(rec, LK_REC_RSS, t - main_t, 4096 * (r >> 40)));
			main_t = t;
			nrec++;
		}
		stack = stacks ? 1 + (r >> 16) % stacks : 0;
		if (alloc && (stacks == 0 || (r >> 24) % 16 == 0)) { /* a new site: its STACK first */
			pb_made_up_stack(b, ++stacks, 1 + (uint32_t)((r >> 28) % 3));
			stack = stacks;
			nrec++;
		}
		size = 1 + (r >> 32) % (fixed ? 4000 : 100000);
		if (alloc) {
			addr = live[nlive++] = next_addr++;
		} else {
			size_t k = (r >> 32) % nlive;
			addr = live[k];
			live[k] = live[--nlive];
		}
		if (actor == threads) {
			nrec += !b->thread || b->tid != 1; /* the THREAD record pb_alloc writes */
			e.offset = alloc ? pb_alloc(b, t - main_t, 1, addr, size, stack)
					 : pb_free(b, t - main_t, 1, addr);
			main_t = t;
		} else {
			struct pb_thread *h = &th[actor];
			struct pb_seg *s = &h->seg;
			if (!h->open || s->pos + LK_ALLOC_MAX + 1 > s->length ||
			    (alloc && h->allocs == s->blocks)) {
				if (h->open)
					pb_seg_end(b, s);
				pb_segment(b, s, t - main_t, 101 + actor, 1 + (r >> 44) % (body / 8),
					   (r >> 50) % 4 ? 0 : (r >> 52) % 64, body);
				main_t = h->t = t;
				h->allocs = 0;
				h->open = true;
				nrec++;
			}
			fixed = fixed && h->t == t && stack <= 0xffff &&
				(alloc || lk_free_code(s->last, s->prev, pb_block_at(b, addr)) <= 0xffff);
			if (alloc && fixed)
				e.offset = pb_seg_alloc_fixed(b, s, addr, size, stack);
			else if (alloc)
				e.offset = pb_seg_alloc(b, s, t - h->t, addr, size, stack);
			else if (fixed)
				e.offset = pb_seg_free_fixed(b, s, addr);
			else
				e.offset = pb_seg_free(b, s, t - h->t, addr);
			h->allocs += alloc;
			h->t = t;
			e.tid = s->tid;
		}
		e.tag = alloc ? LK_REC_ALLOC : LK_REC_FREE;
		e.block = pb_block_at(b, addr);
		e.time = t;
		e.size = alloc ? size : 0;
		e.stack = alloc ? stack : 0;
		if (ev)
			ev[i] = e;
		nrec++;
	}
	for (unsigned k = 0; k < threads; k++) /* some threads' last bodies unended */
		if (th[k].open && xorshift(&x) % 2)
			pb_seg_end(b, &th[k].seg);
	if (!crash) {
		PB_REC(b, lk_rec_counters(rec, LK_REC_TRAILER, t - main_t, 1, none));
		nrec++;
	}
	free(live);
	return nrec;
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
