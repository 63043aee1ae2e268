/* arena.c: where sampled blocks live.
 *
 * All sampled blocks sit in one reserved address range, so `free` of any other pointer costs one
 * compare (lk_arena_owns). The range is reserved PROT_NONE (arena-space.c: at once, or under an
 * address-space limit a share that grows in place) and made read-write from the bottom up as it
 * fills, so it uses two kernel mappings however many blocks it holds; its page map (one
 * struct page per 4 KiB page) lives in a second range grown the same way.
 *
 * Layout (docs/design.md): the range is a sequence of runs of whole pages (arena-runs.c). A run is
 * FREE, LARGE (one block), SLAB (one page of equal slots for small blocks: arena-slabs.c) or BOOT
 * (the bump area that serves dlsym's calloc before the real allocator is known). Every block is
 * preceded by a 32-byte struct lk_block. A small block freed lately is handed out again first
 * (lk_arena_take, inline in the sample's path), a larger one gets a run of its own. A later
 * guard-page mode can place a block at the end of a LARGE run followed by a PROT_NONE page;
 * nothing here assumes runs are contiguous with their neighbours' contents.
 *
 * Overhead bound: a block wastes less than one page plus its header, and a block of s bytes is
 * sampled with probability at most s/T, so the expected waste is under 4128/T of the bytes
 * allocated: 0.79% at the default period (docs/sampling.md).
 *
 * Never: call malloc or stdio; touch a page it has not committed; trust a pointer it is given
 * (lk_arena_block validates everything). All functions but lk_arena_owns, lk_arena_boot_alloc,
 * lk_arena_is_boot and lk_arena_usable run under lk_lock.
 */
#include <errno.h>

#include "arena.h"
#include "preload.h"

/* glibc's DEFAULT_MMAP_THRESHOLD_MIN and _MAX (64-bit), in pages: the sizes of freed blocks that
 * raise what glibc keeps resident, and so what the arena retains (lk_arena_free). */
#define RETAIN_RISE_MIN ((128u << 10) >> PAGE_SHIFT)
#define RETAIN_RISE_MAX ((32u << 20) >> PAGE_SHIFT)

uintptr_t lk_arena_base, lk_arena_span;
struct arena arena;

int lk_arena_init(uint64_t size, uint64_t retain, bool give_back)
{
	int saved = errno;
	uint64_t npages = size >> PAGE_SHIFT;

	lk_slabs_init();
	if (npages > UINT32_MAX - 1)
		npages = UINT32_MAX - 1;
	int r = lk_space_reserve(&arena.space, npages, 2 * BOOT_PAGES, sizeof(struct page));
	if (r < 0)
		return r;
	arena.map = arena.space.map;
	arena.npages = arena.space.pages;
	arena.retain_pages = retain >> PAGE_SHIFT;
	arena.give_back = give_back;
	for (unsigned i = 0; i < NBINS; i++)
		arena.bins[0][i] = arena.bins[1][i] = NIL;
	lk_arena_base = arena.space.base;
	r = lk_run_commit(BOOT_PAGES);
	if (r < 0) {
		errno = saved;
		return r;
	}
	set_run(0, BOOT_PAGES, K_BOOT);
	arena.top = BOOT_PAGES;
	arena.boot_next = lk_arena_base;
	arena.boot_end = page_addr(BOOT_PAGES);
	lk_arena_span = (uintptr_t)arena.npages << PAGE_SHIFT; /* last: owns() turns on */
	errno = saved;
	return 0;
}

void *lk_arena_boot_alloc(size_t size)
{
	size_t need = (sizeof(struct lk_block) + size + 15) & ~(size_t)15;
	uintptr_t at = __atomic_fetch_add(&arena.boot_next, need, __ATOMIC_RELAXED);

	if (size > PAGE * BOOT_PAGES || at + need > arena.boot_end)
		return NULL;
	struct lk_block *b = (struct lk_block *)at; /* fresh pages are zero: calloc is served */
	b->magic = LK_BLOCK_LIVE;
	b->size = size;
	b->usable = need - sizeof(*b);
	return b + 1;
}

static struct lk_block *take_slow(size_t usable, size_t align);

/* A block for usable bytes at align, its header not written (the caller writes all of it). A
 * small one freed lately, inline in the sample's path; anything else in take_slow. */
LK_HOT LK_INLINE struct lk_block *lk_arena_take(size_t usable, size_t align)
{
	size_t hdr = sizeof(struct lk_block);

	if (align <= 16 && usable <= SLAB_MAX - hdr) {
		struct lk_recent *r = &arena.recent[lk_class_of16[(usable + hdr + 15) / 16]];
		if (r->n) { /* the slot freed last: the likeliest still in the cache */
			arena.live_blocks++;
			return recent_pop(r);
		}
	}
	return take_slow(usable, align);
}

static LK_NOINLINE struct lk_block *take_slow(size_t usable, size_t align)
{
	size_t hdr = sizeof(struct lk_block);
	struct lk_block *b;

	if (align < 16)
		align = 16;
	if (align == 16 && usable <= SLAB_MAX - hdr) { /* its class's recent slots are none */
		/* A slot of a slab of its class with room, a new slab carved if none has. */
		unsigned c = lk_class_of16[(usable + hdr + 15) / 16];
		uint32_t s = arena.partial[c];
		if (s == NIL) {
			s = lk_run_take(1);
			if (s == NIL && lk_arena_flush_recent()) /* the recent slots' slabs may hold room */
				return take_slow(usable, align);
			if (s == NIL)
				return NULL;
			set_run(s, 1, K_SLAB);
			arena.map[s].cls = (uint8_t)c;
			arena.map[s].nused = 0;
			arena.map[s].bits[0] = arena.map[s].bits[1] = 0;
			list_push(&arena.partial[c], s);
		}
		struct page *e = &arena.map[s];
		unsigned w = ~e->bits[0] ? 0 : 1;
		unsigned i = w * 64 + __builtin_ctzll(~e->bits[w]);
		e->bits[w] |= 1ull << (i % 64);
		if (++e->nused == lk_slot_n[c])
			list_remove(&arena.partial[c], s);
		b = (struct lk_block *)(page_addr(s) + (uintptr_t)i * lk_slot_size[c]);
	} else {
		if (usable > ((uint64_t)arena.space.max_pages << PAGE_SHIFT) || align > (1u << 30))
			return NULL;
		uint64_t lead = align <= PAGE ? (hdr + align - 1) / align * align : align;
		uint64_t n = (lead + usable + PAGE - 1) >> PAGE_SHIFT;
		if (n > arena.space.max_pages)
			return NULL;
		uint32_t h = lk_run_take((uint32_t)n);
		if (h == NIL)
			return NULL;
		uintptr_t user = align <= PAGE ? page_addr(h) + lead
					       : ((page_addr(h) + hdr + align - 1) & ~(uintptr_t)(align - 1));
		uint32_t first = (uint32_t)((user - hdr - lk_arena_base) >> PAGE_SHIFT);
		uint32_t last = (uint32_t)((user + usable - 1 - lk_arena_base) >> PAGE_SHIFT);
		if (usable == 0)
			last = first;
		uint32_t len = arena.map[h].len;
		set_run(h, len, K_NONE);
		if (first > h) { /* over-aligned: give back the pages in front of the header */
			set_run(h, first - h, K_FREE);
			lk_run_release(h);
		}
		if (last + 1 < h + len) {
			set_run(last + 1, h + len - last - 1, K_FREE);
			lk_run_release(last + 1);
		}
		set_run(first, last - first + 1, K_LARGE);
		arena.map[first].nused = (uint16_t)(((user - hdr) & (PAGE - 1)) >> 4);
		b = (struct lk_block *)(user - hdr);
	}
	arena.live_blocks++;
	return b;
}

LK_HOT void *lk_arena_alloc(size_t usable, size_t align)
{
	struct lk_block *b = lk_arena_take(usable, align);

	if (!b)
		return NULL;
	/* The whole header in one store: the bit fields one by one would read the header first, and
	 * wait for a line the cache seldom holds (a slab's slot, a freed one's link just read). */
	*b = (struct lk_block){ .usable = usable, .magic = LK_BLOCK_LIVE };
	return b + 1;
}

/* Resizes the live block at p to `usable` bytes without moving it, if that can be done: a slab
 * block whose new size keeps its size class, or a run that gives back whole pages at its end or takes
 * them from the free run (or the unused top of the arena) right after it. glibc does the same for a
 * chunk beside free memory, and mremap for an mmapped one: no copy, and no page fault for the bytes
 * the block already held. False, and nothing changed, when the block would have to move. */
bool lk_arena_resize(void *p, size_t usable)
{
	struct lk_block *b = (struct lk_block *)p - 1;
	size_t hdr = sizeof(*b);
	uint32_t i = (uint32_t)(((uintptr_t)b - lk_arena_base) >> PAGE_SHIFT);
	struct page *e = &arena.map[i];

	if (lk_guard_owns(p))
		return false; /* a guarded block moves: it has its page's room */
	if (e->kind == K_SLAB) {
		unsigned c = e->cls;
		if (usable + hdr > lk_slot_size[c] ||
		    (c > 0 && usable + hdr <= lk_slot_size[c - 1]))
			return false;
		b->usable = usable;
		return true;
	}
	if (e->kind != K_LARGE || usable <= SLAB_MAX - hdr ||
	    usable > ((uint64_t)arena.space.max_pages << PAGE_SHIFT))
		return false;
	uint32_t len = e->len, end = i + len;
	uint64_t last = ((uintptr_t)p + usable - 1 - lk_arena_base) >> PAGE_SHIFT;
	if (last >= arena.space.max_pages)
		return false;
	uint32_t want = (uint32_t)(last + 1 - i);
	if (want < len) { /* shrink: the pages past the new end go back */
		set_run(i, want, K_LARGE);
		set_run(i + want, len - want, K_FREE);
		lk_run_release(i + want);
	} else if (want > len) {
		uint32_t more = want - len;
		if (end == arena.top) {
			if (!lk_run_room(more) || lk_run_commit(arena.top + more) < 0)
				return false;
			arena.top += more;
		} else {
			if (arena.map[end].kind != K_FREE)
				return false;
			uint32_t flen = arena.map[end].len;
			if (flen < more && (end + flen != arena.top || !lk_run_room(more - flen) ||
					    lk_run_commit(arena.top + more - flen) < 0))
				return false;
			lk_bin_remove(end);
			arena.map[end].kind = K_NONE;
			if (flen > more) {
				uint32_t r = end + more;
				arena.map[r].dirty = arena.map[end].dirty;
				set_run(r, flen - more, K_FREE);
				lk_bin_insert(r);
			} else if (flen < more) {
				arena.top += more - flen;
			}
		}
		set_run(i, want, K_LARGE);
	}
	b->usable = usable;
	return true;
}

LK_HOT LK_INLINE struct lk_block *lk_arena_block(const void *p)
{
	uintptr_t hdr = (uintptr_t)p - sizeof(struct lk_block);

	if ((uintptr_t)p & 15 || hdr - lk_arena_base >= lk_arena_span)
		return NULL;
	if (lk_unlikely(lk_guard_owns(p)))
		return lk_guard_block(p);
	uint32_t i = (uint32_t)((hdr - lk_arena_base) >> PAGE_SHIFT);
	if (i >= arena.top)
		return NULL;
	struct page *e = &arena.map[i];
	if (i < BOOT_PAGES) { /* the boot area is one run; its blocks are found by magic alone */
		if (hdr + sizeof(struct lk_block) > arena.boot_next ||
		    hdr + sizeof(struct lk_block) > arena.boot_end)
			return NULL;
	} else if (e->kind == K_SLAB) {
		if (!slot_in_use(e, hdr - page_addr(i)))
			return NULL;
	} else if (e->kind != K_LARGE || (hdr & (PAGE - 1)) != (uintptr_t)e->nused << 4) {
		return NULL;
	}
	struct lk_block *b = (struct lk_block *)hdr;
	return b->magic == LK_BLOCK_LIVE || b->magic == LK_BLOCK_QUIET ? b : NULL;
}

/* malloc_usable_size of an arena pointer: the header's, if the header is that of a live block,
 * with no look at the page map, whose line a program that asks at each malloc and free
 * (redis-server's memory accounting) would otherwise miss in the cache every time (a share of its
 * exact-mode time that perf showed: docs/performance.md, "Exact mode on redis-server"). For a
 * pointer that malloc returned this is lk_arena_block's answer; for one it did not (inside a
 * block, say) glibc's answer is no more defined, and only pages the arena has used are read. No
 * lock: arena.top only grows. */
size_t lk_arena_usable(const void *p)
{
	uintptr_t hdr = (uintptr_t)p - sizeof(struct lk_block);

	if ((uintptr_t)p & 15 ||
	    hdr - lk_arena_base > ((uintptr_t)arena.top << PAGE_SHIFT) - sizeof(struct lk_block))
		return 0;
	const struct lk_block *b = (const struct lk_block *)hdr;
	return b->magic == LK_BLOCK_LIVE || b->magic == LK_BLOCK_QUIET ? b->usable : 0;
}

/* The run at page i of a block freed: back to the free runs. */
static void large_release(uint32_t i)
{
	const struct page *e = &arena.map[i];

	/* glibc keeps a freed block of this size resident from now on (its mmap threshold rises to
	 * the size of a freed mmapped chunk, and it trims only above twice that), so the arena does
	 * too: a sampled 8 MiB sort buffer is not given back and faulted in again at every reuse,
	 * where the program alone would have kept it. One and a half times the block, not glibc's
	 * twice: glibc's heap reuses what it keeps for blocks of any size, the arena only for
	 * samples: with twice, sqlite3's exact run kept far more freed pages through its heap's peak
	 * than its plain run did (bench/real.sh's peak RSS; docs/performance.md). */
	if (e->len >= RETAIN_RISE_MIN && e->len <= RETAIN_RISE_MAX &&
	    e->len + e->len / 2 > arena.retain_pages)
		arena.retain_pages = e->len + e->len / 2;
	lk_run_release(i);
}

LK_HOT LK_INLINE void lk_arena_free(void *p)
{
	struct lk_block *b = (struct lk_block *)p - 1;
	uint32_t i = (uint32_t)(((uintptr_t)b - lk_arena_base) >> PAGE_SHIFT);
	struct page *e = &arena.map[i];

	if (lk_unlikely(lk_guard_owns(p))) {
		lk_guard_free(b, b->id >> 63 ? (uint32_t)b->id : 0); /* free_with_stack's */
		return;
	}
	b->magic = LK_BLOCK_FREE;
	arena.live_blocks--;
	if (e->kind == K_LARGE) {
		large_release(i);
		return;
	}
	/* A slot freed goes to its class's list of recent ones, if it has room: the next block of
	 * the class is the one freed last, as glibc's tcache hands out (and, as there, a full list
	 * lets a slot go), so that a program that frees and allocates a few blocks of a size in
	 * turn finds them where the cache holds them, rather than the lowest slot of a slab. */
	struct lk_recent *r = &arena.recent[e->cls];
	if (r->n < RECENT) {
		b->time_ns = (uintptr_t)r->head;
		r->head = b;
		r->n++;
		return;
	}
	lk_slot_free(b);
}

/* A thread's own slots (threads.c): its list of recent slots a class, as arena.recent's but the
 * thread's alone, so taken and given with no lock. A slot on it stays marked in use, its magic
 * FREE, as on arena.recent; r->live counts what the thread took from (+) or gave to (-) them, for
 * arena.live_blocks. */
/* A run of a thread's own (r->run): the block of a run of its own that it freed last, if it fits
 * usable bytes in just as many pages as it has (a thread that allocates and frees a block of a
 * size in turn, the same run again with no lock). */
static inline struct lk_block *take_own_run(struct lk_trec *r, size_t usable)
{
	struct lk_block *b = r->run;

	if (!b)
		return NULL;
	uintptr_t at = (uintptr_t)b - lk_arena_base;
	const struct page *e = &arena.map[at >> PAGE_SHIFT];
	uint64_t need = ((at & (PAGE - 1)) + sizeof(*b) + usable + PAGE - 1) >> PAGE_SHIFT;
	if (need != e->len)
		return NULL;
	r->run = NULL;
	r->live++;
	return b;
}

LK_HOT LK_INLINE struct lk_block *lk_arena_take_own(struct lk_trec *r, size_t usable)
{
	size_t hdr = sizeof(struct lk_block);

	if (usable > SLAB_MAX - hdr)
		return take_own_run(r, usable);
	struct lk_recent *q = &r->recent[lk_class_of16[(usable + hdr + 15) / 16]];
	if (!q->n)
		return NULL;
	struct lk_block *b = q->head;
	q->head = (struct lk_block *)(uintptr_t)b->time_ns;
	q->n--;
	r->live++;
	return b;
}

LK_HOT LK_INLINE bool lk_arena_free_own(struct lk_trec *r, struct lk_block *b)
{
	const struct page *e = &arena.map[((uintptr_t)b - lk_arena_base) >> PAGE_SHIFT];

	if (e->kind == K_LARGE) {
		if (r->run || e->len > LK_ARENA_OWN_RUN)
			return false;
		b->magic = LK_BLOCK_FREE;
		r->run = b;
		r->live--;
		return true;
	}
	if (e->kind != K_SLAB)
		return false;
	struct lk_recent *q = &r->recent[e->cls];
	if (q->n >= RECENT)
		return false;
	b->magic = LK_BLOCK_FREE;
	b->time_ns = (uintptr_t)q->head;
	q->head = b;
	q->n++;
	r->live--;
	return true;
}

/* Under lk_lock: half a list of slots of the class of `usable` into r's own list, which ran dry
 * (a thread that allocates more than it frees: what another thread frees comes back to it in
 * batches, and it takes lk_lock once in RECENT / 2 samples); the arena's recent slots first, then
 * slots of its slabs. False if there is none (a block of a run of its own, or no room). */
bool lk_arena_fill_own(struct lk_trec *r, size_t usable)
{
	size_t hdr = sizeof(struct lk_block);

	if (usable > SLAB_MAX - hdr)
		return false;
	unsigned c = lk_class_of16[(usable + hdr + 15) / 16];
	struct lk_recent *q = &r->recent[c], *g = &arena.recent[c];
	while (q->n < RECENT / 2) {
		struct lk_block *b;
		if (g->n) {
			b = recent_pop(g);
			b->magic = LK_BLOCK_FREE;
		} else if ((b = take_slow(usable, 16))) {
			arena.live_blocks--; /* listed, not live, as take_slow counted it */
			/* The whole header in one store, as lk_arena_alloc: the first touch of a new
			 * slab's page must write. The bit field alone would read it first, which maps
			 * the zero page, and the write then copies that and flushes the page from every
			 * core's TLB, an interrupt to each core that runs a thread of the process (2.3%
			 * of redis-server's time with I/O threads, exact: docs/performance.md). */
			*b = (struct lk_block){ .magic = LK_BLOCK_FREE };
		} else {
			break;
		}
		b->time_ns = (uintptr_t)q->head;
		q->head = b;
		q->n++;
	}
	return q->n != 0;
}

/* Under lk_lock: b, a live block that r's own list did not take. A slab's slot goes on the list
 * once half of it has gone back to the slabs (a thread that frees more than it allocates takes
 * lk_lock once in RECENT / 2 frees); a run is freed. */
void lk_arena_free_spill(struct lk_trec *r, struct lk_block *b)
{
	const struct page *e = &arena.map[((uintptr_t)b - lk_arena_base) >> PAGE_SHIFT];

	if (e->kind != K_SLAB) {
		lk_arena_free(b + 1);
		return;
	}
	struct lk_recent *q = &r->recent[e->cls];
	for (unsigned k = 0; k < RECENT / 2 && q->n; k++) {
		struct lk_block *x = q->head;
		q->head = (struct lk_block *)(uintptr_t)x->time_ns;
		q->n--;
		lk_slot_free(x);
	}
	lk_arena_free_own(r, b);
}

void lk_arena_give_back(struct lk_trec *r)
{
	for (unsigned c = 0; c < NCLASSES; c++) {
		struct lk_recent *q = &r->recent[c];
		for (; q->n; q->n--) {
			struct lk_block *b = q->head;
			q->head = (struct lk_block *)(uintptr_t)b->time_ns;
			lk_slot_free(b);
		}
		q->head = NULL;
	}
	if (r->run)
		large_release((uint32_t)(((uintptr_t)r->run - lk_arena_base) >> PAGE_SHIFT));
	r->run = NULL;
	arena.live_blocks += (uint64_t)r->live;
	r->live = 0;
}

void lk_arena_foreach(lk_block_visit_fn fn, void *ctx)
{
	for (uint32_t i = BOOT_PAGES; i < arena.top; i += arena.map[i].len) {
		struct page *e = &arena.map[i];
		if (e->kind == K_GUARD) {
			lk_guard_foreach(fn, ctx);
		} else if (e->kind == K_LARGE) {
			struct lk_block *b = (struct lk_block *)(page_addr(i) + ((uintptr_t)e->nused << 4));
			if (b->magic == LK_BLOCK_LIVE) /* quiet blocks are not samples */
				fn(b, b + 1, ctx);
		} else if (e->kind == K_SLAB) {
			for (unsigned k = 0; k < lk_slot_n[e->cls]; k++)
				if (e->bits[k / 64] >> (k % 64) & 1) {
					struct lk_block *b =
						(struct lk_block *)(page_addr(i) + k * lk_slot_size[e->cls]);
					if (b->magic == LK_BLOCK_LIVE)
						fn(b, b + 1, ctx);
				}
		}
	}
}

void lk_arena_get_stats(struct lk_arena_stats *s)
{
	s->reserved = (uint64_t)arena.npages << PAGE_SHIFT;
	s->as_limit = arena.space.limit;
	s->first_reserved = (uint64_t)arena.space.first_pages << PAGE_SHIFT;
	s->max_reserved = (uint64_t)arena.space.max_pages << PAGE_SHIFT;
	s->committed = (uint64_t)arena.committed << PAGE_SHIFT;
	s->used_pages = arena.top - arena.free_pages;
	s->free_pages = arena.free_pages;
	s->dirty_pages = arena.dirty_pages;
	s->live_blocks = arena.live_blocks;
	for (uint32_t i = 0; i < LK_TRECS; i++)
		if (lk_trecs[i].used)
			s->live_blocks += (uint64_t)lk_trecs[i].live;
	s->retain = arena.retain_pages << PAGE_SHIFT;
}

