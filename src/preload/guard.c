/* guard.c: guard mode's slots (LEEK_GUARD=N, `leek run --guard[=N]`; its start-up and fault
 * handler: guard-fault.c): up to N sampled blocks at a time, each on a page of its own between two
 * PROT_NONE pages, and kept PROT_NONE for a while once freed, so that an overflow, an underflow
 * or a use after free faults where it happens.
 *
 * At start-up the arena gives one run of 2N + 1 pages (a K_GUARD run, never given back), all made
 * PROT_NONE: slot s's data page is page 2s + 1, with a guard page on each side. A sample whose
 * block (32-byte header included) fits a page and whose alignment is at most a page takes a slot,
 * if one is free: a slot never used first, then the one freed longest ago (the quarantine is every
 * freed slot, at most N, reused oldest first). Its data page is made read-write and the block put
 * against its end (LEEK_GUARD_ALIGN=right, the default: an overflow touches the next page) or
 * against its start (left: the header first, then the block; an underflow past the header touches
 * the page before, one into the header is found at the free, which sees the header damaged). The
 * block's end is aligned as the program asked, so right alignment leaves up to align - 1 bytes
 * (15 for malloc) between the end and the guard page, where an overflow is not caught. When it is
 * freed, its page goes back to PROT_NONE and the slot into the quarantine. The cost is bounded:
 * 2N + 1 pages of address space, at most N resident, at most 2N + 2 mappings (each data page
 * read-write between two PROT_NONE ones), and one mprotect a guarded sample and free.
 *
 * Never: allocate; change a slot but under lk_lock (lk_guard_classify reads them from the fault
 * handler with it held, or in a thread that holds it already); touch a slot's page once freed.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "arena.h"
#include "preload.h"
#include "record.h"

enum { S_FRESH = 0, S_LIVE, S_FREED };

struct slot {
	uintptr_t user;     /* the block's address while live or freed */
	uint64_t size, usable;
	uint32_t stack, free_stack; /* lk_stack_intern's ids; 0: none */
	uint64_t id;        /* its number in the file while live (0: none) */
	uint8_t state;
};

struct lk_guard lk_guard;
static struct slot *slots;
static uint32_t *ring;       /* the quarantine: freed slots, oldest at q_head */
static uint32_t nslots, fresh, q_head, q_n;

static inline uintptr_t data_page(uint32_t s)
{
	return lk_guard.base + ((uintptr_t)(2 * s + 1) << PAGE_SHIFT);
}

/* The guard run of 2n + 1 pages, all PROT_NONE, and the slot table: false if either cannot be
 * had. Start-up, lk_lock held. */
bool lk_guard_setup(uint32_t n, bool left)
{
	uint32_t pages = 2 * n + 1;
	size_t bytes = ((size_t)n * (sizeof(struct slot) + sizeof(uint32_t)) + PAGE - 1) &
		       ~(size_t)(PAGE - 1);
	void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint32_t h = m == MAP_FAILED ? NIL : lk_run_take(pages);

	if (h != NIL) {
		set_run(h, pages, K_GUARD);
		if (mprotect((void *)page_addr(h), (size_t)pages << PAGE_SHIFT, PROT_NONE) < 0) {
			set_run(h, pages, K_FREE);
			lk_run_release(h);
			h = NIL;
		}
	}
	if (h == NIL) {
		if (m != MAP_FAILED)
			munmap(m, bytes);
		return false;
	}
	slots = m;
	ring = (uint32_t *)(slots + n);
	nslots = n;
	lk_guard.left = left;
	lk_guard.base = page_addr(h);
	__atomic_store_n(&lk_guard.span, (uintptr_t)pages << PAGE_SHIFT, __ATOMIC_RELEASE);
	return true;
}

/* The slot whose data page holds a, or -1. */
static int64_t slot_at(uintptr_t a)
{
	uintptr_t pg = (a - lk_guard.base) >> PAGE_SHIFT;

	return pg & 1 ? (int64_t)(pg >> 1) : -1;
}

struct lk_block *lk_guard_take(size_t size, size_t align, size_t *usable)
{
	const size_t hs = sizeof(struct lk_block);

	if (align < 16)
		align = 16;
	size_t room = (size + align - 1) & ~(align - 1);
	if (align > PAGE || room + hs > PAGE || size == 0)
		return NULL;
	uint32_t s;
	if (fresh < nslots) {
		s = fresh++;
	} else if (q_n) {
		s = ring[q_head];
		q_head = (q_head + 1) % nslots;
		q_n--;
	} else {
		return NULL;
	}
	uintptr_t page = data_page(s);
	if (mprotect((void *)page, PAGE, PROT_READ | PROT_WRITE) < 0) {
		ring[(q_head + q_n++) % nslots] = s; /* back, newest: tried again last */
		return NULL;
	}
	if (slots[s].state == S_FREED)
		memset((void *)page, 0, PAGE); /* as a fresh page: calloc's zero, no old data */
	uintptr_t user = lk_guard.left ? page + ((hs + align - 1) & ~(align - 1))
				       : (page + PAGE - size) & ~(uintptr_t)(align - 1);
	/* Right: the room up to the guard page; left: the size rounded to the alignment, so that
	 * malloc_usable_size never offers bytes it would not catch an overflow past. */
	*usable = lk_guard.left ? room : page + PAGE - user;
	slots[s] = (struct slot){ .user = user, .size = size, .usable = *usable, .state = S_LIVE };
	return (struct lk_block *)user - 1;
}

/* The header of p if p is a live guarded block's start and its header is whole: what
 * lk_arena_block answers for the guard run. */
struct lk_block *lk_guard_block(const void *p)
{
	int64_t s = slot_at((uintptr_t)p);

	if (s < 0 || slots[s].state != S_LIVE || slots[s].user != (uintptr_t)p)
		return NULL;
	struct lk_block *b = (struct lk_block *)p - 1;
	return b->magic == LK_BLOCK_LIVE || b->magic == LK_BLOCK_QUIET ? b : NULL;
}

void lk_guard_free(struct lk_block *b, uint32_t free_stack)
{
	int64_t s = slot_at((uintptr_t)(b + 1));
	struct slot *x = &slots[s];

	x->stack = b->stack;
	x->size = b->size;
	x->free_stack = free_stack;
	x->state = S_FREED;
	b->magic = LK_BLOCK_FREE;
	mprotect((void *)data_page((uint32_t)s), PAGE, PROT_NONE);
	ring[(q_head + q_n++) % nslots] = (uint32_t)s;
}

size_t lk_guard_usable(const struct lk_block *b)
{
	return slots[slot_at((uintptr_t)(b + 1))].usable;
}

void lk_guard_foreach(lk_block_visit_fn fn, void *ctx)
{
	for (uint32_t s = 0; s < fresh; s++)
		if (slots[s].state == S_LIVE) {
			struct lk_block *b = (struct lk_block *)slots[s].user - 1;
			if (b->magic == LK_BLOCK_LIVE)
				fn(b, b + 1, ctx);
		}
}

/* What a free of p that lk_guard_block refused is (arena-find.c): a double free of a freed
 * slot's block, an underflow into a live block's header (found at its free), or an invalid free. */
void lk_guard_find(const void *p, struct lk_arena_found *f)
{
	uintptr_t q = (uintptr_t)p;
	int64_t s = slot_at(q);

	f->kind = LK_ERR_INVALID_FREE;
	if (s < 0 || slots[s].state == S_FRESH)
		return;
	const struct slot *x = &slots[s];
	f->block = x->user;
	f->size = x->size;
	f->stack = x->stack;
	f->live = x->state == S_LIVE;
	f->free_stack = f->live ? 0 : x->free_stack;
	if (q != x->user)
		return;
	if (!f->live) {
		f->kind = LK_ERR_DOUBLE_FREE;
		return;
	}
	/* Live, at its start, yet refused: its header was overwritten. */
	const struct lk_block *b = (const struct lk_block *)q - 1;
	f->stack = b->stack;
	f->kind = LK_ERR_UNDERFLOW;
}

/* The error of a fault at a, in the guard run: its kind and block, from the slots; false if no
 * block explains it (a guard page with no block beside it in the alignment that would reach it). */
bool lk_guard_classify(uintptr_t a, bool write, bool known, struct lk_error_info *e, uint32_t *stack,
		     uint32_t *free_stack, uint64_t *id)
{
	int64_t s = slot_at(a);
	const struct slot *x;

	if (s >= 0) { /* a data page: only a freed slot's is PROT_NONE */
		x = &slots[s];
		if (x->state != S_FREED)
			return false;
		e->kind = !known ? LK_ERR_UAF_ACCESS : write ? LK_ERR_UAF_WRITE : LK_ERR_UAF_READ;
	} else { /* a guard page: the block before it (overflow) or after it (underflow) */
		uint64_t pg = (a - lk_guard.base) >> PAGE_SHIFT;
		int64_t before = pg ? (int64_t)(pg / 2) - 1 : -1, after = (int64_t)(pg / 2);
		if (!lk_guard.left && before >= 0 && slots[before].state != S_FRESH) {
			s = before;
			e->kind = LK_ERR_OVERFLOW;
		} else if (lk_guard.left && after < (int64_t)nslots && slots[after].state != S_FRESH) {
			s = after;
			e->kind = LK_ERR_UNDERFLOW;
		} else {
			return false;
		}
		x = &slots[s];
		if (x->state == S_FREED) /* beside a freed block: its use after free */
			e->kind = !known ? LK_ERR_UAF_ACCESS : write ? LK_ERR_UAF_WRITE
								  : LK_ERR_UAF_READ;
	}
	e->block_addr = x->user;
	e->block_size = x->size;
	*stack = x->state == S_LIVE ? ((const struct lk_block *)x->user - 1)->stack : x->stack;
	*id = x->state == S_LIVE ? ((const struct lk_block *)x->user - 1)->id : 0;
	*free_stack = x->state == S_FREED ? x->free_stack : 0;
	return true;
}

