/* arena-check.c: the arena's invariant checker, for tests (mimalloc's page_is_valid, for the whole
 * arena).
 *
 * Walks every run from the bottom of the range to its top, and every bin, partial list and recent
 * list, and checks each against the others: runs tile [0, top) and are coalesced, every free run
 * is in the bin of its size and state and nothing else is, a slab's bits count its slots in use
 * and it is on its class's partial list exactly when it has room, a class keeps at most one empty
 * slab, the recent slots are distinct freed slots of their class, and the totals (free, dirty,
 * live) match the arena's counts. tests/unit/test-arena.c runs it after every operation.
 *
 * Never: change anything; run on a hot path (it reads the whole page map). Caller holds lk_lock.
 */
#include "arena.h"
#include "preload.h"

/* A list of recent slots of class c (the arena's or a thread's): each a slot of its class, still
 * marked in use, its magic FREE, listed once; counted in *listed. */
static bool recent_holds(const struct arena *a, const struct lk_recent *r, unsigned c,
			 uint64_t *listed)
{
	const struct lk_block *b = r->head;

	if (r->n > RECENT)
		return false;
	for (uint32_t j = 0; j < r->n; j++, b = (const struct lk_block *)(uintptr_t)b->time_ns) {
		uintptr_t off = (uintptr_t)b - lk_arena_base;
		uint32_t i = (uint32_t)(off >> PAGE_SHIFT);
		if (off >= (uintptr_t)a->top << PAGE_SHIFT || a->map[i].kind != K_SLAB ||
		    a->map[i].cls != c || b->magic != LK_BLOCK_FREE ||
		    !slot_in_use(&a->map[i], off & (PAGE - 1)))
			return false; /* a freed slot still marked in use, for the list */
		const struct lk_block *x = r->head;
		for (uint32_t l = 0; l < j; l++, x = (const struct lk_block *)(uintptr_t)x->time_ns)
			if (x == b)
				return false;
		(*listed)++;
	}
	return true;
}

bool lk_arena_check(void)
{
	const struct arena *a = &arena;
	uint64_t free_pages = 0, dirty = 0, live = 0;
	uint8_t prev_kind = K_NONE, prev_dirty = 0, empty_seen[NCLASSES] = { 0 };

	if (a->top > a->committed || a->committed > a->npages || a->map[0].kind != K_BOOT)
		return false;
	for (uint32_t i = 0; i < a->top;) {
		struct page *e = &a->map[i];
		if (e->len == 0 || i + e->len > a->top || a->map[i + e->len - 1].head != i)
			return false;
		for (uint32_t j = i + 1; j < i + e->len; j++)
			if (a->map[j].kind != K_NONE)
				return false;
		switch (e->kind) {
		case K_FREE: {
			if (e->dirty > 1 || (prev_kind == K_FREE && prev_dirty == e->dirty))
				return false; /* not coalesced */
			free_pages += e->len;
			dirty += e->dirty ? e->len : 0;
			bool found = false;
			uint32_t k = a->bins[e->dirty][bin_of(e->len)];
			for (; k != NIL; k = a->map[k].next)
				found |= k == i;
			if (!found)
				return false;
			break;
		}
		case K_SLAB: {
			unsigned n = __builtin_popcountll(e->bits[0]) + __builtin_popcountll(e->bits[1]);
			if (e->len != 1 || e->cls >= NCLASSES || n != e->nused ||
			    n > lk_slot_n[e->cls])
				return false;
			bool listed = false;
			for (uint32_t k = a->partial[e->cls]; k != NIL; k = a->map[k].next)
				listed |= k == i;
			if (listed != (n < lk_slot_n[e->cls]))
				return false;
			if (n == 0 && empty_seen[e->cls]++)
				return false; /* one empty slab a class at most */
			live += n;
			break;
		}
		case K_LARGE:
			live++;
			break;
		case K_BOOT:
			if (i != 0)
				return false;
			break;
		case K_GUARD: /* guard.c's, whose blocks it counts itself */
			break;
		default:
			return false;
		}
		prev_kind = e->kind;
		prev_dirty = e->dirty;
		i += e->len;
	}
	for (unsigned d = 0; d < 2; d++)
		for (unsigned b = 0; b < NBINS; b++) {
			bool nonempty = a->bins[d][b] != NIL;
			if (nonempty != !!(a->binmask[d][b / 64] >> (b % 64) & 1))
				return false;
			for (uint32_t k = a->bins[d][b]; k != NIL; k = a->map[k].next)
				if (a->map[k].kind != K_FREE || bin_of(a->map[k].len) != b ||
				    a->map[k].dirty != d)
					return false;
		}
	uint64_t listed = 0;
	int64_t own = 0;
	for (unsigned c = 0; c < NCLASSES; c++)
		if (!recent_holds(a, &a->recent[c], c, &listed))
			return false;
	for (uint32_t i = 0; i < LK_TRECS; i++) {
		if (!lk_trecs[i].used)
			continue;
		own += lk_trecs[i].live;
		const struct lk_block *run = lk_trecs[i].run;
		if (run) { /* a run of its own, freed: its block's page starts a LARGE run */
			uintptr_t off = (uintptr_t)run - lk_arena_base;
			if (off >= (uintptr_t)a->top << PAGE_SHIFT ||
			    a->map[off >> PAGE_SHIFT].kind != K_LARGE || run->magic != LK_BLOCK_FREE)
				return false;
			listed++;
		}
		for (unsigned c = 0; c < NCLASSES; c++)
			if (!recent_holds(a, &lk_trecs[i].recent[c], c, &listed))
				return false;
	}
	return free_pages == a->free_pages && dirty == a->dirty_pages &&
	       live == a->live_blocks + (uint64_t)own + listed && a->dirty_pages <= a->retain_pages;
}
