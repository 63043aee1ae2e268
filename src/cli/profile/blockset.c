/* blockset.c: see blockset.h. */
#include <errno.h>

#include "blockset.h"

void lk_blockset_init(struct lk_blockset *s, size_t max_count)
{
	lk_recent_init(&s->recent, sizeof(uint64_t));
	/* The cap is on the whole set (lk_blockset_add); the map's table is the budget's. */
	lk_u64map_init_budgeted(&s->old, SIZE_MAX);
	s->max_count = max_count;
}

void lk_blockset_done(struct lk_blockset *s)
{
	lk_recent_done(&s->recent);
	lk_u64map_done(&s->old);
}

size_t lk_blockset_count(const struct lk_blockset *s)
{
	return s->recent.count + s->old.count;
}

static int to_old(void *ctx, uint64_t block, const void *value)
{
	return lk_u64map_put(&((struct lk_blockset *)ctx)->old, block, *(const uint64_t *)value);
}

struct visit {
	void (*fn)(void *ctx, uint64_t block, uint64_t value);
	void *ctx;
};

static void visit_recent(void *ctx, uint64_t block, const void *value)
{
	struct visit *v = ctx;

	v->fn(v->ctx, block, *(const uint64_t *)value);
}

int lk_blockset_add(struct lk_blockset *s, uint64_t block, uint64_t value)
{
	bool behind = lk_recent_behind(&s->recent, block);
	uint64_t *v = behind ? lk_u64map_get(&s->old, block) : lk_recent_get(&s->recent, block);

	if (v) {
		*v = value;
		return 0;
	}
	if (lk_blockset_count(s) >= s->max_count)
		return -E2BIG;
	if (behind)
		return lk_u64map_put(&s->old, block, value);
	return lk_recent_add(&s->recent, block, &value,
			     &(struct lk_recent_evict){ .put = to_old, .ctx = s });
}

bool lk_blockset_remove(struct lk_blockset *s, uint64_t block, uint64_t *value)
{
	int k = lk_recent_remove(&s->recent, block, value);

	return k == -ERANGE ? lk_u64map_remove(&s->old, block, value) : k > 0;
}

void lk_blockset_foreach(const struct lk_blockset *s,
			 void (*fn)(void *ctx, uint64_t block, uint64_t value), void *ctx)
{
	lk_recent_foreach(&s->recent, visit_recent, &(struct visit){ fn, ctx });
	for (size_t i = 0; i < s->old.size; i++)
		if (s->old.e[i].used)
			fn(ctx, s->old.e[i].key, s->old.e[i].value);
}
