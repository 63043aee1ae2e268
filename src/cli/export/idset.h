/* idset.h: distinct byte strings, numbered 0, 1, 2... in the order first added; the exports'
 * tables (pprof's strings, functions, locations and mappings, folded's stacks) are sets of
 * these, their keys packed into bytes.
 *
 * Each entry is kept with a NUL after it, so an entry added from a C string reads as one. Memory
 * follows what a profile says (its distinct frames and stacks), so it comes from the memory
 * budget (budget.h): an add beyond it fails with -E2BIG. Entries move when the set grows: a
 * pointer from lk_idset_get() holds until the next add. Not thread-safe.
 */
#ifndef LEEK_IDSET_H
#define LEEK_IDSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LK_IDSET_MAX ((size_t)UINT32_MAX) /* entries, and bytes of one entry */

struct lk_idset_entry {
	uint64_t offset;     /* in bytes */
	uint32_t len, hash;
};

struct lk_idset {
	char *bytes;                  /* the entries, one after the other, each followed by a NUL */
	size_t used, cap;
	struct lk_idset_entry *entry; /* n of them, in the order added */
	size_t n, entry_cap;
	uint64_t *slot;               /* open addressing by hash: the entry's hash << 32 | its
				       * number + 1, 0 empty (a probe reads no entry whose hash
				       * differs); at most half full, nslots a power of two */
	size_t nslots;
};

void lk_idset_init(struct lk_idset *s);
void lk_idset_done(struct lk_idset *s); /* frees it all; s can be used again after init */

/* The number of the entry equal to the len bytes at key, added if new (*added says which, if
 * not NULL). 0 and *ret, or -E2BIG (the budget, or LK_IDSET_MAX), -ENOMEM. */
int lk_idset_add(struct lk_idset *s, const void *key, size_t len, uint32_t *ret, bool *added);

/* Entry i (below s->n): its bytes, NUL-terminated, and their number in *len if len is not
 * NULL. */
const char *lk_idset_get(const struct lk_idset *s, uint32_t i, size_t *len);

#endif /* LEEK_IDSET_H */
