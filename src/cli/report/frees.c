/* frees.c: a profile's frees of sampled blocks, symbolized, for `leek report frees` (frees.h).
 *
 * Never: print; symbolize a stack twice; keep the profile.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "frees.h"
#include "report.h"
#include "u64map.h"

struct lk_frees_section *lk_frees_section_free(struct lk_frees_section *s)
{
	if (!s)
		return NULL;
	for (size_t i = 0; i < s->nstacks; i++)
		lk_budget_free(s->stacks[i].frames, s->stacks[i].n * sizeof(*s->stacks[i].frames));
	lk_budget_free(s->stacks, s->stacks_cap * sizeof(*s->stacks));
	lk_budget_free(s->recent, s->recent_cap * sizeof(*s->recent));
	lk_budget_free(s->pairs, s->pairs_cap * sizeof(*s->pairs));
	lk_site_stack_done(&s->st);
	free(s->path);
	free(s->exe);
	free(s);
	return NULL;
}

struct builder {
	struct lk_frees_section *s;
	const struct lk_profile *p;
	struct lk_symbolizer *sym;
	const struct lk_site_filter *filter;
	uint32_t index;
	const struct lk_stack_stats *st; /* the profile's, by index */
	size_t nst;
	struct lk_u64map by_id;          /* stack id -> its index in s->stacks + 1 */
	size_t cap;                      /* s->stacks' room: never moved, as events point in */
};

/* The section's copy of stack id, symbolized the first time; NULL (and *err) on failure, or for
 * id 0 of a free, which means "no free stack". */
static const struct lk_frees_stack *stack_of(struct builder *b, uint64_t id, int *err)
{
	struct lk_frees_section *s = b->s;
	uint64_t *at = lk_u64map_get(&b->by_id, id);
	const struct lk_stack_stats *st = NULL;
	struct lk_frees_stack *x;
	int k;

	if (at)
		return &s->stacks[*at - 1];
	for (size_t lo = 0, hi = b->nst; lo < hi;) { /* in id order (profile.h) */
		size_t mid = lo + (hi - lo) / 2;
		if (b->st[mid].id == id) {
			st = &b->st[mid];
			break;
		}
		if (b->st[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (s->nstacks == b->cap) { /* never: room for every stack of the profile and "none" */
		*err = -EOVERFLOW;
		return NULL;
	}
	x = &s->stacks[s->nstacks];
	*x = (struct lk_frees_stack){ .id = id };
	k = lk_site_symbolize(&s->st, b->sym, b->index, st ? st->frames : NULL,
			      st ? st->modules : NULL, st ? st->nframes : 0);
	if (k >= 0 && s->st.n && !(x->frames = lk_budget_malloc(s->st.n * sizeof(*x->frames))))
		k = -errno;
	if (k >= 0)
		k = lk_u64map_put(&b->by_id, id, s->nstacks + 1);
	if (k < 0) {
		lk_budget_free(x->frames, s->st.n * sizeof(*x->frames));
		x->frames = NULL;
		*err = k;
		return NULL;
	}
	memcpy(x->frames, s->st.frames, s->st.n * sizeof(*x->frames));
	x->n = s->st.n;
	x->site = x->n ? lk_site_pick(b->filter, x->frames, x->n) : 0;
	s->nstacks++;
	return x;
}

int lk_frees_section_new(const char *path, const struct lk_profile *p, struct lk_symbolizer *sym,
			 uint32_t index, const struct lk_site_filter *filter, size_t top,
			 struct lk_frees_section **ret)
{
	const struct lk_profile_header *h = lk_profile_header(p);
	const struct lk_profile_totals *t = lk_profile_totals(p);
	const struct lk_free_event *ev;
	const struct lk_free_pair *pr;
	size_t nev = lk_profile_frees_recent(p, &ev), npr = lk_profile_free_pairs(p, &pr);
	struct lk_frees_section *s = calloc(1, sizeof(*s));
	struct builder b = { .s = s, .p = p, .sym = sym, .filter = filter, .index = index };
	int k = 0;

	if (!s)
		return -ENOMEM;
	lk_site_stack_init(&s->st);
	lk_u64map_init(&b.by_id, SIZE_MAX);
	b.nst = lk_profile_stacks(p, &b.st);
	s->path = strdup(path);
	s->exe = strndup(h->exe, h->h.exe_len);
	s->pid = h->h.pid;
	s->period = t->period;
	s->frees = t->frees;
	s->with_stack = lk_profile_free_stacks_seen(p);
	s->trailer = t->trailer;
	s->npairs_total = npr;
	s->npairs = top && top < npr ? top : npr;
	b.cap = s->stacks_cap = b.nst + 1;
	s->recent_cap = nev ? nev : 1;
	s->pairs_cap = s->npairs ? s->npairs : 1;
	if (!s->path || !s->exe)
		k = -ENOMEM;
	else if (!(s->stacks = lk_budget_calloc(s->stacks_cap, sizeof(*s->stacks))) ||
		 !(s->recent = lk_budget_calloc(s->recent_cap, sizeof(*s->recent))) ||
		 !(s->pairs = lk_budget_calloc(s->pairs_cap, sizeof(*s->pairs))))
		k = -errno; /* -ENOMEM, or -E2BIG beyond the budget */
	if (k >= 0)
		k = lk_report_add_modules(sym, index, p);
	for (size_t i = 0; i < nev && k >= 0; i++) {
		struct lk_frees_event *e = &s->recent[i];
		e->e = ev[i];
		e->alloc = stack_of(&b, ev[i].alloc_stack, &k);
		e->free = ev[i].free_stack ? stack_of(&b, ev[i].free_stack, &k) : NULL;
		s->nrecent++;
	}
	for (size_t i = 0; i < s->npairs && k >= 0; i++) {
		struct lk_frees_pair *q = &s->pairs[i];
		q->p = pr[i];
		q->alloc = stack_of(&b, pr[i].alloc_stack, &k);
		q->free = pr[i].free_stack ? stack_of(&b, pr[i].free_stack, &k) : NULL;
	}
	lk_u64map_done(&b.by_id);
	lk_site_stack_trim(&s->st);
	if (k < 0) {
		lk_frees_section_free(s);
		return k;
	}
	*ret = s;
	return 0;
}
