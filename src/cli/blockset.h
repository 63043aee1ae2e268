/* blockset.h: the live blocks of a profile by block number, with a value each (the summary's
 * live set).
 *
 * Blocks are numbered 1, 2, 3, ... in file order (include/leek/format.h), and most are freed
 * soon after they are allocated. So the newest LK_BLOCKSET_WINDOW numbers live in pages indexed
 * by number, a bit and a value a block, where an ALLOC and the FREE that soon follows touch the
 * same cache lines; a page that leaves the window hands its survivors to a u64map, which holds
 * the older live blocks. Numbers may come in any order (an old number goes to the map); the
 * window only makes increasing ones cheap. At most max_count blocks are live at once (-E2BIG past
 * it), and memory is the window's pages plus the map: bounded by the live blocks, whatever the
 * numbers. Not thread-safe.
 */
#ifndef LEEK_BLOCKSET_H
#define LEEK_BLOCKSET_H

#include <stdbool.h>
#include <stdint.h>

#include "u64map.h"

#define LK_BLOCKSET_PAGE 512    /* blocks a page */
#define LK_BLOCKSET_PAGES 128   /* pages in the window: the newest 65 536 numbers */

struct lk_blockset_page {
	uint64_t live[LK_BLOCKSET_PAGE / 64];
	uint64_t value[LK_BLOCKSET_PAGE];
};

struct lk_blockset {
	struct lk_blockset_page *ring[LK_BLOCKSET_PAGES]; /* page p at ring[p % PAGES], if in window */
	uint64_t first;   /* the window's first page: pages [first, first + PAGES) */
	size_t in_window; /* live blocks in the window's pages */
	size_t max_count;
	struct lk_u64map old; /* live blocks numbered below the window */
};

void lk_blockset_init(struct lk_blockset *s, size_t max_count);
void lk_blockset_done(struct lk_blockset *s);

/* Adds block (or replaces its value); 0, -ENOMEM, or -E2BIG past max_count live blocks. After
 * -ENOMEM the set may only be given to lk_blockset_done. */
int lk_blockset_add(struct lk_blockset *s, uint64_t block, uint64_t value);

/* true if block was live; its value goes to *value if value is not NULL. */
bool lk_blockset_remove(struct lk_blockset *s, uint64_t block, uint64_t *value);

size_t lk_blockset_count(const struct lk_blockset *s);

/* Calls fn for every live block, in no particular order. */
void lk_blockset_foreach(const struct lk_blockset *s,
			 void (*fn)(uint64_t block, uint64_t value, void *ctx), void *ctx);

#endif /* LEEK_BLOCKSET_H */
