/* funcs.c: function ids of frames (funcs.h).
 *
 * Two tables: frame pointer to answer (a u64map: the same symbolizer frame comes back for every
 * stack through that address), and function key to id (open addressing over the ids, compared
 * by lk_site_func_compare, so that no two functions ever share an id whatever their hashes).
 *
 * Never: keep a frame it was not given, or decide what is an allocator (site.c does).
 */
#include <errno.h>
#include <stdlib.h>

#include "budget.h"
#include "funcs.h"

void lk_funcs_init(struct lk_funcs *t, const struct lk_site_filter *filter)
{
	*t = (struct lk_funcs){ .filter = filter };
	lk_u64map_init_budgeted(&t->by_frame, SIZE_MAX);
}

void lk_funcs_done(struct lk_funcs *t)
{
	lk_u64map_done(&t->by_frame);
	lk_budget_free(t->slot, t->nslots * sizeof(*t->slot));
	lk_budget_free(t->first, t->cap * sizeof(*t->first));
	*t = (struct lk_funcs){ .filter = t->filter };
}

static int grow_slots(struct lk_funcs *t)
{
	size_t n = t->nslots ? 2 * t->nslots : 256;
	uint32_t *slot = lk_budget_calloc(n, sizeof(*slot));

	if (!slot)
		return -errno;
	for (size_t id = 0; id < t->n; id++) {
		size_t h = (size_t)lk_site_func_hash(t->first[id]) & (n - 1);
		while (slot[h])
			h = (h + 1) & (n - 1);
		slot[h] = (uint32_t)id + 1;
	}
	lk_budget_free(t->slot, t->nslots * sizeof(*t->slot));
	t->slot = slot;
	t->nslots = n;
	return 0;
}

/* The id of frame's function, new if unseen; 0, -ENOMEM or -E2BIG. */
static int func_id(struct lk_funcs *t, const struct lk_sym_frame *frame, uint32_t *ret)
{
	size_t h;
	int k;

	if ((t->n + 1) * 2 > t->nslots && (k = grow_slots(t)) < 0)
		return k;
	for (h = (size_t)lk_site_func_hash(frame) & (t->nslots - 1); t->slot[h];
	     h = (h + 1) & (t->nslots - 1))
		if (lk_site_func_compare(t->first[t->slot[h] - 1], frame) == 0) {
			*ret = t->slot[h] - 1;
			return 0;
		}
	if (t->n >= LK_FUNCS_MAX)
		return -E2BIG;
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 256;
		const struct lk_sym_frame **first =
			lk_budget_realloc(t->first, t->cap * sizeof(*first), cap * sizeof(*first));
		if (!first)
			return -errno;
		t->first = first;
		t->cap = cap;
	}
	t->first[t->n] = frame;
	t->slot[h] = (uint32_t)t->n + 1;
	*ret = (uint32_t)t->n++;
	return 0;
}

int lk_funcs_get(struct lk_funcs *t, const struct lk_sym_frame *frame, uint32_t *ret)
{
	uint64_t *known = lk_u64map_get(&t->by_frame, (uint64_t)(uintptr_t)frame);
	uint32_t id = 0;
	int k;

	if (known) {
		*ret = (uint32_t)*known;
		return 0;
	}
	k = func_id(t, frame, &id);
	if (k < 0)
		return k;
	if (lk_site_is_allocator(t->filter, frame))
		id |= LK_FUNC_ALLOC;
	k = lk_u64map_put(&t->by_frame, (uint64_t)(uintptr_t)frame, id);
	if (k < 0)
		return k;
	*ret = id;
	return 0;
}

int lk_funcs_map(struct lk_funcs *t, const struct lk_funcs *from, uint32_t *ids)
{
	for (size_t f = 0; f < from->n; f++) {
		int k = lk_funcs_get(t, from->first[f], &ids[f]);
		if (k < 0)
			return k;
		ids[f] = LK_FUNC_ID(ids[f]);
	}
	return 0;
}
