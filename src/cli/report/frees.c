/* frees.c: a profile's frees of sampled blocks, symbolized, for `leek report frees` (frees.h).
 *
 * Never: print; symbolize a stack twice; keep the profile.
 */
#include <errno.h>
#include <stdlib.h>

#include "budget.h"
#include "frees.h"
#include "report.h"

struct lk_frees_section *lk_frees_section_free(struct lk_frees_section *s)
{
	if (!s)
		return NULL;
	lk_section_stacks_done(&s->stacks);
	lk_budget_free(s->recent, s->recent_cap * sizeof(*s->recent));
	lk_budget_free(s->pairs, s->pairs_cap * sizeof(*s->pairs));
	lk_section_head_done(&s->head);
	free(s);
	return NULL;
}

/* The section's copy of a free stack; NULL for id 0, which means "no free stack" (an allocation
 * stack of id 0 is a stack, empty: "no stack"), or on failure (*err set). */
static const struct lk_section_stack *free_stack_of(struct lk_section_builder *b, uint64_t id,
						    int *err)
{
	return id ? lk_section_stack_of(b, id, err) : NULL;
}

int lk_frees_section_new(const char *path, const struct lk_profile *p, struct lk_symbolizer *sym,
			 uint32_t index, const struct lk_site_filter *filter, size_t top,
			 struct lk_frees_section **ret)
{
	const struct lk_free_event *ev;
	const struct lk_free_pair *pr;
	size_t nev = lk_profile_frees_recent(p, &ev), npr = lk_profile_free_pairs(p, &pr);
	const struct lk_stack_stats *st;
	struct lk_frees_section *s = calloc(1, sizeof(*s));
	struct lk_section_builder b;
	int k;

	if (!s)
		return -ENOMEM;
	/* Room for every stack of the profile and "none". */
	k = lk_section_stacks_begin(&b, &s->stacks, p, sym, index, filter,
				    lk_profile_stacks(p, &st) + 1);
	if (lk_section_head_init(&s->head, path, p) < 0 && k >= 0)
		k = -ENOMEM;
	s->frees = lk_profile_totals(p)->frees;
	s->with_stack = lk_profile_free_stacks_seen(p);
	s->npairs_total = npr;
	s->npairs = top && top < npr ? top : npr;
	s->recent_cap = nev ? nev : 1;
	s->pairs_cap = s->npairs ? s->npairs : 1;
	if (k >= 0 && (!(s->recent = lk_budget_calloc(s->recent_cap, sizeof(*s->recent))) ||
		       !(s->pairs = lk_budget_calloc(s->pairs_cap, sizeof(*s->pairs)))))
		k = -errno; /* -ENOMEM, or -E2BIG beyond the budget */
	if (k >= 0)
		k = lk_report_add_modules(sym, index, p);
	for (size_t i = 0; i < nev && k >= 0; i++) {
		struct lk_frees_event *e = &s->recent[i];
		e->e = ev[i];
		e->alloc = lk_section_stack_of(&b, ev[i].alloc_stack, &k);
		e->free = free_stack_of(&b, ev[i].free_stack, &k);
		s->nrecent++;
	}
	for (size_t i = 0; i < s->npairs && k >= 0; i++) {
		struct lk_frees_pair *q = &s->pairs[i];
		q->p = pr[i];
		q->alloc = lk_section_stack_of(&b, pr[i].alloc_stack, &k);
		q->free = free_stack_of(&b, pr[i].free_stack, &k);
	}
	lk_section_stacks_end(&b);
	if (k < 0) {
		lk_frees_section_free(s);
		return k;
	}
	*ret = s;
	return 0;
}
