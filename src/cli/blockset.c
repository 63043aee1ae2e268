/* blockset.c: see blockset.h. */
#include <errno.h>
#include <stdlib.h>

#include "blockset.h"

#define PAGE LK_BLOCKSET_PAGE
#define PAGES LK_BLOCKSET_PAGES

void lk_blockset_init(struct lk_blockset *s, size_t max_count)
{
	*s = (struct lk_blockset){ .max_count = max_count };
	lk_u64map_init(&s->old, SIZE_MAX); /* the cap is on the whole set: lk_blockset_add */
}

void lk_blockset_done(struct lk_blockset *s)
{
	for (size_t i = 0; i < PAGES; i++)
		free(s->ring[i]);
	lk_u64map_done(&s->old);
	lk_blockset_init(s, s->max_count);
}

size_t lk_blockset_count(const struct lk_blockset *s)
{
	return s->in_window + s->old.count;
}

/* Page p's live blocks go to the map, and its memory is left empty for page p + PAGES. Stops at
 * the first block the map refuses, with that block and the rest still in the page. */
static int page_out(struct lk_blockset *s, uint64_t p)
{
	struct lk_blockset_page *pg = s->ring[p % PAGES];

	for (unsigned w = 0; pg && w < PAGE / 64; w++) {
		while (pg->live[w]) {
			unsigned i = w * 64 + (unsigned)__builtin_ctzll(pg->live[w]);
			int r = lk_u64map_put(&s->old, p * PAGE + i, pg->value[i]);
			if (r < 0)
				return r;
			pg->live[w] &= pg->live[w] - 1;
			s->in_window--;
		}
	}
	return 0;
}

/* Moves the window so that it starts at page `first` (above its start). Only the map's -ENOMEM
 * stops it, halfway: then the set is good for nothing but lk_blockset_done. */
static int slide(struct lk_blockset *s, uint64_t first)
{
	for (uint64_t p = s->first; p < first && p < s->first + PAGES; p++) {
		int r = page_out(s, p);
		if (r < 0)
			return r;
	}
	s->first = first;
	return 0;
}

int lk_blockset_add(struct lk_blockset *s, uint64_t block, uint64_t value)
{
	uint64_t p = block / PAGE;
	unsigned i = (unsigned)(block % PAGE);

	if (p < s->first) {
		uint64_t *v = lk_u64map_get(&s->old, block);
		if (v) {
			*v = value;
			return 0;
		}
		if (lk_blockset_count(s) >= s->max_count)
			return -E2BIG;
		return lk_u64map_put(&s->old, block, value);
	}
	if (p - s->first >= PAGES) {
		int r = slide(s, p - PAGES + 1);
		if (r < 0)
			return r;
	}
	struct lk_blockset_page **slot = &s->ring[p % PAGES];
	if (!*slot && !(*slot = calloc(1, sizeof(**slot))))
		return -ENOMEM;
	struct lk_blockset_page *pg = *slot;
	uint64_t bit = 1ull << (i % 64);
	if (!(pg->live[i / 64] & bit)) {
		if (lk_blockset_count(s) >= s->max_count)
			return -E2BIG;
		pg->live[i / 64] |= bit;
		s->in_window++;
	}
	pg->value[i] = value;
	return 0;
}

bool lk_blockset_remove(struct lk_blockset *s, uint64_t block, uint64_t *value)
{
	uint64_t p = block / PAGE;
	unsigned i = (unsigned)(block % PAGE);

	if (p < s->first)
		return lk_u64map_remove(&s->old, block, value);
	struct lk_blockset_page *pg = p - s->first < PAGES ? s->ring[p % PAGES] : NULL;
	uint64_t bit = 1ull << (i % 64);
	if (!pg || !(pg->live[i / 64] & bit))
		return false;
	pg->live[i / 64] &= ~bit;
	s->in_window--;
	if (value)
		*value = pg->value[i];
	return true;
}

void lk_blockset_foreach(const struct lk_blockset *s,
			 void (*fn)(uint64_t block, uint64_t value, void *ctx), void *ctx)
{
	for (uint64_t p = s->first; p < s->first + PAGES; p++) {
		const struct lk_blockset_page *pg = s->ring[p % PAGES];
		for (unsigned w = 0; pg && w < PAGE / 64; w++)
			for (uint64_t m = pg->live[w]; m; m &= m - 1) {
				unsigned i = w * 64 + (unsigned)__builtin_ctzll(m);
				fn(p * PAGE + i, pg->value[i], ctx);
			}
	}
	for (size_t i = 0; i < s->old.size; i++)
		if (s->old.e[i].used)
			fn(s->old.e[i].key, s->old.e[i].value, ctx);
}
