/* profile-result.c: turns the live set and the running sums of profile.c's passes into the
 * numbers profile.h hands out: per-stack snapshots of the live set (at the selected time, at the
 * peak, the old blocks at the end, the window's first moment), the totals, every interval, the
 * growth verdicts, the live blocks at the end; and the accessors.
 *
 * Estimates follow docs/sampling.md section 4: a sampled block of s bytes and weight w adds s w
 * to a byte estimate and s^2 (w^2 - w) to its variance, w and w^2 - w to an object count's, and
 * its own size (or 1) to what was observed. Never reads the file and never prints.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "profile-internal.h"

/* The end's one pass over the live set: the peak's snapshot (the blocks live at the mark), the
 * live snapshot when the selected time is the end, the old blocks, and the totals and list of the
 * blocks live at the end. One pass rather than four: each reads the whole set, and a million
 * blocks left live (an exact profile of redis-server) make each pass a walk of tens of megabytes
 * after the program's exit, while `leek run` waits (bench/exact-heaptrack.sh). */
struct at_end {
	struct lk_profile *p;
	const struct live_set *ls;
	uint64_t end_ns;
	bool live;  /* the live snapshot too */
	bool list;  /* p->live_blocks */
	size_t n;
};

/* Block b into live_*, and with a window into its came_* if it came after from_ns, else into its
 * left_*, which hold the blocks that stayed until profile_finish() (see there). */
static void add_live(struct lk_profile *p, const struct live_block *b,
		     const struct live_weight *wt)
{
	struct lk_stack_stats *s = &p->stacks[b->stack];
	struct lk_window *w;

	profile_add_block(&s->live_bytes, &s->live_objects, b->size, wt);
	if (!p->opts.window)
		return;
	w = &p->windows[b->stack];
	if (profile_after_from(p, b->t_ns))
		profile_add_block(&w->came_bytes, &w->came_objects, b->size, wt);
	else
		profile_add_block(&w->left_bytes, &w->left_objects, b->size, wt);
}

/* *r = a - b, for sums that hold b's samples among a's (value, variance, observed, samples,
 * heavy misses); the steps, which are maxima, stay a's: at least those of the difference. */
static void estimate_sub(struct lk_estimate *r, const struct lk_estimate *a,
			 const struct lk_estimate *b)
{
	struct lk_estimate d = *a;

	d.samples -= b->samples;
	if (!d.samples) {
		*r = (struct lk_estimate){ 0 };
		return;
	}
	d.value -= b->value;
	d.var = fmax(d.var - b->var, 0);
	d.observed -= b->observed;
	d.heavy_miss = fmax(d.heavy_miss - b->heavy_miss, 0);
	*r = d;
}

/* The window's alloc_* held each stack's allocations at from_ns: now, those since. */
static void window_allocated(struct lk_profile *p)
{
	for (size_t i = 0; i < p->nstacks; i++) {
		struct lk_window *w = &p->windows[i];
		estimate_sub(&w->alloc_bytes, &p->stacks[i].alloc_bytes, &w->alloc_bytes);
		estimate_sub(&w->alloc_objects, &p->stacks[i].alloc_objects, &w->alloc_objects);
	}
}

static void live_block(void *ctx, const struct live_block *b)
{
	struct at_end *c = ctx;
	struct live_weight wt = live_weigh(c->ls, b->size);

	add_live(c->p, b, &wt);
}

void profile_snapshot_live(struct lk_profile *p, const struct live_set *ls)
{
	for (size_t i = 0; i < p->nstacks; i++)
		p->stacks[i].live_bytes = p->stacks[i].live_objects = (struct lk_estimate){ 0 };
	live_set_foreach(ls, live_block, &(struct at_end){ .p = p, .ls = ls });
	if (p->opts.window)
		window_allocated(p);
}

static void from_block(void *ctx, const struct live_block *b)
{
	struct at_end *c = ctx;
	struct live_weight wt = live_weigh(c->ls, b->size);
	struct lk_window *w = &c->p->windows[b->stack];

	profile_add_block(&w->from_bytes, &w->from_objects, b->size, &wt);
}

void profile_snapshot_from(struct lk_profile *p, const struct live_set *ls)
{
	live_set_foreach(ls, from_block, &(struct at_end){ .p = p, .ls = ls });
	for (size_t i = 0; i < p->nstacks; i++) {
		p->windows[i].alloc_bytes = p->stacks[i].alloc_bytes;
		p->windows[i].alloc_objects = p->stacks[i].alloc_objects;
	}
}

static int cmp_live(const void *x, const void *y)
{
	const struct lk_live_block *a = x, *b = y;

	if (a->t_ns != b->t_ns)
		return a->t_ns < b->t_ns ? -1 : 1;
	return a->block < b->block ? -1 : a->block > b->block;
}

/* The live blocks at the end, oldest first (by time, then number). Blocks are numbered in the
 * order of their records, whose times never go backwards, so the order by number is nearly
 * always that order already: a radix sort by number (11 bits a pass, and no pass over digits
 * that every number shares), then a check, and qsort only if the times disagree (INHERITed
 * blocks keep their parent's times, and thread segments number blocks out of order). qsort
 * alone took 0.65 s for the million blocks left live by an exact profile of redis-server; this
 * takes a few tens of milliseconds. */
#define RADIX_BITS 11 /* a pass's counts: 16 KiB on the stack */
#define RADIX (1u << RADIX_BITS)

static void sort_live(struct lk_live_block *v, size_t n)
{
	struct lk_live_block *tmp, *from = v, *to;
	uint64_t all_or = 0, all_and = UINT64_MAX;

	for (size_t i = 0; i < n; i++) {
		all_or |= v[i].block;
		all_and &= v[i].block;
	}
	/* Beyond the budget too, qsort: slower, but it needs no memory. */
	tmp = n > 1 ? lk_budget_malloc(n * sizeof(*v)) : NULL;
	if (n > 1 && !tmp) {
		qsort(v, n, sizeof(*v), cmp_live);
		return;
	}
	to = tmp;
	for (unsigned shift = 0; n > 1 && shift < 64; shift += RADIX_BITS) {
		size_t count[RADIX + 1] = { 0 };
		if ((((all_or ^ all_and) >> shift) & (RADIX - 1)) == 0)
			continue; /* the same digit everywhere: this pass would move nothing */
		for (size_t i = 0; i < n; i++)
			count[((from[i].block >> shift) & (RADIX - 1)) + 1]++;
		for (size_t d = 1; d <= RADIX; d++)
			count[d] += count[d - 1];
		for (size_t i = 0; i < n; i++)
			to[count[(from[i].block >> shift) & (RADIX - 1)]++] = from[i];
		struct lk_live_block *x = from;
		from = to;
		to = x;
	}
	if (from != v)
		memcpy(v, from, n * sizeof(*v));
	lk_budget_free(tmp, n * sizeof(*v));
	for (size_t i = 1; i < n; i++)
		if (v[i].t_ns < v[i - 1].t_ns) {
			qsort(v, n, sizeof(*v), cmp_live);
			break;
		}
}

static void end_block(void *ctx, const struct live_block *b)
{
	struct at_end *c = ctx;
	struct lk_stack_stats *s = &c->p->stacks[b->stack];
	struct live_weight wt = live_weigh(c->ls, b->size);

	if (live_at_mark(c->ls, b))
		profile_add_block(&s->peak_bytes, &s->peak_objects, b->size, &wt);
	if (c->live)
		add_live(c->p, b, &wt);
	/* Old: at least age_ns before the end (an INHERITed block may be from before the start). */
	if (c->p->opts.known && b->t_ns <= c->p->opts.known_ns) /* known: counted apart */
		profile_add_block(&c->p->totals.known_bytes, &c->p->totals.known_objects, b->size,
				  &wt);
	else if ((__int128)c->end_ns - b->t_ns >= (__int128)c->p->opts.age_ns)
		profile_add_block(&s->old_bytes, &s->old_objects, b->size, &wt);
	if (c->list)
		c->p->live_blocks[c->n++] = (struct lk_live_block){
			.block = b->seq, .size = b->size, .stack = b->stack, .t_ns = b->t_ns,
			.weight = wt.w };
	profile_add_block(&c->p->totals.live_bytes_end, &c->p->totals.live_objects_end, b->size,
			  &wt);
}

void profile_sort_live(struct lk_profile *p)
{
	sort_live(p->live_blocks, p->nlive_blocks);
}

int profile_finish(struct lk_profile *p, const struct live_set *ls, uint64_t duration_ns,
		   bool live)
{
	struct lk_profile_totals *t = &p->totals;
	double bucket_s = (double)duration_ns / p->nbuckets / 1e9;
	struct at_end c = { p, ls, duration_ns, live, !p->opts.no_live_list, 0 };

	for (size_t i = 0; i < p->nstacks; i++) {
		struct lk_stack_stats *s = &p->stacks[i];
		s->peak_bytes = s->peak_objects = s->old_bytes = s->old_objects =
			(struct lk_estimate){ 0 };
		if (live)
			s->live_bytes = s->live_objects = (struct lk_estimate){ 0 };
	}
	t->duration_ns = duration_ns;
	t->max_live = ls->max_count;
	if (c.list) {
		size_t cap = ls->count ? ls->count : 1;
		p->live_blocks = lk_budget_malloc(cap * sizeof(*p->live_blocks));
		if (!p->live_blocks)
			return -errno;
		p->live_blocks_cap = cap;
	}
	live_set_foreach(ls, end_block, &c);
	if (live && p->opts.window) /* at_ns is the end */
		window_allocated(p);
	for (size_t i = 0; i < ls->ngone; i++) { /* live at the mark, gone since */
		const struct live_gone *g = &ls->gone[i];
		struct live_weight wt = live_weigh(ls, g->size);
		struct lk_stack_stats *s = &p->stacks[g->stack];

		profile_add_block(&s->peak_bytes, &s->peak_objects, g->size, &wt);
	}
	p->nlive_blocks = c.n;
	lk_estimate_finish(&t->live_bytes_end);
	lk_estimate_finish(&t->live_objects_end);
	lk_estimate_finish(&t->known_bytes);
	lk_estimate_finish(&t->known_objects);

	for (size_t i = 0; i < p->nstacks; i++) {
		struct lk_stack_stats *s = &p->stacks[i];
		struct lk_estimate *e[] = { &s->alloc_bytes, &s->alloc_objects, &s->live_bytes,
					    &s->live_objects, &s->peak_bytes, &s->peak_objects,
					    &s->old_bytes, &s->old_objects };
		for (size_t k = 0; k < sizeof(e) / sizeof(e[0]); k++)
			lk_estimate_finish(e[k]);
		lk_estimate_add(&t->alloc_bytes, &s->alloc_bytes);
		lk_estimate_add(&t->alloc_objects, &s->alloc_objects);
		lk_estimate_add(&t->peak_bytes, &s->peak_bytes);
		lk_growth_classify(s->series, p->nbuckets, bucket_s,
				   s->alloc_bytes.samples + p->runs[i].inherited, &s->growth);
		if (p->opts.window) {
			struct lk_window *w = &p->windows[i];
			/* left_* held the blocks live at both moments: those at from_ns that
			 * stayed. The others left. */
			estimate_sub(&w->left_bytes, &w->from_bytes, &w->left_bytes);
			estimate_sub(&w->left_objects, &w->from_objects, &w->left_objects);
			struct lk_estimate *we[] = { &w->from_bytes, &w->from_objects,
						     &w->came_bytes, &w->came_objects,
						     &w->left_bytes, &w->left_objects,
						     &w->alloc_bytes, &w->alloc_objects };
			for (size_t k = 0; k < sizeof(we) / sizeof(we[0]); k++)
				lk_estimate_finish(we[k]);
			s->window = w; /* the array moves no more */
		}
	}
	/* Sums of nothing are finished too (a profile without samples). */
	lk_estimate_finish(&t->alloc_bytes);
	lk_estimate_finish(&t->alloc_objects);
	lk_estimate_finish(&t->peak_bytes);
	return 0;
}

struct lk_profile *lk_profile_free(struct lk_profile *p)
{
	if (!p)
		return NULL;
	profile_tables_free(p);
	profile_frees_free(p);
	lk_budget_free(p->errors, p->errors_cap * sizeof(*p->errors));
	lk_budget_free(p->live_blocks, p->live_blocks_cap * sizeof(*p->live_blocks));
	free(p->strings);
	lk_chain_files_done(&p->chain);
	free(p);
	return NULL;
}

const struct lk_profile_header *lk_profile_header(const struct lk_profile *p)
{
	return &p->header;
}

const struct lk_profile_totals *lk_profile_totals(const struct lk_profile *p)
{
	return &p->totals;
}

size_t lk_profile_stacks(const struct lk_profile *p, const struct lk_stack_stats **ret)
{
	/* Stack 0 only when a sample had no stack. */
	*ret = p->stack0_used ? p->stacks : p->stacks + 1;
	return p->stack0_used ? p->nstacks : p->nstacks - 1;
}

size_t lk_profile_errors(const struct lk_profile *p, const struct lk_error_event **ret)
{
	*ret = p->errors;
	return p->nerrors;
}

size_t lk_profile_modules(const struct lk_profile *p, const struct lk_module_info_rec **ret)
{
	*ret = p->modules;
	return p->nmodules;
}

size_t lk_profile_timeline(const struct lk_profile *p, const struct lk_timeline_point **ret)
{
	*ret = p->timeline;
	return p->nbuckets;
}

size_t lk_profile_live_blocks(const struct lk_profile *p, const struct lk_live_block **ret)
{
	*ret = p->live_blocks;
	return p->nlive_blocks;
}
