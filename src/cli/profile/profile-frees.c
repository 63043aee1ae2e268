/* profile-frees.c: the frees of sampled blocks, for `leek report frees` (profile.h, opts.frees).
 *
 * Each FREE of a live sampled block adds to the sums of its (allocation stack, free stack) pair,
 * and goes into a ring of the last opts.frees_last frees. The free stack is the FREE_STACK
 * record's (LEEK_FREE_STACKS, format version 7), 0 without one. Memory: the ring, fixed when the
 * first free comes, and one pair for each distinct pair of stacks, both from the budget; never
 * one entry a record.
 *
 * Never: keep anything per record; print.
 */
#include <errno.h>
#include <stdlib.h>

#include "budget.h"
#include "profile-internal.h"
#include "u64map.h"

struct profile_frees {
	struct lk_free_event *ring;  /* frees_last events; ring[next % cap] is the next one's, and
				      * after profile_frees_finish the oldest is ring[0] */
	size_t cap;
	uint64_t next;               /* frees kept so far */
	struct lk_free_pair *pairs;
	size_t npairs, pairs_cap;
	struct lk_u64map index;      /* alloc_stack << 32 | free_stack -> the pair's index */
	uint64_t with_stack;         /* frees with a free stack */
};

/* Stack ids fit 32 bits: the reader's stacks stop at LK_PROFILE_MAX_STACKS. */
_Static_assert(LK_PROFILE_MAX_STACKS < (1ull << 32), "pair key");

static int frees_new(struct lk_profile *p)
{
	struct profile_frees *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	lk_u64map_init_budgeted(&f->index, SIZE_MAX);
	f->cap = p->opts.frees_last;
	if (f->cap && !(f->ring = lk_budget_calloc(f->cap, sizeof(*f->ring)))) {
		int r = -errno;
		lk_u64map_done(&f->index);
		free(f);
		return r;
	}
	p->frees = f;
	return 0;
}

static int pair_of(struct profile_frees *f, uint64_t alloc_stack, uint64_t free_stack,
		   struct lk_free_pair **ret)
{
	uint64_t key = alloc_stack << 32 | free_stack, *at = lk_u64map_get(&f->index, key);
	int r;

	if (at) {
		*ret = &f->pairs[*at];
		return 0;
	}
	if (f->npairs == f->pairs_cap) {
		size_t cap = f->pairs_cap ? 2 * f->pairs_cap : 64;
		struct lk_free_pair *q = lk_budget_realloc(f->pairs, f->pairs_cap * sizeof(*q),
							   cap * sizeof(*q));
		if (!q)
			return -errno;
		f->pairs = q;
		f->pairs_cap = cap;
	}
	r = lk_u64map_put(&f->index, key, f->npairs);
	if (r < 0)
		return r;
	*ret = &f->pairs[f->npairs++];
	**ret = (struct lk_free_pair){ .alloc_stack = alloc_stack, .free_stack = free_stack,
				      .life_min_ns = UINT64_MAX };
	return 0;
}

int profile_frees_add(struct lk_profile *p, const struct live_block *b, const struct lk_record *rec,
		      double w, double v1)
{
	struct lk_free_pair *pair = NULL;
	uint64_t life = (__int128)rec->time_ns > (__int128)b->t_ns
				? (uint64_t)((__int128)rec->time_ns - b->t_ns)
				: 0;
	int r;

	if (!p->frees && (r = frees_new(p)) < 0)
		return r;
	struct profile_frees *f = p->frees;
	r = pair_of(f, b->stack, rec->free.stack, &pair);
	if (r < 0)
		return r;
	lk_estimate_add_sample(&pair->bytes, (double)b->size, w, v1);
	pair->objects.value += w;
	pair->objects.var += v1;
	pair->objects.observed += 1;
	pair->objects.samples++;
	pair->life_min_ns = life < pair->life_min_ns ? life : pair->life_min_ns;
	pair->life_max_ns = life > pair->life_max_ns ? life : pair->life_max_ns;
	pair->life_sum_w += w * (double)life;
	f->with_stack += rec->free.stack != 0;
	if (f->cap)
		f->ring[f->next % f->cap] = (struct lk_free_event){
			.block = rec->free.block, .size = b->size, .tid = rec->free.tid,
			.alloc_stack = b->stack, .free_stack = rec->free.stack,
			.alloc_ns = b->t_ns, .free_ns = rec->time_ns, .weight = w };
	f->next++;
	return 0;
}

static int by_bytes(const void *a, const void *b)
{
	const struct lk_free_pair *x = a, *y = b;

	if (x->bytes.value != y->bytes.value)
		return x->bytes.value > y->bytes.value ? -1 : 1;
	if (x->alloc_stack != y->alloc_stack)
		return x->alloc_stack < y->alloc_stack ? -1 : 1;
	return (x->free_stack > y->free_stack) - (x->free_stack < y->free_stack);
}

static void reverse(struct lk_free_event *e, size_t from, size_t to)
{
	while (from + 1 < to) {
		struct lk_free_event x = e[from];
		e[from++] = e[--to];
		e[to] = x;
	}
}

void profile_frees_finish(struct lk_profile *p)
{
	struct profile_frees *f = p->frees;

	if (!f)
		return;
	for (size_t i = 0; i < f->npairs; i++) {
		struct lk_free_pair *q = &f->pairs[i];
		lk_estimate_finish(&q->bytes);
		lk_estimate_finish(&q->objects);
		q->life_mean_ns = q->objects.value > 0 ? q->life_sum_w / q->objects.value : 0;
	}
	qsort(f->pairs, f->npairs, sizeof(*f->pairs), by_bytes);
	lk_u64map_done(&f->index); /* no pair is looked up from here on */
	/* The ring in order, in place: rotated left by the oldest's index, by three reversals. */
	if (f->cap && f->next > f->cap) {
		size_t k = f->next % f->cap;
		reverse(f->ring, 0, k);
		reverse(f->ring, k, f->cap);
		reverse(f->ring, 0, f->cap);
		f->next = f->cap;
	}
}

void profile_frees_free(struct lk_profile *p)
{
	struct profile_frees *f = p->frees;

	if (!f)
		return;
	lk_budget_free(f->ring, f->cap * sizeof(*f->ring));
	lk_budget_free(f->pairs, f->pairs_cap * sizeof(*f->pairs));
	lk_u64map_done(&f->index);
	free(f);
	p->frees = NULL;
}

size_t lk_profile_frees_recent(const struct lk_profile *p, const struct lk_free_event **ret)
{
	const struct profile_frees *f = p->frees;

	*ret = f ? f->ring : NULL;
	if (!f || !f->cap)
		return 0;
	return f->next < f->cap ? (size_t)f->next : f->cap;
}

size_t lk_profile_free_pairs(const struct lk_profile *p, const struct lk_free_pair **ret)
{
	*ret = p->frees ? p->frees->pairs : NULL;
	return p->frees ? p->frees->npairs : 0;
}

uint64_t lk_profile_free_stacks_seen(const struct lk_profile *p)
{
	return p->frees ? p->frees->with_stack : 0;
}
