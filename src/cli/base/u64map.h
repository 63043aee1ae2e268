/* u64map.h: a hash map from uint64_t keys to uint64_t values, for the CLI.
 *
 * Open addressing with linear probing and backward-shift deletion (no tombstones), so lookups
 * stay short however many keys come and go. It grows to hold any number of keys up to the cap
 * given at init, and refuses more with -E2BIG: the reader's memory must stay bounded whatever
 * the input says. A map whose size a profile decides takes its table from the memory budget
 * (budget.h), and a put that the budget cannot hold fails with -E2BIG too. Not thread-safe.
 */
#ifndef LEEK_U64MAP_H
#define LEEK_U64MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct lk_u64map_entry {
	uint64_t key, value;
	bool used;
};

struct lk_u64map {
	struct lk_u64map_entry *e;
	size_t size, count, max_count; /* size is 0 or a power of two */
	bool budgeted;                 /* the table is taken from the budget */
};

void lk_u64map_init(struct lk_u64map *m, size_t max_count);
/* The same, for a map whose size a profile decides: its table counts against the budget. */
void lk_u64map_init_budgeted(struct lk_u64map *m, size_t max_count);
void lk_u64map_done(struct lk_u64map *m);

/* Returns the value's slot, or NULL if the key is absent. */
uint64_t *lk_u64map_get(const struct lk_u64map *m, uint64_t key);

/* Inserts or replaces; 0 on success, -ENOMEM, or -E2BIG past max_count (or the budget). */
int lk_u64map_put(struct lk_u64map *m, uint64_t key, uint64_t value);

/* true if the key was there; its value goes to *value if value is not NULL. */
bool lk_u64map_remove(struct lk_u64map *m, uint64_t key, uint64_t *value);

/* Visits every entry: for (size_t i = 0; i < m->size; i++) if (m->e[i].used) ... */

#endif /* LEEK_U64MAP_H */
