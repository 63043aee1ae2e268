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
 * No mprotect is made under lk_lock: one that takes access away flushes the TLB of every core
 * that runs a thread of the process, and the other threads would queue on lk_lock meanwhile
 * (docs/performance.md, "Guard mode"). Each slot has a state word, gen << 3 | state, that the
 * fault handler reads with no lock (docs/design.md, "Guard mode", has the protocol):
 *
 *   FRESH --open--> OPENING --use, lk_lock--> LIVE --free, lk_lock--> CLOSING --settle--> FREED
 *                   |  ^                                                                   |
 *                   |  +-------------------------------open--------------------------------+
 *                   +--unopen (mprotect failed, or the sample went elsewhere)--> FRESH or FREED
 *
 * - open (lk_guard_open, before lk_lock): a slot is taken from the fresh ones or the quarantine
 *   under glock, a spin lock held for a few stores and never across a system call; OPENING; then,
 *   with no lock, its page made read-write (and zeroed if it held a block). A failed mprotect puts
 *   the slot back (unopen) and the sample goes to the ordinary arena.
 * - use (lk_guard_use, under lk_lock): the block's fields, then LIVE, stored with release.
 * - free (lk_guard_free, under lk_lock): the freed block's fields (its stacks, its size), then
 *   CLOSING with release, and the slot on the closing queue (glock). Only then, after lk_lock is
 *   given back, settle (lk_guard_settle: the freeing thread, else the next guarded sample or
 *   free, for a free deferred from a signal handler or made once the profile is closed) makes
 *   the page PROT_NONE, and the slot FREED joins the quarantine (glock). A free returns once its
 *   page is closed (lk_guard_close), by itself or by another thread that took it from the queue.
 * A slot on neither list is owned by the one thread that moves it on: the states have one writer
 * at a time. The fault handler reads the word (acquire), the fields, and the word again: a change
 * between is a transition, read again. The live fields (user, size, usable) change only before
 * LIVE and the freed ones (fuser, fsize, stack, free_stack) only before CLOSING, so a state read
 * twice with the same generation vouches for the fields it selects: LIVE's for LIVE, the freed
 * block's for OPENING (which keeps them until LIVE), CLOSING and FREED. A LIVE block's header
 * (its stack and number) is read in its page, which cannot close while the reader holds lk_lock,
 * as guard-fault.c does unless the faulting thread was inside leek already.
 *
 * Never: allocate; mprotect or memset a page under lk_lock or glock; take lk_lock under glock;
 * touch a slot's page once freed; put a slot in the quarantine before its page is PROT_NONE.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "arena.h"
#include "preload.h"
#include "record.h"

enum { S_FRESH = 0, S_OPENING, S_LIVE, S_CLOSING, S_FREED };
#define STATE(w) ((w) & 7u)

struct slot {
	uint32_t word;              /* gen << 3 | state; atomic */
	uint32_t stack, free_stack; /* the freed block's (lk_stack_intern's ids; 0: none) */
	uintptr_t user;             /* the live block's address, */
	uint64_t size, usable;      /* size and room */
	uintptr_t fuser;            /* the block freed last here (0: none yet), and its size */
	uint64_t fsize;
};

struct lk_guard lk_guard;
int lk_guard_pending; /* slots on the closing queue: settle has work */
static struct slot *slots;
/* Under glock: the quarantine (idle slots that held a block, or a fresh one put back), oldest at
 * q_head, and the closing queue (freed, page still to be closed), oldest at c_head. A slot is on
 * one of them at most, so each holds N. */
static uint32_t *ring, *closing;
static uint32_t nslots, fresh, q_head, q_n, c_head, c_n;
static int glock;

static void glock_take(void)
{
	for (unsigned i = 0; __atomic_exchange_n(&glock, 1, __ATOMIC_ACQUIRE); i++) {
		while (__atomic_load_n(&glock, __ATOMIC_RELAXED)) {
			__builtin_ia32_pause();
			if (++i % 256 == 0)
				sched_yield(); /* its holder was preempted */
		}
	}
}

static void glock_give(void)
{
	__atomic_store_n(&glock, 0, __ATOMIC_RELEASE);
}

/* One writer at a time (the slot's owner): a plain load, the next generation, a release store. */
static void set_state(struct slot *x, unsigned st)
{
	uint32_t w = __atomic_load_n(&x->word, __ATOMIC_RELAXED);

	__atomic_store_n(&x->word, ((w >> 3) + 1) << 3 | st, __ATOMIC_RELEASE);
}

static unsigned state(const struct slot *x)
{
	return STATE(__atomic_load_n(&x->word, __ATOMIC_ACQUIRE));
}

static inline uintptr_t data_page(uint32_t s)
{
	return lk_guard.base + ((uintptr_t)(2 * s + 1) << PAGE_SHIFT);
}

/* The guard run of 2n + 1 pages, all PROT_NONE, and the slot table: false if either cannot be
 * had. Start-up, lk_lock held. */
bool lk_guard_setup(uint32_t n, bool left)
{
	uint32_t pages = 2 * n + 1;
	size_t bytes = ((size_t)n * (sizeof(struct slot) + 2 * sizeof(uint32_t)) + PAGE - 1) &
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
	closing = ring + n;
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

/* Back to the quarantine, newest (glock held). */
static void quarantine(uint32_t s)
{
	ring[(q_head + q_n++) % nslots] = s;
}

/* The pages of the slots freed lately made PROT_NONE, and the slots into the quarantine: by the
 * thread that freed them once lk_lock is given back, or by the next guarded sample. No lock
 * held; in_slow. */
void lk_guard_settle(void)
{
	for (;;) {
		glock_take();
		if (!c_n) {
			glock_give();
			return;
		}
		uint32_t s = closing[c_head];
		c_head = (c_head + 1) % nslots;
		__atomic_store_n(&lk_guard_pending, (int)--c_n, __ATOMIC_RELAXED);
		glock_give();
		/* Failed (the mappings' limit), the page stays open: a use after free of this
		 * block goes uncaught, nothing worse. */
		mprotect((void *)data_page(s), PAGE, PROT_NONE);
		glock_take();
		set_state(&slots[s], S_FREED);
		quarantine(s);
		glock_give();
	}
}

/* After the free of the guarded block at p, lk_lock given back: its page PROT_NONE before the free
 * returns, so that a use after it faults, whichever thread settles it (another that took it from
 * the closing queue is in its mprotect: waited for). No lock held; in_slow. */
void lk_guard_close(const void *p)
{
	const struct slot *x = &slots[slot_at((uintptr_t)p)];
	uint32_t w = __atomic_load_n(&x->word, __ATOMIC_ACQUIRE);

	lk_guard_settle();
	if (STATE(w) != S_CLOSING) /* settled already: the slot may be another block's by now */
		return;
	for (unsigned i = 1; __atomic_load_n(&x->word, __ATOMIC_ACQUIRE) == w; i++) {
		__builtin_ia32_pause();
		if (i % 64 == 0)
			sched_yield();
	}
}

/* Whether a block of size bytes at align fits a slot: its header and its size, rounded to the
 * alignment, in a page. */
bool lk_guard_fits(size_t size, size_t align)
{
	if (align < 16)
		align = 16;
	return size && align <= PAGE &&
	       ((size + align - 1) & ~(align - 1)) + sizeof(struct lk_block) <= PAGE;
}

/* The slot of a guarded sample of size bytes at align, its page read-write, or LK_GUARD_NONE if
 * the block does not fit a slot or none can be had. Before lk_lock; in_slow. */
uint32_t lk_guard_open(size_t size, size_t align)
{
	if (!lk_guard_fits(size, align))
		return LK_GUARD_NONE;
	lk_guard_settled();
	uint32_t s;
	glock_take();
	if (fresh < nslots) {
		s = fresh;
		__atomic_store_n(&fresh, fresh + 1, __ATOMIC_RELEASE);
	} else if (q_n) {
		s = ring[q_head];
		q_head = (q_head + 1) % nslots;
		q_n--;
	} else {
		glock_give();
		return LK_GUARD_NONE;
	}
	set_state(&slots[s], S_OPENING);
	glock_give();
	uintptr_t page = data_page(s);
	if (mprotect((void *)page, PAGE, PROT_READ | PROT_WRITE) < 0) {
		lk_guard_unopen(s, false);
		return LK_GUARD_NONE;
	}
	if (slots[s].fuser)
		memset((void *)page, 0, PAGE); /* as a fresh page: calloc's zero, no old data */
	return s;
}

/* Slot s, opened and not used, back: its page PROT_NONE again (if open), the slot to the
 * quarantine, as it was before. No lock held. */
void lk_guard_unopen(uint32_t s, bool open)
{
	struct slot *x = &slots[s];

	if (open)
		mprotect((void *)data_page(s), PAGE, PROT_NONE);
	glock_take();
	set_state(x, x->fuser ? S_FREED : S_FRESH);
	quarantine(s); /* newest: tried again last */
	glock_give();
}

/* The block of a sample in slot s, opened by lk_guard_open for this size and align; *usable set
 * to its room. lk_lock held. */
struct lk_block *lk_guard_use(uint32_t s, size_t size, size_t align, size_t *usable)
{
	const size_t hs = sizeof(struct lk_block);
	struct slot *x = &slots[s];
	uintptr_t page = data_page(s);

	if (align < 16)
		align = 16;
	size_t room = (size + align - 1) & ~(align - 1);
	uintptr_t user = lk_guard.left ? page + ((hs + align - 1) & ~(align - 1))
				       : (page + PAGE - size) & ~(uintptr_t)(align - 1);
	/* Right: the room up to the guard page; left: the size rounded to the alignment, so that
	 * malloc_usable_size never offers bytes it would not catch an overflow past. */
	*usable = lk_guard.left ? room : page + PAGE - user;
	x->user = user;
	x->size = size;
	x->usable = *usable;
	set_state(x, S_LIVE);
	return (struct lk_block *)user - 1;
}

/* The header of p if p is a live guarded block's start and its header is whole: what
 * lk_arena_block answers for the guard run. lk_lock held. */
struct lk_block *lk_guard_block(const void *p)
{
	int64_t s = slot_at((uintptr_t)p);

	if (s < 0 || state(&slots[s]) != S_LIVE || slots[s].user != (uintptr_t)p)
		return NULL;
	struct lk_block *b = (struct lk_block *)p - 1;
	return b->magic == LK_BLOCK_LIVE || b->magic == LK_BLOCK_QUIET ? b : NULL;
}

/* b's free: recorded in its slot, CLOSING, on the closing queue; its page is closed by
 * lk_guard_settle once lk_lock is given back. lk_lock held. */
void lk_guard_free(struct lk_block *b, uint32_t free_stack)
{
	int64_t s = slot_at((uintptr_t)(b + 1));
	struct slot *x = &slots[s];

	x->stack = b->stack;
	x->fsize = b->size;
	x->fuser = x->user;
	x->free_stack = free_stack;
	b->magic = LK_BLOCK_FREE;
	set_state(x, S_CLOSING);
	glock_take();
	closing[(c_head + c_n++) % nslots] = (uint32_t)s;
	__atomic_store_n(&lk_guard_pending, (int)c_n, __ATOMIC_RELAXED);
	glock_give();
}

size_t lk_guard_usable(const struct lk_block *b)
{
	return slots[slot_at((uintptr_t)(b + 1))].usable;
}

void lk_guard_foreach(lk_block_visit_fn fn, void *ctx)
{
	uint32_t n = __atomic_load_n(&fresh, __ATOMIC_ACQUIRE);

	for (uint32_t s = 0; s < n; s++)
		if (state(&slots[s]) == S_LIVE) {
			struct lk_block *b = (struct lk_block *)slots[s].user - 1;
			if (b->magic == LK_BLOCK_LIVE)
				fn(b, b + 1, ctx);
		}
}

/* What a free of p that lk_guard_block refused is (arena-find.c): a double free of a freed
 * slot's block, an underflow into a live block's header (found at its free), or an invalid free.
 * lk_lock held: the fields of a slot are still (its state may go from CLOSING to FREED, or FREED
 * to OPENING, which keep them). */
void lk_guard_find(const void *p, struct lk_arena_found *f)
{
	uintptr_t q = (uintptr_t)p;
	int64_t s = slot_at(q);

	f->kind = LK_ERR_INVALID_FREE;
	if (s < 0)
		return;
	const struct slot *x = &slots[s];
	unsigned st = state(x);
	f->live = st == S_LIVE;
	if (!f->live && !x->fuser)
		return; /* fresh, or opening and never used: no block was here */
	f->block = f->live ? x->user : x->fuser;
	f->size = f->live ? x->size : x->fsize;
	f->stack = f->live ? 0 : x->stack;
	f->free_stack = f->live ? 0 : x->free_stack;
	if (q != f->block)
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

/* A slot as the fault handler sees it: its state and the fields that state vouches for. */
struct view {
	unsigned st;
	uintptr_t user;
	uint64_t size;
	uint32_t stack, free_stack;
	uint64_t id;
};

/* Slot s read with no lock: the word, the fields, the word again, until the two agree (a few
 * tries: a writer stores a handful of fields between two words). */
static void view(uint32_t s, struct view *v)
{
	const struct slot *x = &slots[s];

	for (int tries = 0; tries < 64; tries++) {
		uint32_t w = __atomic_load_n(&x->word, __ATOMIC_ACQUIRE);
		v->st = STATE(w);
		if (v->st == S_LIVE) {
			const struct lk_block *b = (const struct lk_block *)x->user - 1;
			v->user = x->user;
			v->size = x->size;
			v->stack = b->stack;
			v->id = b->id;
			v->free_stack = 0;
		} else {
			v->user = x->fuser;
			v->size = x->fsize;
			v->stack = x->stack;
			v->free_stack = x->free_stack;
			v->id = 0;
			if (!v->user) /* fresh, or opening for its first block: none was here */
				v->st = S_FRESH;
		}
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&x->word, __ATOMIC_RELAXED) == w)
			return;
	}
}

/* The error of a fault at a, in the guard run: its kind and block, from the slots; false if no
 * block explains it (a guard page with no block beside it in the alignment that would reach it).
 * No lock needed: the slots are read as view does. */
bool lk_guard_classify(uintptr_t a, bool write, bool known, struct lk_error_info *e,
		       uint32_t *stack, uint32_t *free_stack, uint64_t *id)
{
	int64_t s = slot_at(a);
	unsigned uaf = !known ? LK_ERR_UAF_ACCESS : write ? LK_ERR_UAF_WRITE : LK_ERR_UAF_READ;
	struct view v;

	if (s >= 0) {
		/* A data page faults only once closed: a freed slot's (CLOSING once its mprotect
		 * is done, FREED), or one being opened again for another block (OPENING), whose
		 * page the program cannot know but as its freed block's. */
		view((uint32_t)s, &v);
		if (v.st == S_FRESH || v.st == S_LIVE)
			return false;
		e->kind = uaf;
	} else { /* a guard page: the block before it (overflow) or after it (underflow) */
		uint64_t pg = (a - lk_guard.base) >> PAGE_SHIFT;
		int64_t before = pg ? (int64_t)(pg / 2) - 1 : -1, after = (int64_t)(pg / 2);
		if (!lk_guard.left && before >= 0) {
			s = before;
			e->kind = LK_ERR_OVERFLOW;
		} else if (lk_guard.left && after < (int64_t)nslots) {
			s = after;
			e->kind = LK_ERR_UNDERFLOW;
		} else {
			return false;
		}
		view((uint32_t)s, &v);
		if (v.st == S_FRESH)
			return false;
		if (v.st != S_LIVE) /* beside a freed block: its use after free */
			e->kind = uaf;
	}
	e->block_addr = v.user;
	e->block_size = v.size;
	*stack = v.stack;
	*id = v.id;
	*free_stack = v.free_stack;
	return true;
}

/* fork: the prepare handler takes glock (after lk_lock), the parent gives it back, and the child,
 * whose only thread is the one that forked, finishes what the others had under way: the closing
 * queue settled, and a slot that a thread was opening, unopening or settling (on no list, owned by
 * a thread the child does not have) closed and put in the quarantine. */
void lk_guard_atfork(int phase)
{
	if (!lk_guard.span)
		return;
	if (phase == LK_FORK_PREPARE) {
		glock_take();
		return;
	}
	glock_give();
	if (phase == LK_FORK_PARENT)
		return;
	lk_guard_settle();
	for (uint32_t s = 0; s < fresh; s++) {
		struct slot *x = &slots[s];
		unsigned st = state(x);
		if (st != S_OPENING && st != S_CLOSING)
			continue;
		mprotect((void *)data_page(s), PAGE, PROT_NONE);
		set_state(x, x->fuser ? S_FREED : S_FRESH);
		quarantine(s);
	}
}
