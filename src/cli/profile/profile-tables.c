/* profile-tables.c: profile.c's copies of STACK and MODULE records, and the module each frame of a
 * stack was in when the stack was written.
 *
 * The reader's pointers die at its next record, so everything kept is copied here. A frame is a
 * return address: like the symbolizer, it is looked up at frame - 1, inside the call. The loaded
 * segments are kept in an array sorted lazily (a program loads its modules in bursts, then writes
 * stacks), and searched by bisection. Never lets the file decide the memory beyond one copy of
 * each record: every table and copy is taken from the memory budget (budget.h), and the counts
 * are capped by LK_PROFILE_MAX_STACKS and LK_PROFILE_MAX_MODULES whatever the budget.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "profile-internal.h"

/* Grows an array of `size`-byte members to hold `need` (doubling), zeroing the new ones; 0,
 * -ENOMEM or -E2BIG (the budget). */
static int reserve(void **a, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap ? *cap : 16;
	void *b;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	b = lk_budget_realloc(*a, *cap * size, n * size);
	if (!b)
		return -errno;
	memset((char *)b + *cap * size, 0, (n - *cap) * size);
	*a = b;
	*cap = n;
	return 0;
}

/* The one block that holds a module's segments, build-id and path (and a NUL). */
static size_t module_bytes(uint32_t nseg, uint32_t build_id_len, uint32_t path_len)
{
	return nseg * sizeof(struct lk_module_seg) + build_id_len + path_len + 1;
}

static int cmp_range(const void *a, const void *b)
{
	const struct seg_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The id of the module mapped at addr, or 0. */
static uint64_t module_at(struct lk_profile *p, uint64_t addr)
{
	size_t lo = 0, hi = p->nranges;

	if (p->ranges_dirty) {
		qsort(p->ranges, p->nranges, sizeof(*p->ranges), cmp_range);
		p->ranges_dirty = false;
	}
	while (lo < hi) { /* the first range starting above addr */
		size_t mid = lo + (hi - lo) / 2;
		if (p->ranges[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > 0 && addr < p->ranges[lo - 1].hi)
		return p->ranges[lo - 1].id;
	return 0;
}

int profile_add_stack(struct lk_profile *p, const struct lk_record *rec, const char **what)
{
	size_t n = rec->stack.nframes, id = p->nstacks;
	struct lk_stack_stats *s;
	uint64_t *f;
	int r;

	/* The reader checked that ids run 1, 2, ... with no gap, so id == nstacks. */
	if (p->nstacks >= LK_PROFILE_MAX_STACKS) {
		_Static_assert(LK_PROFILE_MAX_STACKS == (1u << 22) + 1, "the message's number");
		*what = "more than 4194304 stacks: leek's limit";
		return -E2BIG;
	}
	r = reserve((void **)&p->stacks, &p->stacks_cap, id + 1, sizeof(*p->stacks));
	if (r >= 0)
		r = reserve((void **)&p->runs, &p->runs_cap, id + 1, sizeof(*p->runs));
	if (r >= 0 && p->opts.window)
		r = reserve((void **)&p->windows, &p->windows_cap, id + 1, sizeof(*p->windows));
	if (r < 0)
		return r;
	f = n ? lk_budget_malloc(2 * n * sizeof(*f)) : NULL;
	if (n && !f)
		return -errno;
	s = &p->stacks[id];
	*s = (struct lk_stack_stats){ .id = rec->stack.id, .nframes = (uint32_t)n };
	if (n) {
		memcpy(f, rec->stack.frames, n * sizeof(*f));
		for (size_t i = 0; i < n; i++)
			f[n + i] = f[i] ? module_at(p, f[i] - 1) : 0;
		s->frames = f;
		s->modules = f + n;
	}
	p->runs[id] = (struct stack_run){ 0 };
	p->nstacks++;
	return 0;
}

int profile_add_module(struct lk_profile *p, const struct lk_record *rec, const char **what)
{
	uint32_t nseg = rec->module.nseg, idlen = rec->module.build_id_len;
	uint32_t plen = rec->module.path_len;
	struct lk_module_info_rec *m;
	struct lk_module_seg *seg;
	char *buf;
	int r;

	if (p->nmodules >= LK_PROFILE_MAX_MODULES) {
		_Static_assert(LK_PROFILE_MAX_MODULES == 1u << 20, "the message's number");
		*what = "more than 1048576 MODULE records: leek's limit";
		return -E2BIG;
	}
	r = reserve((void **)&p->modules, &p->modules_cap, p->nmodules + 1, sizeof(*p->modules));
	if (r >= 0)
		r = reserve((void **)&p->ranges, &p->ranges_cap, p->nranges + nseg,
			    sizeof(*p->ranges));
	if (r < 0)
		return r;
	buf = lk_budget_malloc(module_bytes(nseg, idlen, plen));
	if (!buf)
		return -errno;
	seg = (struct lk_module_seg *)buf;
	memcpy(seg, rec->module.seg, nseg * sizeof(*seg));
	memcpy(buf + nseg * sizeof(*seg), rec->module.build_id, idlen);
	memcpy(buf + nseg * sizeof(*seg) + idlen, rec->module.path, plen);
	buf[nseg * sizeof(*seg) + idlen + plen] = 0;
	m = &p->modules[p->nmodules++];
	*m = (struct lk_module_info_rec){
		.id = rec->module.id,
		.base = rec->module.base,
		.loaded_ns = rec->time_ns,
		.unloaded_ns = UINT64_MAX,
		.nseg = nseg,
		.build_id_len = idlen,
		.seg = seg,
		.build_id = (const uint8_t *)buf + nseg * sizeof(*seg),
		.path = buf + nseg * sizeof(*seg) + idlen,
		.path_len = plen,
	};
	for (uint32_t i = 0; i < nseg; i++) {
		uint64_t lo = m->base + seg[i].start, hi = lo + seg[i].len;
		if (seg[i].len == 0 || hi < lo) /* empty, or wraps: names no address */
			continue;
		p->ranges[p->nranges++] = (struct seg_range){ lo, hi, m->id };
		p->ranges_dirty = true;
	}
	return 0;
}

void profile_unload_module(struct lk_profile *p, const struct lk_record *rec)
{
	size_t lo = 0, hi = p->nmodules, j = 0;
	uint64_t id = rec->unload.id;

	/* Ids only grow through the file (the reader checks), so modules[] is sorted by id. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->modules[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < p->nmodules && p->modules[lo].id == id)
		p->modules[lo].unloaded_ns = rec->time_ns;
	for (size_t i = 0; i < p->nranges; i++) /* keeps the order: no resort needed */
		if (p->ranges[i].id != id)
			p->ranges[j++] = p->ranges[i];
	p->nranges = j;
}

void profile_tables_free(struct lk_profile *p)
{
	for (size_t i = 0; i < p->nstacks; i++)
		lk_budget_free((void *)p->stacks[i].frames,
			       2 * p->stacks[i].nframes * sizeof(*p->stacks[i].frames));
	for (size_t i = 0; i < p->nmodules; i++)
		lk_budget_free((void *)p->modules[i].seg,
			       module_bytes(p->modules[i].nseg, p->modules[i].build_id_len,
					    p->modules[i].path_len));
	lk_budget_free(p->stacks, p->stacks_cap * sizeof(*p->stacks));
	lk_budget_free(p->runs, p->runs_cap * sizeof(*p->runs));
	lk_budget_free(p->windows, p->windows_cap * sizeof(*p->windows));
	lk_budget_free(p->modules, p->modules_cap * sizeof(*p->modules));
	lk_budget_free(p->ranges, p->ranges_cap * sizeof(*p->ranges));
}
