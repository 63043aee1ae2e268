/* arena-slabs.c: the arena's size classes, their slabs, and each class's recent slots.
 *
 * A block of up to SLAB_MAX bytes with its header, at the default alignment, takes a slot of the
 * smallest class that holds it, in a slab: a run of one page cut into equal slots, with a bit a
 * slot (struct page's bits). The classes' sizes step by about a sixth, so that a block wastes
 * little of its slot. A class's slabs with room are on its partial list, where arena.c's
 * take_slow finds one (or carves a new one, inline in its path to a block), and a slab that
 * empties goes back to the runs (arena-runs.c), but a class's last one.
 *
 * A slab slot freed is kept, up to LK_ARENA_RECENT a class, in a list through its header (its bit
 * still set, its magic FREE) and handed out again first, last freed first (lk_arena_take, inline
 * in the sample's path); an allocation that finds no page empties those lists before it gives up.
 *
 * Never: hand out a slot whose bit is set; keep more than one empty slab a class; call malloc or
 * stdio. Caller holds lk_lock.
 */
#include "arena.h"
#include "preload.h"

#define SIZE_OF(s) s,
#define COUNT_OF(s) PAGE / (s),
#define INVERSE_OF(s) (uint32_t)(((1ull << 32) + (s) - 1) / (s)),
const uint16_t lk_slot_size[NCLASSES] = { SLOT_SIZES(SIZE_OF) };
const uint8_t lk_slot_n[NCLASSES] = { SLOT_SIZES(COUNT_OF) };
const uint32_t lk_slot_inverse[NCLASSES] = { SLOT_SIZES(INVERSE_OF) };
_Static_assert(PAGE / 48 <= 128, "a slab's slots fit its two words of bits");

uint8_t lk_class_of16[SLAB_MAX / 16 + 1];

void lk_slabs_init(void)
{
	for (unsigned i = 0, c = 0; i <= SLAB_MAX / 16; i++) {
		while (lk_slot_size[c] < i * 16)
			c++;
		lk_class_of16[i] = (uint8_t)c;
	}
	for (unsigned i = 0; i < NCLASSES; i++)
		arena.partial[i] = NIL;
}

void lk_slot_free(struct lk_block *b)
{
	uint32_t i = (uint32_t)(((uintptr_t)b - lk_arena_base) >> PAGE_SHIFT);
	struct page *e = &arena.map[i];
	unsigned c = e->cls, k = slot_of(c, (uintptr_t)b - page_addr(i));
	if (e->nused == lk_slot_n[c])
		list_push(&arena.partial[c], i);
	e->bits[k / 64] &= ~(1ull << (k % 64));
	/* An empty slab goes back to the runs unless it is its class's only one with room: a
	 * program that frees and allocates one block in a loop would otherwise give up a page and
	 * carve a new one every time. A class keeps at most one empty slab (a second one finds the
	 * first on the list and goes), so at most NCLASSES pages stay, empty. */
	if (--e->nused == 0 && (arena.partial[c] != i || e->next != NIL)) {
		list_remove(&arena.partial[c], i);
		lk_run_release(i);
	}
}

bool lk_arena_flush_recent(void)
{
	bool any = false;

	for (unsigned c = 0; c < NCLASSES; c++)
		for (; arena.recent[c].n; any = true)
			lk_slot_free(recent_pop(&arena.recent[c]));
	return any;
}
