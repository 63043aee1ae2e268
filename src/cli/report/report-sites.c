/* report-sites.c: a section's allocation sites, made of its stacks (report.h), and the wrappers
 * several sections skip alike (lk_report_share_wrappers).
 *
 * A stack's site is its first frame past the allocator's (lk_report_stack.alloc_at) that is not
 * a wrapper the report skips (r->wrappers, from wrappers.c); stacks whose site frames agree on
 * function, file, line and module are one site. Each stack's estimates are added to its site's
 * sums with lk_estimate_add(); report-view.c then calls lk_estimate_finish() once per sum, so a
 * site made of several stacks, or of several processes (--merge), gets the interval of the sum
 * and not a sum of intervals.
 *
 * Never: copy a stack (a site points at its heaviest stack's frames, which the report keeps), or
 * print.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "report.h"

#define MAX_SITES (1u << 24)

/* The sites by key while they are made: site index + 1, open addressing by key hash; 0 = empty. */
struct slots {
	size_t *slot;
	size_t n;
};

static int grow_slots(struct lk_report *r, struct slots *t)
{
	size_t n = t->n ? 2 * t->n : 1024;
	size_t *slot = lk_budget_calloc(n, sizeof(*slot));

	if (!slot)
		return -errno;
	for (size_t i = 0; i < r->nsites; i++) {
		const struct lk_report_site *s = &r->sites[i];
		size_t h = (size_t)lk_site_key_hash(s->stack[s->site_frame]) & (n - 1);
		while (slot[h])
			h = (h + 1) & (n - 1);
		slot[h] = i + 1;
	}
	lk_budget_free(t->slot, t->n * sizeof(*t->slot));
	t->slot = slot;
	t->n = n;
	return 0;
}

/* The site whose key is frames[at], added if new (without estimates); NULL and errno ENOMEM,
 * or E2BIG (the budget) on failure. */
static struct lk_report_site *find_site(struct lk_report *r, struct slots *t,
					const struct lk_report_stack *st, size_t at)
{
	const struct lk_sym_frame *key = st->frames[at];
	size_t h;
	int k;

	if ((r->nsites + 1) * 2 > t->n && (k = grow_slots(r, t)) < 0) {
		errno = -k;
		return NULL;
	}
	h = (size_t)lk_site_key_hash(key) & (t->n - 1);
	for (; t->slot[h]; h = (h + 1) & (t->n - 1)) {
		struct lk_report_site *s = &r->sites[t->slot[h] - 1];
		if (lk_site_key_compare(s->stack[s->site_frame], key) == 0)
			return s;
	}
	if (r->nsites == r->sites_cap) {
		size_t cap = r->sites_cap ? 2 * r->sites_cap : 64;
		struct lk_report_site *sites;
		if (cap > MAX_SITES) {
			errno = ENOMEM;
			return NULL;
		}
		sites = lk_budget_realloc(r->sites, r->sites_cap * sizeof(*sites),
					  cap * sizeof(*sites));
		if (!sites)
			return NULL;
		r->sites = sites;
		r->sites_cap = cap;
	}
	t->slot[h] = r->nsites + 1;
	r->sites[r->nsites] = (struct lk_report_site){
		.stack = st->frames,
		.nframes = st->n,
		.site_frame = at,
		.funcs = st->funcs,
		.oldest_age_ns = -1,
		.figure = -1,
	};
	return &r->sites[r->nsites++];
}

/* Adds one stack's estimates to its site; the heaviest stack becomes the site's stack. */
static void add_to_site(struct lk_report *r, struct lk_report_site *s,
			const struct lk_report_stack *st, size_t at)
{
	double figure = LK_VIEW_FIGURE(st, r->opts.view, bytes)->value;

	lk_estimate_add(&s->alloc_bytes, &st->alloc_bytes);
	lk_estimate_add(&s->alloc_objects, &st->alloc_objects);
	lk_estimate_add(&s->live_bytes, &st->live_bytes);
	lk_estimate_add(&s->live_objects, &st->live_objects);
	lk_estimate_add(&s->peak_bytes, &st->peak_bytes);
	lk_estimate_add(&s->peak_objects, &st->peak_objects);
	lk_estimate_add(&s->old_bytes, &st->old_bytes);
	lk_estimate_add(&s->old_objects, &st->old_objects);
	if (st->window)
		lk_window_add(&s->window, st->window);
	if (st->oldest_age_ns > s->oldest_age_ns)
		s->oldest_age_ns = st->oldest_age_ns;
	s->nstacks++;
	if (!(figure > s->figure))
		return;
	s->stack = st->frames;
	s->nframes = st->n;
	s->site_frame = at;
	s->funcs = st->funcs;
	s->growth = st->growth;
	s->figure = figure;
}

/* The wrappers r's stacks reveal, into r->wrappers. Every sample of every stack counts, whatever
 * the view and --focus or --ignore: which frames are wrappers is a fact about the program, so
 * every view of a profile skips the same ones. */
static int find_wrappers(struct lk_report *r)
{
	struct lk_wrap_stack *s;
	int k;

	if (r->opts.no_auto_wrappers || r->wrappers_shared || !r->nstacks)
		return 0;
	s = lk_budget_malloc(r->nstacks * sizeof(*s));
	if (!s)
		return -errno;
	for (size_t i = 0; i < r->nstacks; i++)
		s[i] = (struct lk_wrap_stack){ .funcs = r->stacks[i].funcs,
					       .n = r->stacks[i].n,
					       .from = r->stacks[i].alloc_at,
					       .samples = r->stacks[i].samples };
	k = lk_wrappers_find(&r->wrappers, s, r->nstacks, r->funcs.n);
	lk_budget_free(s, r->nstacks * sizeof(*s));
	return k;
}

/* The reports' stacks as the rule sees them, their function ids in all's numbering (ids[i] for
 * report i) and their allocator flags their own, into s and funcs (every frame, in order). */
static void joint_stacks(struct lk_report *const *r, size_t n, uint32_t *const *ids,
			 struct lk_wrap_stack *s, uint32_t *funcs)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < r[i]->nstacks; j++) {
			const struct lk_report_stack *st = &r[i]->stacks[j];
			for (uint32_t x = 0; x < st->n; x++)
				funcs[x] = (st->funcs[x] & LK_FUNC_ALLOC) | ids[i][LK_FUNC_ID(st->funcs[x])];
			*s++ = (struct lk_wrap_stack){ .funcs = funcs, .n = st->n, .from = st->alloc_at,
						       .samples = st->samples };
			funcs += st->n;
		}
}

int lk_report_share_wrappers(struct lk_report *const *r, size_t n)
{
	struct lk_funcs all;
	struct lk_wrappers found = {};
	uint32_t **ids = NULL, *funcs = NULL;
	struct lk_wrap_stack *s = NULL;
	size_t nstacks = 0, nframes = 0;
	int k = 0;

	if (!n || r[0]->opts.no_auto_wrappers)
		return 0;
	lk_funcs_init(&all, r[0]->opts.filter);
	if (!(ids = calloc(n, sizeof(*ids))))
		k = -ENOMEM;
	for (size_t i = 0; i < n && k >= 0; i++) {
		for (size_t j = 0; j < r[i]->nstacks; j++)
			nframes += r[i]->stacks[j].n;
		nstacks += r[i]->nstacks;
		if (!(ids[i] = lk_budget_malloc((r[i]->funcs.n ? r[i]->funcs.n : 1) * sizeof(**ids))))
			k = -errno;
		else
			k = lk_funcs_map(&all, &r[i]->funcs, ids[i]);
	}
	if (k >= 0 && (!(s = lk_budget_malloc((nstacks ? nstacks : 1) * sizeof(*s))) ||
		       !(funcs = lk_budget_malloc((nframes ? nframes : 1) * sizeof(*funcs)))))
		k = -errno;
	if (k >= 0) {
		joint_stacks(r, n, ids, s, funcs);
		k = lk_wrappers_find(&found, s, nstacks, all.n);
	}
	for (size_t i = 0; i < n && k >= 0; i++) {
		lk_wrappers_done(&r[i]->wrappers);
		k = lk_wrappers_renumber(&r[i]->wrappers, &found, ids[i], r[i]->funcs.n);
		r[i]->wrappers_shared = true;
	}
	lk_budget_free(funcs, (nframes ? nframes : 1) * sizeof(*funcs));
	lk_budget_free(s, (nstacks ? nstacks : 1) * sizeof(*s));
	for (size_t i = 0; ids && i < n; i++)
		lk_budget_free(ids[i], (r[i]->funcs.n ? r[i]->funcs.n : 1) * sizeof(**ids));
	free(ids);
	lk_wrappers_done(&found);
	lk_funcs_done(&all);
	return k;
}

size_t lk_report_stack_site(const struct lk_report *r, const struct lk_report_stack *st)
{
	size_t at = lk_wrappers_next(&r->wrappers, st->funcs, st->n, st->alloc_at);

	return at < st->n ? at : st->alloc_at; /* nothing past the allocator and the wrappers: as
						* before them */
}

int lk_report_sites(struct lk_report *r)
{
	struct slots t = {};
	int k = find_wrappers(r);

	for (size_t i = 0; i < r->nstacks && k >= 0; i++) {
		const struct lk_report_stack *st = &r->stacks[i];
		size_t at = lk_report_stack_site(r, st);
		struct lk_report_site *s;

		if (st->filtered)
			continue;
		s = find_site(r, &t, st, at);
		if (!s)
			k = -errno;
		else
			add_to_site(r, s, st, at);
	}
	lk_budget_free(t.slot, t.n * sizeof(*t.slot));
	return k;
}
