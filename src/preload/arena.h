/* arena.h: the arena's state and page map, shared by its files and nobody else.
 *
 * arena.c hands out and takes back blocks (preload.h's lk_arena_*), arena-runs.c keeps the runs of
 * pages (the free bins, what stays resident, the committed top), arena-slabs.c the size classes,
 * their slabs and each class's recent slots, arena-check.c checks every invariant, and
 * arena-space.c reserves the address range. All of it runs under lk_lock, but for what preload.h
 * says may not (lk_arena_owns, lk_arena_boot_alloc, lk_arena_is_boot, lk_arena_usable).
 *
 * Never: declare here what another part of libleek uses (that goes in preload.h); turn an inline
 * function of the sample's path into a call.
 */
#ifndef LEEK_ARENA_H
#define LEEK_ARENA_H

#include <stdbool.h>
#include <stdint.h>

#include "preload.h"

#pragma GCC visibility push(hidden)

#define PAGE 4096u
#define PAGE_SHIFT 12
#define NIL UINT32_MAX
#define COMMIT_STEP (32u << 20) /* the arena is made read-write this much at a time, at least */
#define BOOT_PAGES (LK_ARENA_BOOT_SIZE >> PAGE_SHIFT) /* dlsym's calloc, early libc: a few KiB */
#define NBINS 192
#define SLAB_MAX 2048u /* largest slot; bigger blocks get their own run */
#define RECENT LK_ARENA_RECENT

enum { K_NONE = 0, K_FREE, K_LARGE, K_SLAB, K_BOOT, K_GUARD /* guard.c's run */ };

/* The page map: one entry a page of the arena. */
struct page {
	uint32_t len;        /* run head: pages in the run */
	uint32_t head;       /* run tail: index of the head page */
	uint32_t prev, next; /* bin list (FREE) or partial-slab list (SLAB) */
	uint8_t kind, dirty, cls, unused;
	uint16_t nused, unused2;
	uint64_t bits[2];    /* SLAB: slots in use */
};

/* The slab classes' slot sizes (arena-slabs.c). */
#define SLOT_SIZES(X)                                                                              \
	X(48) X(64) X(80) X(96) X(112) X(128) X(160) X(192) X(224) X(256) X(320) X(384) X(448)     \
	X(512) X(576) X(672) X(816) X(1024) X(1360) X(2048)
#define ONE_CLASS(s) +1
#define NCLASSES (0 SLOT_SIZES(ONE_CLASS))
_Static_assert(NCLASSES == LK_ARENA_CLASSES && SLAB_MAX == LK_ARENA_SLOT_MAX,
	       "preload.h's count of the slab classes, and their largest slot");
extern const uint16_t lk_slot_size[NCLASSES];
extern const uint8_t lk_slot_n[NCLASSES];          /* slots in a slab */
extern const uint32_t lk_slot_inverse[NCLASSES];   /* ceil(2^32 / size) */
extern uint8_t lk_class_of16[SLAB_MAX / 16 + 1];  /* the class of a block of 16 * i bytes at most */

/* A class's slots freed, still marked in use, the last freed first: a list through their headers'
 * time_ns (struct lk_recent: preload.h, as a thread's own lists are). */

struct arena {
	struct page *map;
	uint32_t npages;     /* pages reserved */
	uint32_t top;        /* pages ever used: [0, top) are tiled by runs */
	uint32_t committed;  /* pages made read-write (arena and map alike) */
	uint32_t bins[2][NBINS];        /* free runs: [0] clean (returned), [1] dirty (retained) */
	uint64_t binmask[2][NBINS / 64];
	uint32_t partial[NCLASSES];
	struct lk_recent recent[NCLASSES];
	uint64_t dirty_pages, retain_pages, free_pages, live_blocks;
	bool give_back;      /* lk_run_take's rule (lk_arena_init) */
	struct lk_space space; /* the range's reservation, which npages follows (arena-space.c) */
	uintptr_t boot_next, boot_end;
};
extern struct arena arena;

static inline uintptr_t page_addr(uint32_t i)
{
	return lk_arena_base + ((uintptr_t)i << PAGE_SHIFT);
}

/* ---- lists: doubly linked through struct page, NIL-terminated ---- */

static inline void list_push(uint32_t *headp, uint32_t i)
{
	arena.map[i].prev = NIL;
	arena.map[i].next = *headp;
	if (*headp != NIL)
		arena.map[*headp].prev = i;
	*headp = i;
}

static inline void list_remove(uint32_t *headp, uint32_t i)
{
	struct page *e = &arena.map[i];

	if (e->prev != NIL)
		arena.map[e->prev].next = e->next;
	else
		*headp = e->next;
	if (e->next != NIL)
		arena.map[e->next].prev = e->prev;
	e->prev = e->next = NIL;
}

/* ---- arena-runs.c: runs of pages ---- */

static inline void set_run(uint32_t h, uint32_t len, uint8_t kind)
{
	arena.map[h].len = len;
	arena.map[h].kind = kind;
	arena.map[h + len - 1].head = h;
}

/* The bin of a free run of n pages. */
static inline unsigned bin_of(uint32_t n)
{
	if (n <= 64)
		return n - 1;
	unsigned lg = 31 - __builtin_clz(n);
	return 64 + (lg - 6) * 4 + ((n >> (lg - 2)) & 3);
}

void lk_bin_insert(uint32_t h);
void lk_bin_remove(uint32_t h);
int lk_run_commit(uint32_t pages);  /* pages [0, pages) read-write: 0 or a negative errno */
bool lk_run_room(uint64_t n);       /* n more pages fit above arena.top (grown if it must) */
uint32_t lk_run_take(uint32_t n);   /* a run of n pages, its head; NIL if there is no room */
void lk_run_release(uint32_t h);    /* run h back to the free (dirty) runs */

/* ---- arena-slabs.c: size classes, slabs and recent slots ---- */

/* The slot at byte off of a slab of class cls: off / size without a division. With
 * m = ceil(2^32 / s) = (2^32 + e) / s, 0 <= e < s, off * m / 2^32 = off / s + off * e / (s * 2^32),
 * and the second term is below 1 / s for off < 2^32 / s: the quotient's integer part is exact. */
static inline unsigned slot_of(unsigned cls, uintptr_t off)
{
	return (unsigned)((off * lk_slot_inverse[cls]) >> 32);
}

/* Whether the header at byte off of slab e starts a slot that is marked in use. */
static inline bool slot_in_use(const struct page *e, uintptr_t off)
{
	unsigned k = slot_of(e->cls, off);

	return off == (uintptr_t)k * lk_slot_size[e->cls] && k < lk_slot_n[e->cls] &&
	       (e->bits[k / 64] >> (k % 64) & 1);
}

/* The last slot freed of a class's recent ones (r->n > 0). */
static inline struct lk_block *recent_pop(struct lk_recent *r)
{
	struct lk_block *b = r->head;

	r->head = (struct lk_block *)(uintptr_t)b->time_ns;
	r->n--;
	return b;
}

void lk_slabs_init(void);
void lk_slot_free(struct lk_block *b); /* a slab slot back to its slab (not to its recent list) */

#pragma GCC visibility pop

#endif /* LEEK_ARENA_H */
