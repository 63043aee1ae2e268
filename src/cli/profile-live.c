/* profile-live.c: the set of sampled blocks live at the current record, and their sum H(t), the
 * estimated live heap (docs/sampling.md section 4, "Live bytes").
 *
 * A hash map (u64map) from address to a slot in an array of blocks; freed slots are reused
 * through a free list, so memory follows the most blocks live at once and never the number of
 * ALLOC and FREE records. Never trusts the file for a count: LK_PROFILE_MAX_LIVE bounds it.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "profile-internal.h"

void live_set_init(struct live_set *ls, uint64_t period)
{
	*ls = (struct live_set){ .period = period };
	lk_u64map_init(&ls->map, LK_PROFILE_MAX_LIVE);
}

void live_set_done(struct live_set *ls)
{
	lk_u64map_done(&ls->map);
	free(ls->blocks);
	ls->blocks = NULL;
}

/* w = 1/p and v1 = (1-p)/p^2, with 1 - p = exp(-s/T) taken directly rather than by
 * cancellation. p = 1 in double precision (s above about 37 T) adds no variance at all, as
 * section 4 says, and exact mode weighs 1 (section 6). Same w as lk_sample_weight(). */
static void weigh(uint64_t size, uint64_t period, double *w, double *v1)
{
	double x, p;

	*w = 1.0;
	*v1 = 0.0;
	if (period <= 1 || size == 0)
		return;
	x = (double)size / (double)period;
	p = -expm1(-x);
	if (p >= 1.0)
		return;
	*w = 1.0 / p;
	*v1 = exp(-x) / (p * p);
}

static int grow(struct live_set *ls)
{
	uint32_t cap = ls->cap ? ls->cap * 2 : 1024;
	struct live_block *b;

	if (cap > LK_PROFILE_MAX_LIVE)
		cap = LK_PROFILE_MAX_LIVE;
	if (cap <= ls->cap)
		return -E2BIG;
	b = realloc(ls->blocks, (size_t)cap * sizeof(*b));
	if (!b)
		return -ENOMEM;
	ls->blocks = b;
	ls->cap = cap;
	return 0;
}

int live_set_add(struct live_set *ls, uint64_t addr, uint64_t size, uint32_t stack, int64_t t_ns,
		 struct live_block *ret)
{
	struct live_block *b;
	uint32_t slot;
	int r;

	if (ls->free_head) {
		slot = ls->free_head - 1;
	} else {
		if (ls->used == ls->cap) {
			r = grow(ls);
			if (r < 0)
				return r;
		}
		slot = ls->used;
	}
	r = lk_u64map_put(&ls->map, addr, slot);
	if (r < 0)
		return r;
	b = &ls->blocks[slot];
	if (ls->free_head)
		ls->free_head = b->next;
	else
		ls->used++;
	*b = (struct live_block){ .addr = addr, .size = size, .t_ns = t_ns, .stack = stack };
	weigh(size, ls->period, &b->w, &b->v1);
	ls->heap_q += live_q(b);
	ls->heap_var += (double)size * (double)size * b->v1;
	if (++ls->count > ls->max_count)
		ls->max_count = ls->count;
	*ret = *b;
	return 0;
}

bool live_set_remove(struct live_set *ls, uint64_t addr, struct live_block *ret)
{
	struct live_block *b;
	uint64_t slot;

	if (!lk_u64map_remove(&ls->map, addr, &slot))
		return false;
	b = &ls->blocks[slot];
	if (ret)
		*ret = *b;
	ls->heap_q -= live_q(b);
	ls->heap_var -= (double)b->size * (double)b->size * b->v1;
	if (--ls->count == 0) {
		ls->heap_q = 0; /* exact already; the variance may have drifted */
		ls->heap_var = 0;
	}
	b->next = ls->free_head;
	ls->free_head = (uint32_t)slot + 1;
	return true;
}
