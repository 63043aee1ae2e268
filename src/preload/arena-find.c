/* arena-find.c: the block an arena pointer falls in, live or freed, for the report of a free that
 * lk_arena_block refused (errors.c).
 *
 * A free of a pointer that no live block begins at is a double free when a freed block began
 * there (its header still says LK_BLOCK_FREE: a slot on a recent list or back in its slab, a run
 * kept or released but not yet reused), and an invalid free otherwise: a pointer inside a block,
 * live or freed, or one where no block ever was. The run holding a page is found from the page
 * map's invariant (arena-check.c): a run's pages but its head are K_NONE, so the first page at or
 * below it that is not is the run's head. A freed block's header may have been overwritten since
 * (its pages given back to the kernel read as zeros, or another block took them): then the free
 * is an invalid free with no block, which is what it is as far as anyone can tell.
 *
 * Never: change anything; read a page the arena has not committed (only [BOOT_PAGES, top) is
 * read). Caller holds lk_lock. Cost: one page-map entry a page of the run walked back over, on an
 * error's path only.
 */
#include <string.h>

#include "arena.h"
#include "preload.h"

/* The header at hdr, if it is one the arena wrote: live, quiet or freed. */
static bool header_plausible(const struct lk_block *b)
{
	return b->magic == LK_BLOCK_LIVE || b->magic == LK_BLOCK_QUIET || b->magic == LK_BLOCK_FREE;
}

/* The free stack a freed header keeps (sampler.c, free_with_stack): its id with bit 63 set. */
static uint32_t freed_stack(const struct lk_block *b)
{
	return b->magic == LK_BLOCK_FREE && b->id >> 63 ? (uint32_t)b->id : 0;
}

void lk_arena_find(const void *p, struct lk_arena_found *f)
{
	uintptr_t q = (uintptr_t)p, hdr = 0;
	const size_t hs = sizeof(struct lk_block);

	memset(f, 0, sizeof(*f));
	if (q - lk_arena_base >= lk_arena_span)
		return;
	uint32_t i = (uint32_t)((q - lk_arena_base) >> PAGE_SHIFT);
	if (i < BOOT_PAGES || i >= arena.top)
		return;
	uint32_t h = i;
	while (h > BOOT_PAGES && arena.map[h].kind == K_NONE)
		h--;
	const struct page *e = &arena.map[h];
	if (e->kind == K_GUARD) {
		lk_guard_find(p, f);
		return;
	}
	if (e->kind == K_SLAB) {
		uintptr_t off = q - page_addr(h);
		unsigned k = slot_of(e->cls, off);
		if (k >= lk_slot_n[e->cls])
			return; /* the slab's tail, past its last slot */
		hdr = page_addr(h) + (uintptr_t)k * lk_slot_size[e->cls];
		if (q < hdr + hs) { /* in a slot's header: no block starts there */
			f->kind = LK_ERR_INVALID_FREE;
			return;
		}
	} else if (e->kind == K_LARGE) {
		hdr = page_addr(h) + ((uintptr_t)e->nused << 4);
		if (q < hdr + hs) {
			f->kind = LK_ERR_INVALID_FREE;
			return;
		}
	} else if (e->kind == K_FREE && !(q & 15) && q - hs >= page_addr(h)) {
		hdr = q - hs; /* a run freed, coalesced maybe: only a header right before p counts */
	}
	const struct lk_block *b = (const struct lk_block *)hdr;
	f->kind = LK_ERR_INVALID_FREE;
	if (!hdr || !header_plausible(b))
		return;
	if (q != hdr + hs && q - (hdr + hs) >= b->usable && e->kind != K_SLAB)
		return; /* past the block's end, in its run's slack */
	f->block = hdr + hs;
	f->size = b->size;
	f->stack = b->stack;
	f->live = b->magic != LK_BLOCK_FREE;
	f->id = f->live ? b->id : 0;
	f->free_stack = freed_stack(b);
	if (q == hdr + hs && !f->live)
		f->kind = LK_ERR_DOUBLE_FREE;
}
