/* idset.c: distinct byte strings, numbered in the order first added (see idset.h).
 *
 * Three arrays from the memory budget: the bytes of every entry, each entry's place in them, and
 * a table of entry numbers by hash (FNV-1a), at most half full. The table keeps each entry's
 * 32-bit hash beside its number, so a probe touches an entry and its bytes only where the hashes
 * agree: a lookup in a large set costs one cache miss in the table, and one in the entry it
 * finds.
 *
 * Never: hand out a pointer that an add may move without saying so (idset.h), or allocate
 * outside the budget.
 */
#include <errno.h>
#include <string.h>

#include "budget.h"
#include "idset.h"

void lk_idset_init(struct lk_idset *s)
{
	*s = (struct lk_idset){ 0 };
}

void lk_idset_done(struct lk_idset *s)
{
	lk_budget_free(s->bytes, s->cap);
	lk_budget_free(s->entry, s->entry_cap * sizeof(*s->entry));
	lk_budget_free(s->slot, s->nslots * sizeof(*s->slot));
	lk_idset_init(s);
}

static uint32_t hash_bytes(const void *key, size_t len)
{
	const unsigned char *p = key;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return (uint32_t)(h ^ h >> 32);
}

static int rehash(struct lk_idset *s)
{
	size_t n = s->nslots ? 2 * s->nslots : 256;
	uint64_t *slot = lk_budget_calloc(n, sizeof(*slot));

	if (!slot)
		return errno == E2BIG ? -E2BIG : -ENOMEM;
	for (size_t i = 0; i < s->nslots; i++) {
		if (!s->slot[i])
			continue;
		size_t h = (s->slot[i] >> 32) & (n - 1);
		while (slot[h])
			h = (h + 1) & (n - 1);
		slot[h] = s->slot[i];
	}
	lk_budget_free(s->slot, s->nslots * sizeof(*s->slot));
	s->slot = slot;
	s->nslots = n;
	return 0;
}

int lk_idset_add(struct lk_idset *s, const void *key, size_t len, uint32_t *ret, bool *added)
{
	uint32_t hash = hash_bytes(key, len);
	size_t h;
	int r;

	if (len >= LK_IDSET_MAX)
		return -E2BIG;
	if ((s->n + 1) * 2 > s->nslots && (r = rehash(s)) < 0)
		return r;
	for (h = hash & (s->nslots - 1); s->slot[h]; h = (h + 1) & (s->nslots - 1)) {
		if (s->slot[h] >> 32 != hash)
			continue;
		uint32_t i = (uint32_t)s->slot[h] - 1;
		const struct lk_idset_entry *e = &s->entry[i];
		if (e->len == len && memcmp(s->bytes + e->offset, key, len) == 0) {
			*ret = i;
			if (added)
				*added = false;
			return 0;
		}
	}
	if (s->n >= LK_IDSET_MAX - 1)
		return -E2BIG;
	r = lk_budget_grow((void **)&s->entry, &s->entry_cap, s->n + 1, sizeof(*s->entry));
	if (r >= 0)
		r = lk_budget_grow((void **)&s->bytes, &s->cap, s->used + len + 1, 1);
	if (r < 0)
		return r;
	if (len)
		memcpy(s->bytes + s->used, key, len);
	s->bytes[s->used + len] = 0;
	s->entry[s->n] = (struct lk_idset_entry){ .offset = s->used, .len = (uint32_t)len,
						  .hash = hash };
	s->used += len + 1;
	s->slot[h] = (uint64_t)hash << 32 | (s->n + 1);
	*ret = (uint32_t)s->n++;
	if (added)
		*added = true;
	return 0;
}

const char *lk_idset_get(const struct lk_idset *s, uint32_t i, size_t *len)
{
	if (len)
		*len = s->entry[i].len;
	return s->bytes + s->entry[i].offset;
}
