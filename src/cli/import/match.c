/* match.c: allocations matched with frees by address, as glibc's mtrace script matches them.
 *
 * The live set is a hash map from address to a slot that holds the block's size, its line, its
 * time and its caller: memory grows with the blocks live at once, never with the trace's length.
 * A free or a realloc's old half takes its block out; what is left at the end has leaked.
 *
 * Where the mtrace script (glibc 2.36, /usr/bin/mtrace) and this file differ, on purpose:
 * - an allocation at an address that is live already (its free is missing from the trace: a
 *   thread that was not traced, a trace started late) replaces the live block, with a warning;
 *   the script keeps the old one and ignores the new. The block at that address now is the new
 *   one, so it is the one that can leak.
 * - a free of an address that was freed before is a double free, not only "never alloc'd": the
 *   addresses freed are remembered (LK_IMPORT_FREED_MAX of them) until allocated again.
 * - a failed realloc ('!', kdump's 0x0 = realloc) is counted; the script skips it. Both leave
 *   the old block live, as glibc's realloc does.
 *
 * Never: print but the -v trace to m->trace, or hold anything per line of the trace.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"

/* The map's key for an address. u64map keeps a key's low 3 bits in its slot, so that
 * consecutive block numbers share cache lines; addresses are 16-aligned, which would leave those
 * bits 0 and 7 slots of 8 without a key homed there (probe runs 8 times as long: 10 s for a
 * 10-million-line trace instead of 4). Rotated by 4, the key keeps every bit (the map must not
 * confuse two addresses) and its low bits vary from one block to the next. */
static uint64_t key_of(uint64_t addr)
{
	return addr >> 4 | addr << 60;
}

int lk_import_match_init(struct lk_import_match *m)
{
	*m = (struct lk_import_match){0};
	lk_u64map_init(&m->live, SIZE_MAX);
	lk_u64map_init(&m->freed, LK_IMPORT_FREED_MAX);
	lk_import_callers_init(&m->callers);
	return 0;
}

void lk_import_match_done(struct lk_import_match *m)
{
	lk_u64map_done(&m->live);
	lk_u64map_done(&m->freed);
	lk_import_callers_done(&m->callers);
	free(m->slots);
	free(m->free_slots);
	free(m->warnings);
	*m = (struct lk_import_match){0};
}

const char *lk_import_warn_name(enum lk_import_warn w)
{
	static const char *const names[] = {
	    [LK_WARN_DOUBLE_FREE] = "double_free",
	    [LK_WARN_FREE_UNKNOWN] = "free_unknown",
	    [LK_WARN_REALLOC_UNKNOWN] = "realloc_unknown",
	    [LK_WARN_ALLOC_LIVE] = "alloc_live",
	};
	return w < _LK_WARN_MAX ? names[w] : "unknown";
}

static const char *warn_text(enum lk_import_warn w)
{
	static const char *const texts[] = {
	    [LK_WARN_DOUBLE_FREE] = "double free",
	    [LK_WARN_FREE_UNKNOWN] = "free of an address never allocated",
	    [LK_WARN_REALLOC_UNKNOWN] = "realloc of an address not allocated",
	    [LK_WARN_ALLOC_LIVE] = "allocation at a live address (its free is missing)",
	};
	return texts[w];
}

static int warn(struct lk_import_match *m, enum lk_import_warn kind, uint64_t addr, uint64_t line,
                uint64_t ts_ns, uint64_t caller, uint64_t first_line)
{
	m->warn_count[kind]++;
	if (m->verbose >= 1) {
		fprintf(m->trace, "line %" PRIu64 ": warning: %s: 0x%" PRIx64, line,
		        warn_text(kind), addr);
		if (first_line)
			fprintf(m->trace, " (line %" PRIu64 ")", first_line);
		fputc('\n', m->trace);
	}
	if (m->nwarnings >= LK_IMPORT_WARNINGS_KEPT)
		return 0;
	if ((m->nwarnings & (m->nwarnings - 1)) == 0) { /* 0, 1, 2, 4, ...: grow by doubling */
		size_t cap = m->nwarnings ? 2 * m->nwarnings : 1;
		struct lk_import_warning *w = realloc(m->warnings, cap * sizeof(*w));
		if (!w)
			return -ENOMEM;
		m->warnings = w;
	}
	m->warnings[m->nwarnings++] = (struct lk_import_warning){
	    .kind = kind,
	    .addr = addr,
	    .line = line,
	    .ts_ns = ts_ns,
	    .caller = caller,
	    .first_line = first_line,
	};
	return 0;
}

/* A slot for a new live block: its index. */
static int new_slot(struct lk_import_match *m, uint64_t *ret)
{
	if (m->nfree > 0) {
		*ret = m->free_slots[--m->nfree];
		return 0;
	}
	if (m->nslots == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 1024;
		struct lk_import_live *s = realloc(m->slots, cap * sizeof(*s));
		if (!s)
			return -ENOMEM;
		m->slots = s;
		uint64_t *f = realloc(m->free_slots, cap * sizeof(*f));
		if (!f)
			return -ENOMEM;
		m->free_slots = f;
		m->cap = cap;
	}
	*ret = m->nslots++;
	return 0;
}

static int alloc_block(struct lk_import_match *m, const struct lk_import_rec *rec, uint64_t line,
                       uint64_t caller)
{
	uint64_t *v = lk_u64map_get(&m->live, key_of(rec->addr)), slot;
	int r;

	if (v) {
		struct lk_import_live *old = &m->slots[*v];
		r = warn(m, LK_WARN_ALLOC_LIVE, rec->addr, line, rec->ts_ns, caller, old->line);
		if (r < 0)
			return r;
		if (m->sink && (r = lk_import_sink_free(m->sink, old, rec->ts_ns, rec->tid)) < 0)
			return r;
		m->live_bytes -= old->size;
		slot = *v;
	} else {
		if ((r = new_slot(m, &slot)) < 0)
			return r;
		if ((r = lk_u64map_put(&m->live, key_of(rec->addr), slot)) < 0) {
			m->free_slots[m->nfree++] = slot;
			return r;
		}
		lk_u64map_remove(&m->freed, key_of(rec->addr), NULL);
	}
	struct lk_import_live *b = &m->slots[slot];
	*b = (struct lk_import_live){.addr = rec->addr,
	                             .size = rec->size,
	                             .line = line,
	                             .ts_ns = rec->ts_ns,
	                             .caller = caller};
	m->allocs++;
	m->live_bytes += rec->size;
	if (m->live_bytes > m->peak_bytes)
		m->peak_bytes = m->live_bytes;
	if (m->live.count > m->peak_objects)
		m->peak_objects = m->live.count;
	if (m->verbose >= 2)
		fprintf(m->trace, "line %" PRIu64 ": 0x%" PRIx64 " allocated, %" PRIu64 " bytes\n",
		        line, rec->addr, rec->size);
	if (m->sink) {
		if (!m->sink->pid)
			m->sink->pid = rec->pid;
		if ((r = lk_import_sink_alloc(m->sink, b, rec->tid)) < 0)
			return r;
	}
	return 0;
}

/* Frees addr; a block not live is a warning, of the kind a realloc or a free makes. */
static int free_block(struct lk_import_match *m, const struct lk_import_rec *rec, uint64_t addr,
                      uint64_t line, uint64_t caller, bool realloc_old)
{
	uint64_t slot, *first;
	int r;

	if (!lk_u64map_remove(&m->live, key_of(addr), &slot)) {
		first = realloc_old ? NULL : lk_u64map_get(&m->freed, key_of(addr));
		if (first)
			return warn(m, LK_WARN_DOUBLE_FREE, addr, line, rec->ts_ns, caller, *first);
		return warn(m, realloc_old ? LK_WARN_REALLOC_UNKNOWN : LK_WARN_FREE_UNKNOWN, addr,
		            line, rec->ts_ns, caller, 0);
	}
	const struct lk_import_live *b = &m->slots[slot];
	if (m->verbose >= 1)
		fprintf(m->trace,
		        "line %" PRIu64 ": 0x%" PRIx64 " %s, %" PRIu64 " bytes from line %" PRIu64
		        "\n",
		        line, addr, realloc_old ? "reallocated" : "freed", b->size, b->line);
	if (m->sink && (r = lk_import_sink_free(m->sink, b, rec->ts_ns, rec->tid)) < 0)
		return r;
	m->live_bytes -= b->size;
	m->frees++;
	m->free_slots[m->nfree++] = slot;
	if (m->freed.count >= LK_IMPORT_FREED_MAX) {
		/* Forget, rather than grow (import.h). The table is emptied in place: freed and
		 * grown again, its pages would fault in anew each time (3.0 s for 2 million lines
		 * of addresses that never repeat, 2.3 s so, on a loaded machine). */
		memset(m->freed.e, 0, m->freed.size * sizeof(*m->freed.e));
		m->freed.count = 0;
	}
	r = lk_u64map_put(&m->freed, key_of(addr), line);
	return r == -ENOMEM ? r : 0;
}

int lk_import_match_add(struct lk_import_match *m, const struct lk_import_rec *rec, uint64_t line)
{
	uint64_t caller = 0;
	int r;

	m->records++;
	if (rec->ts_ns != UINT64_MAX)
		m->has_ts = true;
	if (rec->caller) {
		r = lk_import_callers_intern(&m->callers, rec->caller, rec->caller_len, &caller);
		if (r < 0)
			return r;
		m->has_caller = true;
	}
	switch (rec->op) {
	case LK_OP_ALLOC:
		if (rec->addr == 0) {
			m->failed++;
			if (m->verbose >= 2)
				fprintf(m->trace,
				        "line %" PRIu64 ": allocation of %" PRIu64
				        " bytes failed\n",
				        line, rec->size);
			return 0;
		}
		return alloc_block(m, rec, line, caller);
	case LK_OP_FREE:
		if (rec->addr == 0) /* free(NULL) */
			return 0;
		return free_block(m, rec, rec->addr, line, caller, false);
	case LK_OP_REALLOC_FROM:
		m->reallocs++;
		return free_block(m, rec, rec->old, line, caller, true);
	case LK_OP_REALLOC_TO:
		if (rec->addr == 0)
			return 0;
		return alloc_block(m, rec, line, caller);
	case LK_OP_REALLOC:
		m->reallocs++;
		if (rec->addr == 0) { /* failed: the old block stays */
			m->failed++;
			return 0;
		}
		if (rec->old != 0 && (r = free_block(m, rec, rec->old, line, caller, true)) < 0)
			return r;
		return alloc_block(m, rec, line, caller);
	case LK_OP_REALLOC_FAIL:
		m->reallocs++;
		m->failed++;
		if (m->verbose >= 2)
			fprintf(m->trace, "line %" PRIu64 ": realloc of 0x%" PRIx64 " failed\n",
			        line, rec->old);
		return 0;
	case LK_OP_MARK:
		if (m->verbose >= 2)
			fprintf(m->trace, "line %" PRIu64 ": %s\n", line, rec->mark);
		return 0;
	}
	return 0;
}

static int by_addr(const void *a, const void *b)
{
	const struct lk_import_live *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int lk_import_match_finish(struct lk_import_match *m, struct lk_import_live **ret, size_t *n)
{
	struct lk_import_live *out = NULL;
	size_t k = 0;

	m->leaked_objects = m->live.count;
	m->leaked_bytes = m->live_bytes;
	if (m->live.count > 0) {
		out = malloc(m->live.count * sizeof(*out));
		if (!out)
			return -ENOMEM;
		for (size_t i = 0; i < m->live.size; i++)
			if (m->live.e[i].used)
				out[k++] = m->slots[m->live.e[i].value];
		qsort(out, k, sizeof(*out), by_addr);
	}
	*ret = out;
	*n = k;
	return 0;
}
