/* convert.c: `leek import --convert -o FILE`: the trace as a leek profile (docs/format.md), so
 * that `leek report`, `export` and `diff` read it as they read leek's own.
 *
 * The profile is in exact mode (period 1): every allocation of the trace is an ALLOC and every
 * free a FREE, so its estimates are counts. A trace has no stacks, only the caller of each
 * malloc, so each distinct caller is a STACK of one frame, written before the first ALLOC that
 * names it. The frame is an address in a MODULE made for the caller's module: a --binary that
 * matches it (its path and PT_LOAD segments, so `leek report` symbolizes it as this command
 * does), else the module's name as the trace gives it with one segment of 2^40 bytes. Module k
 * is placed at base k << 40, so no two overlap. A caller with an absolute address and no module
 * is that address, in no module. kdump's timestamps become the records' times (the first one is
 * the profile's start, and a time that goes backwards is taken as no time passing); an mtrace
 * trace has none, and every record is at time 0. kdump's pid and thread become the header's pid
 * and THREAD records; an mtrace trace is pid 1, thread 1.
 *
 * Memory: a block number per live block (in the matcher's slots), a stack id per caller, a
 * module id per module: nothing per line.
 *
 * Never: write a record the reader would refuse (a FREE of a block not live, a STACK after its
 * ALLOC), or print; write errors show at lk_import_sink_end() through ferror.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "import.h"
#include "record.h"

#define MODULE_SPAN (1ull << 40) /* each made-up module's span, and the distance of their bases */

static uint64_t hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
	return h;
}

int lk_import_sink_init(struct lk_import_sink *s, FILE *f, const struct lk_import_callers *cs,
                        const struct lk_import_binaries *bs, const char *exe)
{
	*s = (struct lk_import_sink){.f = f,
	                             .callers = cs,
	                             .bins = bs,
	                             .exe = exe,
	                             .first_ns = UINT64_MAX,
	                             .tid = UINT64_MAX};
	lk_u64map_init(&s->module_ids, SIZE_MAX);
	return 0;
}

void lk_import_sink_done(struct lk_import_sink *s)
{
	for (size_t i = 0; i < s->nmodules; i++)
		free(s->module_names[i]);
	free(s->module_names);
	free(s->stack_of);
	lk_u64map_done(&s->module_ids);
	*s = (struct lk_import_sink){0};
}

/* A time that is the epoch's (kdump -T: after 1973), else 0: unknown. */
static uint64_t epoch(uint64_t ns)
{
	return ns >= 100000000ull * 1000000000ull ? ns : 0;
}

static void put(struct lk_import_sink *s, const void *p, size_t n)
{
	fwrite(p, 1, n, s->f);
}

static void header(struct lk_import_sink *s, uint64_t ts_ns)
{
	size_t exe_len = strnlen(s->exe, LK_MAX_PATH);
	size_t size = LK_HEADER_FIXED_SIZE + exe_len, padded = (size + 7) & ~(size_t)7;
	static const uint8_t zeros[8];

	s->first_ns = s->last_ns = ts_ns == UINT64_MAX ? 0 : ts_ns;
	struct lk_file_header h = {
	    .magic = LK_FORMAT_MAGIC,
	    .version = htole16(LK_FORMAT_VERSION),
	    .fixed_size = htole16(LK_HEADER_FIXED_SIZE),
	    .header_size = htole32((uint32_t)padded),
	    .flags = htole32(LK_HDR_EXACT),
	    .pid = htole32((uint32_t)(s->pid ? s->pid : 1)),
	    .clock = htole32(LK_CLOCK_MONOTONIC),
	    .period = htole64(1),
	    /* kdump -T's times are the epoch's; -d and -E's, and mtrace's none, are not */
	    .start_realtime_ns = htole64(epoch(s->first_ns)),
	    .start_monotonic_ns = htole64(s->first_ns),
	    .page_size = htole32(4096),
	    .max_frames = htole32(LK_MAX_FRAMES),
	    .exe_len = htole32((uint32_t)exe_len),
	};
	put(s, &h, sizeof(h));
	put(s, s->exe, exe_len);
	put(s, zeros, padded - size);
	s->header_written = true;
}

static uint64_t take_dt(struct lk_import_sink *s, uint64_t ts_ns)
{
	uint64_t dt;

	if (!s->header_written)
		header(s, ts_ns);
	if (ts_ns == UINT64_MAX || ts_ns <= s->last_ns)
		return 0;
	dt = ts_ns - s->last_ns;
	s->last_ns = ts_ns;
	return dt;
}

static void thread(struct lk_import_sink *s, uint64_t tid)
{
	uint8_t rec[LK_THREAD_MAX];

	if (!tid)
		tid = s->pid ? s->pid : 1;
	if (tid == s->tid)
		return;
	s->tid = tid;
	put(s, rec, lk_rec_thread(rec, tid));
}

/* The module id of the caller's module (written now if new), and the frame's address in it. */
static int module_frame(struct lk_import_sink *s, const struct lk_import_caller *c,
                        uint64_t *ret_frame)
{
	const struct lk_import_binary *b = c->binary >= 0 ? &s->bins->b[c->binary] : NULL;
	const char *name = b ? b->path : c->module;
	uint64_t key = hash(name), *v;
	static uint8_t rec[LK_MODULE_MAX];

	if (!name) {
		*ret_frame = c->addr; /* an absolute address no binary covers */
		return 0;
	}
	while ((v = lk_u64map_get(&s->module_ids, key)) && strcmp(s->module_names[*v - 1], name))
		key++;
	if (!v) {
		struct lk_module_info m = {.id = s->nmodules + 1};
		char **names = realloc(s->module_names, (s->nmodules + 1) * sizeof(*names));
		if (!names)
			return -ENOMEM;
		s->module_names = names;
		if (!(names[s->nmodules] = strdup(name)))
			return -ENOMEM;
		if (lk_u64map_put(&s->module_ids, key, m.id) < 0)
			return -ENOMEM;
		s->nmodules++;
		m.base = m.id * MODULE_SPAN;
		if (b) {
			m.nseg = b->nseg;
			for (uint32_t k = 0; k < b->nseg; k++)
				m.seg[k] = (struct lk_module_seg){b->seg_start[k], b->seg_len[k]};
		} else {
			m.nseg = 1;
			m.seg[0] = (struct lk_module_seg){0, MODULE_SPAN};
		}
		m.path = name;
		m.path_len = (uint32_t)strnlen(name, LK_MAX_PATH);
		put(s, rec, lk_rec_module(rec, 0, &m));
		*ret_frame = m.base + (b ? c->vaddr : c->addr);
		return 0;
	}
	*ret_frame = *v * MODULE_SPAN + (b ? c->vaddr : c->addr);
	return 0;
}

/* The stack of a caller, written before its first ALLOC: its id, 0 for none. */
static int stack(struct lk_import_sink *s, uint64_t caller, uint64_t *ret)
{
	const struct lk_import_caller *c;
	static uint8_t rec[LK_STACK_MAX];
	uint64_t frame;
	int r;

	*ret = 0;
	if (caller == 0 || caller >= s->callers->n || !s->callers->c[caller].has_addr)
		return 0;
	if (caller >= s->stack_cap) {
		size_t cap = s->stack_cap ? 2 * s->stack_cap : 256;
		while (cap <= caller)
			cap *= 2;
		uint64_t *p = realloc(s->stack_of, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		memset(p + s->stack_cap, 0, (cap - s->stack_cap) * sizeof(*p));
		s->stack_of = p;
		s->stack_cap = cap;
	}
	if (!s->stack_of[caller]) {
		c = &s->callers->c[caller];
		if ((r = module_frame(s, c, &frame)) < 0)
			return r;
		s->stack_of[caller] = ++s->nstacks;
		put(s, rec, lk_rec_stack(rec, s->nstacks, &frame, 1));
	}
	*ret = s->stack_of[caller];
	return 0;
}

int lk_import_sink_alloc(struct lk_import_sink *s, struct lk_import_live *b, uint64_t tid)
{
	uint8_t rec[LK_ALLOC_MAX];
	uint64_t dt = take_dt(s, b->ts_ns), id;
	int r = stack(s, b->caller, &id);

	if (r < 0)
		return r;
	thread(s, tid);
	put(s, rec, lk_rec_alloc(rec, dt, b->size, id));
	b->block = ++s->blocks;
	s->counters[LK_CNT_SAMPLES]++;
	return 0;
}

int lk_import_sink_free(struct lk_import_sink *s, const struct lk_import_live *b, uint64_t ts_ns,
                        uint64_t tid)
{
	uint8_t rec[LK_FREE_MAX];
	uint64_t dt = take_dt(s, ts_ns);

	thread(s, tid);
	put(s, rec, lk_rec_free(rec, dt, s->blocks, &s->prev_free, b->block));
	s->counters[LK_CNT_FREES]++;
	return 0;
}

int lk_import_sink_end(struct lk_import_sink *s)
{
	static uint8_t rec[LK_COUNTERS_MAX];
	uint64_t end_ns;

	if (!s->header_written)
		header(s, UINT64_MAX);
	end_ns = epoch(s->last_ns);
	put(s, rec, lk_rec_counters(rec, LK_REC_TRAILER, 0, end_ns, s->counters));
	return ferror(s->f) ? -EIO : 0;
}
