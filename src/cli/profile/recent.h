/* recent.h: the newest block numbers of a profile, with a fixed-size element each: the fast part
 * of a live set.
 *
 * Blocks are numbered 1, 2, 3, ... in file order (include/leek/format.h), and most are freed
 * soon after they are allocated. The newest LK_RECENT_BLOCKS numbers live in pages indexed by
 * number, a bit and an element a block, so that ALLOCs write one page after another and the FREE
 * that soon follows an ALLOC finds its block where it was written. A page that leaves the window
 * hands its live blocks to the caller (evict), which keeps the older ones in a table of its own
 * (profile-live.c: its live set's). Numbers may come in any order: one
 * behind the window is the caller's to keep. Memory: the window's pages, LK_RECENT_BLOCKS
 * elements at most, whatever the numbers. Not thread-safe.
 */
#ifndef LEEK_RECENT_H
#define LEEK_RECENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The window's length, 262 144 numbers, from exact-mode profiles (the share of FREEs whose block
 * is older than the window): bench/workload-alloc.c 16% beyond 65 536 numbers, none beyond
 * 262 144; python3.11 15% beyond 262 144, nearly all of them beyond a million too (long-lived
 * objects, which no window holds). 8 MiB of struct live_block at most, 2 MiB of sizes. */
#define LK_RECENT_PAGE 512  /* blocks a page */
#define LK_RECENT_PAGES 512 /* pages in the window */
#define LK_RECENT_BLOCKS (LK_RECENT_PAGE * LK_RECENT_PAGES)

struct lk_recent_page {
	uint64_t live[LK_RECENT_PAGE / 64];
	unsigned char elem[]; /* LK_RECENT_PAGE elements */
};

struct lk_recent {
	struct lk_recent_page *ring[LK_RECENT_PAGES]; /* page p at ring[p % PAGES], if in window */
	uint64_t first; /* the window's first page: pages [first, first + PAGES) */
	size_t count;   /* live blocks in the window */
	size_t elem;    /* bytes an element */
};

/* What a page's live blocks leaving the window go to: hint(ctx, block) for each first, if hint
 * is not NULL (the caller's table can have the cache fetch their places), then put(ctx, block,
 * elem) for each; a negative return of put (-ENOMEM) stops the move. */
struct lk_recent_evict {
	void (*hint)(void *ctx, uint64_t block);
	int (*put)(void *ctx, uint64_t block, const void *elem);
	void *ctx;
};

void lk_recent_init(struct lk_recent *r, size_t elem);
void lk_recent_done(struct lk_recent *r);

/* Whether block is behind the window: never in it, the caller's to keep. */
static inline bool lk_recent_behind(const struct lk_recent *r, uint64_t block)
{
	return block / LK_RECENT_PAGE < r->first;
}

/* Asks the cache for where block's element is or will be (a page's memory is reused for the page
 * PAGES further on, so this holds for the next numbers too): a hint, which changes nothing. */
static inline __attribute__((always_inline)) void lk_recent_prefetch(const struct lk_recent *r,
								      uint64_t block)
{
	const struct lk_recent_page *pg = r->ring[block / LK_RECENT_PAGE % LK_RECENT_PAGES];

	if (pg)
		__builtin_prefetch(pg->elem + block % LK_RECENT_PAGE * r->elem);
}

/* The page of block if it lies in the window and was ever used, else NULL: where a caller that
 * finds it may test and flip the block's bit in live and reach its element itself, as
 * lk_recent_add() and lk_recent_remove() would, without a call (profile-internal.h). */
static inline struct lk_recent_page *lk_recent_page_of(const struct lk_recent *r, uint64_t block)
{
	uint64_t p = block / LK_RECENT_PAGE;

	return p - r->first < LK_RECENT_PAGES ? r->ring[p % LK_RECENT_PAGES] : NULL; /* and >= */
}

/* The element of block if it is live in the window, else NULL. */
void *lk_recent_get(struct lk_recent *r, uint64_t block);

/* Stores block's element (or replaces it), moving the window up to it first if it lies ahead,
 * evicting the live blocks of the pages that leave (evict). 0; -ERANGE if block is behind the window
 * (nothing stored); -ENOMEM; or evict's error, after which the set may only be given to
 * lk_recent_done. */
int lk_recent_add(struct lk_recent *r, uint64_t block, const void *elem,
		  const struct lk_recent_evict *evict);

/* 1 and its element copied to out (if not NULL) if block was live in the window; 0 if not;
 * -ERANGE if block is behind the window (the caller's table may have it). */
int lk_recent_remove(struct lk_recent *r, uint64_t block, void *out);

/* Calls fn for every live block of the window, in increasing order. */
void lk_recent_foreach(const struct lk_recent *r,
		       void (*fn)(void *ctx, uint64_t block, const void *elem), void *ctx);

#endif /* LEEK_RECENT_H */
