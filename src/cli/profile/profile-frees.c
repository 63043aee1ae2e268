/* profile-frees.c: the last frees of sampled blocks, kept in a ring while a profile is read
 * (lk_profile_opts.recent_frees), for `leek watch`'s SIGUSR2 list, which helps with a
 * use-after-free: which block of which allocation stack was freed, when, and how long it lived.
 *
 * The ring is a fixed size, taken from the memory budget once: memory never follows the number of
 * FREE records. A FREE record names a block and no stack, so free_stack stays 0 (unknown):
 * profile_note_free() is the one place to fill it once FREE records carry the freeing stack
 * (issue 31, "Free stacks").
 *
 * Never: allocate per record, or print.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "profile-internal.h"

int profile_frees_init(struct lk_profile *p)
{
	size_t n = p->opts.recent_frees;

	if (!n)
		return 0;
	if (n > LK_PROFILE_MAX_RECENT_FREES)
		n = LK_PROFILE_MAX_RECENT_FREES;
	p->frees = lk_budget_calloc(n, sizeof(*p->frees));
	if (!p->frees)
		return -ENOMEM;
	p->frees_cap = n;
	return 0;
}

void profile_note_free(struct lk_profile *p, const struct live_block *b,
		       const struct lk_record *rec)
{
	struct lk_free_event *e = &p->frees[p->frees_head];

	*e = (struct lk_free_event){
		.block = b->seq,
		.size = b->size,
		.stack = b->stack,
		.free_stack = 0, /* FREE records carry no stack yet */
		.alloc_ns = b->t_ns,
		.free_ns = rec->time_ns,
		.weight = p->totals.period <= 1 ? 1.0 : lk_sample_weight(b->size, p->totals.period),
	};
	if (++p->frees_head == p->frees_cap)
		p->frees_head = 0;
	if (p->nfrees < p->frees_cap)
		p->nfrees++;
}

/* Rotates the ring so that the oldest is first: a full ring's oldest is at frees_head. */
void profile_frees_order(struct lk_profile *p)
{
	size_t h = p->frees_head, n = p->frees_cap;
	struct lk_free_event *tmp;

	if (!p->frees || p->nfrees < n || h == 0) {
		p->frees_head = 0;
		return;
	}
	tmp = malloc(h * sizeof(*tmp));
	if (!tmp) { /* in place, one step at a time: slow, but no memory */
		for (size_t k = 0; k < h; k++) {
			struct lk_free_event first = p->frees[0];
			memmove(p->frees, p->frees + 1, (n - 1) * sizeof(*tmp));
			p->frees[n - 1] = first;
		}
	} else {
		memcpy(tmp, p->frees, h * sizeof(*tmp));
		memmove(p->frees, p->frees + h, (n - h) * sizeof(*tmp));
		memcpy(p->frees + n - h, tmp, h * sizeof(*tmp));
		free(tmp);
	}
	p->frees_head = 0;
}

void profile_frees_done(struct lk_profile *p)
{
	lk_budget_free(p->frees, p->frees_cap * sizeof(*p->frees));
	p->frees = NULL;
}

size_t lk_profile_frees(const struct lk_profile *p, const struct lk_free_event **ret)
{
	*ret = p->frees;
	return p->nfrees;
}
