/* section.c: a report section's profile header and its stacks, each symbolized once, for `leek
 * report frees` and `leek report errors` (section.h).
 *
 * Never: print; symbolize a stack twice; keep the profile.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "section.h"

int lk_section_head_init(struct lk_section_head *h, const char *path, const struct lk_profile *p)
{
	const struct lk_profile_header *ph = lk_profile_header(p);
	const struct lk_profile_totals *t = lk_profile_totals(p);

	*h = (struct lk_section_head){ .pid = ph->h.pid, .period = t->period,
				       .trailer = t->trailer };
	h->path = strdup(path);
	h->exe = strndup(ph->exe, ph->h.exe_len);
	return h->path && h->exe ? 0 : -ENOMEM;
}

void lk_section_head_done(struct lk_section_head *h)
{
	free(h->path);
	free(h->exe);
	h->path = h->exe = NULL;
}

int lk_section_stacks_begin(struct lk_section_builder *b, struct lk_section_stacks *ss,
			    const struct lk_profile *p, struct lk_symbolizer *sym, uint32_t index,
			    const struct lk_site_filter *filter, size_t cap)
{
	*b = (struct lk_section_builder){ .ss = ss, .sym = sym, .filter = filter, .index = index };
	lk_u64map_init(&b->by_id, SIZE_MAX);
	b->nst = lk_profile_stacks(p, &b->st);
	lk_site_stack_init(&ss->st);
	ss->n = 0;
	ss->cap = cap;
	ss->v = lk_budget_calloc(cap, sizeof(*ss->v));
	return ss->v ? 0 : -errno; /* -ENOMEM, or -E2BIG beyond the budget */
}

/* The profile's stack id, by binary search; NULL if the profile has no such stack. */
static const struct lk_stack_stats *find_stack(const struct lk_section_builder *b, uint64_t id)
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

const struct lk_section_stack *lk_section_stack_of(struct lk_section_builder *b, uint64_t id,
						   int *err)
{
	struct lk_section_stacks *ss = b->ss;
	uint64_t *at;
	int k;

	if (*err < 0)
		return NULL;
	if ((at = lk_u64map_get(&b->by_id, id)))
		return &ss->v[*at - 1];
	if (ss->n == ss->cap) { /* never: the callers make room for every stack they name */
		*err = -EOVERFLOW;
		return NULL;
	}
	const struct lk_stack_stats *st = find_stack(b, id);
	struct lk_section_stack *x = &ss->v[ss->n];
	*x = (struct lk_section_stack){ .id = id };
	k = lk_site_symbolize(&ss->st, b->sym, b->index, st ? st->frames : NULL,
			      st ? st->modules : NULL, st ? st->nframes : 0);
	if (k >= 0 && ss->st.n && !(x->frames = lk_budget_malloc(ss->st.n * sizeof(*x->frames))))
		k = -errno;
	if (k >= 0)
		k = lk_u64map_put(&b->by_id, id, ss->n + 1);
	if (k < 0) {
		lk_budget_free(x->frames, ss->st.n * sizeof(*x->frames));
		x->frames = NULL;
		*err = k;
		return NULL;
	}
	if (ss->st.n)
		memcpy(x->frames, ss->st.frames, ss->st.n * sizeof(*x->frames));
	x->n = ss->st.n;
	x->site = x->n ? lk_site_pick(b->filter, x->frames, x->n) : 0;
	ss->n++;
	return x;
}

void lk_section_stacks_end(struct lk_section_builder *b)
{
	lk_u64map_done(&b->by_id);
	lk_site_stack_trim(&b->ss->st);
}

void lk_section_stacks_done(struct lk_section_stacks *ss)
{
	for (size_t i = 0; i < ss->n; i++)
		lk_budget_free(ss->v[i].frames, ss->v[i].n * sizeof(*ss->v[i].frames));
	lk_budget_free(ss->v, ss->cap * sizeof(*ss->v));
	lk_site_stack_done(&ss->st);
	ss->v = NULL;
	ss->n = ss->cap = 0;
}
