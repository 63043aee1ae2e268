/* errors.c: a profile's memory errors, symbolized, for `leek report errors` (errors.h).
 *
 * Never: print; symbolize a stack twice; keep the profile.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "errors.h"
#include "report.h"
#include "u64map.h"

struct lk_errors_section *lk_errors_section_free(struct lk_errors_section *s)
{
	if (!s)
		return NULL;
	for (size_t i = 0; i < s->nstacks; i++)
		lk_budget_free(s->stacks[i].frames, s->stacks[i].n * sizeof(*s->stacks[i].frames));
	lk_budget_free(s->stacks, s->stacks_cap * sizeof(*s->stacks));
	lk_budget_free(s->events, s->events_cap * sizeof(*s->events));
	lk_site_stack_done(&s->st);
	free(s->path);
	free(s->exe);
	free(s);
	return NULL;
}

struct builder {
	struct lk_errors_section *s;
	struct lk_symbolizer *sym;
	const struct lk_site_filter *filter;
	uint32_t index;
	const struct lk_stack_stats *st; /* the profile's, in id order */
	size_t nst;
	struct lk_u64map by_id;          /* stack id -> its index in s->stacks + 1 */
};

/* The profile's stack id, by binary search; NULL if the profile has no such stack. */
static const struct lk_stack_stats *find_stack(const struct builder *b, uint64_t id)
{
	for (size_t lo = 0, hi = b->nst; lo < hi;) {
		size_t mid = lo + (hi - lo) / 2;
		if (b->st[mid].id == id)
			return &b->st[mid];
		if (b->st[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* The section's copy of stack id, symbolized the first time; NULL for id 0 (no stack), or on
 * failure (*err set). */
static const struct lk_frees_stack *stack_of(struct builder *b, uint64_t id, int *err)
{
	struct lk_errors_section *s = b->s;
	uint64_t *at;
	int k;

	if (!id || *err < 0)
		return NULL;
	if ((at = lk_u64map_get(&b->by_id, id)))
		return &s->stacks[*at - 1];
	if (s->nstacks == s->stacks_cap) { /* never: three stacks an error at most */
		*err = -EOVERFLOW;
		return NULL;
	}
	const struct lk_stack_stats *st = find_stack(b, id);
	struct lk_frees_stack *x = &s->stacks[s->nstacks];
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
	if (s->st.n)
		memcpy(x->frames, s->st.frames, s->st.n * sizeof(*x->frames));
	x->n = s->st.n;
	x->site = x->n ? lk_site_pick(b->filter, x->frames, x->n) : 0;
	s->nstacks++;
	return x;
}

int lk_errors_section_new(const char *path, const struct lk_profile *p, struct lk_symbolizer *sym,
			  uint32_t index, const struct lk_site_filter *filter,
			  struct lk_errors_section **ret)
{
	const struct lk_profile_header *h = lk_profile_header(p);
	const struct lk_profile_totals *t = lk_profile_totals(p);
	const struct lk_error_event *ev;
	size_t nev = lk_profile_errors(p, &ev);
	struct lk_errors_section *s = calloc(1, sizeof(*s));
	struct builder b = { .s = s, .sym = sym, .filter = filter, .index = index };
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
	s->errors = t->tags[LK_REC_ERROR];
	s->trailer = t->trailer;
	s->stacks_cap = 3 * nev + 1;
	s->events_cap = nev ? nev : 1;
	if (!s->path || !s->exe)
		k = -ENOMEM;
	else if (!(s->stacks = lk_budget_calloc(s->stacks_cap, sizeof(*s->stacks))) ||
		 !(s->events = lk_budget_calloc(s->events_cap, sizeof(*s->events))))
		k = -errno; /* -ENOMEM, or -E2BIG beyond the budget */
	if (k >= 0 && nev)
		k = lk_report_add_modules(sym, index, p);
	for (size_t i = 0; i < nev && k >= 0; i++) {
		struct lk_errors_event *e = &s->events[i];
		e->e = ev[i];
		e->alloc = stack_of(&b, ev[i].alloc_stack, &k);
		e->free = stack_of(&b, ev[i].free_stack, &k);
		e->at = stack_of(&b, ev[i].stack, &k);
		s->nerrors++;
	}
	lk_u64map_done(&b.by_id);
	lk_site_stack_trim(&s->st);
	if (k < 0) {
		lk_errors_section_free(s);
		return k;
	}
	*ret = s;
	return 0;
}
