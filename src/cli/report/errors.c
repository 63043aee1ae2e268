/* errors.c: a profile's memory errors, symbolized, for `leek report errors` (errors.h).
 *
 * Never: print; symbolize a stack twice; keep the profile.
 */
#include <errno.h>
#include <stdlib.h>

#include "budget.h"
#include "errors.h"
#include "report.h"

struct lk_errors_section *lk_errors_section_free(struct lk_errors_section *s)
{
	if (!s)
		return NULL;
	lk_section_stacks_done(&s->stacks);
	lk_budget_free(s->events, s->events_cap * sizeof(*s->events));
	lk_section_head_done(&s->head);
	free(s);
	return NULL;
}

/* The section's copy of stack id; NULL for id 0 (no stack recorded), or on failure (*err set). */
static const struct lk_section_stack *stack_of(struct lk_section_builder *b, uint64_t id, int *err)
{
	return id ? lk_section_stack_of(b, id, err) : NULL;
}

int lk_errors_section_new(const char *path, const struct lk_profile *p, struct lk_symbolizer *sym,
			  uint32_t index, const struct lk_site_filter *filter,
			  struct lk_errors_section **ret)
{
	const struct lk_error_event *ev;
	size_t nev = lk_profile_errors(p, &ev);
	struct lk_errors_section *s = calloc(1, sizeof(*s));
	struct lk_section_builder b;
	int k;

	if (!s)
		return -ENOMEM;
	/* Three stacks an error at most. */
	k = lk_section_stacks_begin(&b, &s->stacks, p, sym, index, filter, 3 * nev + 1);
	if (lk_section_head_init(&s->head, path, p) < 0 && k >= 0)
		k = -ENOMEM;
	s->errors = lk_profile_totals(p)->tags[LK_REC_ERROR];
	s->events_cap = nev ? nev : 1;
	if (k >= 0 && !(s->events = lk_budget_calloc(s->events_cap, sizeof(*s->events))))
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
	lk_section_stacks_end(&b);
	if (k < 0) {
		lk_errors_section_free(s);
		return k;
	}
	*ret = s;
	return 0;
}
