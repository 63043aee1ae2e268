/* recent.c: see recent.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "recent.h"

#define PAGE LK_RECENT_PAGE
#define PAGES LK_RECENT_PAGES

void lk_recent_init(struct lk_recent *r, size_t elem)
{
	*r = (struct lk_recent){ .elem = elem };
}

void lk_recent_done(struct lk_recent *r)
{
	for (size_t i = 0; i < PAGES; i++)
		free(r->ring[i]);
	lk_recent_init(r, r->elem);
}

static inline unsigned char *elem_at(const struct lk_recent *r, const struct lk_recent_page *pg,
				     unsigned i)
{
	return (unsigned char *)pg->elem + (size_t)i * r->elem;
}

/* An element's copy: the live set's 32 bytes inline, where a copy of r->elem bytes is a call, made
 * for every block of an exact profile (bench/report-throughput.sh). */
static inline void copy_elem(void *to, const void *from, size_t n)
{
	if (n == 32)
		memcpy(to, from, 32);
	else
		memcpy(to, from, n);
}

/* Page p's live blocks go to evict, and its memory is left empty for page p + PAGES. */
static int page_out(struct lk_recent *r, uint64_t p, const struct lk_recent_evict *evict)
{
	struct lk_recent_page *pg = r->ring[p % PAGES];

	if (!pg)
		return 0;
	for (unsigned w = 0; evict->hint && w < PAGE / 64; w++)
		for (uint64_t m = pg->live[w]; m; m &= m - 1)
			evict->hint(evict->ctx, p * PAGE + w * 64 + (unsigned)__builtin_ctzll(m));
	for (unsigned w = 0; w < PAGE / 64; w++) {
		while (pg->live[w]) {
			unsigned i = w * 64 + (unsigned)__builtin_ctzll(pg->live[w]);
			int k = evict->put(evict->ctx, p * PAGE + i, elem_at(r, pg, i));
			if (k < 0)
				return k;
			pg->live[w] &= pg->live[w] - 1;
			r->count--;
		}
	}
	return 0;
}

/* The page that holds block if it lies in the window and its page was ever used, else NULL. */
static inline struct lk_recent_page *page_of(const struct lk_recent *r, uint64_t block)
{
	uint64_t p = block / PAGE;

	return p >= r->first && p - r->first < PAGES ? r->ring[p % PAGES] : NULL;
}

void *lk_recent_get(struct lk_recent *r, uint64_t block)
{
	struct lk_recent_page *pg = page_of(r, block);
	unsigned i = (unsigned)(block % PAGE);

	return pg && pg->live[i / 64] >> (i % 64) & 1 ? elem_at(r, pg, i) : NULL;
}

int lk_recent_add(struct lk_recent *r, uint64_t block, const void *elem,
		  const struct lk_recent_evict *evict)
{
	uint64_t p = block / PAGE;
	unsigned i = (unsigned)(block % PAGE);

	if (p < r->first)
		return -ERANGE;
	if (p - r->first >= PAGES) { /* ahead: the window moves to end at p */
		uint64_t first = p - PAGES + 1;
		for (uint64_t q = r->first; q < first && q < r->first + PAGES; q++) {
			int k = page_out(r, q, evict);
			if (k < 0)
				return k;
		}
		r->first = first;
	}
	struct lk_recent_page **slot = &r->ring[p % PAGES];
	if (!*slot && !(*slot = calloc(1, sizeof(**slot) + PAGE * r->elem)))
		return -ENOMEM;
	struct lk_recent_page *pg = *slot;
	uint64_t bit = 1ull << (i % 64);
	r->count += !(pg->live[i / 64] & bit);
	pg->live[i / 64] |= bit;
	copy_elem(elem_at(r, pg, i), elem, r->elem);
	return 0;
}

int lk_recent_remove(struct lk_recent *r, uint64_t block, void *out)
{
	unsigned i = (unsigned)(block % PAGE);

	if (lk_recent_behind(r, block))
		return -ERANGE;
	struct lk_recent_page *pg = page_of(r, block);
	uint64_t bit = 1ull << (i % 64);
	if (!pg || !(pg->live[i / 64] & bit))
		return 0;
	pg->live[i / 64] &= ~bit;
	r->count--;
	if (out)
		copy_elem(out, elem_at(r, pg, i), r->elem);
	return 1;
}

void lk_recent_foreach(const struct lk_recent *r,
		       void (*fn)(void *ctx, uint64_t block, const void *elem), void *ctx)
{
	for (uint64_t p = r->first; p < r->first + PAGES; p++) {
		const struct lk_recent_page *pg = r->ring[p % PAGES];
		for (unsigned w = 0; pg && w < PAGE / 64; w++)
			for (uint64_t m = pg->live[w]; m; m &= m - 1) {
				unsigned i = w * 64 + (unsigned)__builtin_ctzll(m);
				fn(ctx, p * PAGE + i, elem_at(r, pg, i));
			}
	}
}
