/* blockset.h: a live set of blocks by number, with a value each (the summary's): the newest
 * numbers in a window of pages (recent.h), the older live blocks in a u64map. At most max_count
 * blocks are live at once (-E2BIG past it); memory is the window plus the map, bounded by the
 * live blocks whatever the numbers, and the map's table is taken from the memory budget
 * (budget.h: -E2BIG too when it cannot hold the map). Not thread-safe.
 */
#ifndef LEEK_BLOCKSET_H
#define LEEK_BLOCKSET_H

#include "recent.h"
#include "u64map.h"

struct lk_blockset {
	struct lk_recent recent;
	struct lk_u64map old; /* live blocks numbered below the window */
	size_t max_count;
};

void lk_blockset_init(struct lk_blockset *s, size_t max_count);
void lk_blockset_done(struct lk_blockset *s);

/* Adds block (or replaces its value); 0, -ENOMEM, or -E2BIG past max_count live blocks or beyond
 * the budget. After a failure the set may only be given to lk_blockset_done. */
int lk_blockset_add(struct lk_blockset *s, uint64_t block, uint64_t value);

/* true if block was live; its value goes to *value if value is not NULL. */
bool lk_blockset_remove(struct lk_blockset *s, uint64_t block, uint64_t *value);

size_t lk_blockset_count(const struct lk_blockset *s);

/* Calls fn for every live block, in no particular order. */
void lk_blockset_foreach(const struct lk_blockset *s,
			 void (*fn)(void *ctx, uint64_t block, uint64_t value), void *ctx);

#endif /* LEEK_BLOCKSET_H */
