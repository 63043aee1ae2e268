/* arena.c: where sampled blocks live.
 *
 * All sampled blocks sit in one reserved address range, so `free` of any other pointer costs one
 * compare (lk_arena_owns). The range is reserved PROT_NONE (arena-space.c: at once, or under an
 * address-space limit a share that grows in place) and made read-write from the bottom up as it
 * fills, so it uses two kernel mappings however many blocks it holds; its page map (one
 * struct page per 4 KiB page) lives in a second range grown the same way.
 *
 * Layout (docs/design.md): the range is a sequence of runs of whole pages. A run is FREE, LARGE (one
 * block), SLAB (one page of equal slots for small blocks) or BOOT (the bump area that serves dlsym's
 * calloc before the real allocator is known). Every block is preceded by a 32-byte struct lk_block.
 * Free runs are dirty (freed, their pages still resident) or clean (given back to the kernel, or
 * never touched), coalesced with free neighbours in the same state and kept in size bins, one set
 * for each state. New blocks take dirty pages first, so they cost no page faults while there are
 * some; up to `retain` bytes of dirty pages stay (exactly: a clean run never counts as dirty), and
 * the excess is returned with MADV_DONTNEED in batches, down to half of `retain`; a request that
 * no dirty run can hold gives back as many dirty pages as it is about to fault in. A slab slot
 * freed is kept, up to LK_ARENA_RECENT a class, in a list through its header (its bit still set,
 * its magic FREE) and handed out again first, last freed first; an allocation that finds no page
 * empties those lists before it gives up. A later guard-page mode can place a block at the end of
 * a LARGE run followed by a PROT_NONE page; nothing here assumes runs are contiguous with their
 * neighbours' contents.
 *
 * Overhead bound: a block wastes less than one page plus its header, and a block of s bytes is
 * sampled with probability at most s/T, so the expected waste is under 4128/T of the bytes
 * allocated: 0.79% at the default period (docs/sampling.md).
 *
 * Never: call malloc or stdio; touch a page it has not committed; trust a pointer it is given
 * (lk_arena_block validates everything). All functions but lk_arena_owns, lk_arena_boot_alloc and
 * lk_arena_is_boot run under lk_lock.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "preload.h"

#define PAGE 4096u
#define PAGE_SHIFT 12
#define NIL UINT32_MAX
#define COMMIT_STEP (32u << 20)
#define BOOT_PAGES (LK_ARENA_BOOT_SIZE >> PAGE_SHIFT) /* dlsym's calloc, early libc: a few KiB */
#define NBINS 192
#define SLAB_MAX 2048u /* largest slot; bigger blocks get their own run */
#define RECENT LK_ARENA_RECENT
/* glibc's DEFAULT_MMAP_THRESHOLD_MIN and _MAX (64-bit), in pages: the sizes of freed blocks that
 * raise what glibc keeps resident, and so what the arena retains (lk_arena_free). */
#define RETAIN_RISE_MIN ((128u << 10) >> PAGE_SHIFT)
#define RETAIN_RISE_MAX ((32u << 20) >> PAGE_SHIFT)

enum { K_NONE = 0, K_FREE, K_LARGE, K_SLAB, K_BOOT };

struct page {
	uint32_t len;        /* run head: pages in the run */
	uint32_t head;       /* run tail: index of the head page */
	uint32_t prev, next; /* bin list (FREE) or partial-slab list (SLAB) */
	uint8_t kind, dirty, cls, unused;
	uint16_t nused, unused2;
	uint64_t bits[2];    /* SLAB: slots in use */
};

#define SLOT_SIZES(X)                                                                              \
	X(48) X(64) X(80) X(96) X(112) X(128) X(160) X(192) X(224) X(256) X(320) X(384) X(448)     \
	X(512) X(576) X(672) X(816) X(1024) X(1360) X(2048)
#define SIZE_OF(s) s,
#define COUNT_OF(s) PAGE / (s),
#define INVERSE_OF(s) (uint32_t)(((1ull << 32) + (s) - 1) / (s)),
static const uint16_t slot_size[] = { SLOT_SIZES(SIZE_OF) };
static const uint8_t slot_n[] = { SLOT_SIZES(COUNT_OF) };       /* slots in a slab */
static const uint32_t slot_inverse[] = { SLOT_SIZES(INVERSE_OF) }; /* ceil(2^32 / size) */
#define NCLASSES (sizeof(slot_size) / sizeof(slot_size[0]))
_Static_assert(PAGE / 48 <= 128, "a slab's slots fit its two words of bits");

/* The slot at byte off of a slab of class cls: off / size without a division. With
 * m = ceil(2^32 / s) = (2^32 + e) / s, 0 <= e < s, off * m / 2^32 = off / s + off * e / (s * 2^32),
 * and the second term is below 1 / s for off < 2^32 / s: the quotient's integer part is exact. */
static inline unsigned slot_of(unsigned cls, uintptr_t off)
{
	return (unsigned)((off * slot_inverse[cls]) >> 32);
}

/* Whether the header at byte off of slab e starts a slot that is marked in use. */
static inline bool slot_in_use(const struct page *e, uintptr_t off)
{
	unsigned k = slot_of(e->cls, off);

	return off == (uintptr_t)k * slot_size[e->cls] && k < slot_n[e->cls] &&
	       (e->bits[k / 64] >> (k % 64) & 1);
}

static uint8_t class_of16[SLAB_MAX / 16 + 1]; /* the class for a block of 16 * i bytes at most */

uintptr_t lk_arena_base, lk_arena_span;

static struct {
	struct page *map;
	uint32_t npages;     /* pages reserved */
	uint32_t top;        /* pages ever used: [0, top) are tiled by runs */
	uint32_t committed;  /* pages made read-write (arena and map alike) */
	uint32_t bins[2][NBINS];        /* free runs: [0] clean (returned), [1] dirty (retained) */
	uint64_t binmask[2][NBINS / 64];
	uint32_t partial[NCLASSES];
	struct recent { /* slots freed, still marked in use, the last freed first: a list through */
		struct lk_block *head; /* their headers' time_ns */
		uint64_t n;            /* at most RECENT */
	} recent[NCLASSES];
	uint64_t dirty_pages, retain_pages, free_pages, live_blocks;
	bool give_back;      /* run_take's rule (lk_arena_init) */
	struct lk_space space; /* the range's reservation, which npages follows (arena-space.c) */
	uintptr_t boot_next, boot_end;
} A;

static inline uintptr_t page_addr(uint32_t i)
{
	return lk_arena_base + ((uintptr_t)i << PAGE_SHIFT);
}

static unsigned slot_count(unsigned cls)
{
	return slot_n[cls];
}

static unsigned bin_of(uint32_t n)
{
	if (n <= 64)
		return n - 1;
	unsigned lg = 31 - __builtin_clz(n);
	return 64 + (lg - 6) * 4 + ((n >> (lg - 2)) & 3);
}

/* ---- lists: doubly linked through struct page, NIL-terminated ---- */

static void list_push(uint32_t *headp, uint32_t i)
{
	A.map[i].prev = NIL;
	A.map[i].next = *headp;
	if (*headp != NIL)
		A.map[*headp].prev = i;
	*headp = i;
}

static void list_remove(uint32_t *headp, uint32_t i)
{
	struct page *e = &A.map[i];

	if (e->prev != NIL)
		A.map[e->prev].next = e->next;
	else
		*headp = e->next;
	if (e->next != NIL)
		A.map[e->next].prev = e->prev;
	e->prev = e->next = NIL;
}

/* ---- runs ---- */

static void set_run(uint32_t h, uint32_t len, uint8_t kind)
{
	A.map[h].len = len;
	A.map[h].kind = kind;
	A.map[h + len - 1].head = h;
}

static void bin_insert(uint32_t h)
{
	unsigned b = bin_of(A.map[h].len), d = A.map[h].dirty;

	list_push(&A.bins[d][b], h);
	A.binmask[d][b / 64] |= 1ull << (b % 64);
	A.free_pages += A.map[h].len;
	A.dirty_pages += d ? A.map[h].len : 0;
}

static void bin_remove(uint32_t h)
{
	unsigned b = bin_of(A.map[h].len), d = A.map[h].dirty;

	list_remove(&A.bins[d][b], h);
	if (A.bins[d][b] == NIL)
		A.binmask[d][b / 64] &= ~(1ull << (b % 64));
	A.free_pages -= A.map[h].len;
	A.dirty_pages -= d ? A.map[h].len : 0;
}

/* Makes [h, h + len) a free run in the dirty or the clean bins, merged with the free runs beside it
 * that are in the same state. A dirty run and a clean one may touch: the arena knows exactly which
 * free pages still hold memory, and hands those out first. */
static void free_insert(uint32_t h, uint32_t len, uint8_t dirty)
{
	uint32_t r = h + len;

	if (r < A.top && A.map[r].kind == K_FREE && A.map[r].dirty == dirty) {
		bin_remove(r);
		len += A.map[r].len;
		A.map[r].kind = K_NONE;
	}
	if (h > 0) {
		uint32_t p = A.map[h - 1].head;
		if (p < h && A.map[p].kind == K_FREE && A.map[p].dirty == dirty &&
		    p + A.map[p].len == h) {
			bin_remove(p);
			len += A.map[p].len;
			A.map[h].kind = K_NONE;
			h = p;
		}
	}
	A.map[h].dirty = dirty;
	set_run(h, len, K_FREE);
	bin_insert(h);
}

static int commit_to(uint32_t pages)
{
	if (pages <= A.committed)
		return 0;
	uint64_t step = COMMIT_STEP >> PAGE_SHIFT;
	uint64_t want = (pages + step - 1) / step * step;
	if (want > A.npages)
		want = A.npages;
	size_t off = (size_t)A.committed << PAGE_SHIFT;
	size_t len = (size_t)(want - A.committed) << PAGE_SHIFT;
	size_t moff = (size_t)A.committed * sizeof(struct page) & ~(size_t)(PAGE - 1);
	size_t mend = ((size_t)want * sizeof(struct page) + PAGE - 1) & ~(size_t)(PAGE - 1);

	if (mprotect((char *)A.map + moff, mend - moff, PROT_READ | PROT_WRITE) < 0)
		return -errno;
	if (mprotect((char *)lk_arena_base + off, len, PROT_READ | PROT_WRITE) < 0)
		return -errno;
	A.committed = (uint32_t)want;
	return 0;
}

/* Whether n more pages fit above A.top, the reservation grown for them if it must and can (under
 * an address-space limit: arena-space.c). */
static bool room_at_top(uint64_t n)
{
	if (n <= A.npages - A.top)
		return true;
	if (!lk_space_grow(&A.space, A.top + n - A.npages))
		return false;
	A.npages = A.space.pages;
	/* Free reads the span without the lock: a pointer it is handed from the new pages comes
	 * from an allocation that saw the store. */
	__atomic_store_n(&lk_arena_span, (uintptr_t)A.npages << PAGE_SHIFT, __ATOMIC_RELEASE);
	return true;
}

/* The smallest free run of at least n pages in the dirty (d = 1) or clean bins, or NIL. */
static uint32_t bin_find(unsigned d, uint32_t n)
{
	unsigned b = bin_of(n);
	uint32_t h = NIL;

	if (b >= 64)
		for (uint32_t i = A.bins[d][b]; i != NIL; i = A.map[i].next)
			if (A.map[i].len >= n) {
				h = i;
				break;
			}
	for (unsigned w = (b + (h == NIL && b >= 64)) / 64; h == NIL && w < NBINS / 64; w++) {
		uint64_t m = A.binmask[d][w];
		unsigned first = b + (b >= 64);
		if (w == first / 64)
			m &= ~0ull << (first % 64);
		if (m)
			h = A.bins[d][w * 64 + __builtin_ctzll(m)];
	}
	return h;
}

static void purge(uint64_t keep);

/* Takes a free run of at least n pages, splitting it; returns its head or NIL. Retained (dirty)
 * pages first, so that a new block costs no page faults while the arena holds freed memory. When
 * no retained run is long enough, the block is about to fault n pages in: as many retained pages
 * go back to the kernel first, the ones that could not serve it, so that keeping freed pages
 * never makes the arena grow past what it holds live and retains. Without this, python3.11's
 * peak RSS was 1.033x of the plain run (8 seeds), and 1.002x with it (docs/performance.md). In
 * exact mode (give_back false) the arena is the whole heap, and keeps them as glibc's heap keeps
 * its free chunks: sqlite3's run gave back and faulted in again 12 000 pages otherwise. */
static uint32_t run_take(uint32_t n)
{
	uint32_t h = bin_find(1, n);

	if (h == NIL && A.dirty_pages && A.give_back)
		purge(A.dirty_pages > n ? A.dirty_pages - n : 0);
	if (h == NIL)
		h = bin_find(0, n);
	if (h == NIL && (!room_at_top(n) || commit_to(A.top + n) < 0)) {
		/* No room at the top. Dirty and clean runs side by side may add up to n: return
		 * every dirty page, so that all free runs merge, and look again. */
		if (A.dirty_pages == 0)
			return NIL;
		purge(0);
		if ((h = bin_find(0, n)) == NIL)
			return NIL;
	} else if (h == NIL) {
		h = A.top;
		A.top += n;
		A.map[h].dirty = 0;
		set_run(h, n, K_NONE);
		return h;
	}
	bin_remove(h);
	uint32_t len = A.map[h].len;
	if (len > n) {
		uint32_t r = h + n;
		A.map[r].dirty = A.map[h].dirty;
		set_run(r, len - n, K_FREE);
		bin_insert(r);
		A.map[h].len = n;
		A.map[h + n - 1].head = h;
	}
	return h;
}

/* Returns dirty pages to the kernel until at most `keep` are left: largest runs first, for the
 * fewest madvise calls per byte. */
static void purge(uint64_t keep)
{
	while (A.dirty_pages > keep) {
		unsigned w = NBINS / 64;
		while (w > 0 && !A.binmask[1][w - 1])
			w--;
		if (w == 0)
			return;
		uint32_t h = A.bins[1][(w - 1) * 64 + 63 - __builtin_clzll(A.binmask[1][w - 1])];
		uint32_t len = A.map[h].len;
		bin_remove(h);
		madvise((void *)page_addr(h), (size_t)len << PAGE_SHIFT, MADV_DONTNEED);
		A.map[h].kind = K_NONE;
		free_insert(h, len, 0);
	}
}

/* Returns run h (its pages written to) to the dirty bins, merged with dirty neighbours. */
static void run_release(uint32_t h)
{
	uint32_t len = A.map[h].len;

	A.map[h].kind = K_NONE;
	free_insert(h, len, 1);
	if (A.dirty_pages > A.retain_pages)
		purge(A.retain_pages / 2);
}

/* ---- public ---- */

int lk_arena_init(uint64_t size, uint64_t retain, bool give_back)
{
	int saved = errno;
	uint64_t npages = size >> PAGE_SHIFT;

	for (unsigned i = 0, c = 0; i <= SLAB_MAX / 16; i++) {
		while (slot_size[c] < i * 16)
			c++;
		class_of16[i] = (uint8_t)c;
	}

	if (npages > UINT32_MAX - 1)
		npages = UINT32_MAX - 1;
	int r = lk_space_reserve(&A.space, npages, 2 * BOOT_PAGES, sizeof(struct page));
	if (r < 0)
		return r;
	A.map = A.space.map;
	A.npages = A.space.pages;
	A.retain_pages = retain >> PAGE_SHIFT;
	A.give_back = give_back;
	for (unsigned i = 0; i < NBINS; i++)
		A.bins[0][i] = A.bins[1][i] = NIL;
	for (unsigned i = 0; i < NCLASSES; i++)
		A.partial[i] = NIL;
	lk_arena_base = A.space.base;
	r = commit_to(BOOT_PAGES);
	if (r < 0) {
		errno = saved;
		return r;
	}
	set_run(0, BOOT_PAGES, K_BOOT);
	A.top = BOOT_PAGES;
	A.boot_next = lk_arena_base;
	A.boot_end = page_addr(BOOT_PAGES);
	lk_arena_span = (uintptr_t)A.npages << PAGE_SHIFT; /* last: owns() turns on */
	errno = saved;
	return 0;
}

void *lk_arena_boot_alloc(size_t size)
{
	size_t need = (sizeof(struct lk_block) + size + 15) & ~(size_t)15;
	uintptr_t at = __atomic_fetch_add(&A.boot_next, need, __ATOMIC_RELAXED);

	if (size > PAGE * BOOT_PAGES || at + need > A.boot_end)
		return NULL;
	struct lk_block *b = (struct lk_block *)at; /* fresh pages are zero: calloc is served */
	b->magic = LK_BLOCK_LIVE;
	b->size = size;
	b->usable = need - sizeof(*b);
	return b + 1;
}

/* The last slot freed of a class's recent ones (r->n > 0). */
static inline struct lk_block *recent_pop(struct recent *r)
{
	struct lk_block *b = r->head;

	r->head = (struct lk_block *)(uintptr_t)b->time_ns;
	r->n--;
	return b;
}

static struct lk_block *take_slow(size_t usable, size_t align);

/* A block for usable bytes at align, its header not written (the caller writes all of it). A
 * small one freed lately, inline in the sample's path; anything else in take_slow. */
LK_HOT LK_INLINE struct lk_block *lk_arena_take(size_t usable, size_t align)
{
	size_t hdr = sizeof(struct lk_block);

	if (align <= 16 && usable <= SLAB_MAX - hdr) {
		struct recent *r = &A.recent[class_of16[(usable + hdr + 15) / 16]];
		if (r->n) { /* the slot freed last: the likeliest still in the cache */
			A.live_blocks++;
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
		unsigned c = class_of16[(usable + hdr + 15) / 16];
		uint32_t s = A.partial[c];
		if (s == NIL) {
			s = run_take(1);
			if (s == NIL && lk_arena_flush_recent()) /* the recent slots' slabs may hold room */
				return take_slow(usable, align);
			if (s == NIL)
				return NULL;
			set_run(s, 1, K_SLAB);
			A.map[s].cls = (uint8_t)c;
			A.map[s].nused = 0;
			A.map[s].bits[0] = A.map[s].bits[1] = 0;
			list_push(&A.partial[c], s);
		}
		struct page *e = &A.map[s];
		unsigned w = ~e->bits[0] ? 0 : 1;
		unsigned i = w * 64 + __builtin_ctzll(~e->bits[w]);
		e->bits[w] |= 1ull << (i % 64);
		if (++e->nused == slot_count(c))
			list_remove(&A.partial[c], s);
		b = (struct lk_block *)(page_addr(s) + (uintptr_t)i * slot_size[c]);
	} else {
		if (usable > ((uint64_t)A.space.max_pages << PAGE_SHIFT) || align > (1u << 30))
			return NULL;
		uint64_t lead = align <= PAGE ? (hdr + align - 1) / align * align : align;
		uint64_t n = (lead + usable + PAGE - 1) >> PAGE_SHIFT;
		if (n > A.space.max_pages)
			return NULL;
		uint32_t h = run_take((uint32_t)n);
		if (h == NIL)
			return NULL;
		uintptr_t user = align <= PAGE ? page_addr(h) + lead
					       : ((page_addr(h) + hdr + align - 1) & ~(uintptr_t)(align - 1));
		uint32_t first = (uint32_t)((user - hdr - lk_arena_base) >> PAGE_SHIFT);
		uint32_t last = (uint32_t)((user + usable - 1 - lk_arena_base) >> PAGE_SHIFT);
		if (usable == 0)
			last = first;
		uint32_t len = A.map[h].len;
		set_run(h, len, K_NONE);
		if (first > h) { /* over-aligned: give back the pages in front of the header */
			set_run(h, first - h, K_FREE);
			run_release(h);
		}
		if (last + 1 < h + len) {
			set_run(last + 1, h + len - last - 1, K_FREE);
			run_release(last + 1);
		}
		set_run(first, last - first + 1, K_LARGE);
		A.map[first].nused = (uint16_t)(((user - hdr) & (PAGE - 1)) >> 4);
		b = (struct lk_block *)(user - hdr);
	}
	A.live_blocks++;
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

/* Resizes the live block at p to `usable` bytes without moving it, if that can be done: a slab block
 * whose new size keeps its size class, or a run that gives back whole pages at its end or takes
 * them from the free run (or the unused top of the arena) right after it. glibc does the same for a
 * chunk beside free memory, and mremap for an mmapped one: no copy, and no page fault for the bytes
 * the block already held. False, and nothing changed, when the block would have to move. */
bool lk_arena_resize(void *p, size_t usable)
{
	struct lk_block *b = (struct lk_block *)p - 1;
	size_t hdr = sizeof(*b);
	uint32_t i = (uint32_t)(((uintptr_t)b - lk_arena_base) >> PAGE_SHIFT);
	struct page *e = &A.map[i];

	if (e->kind == K_SLAB) {
		unsigned c = e->cls;
		if (usable + hdr > slot_size[c] || (c > 0 && usable + hdr <= slot_size[c - 1]))
			return false;
		b->usable = usable;
		return true;
	}
	if (e->kind != K_LARGE || usable <= SLAB_MAX - hdr ||
	    usable > ((uint64_t)A.space.max_pages << PAGE_SHIFT))
		return false;
	uint32_t len = e->len, end = i + len;
	uint64_t last = ((uintptr_t)p + usable - 1 - lk_arena_base) >> PAGE_SHIFT;
	if (last >= A.space.max_pages)
		return false;
	uint32_t want = (uint32_t)(last + 1 - i);
	if (want < len) { /* shrink: the pages past the new end go back */
		set_run(i, want, K_LARGE);
		set_run(i + want, len - want, K_FREE);
		run_release(i + want);
	} else if (want > len) {
		uint32_t more = want - len;
		if (end == A.top) {
			if (!room_at_top(more) || commit_to(A.top + more) < 0)
				return false;
			A.top += more;
		} else {
			if (A.map[end].kind != K_FREE)
				return false;
			uint32_t flen = A.map[end].len;
			if (flen < more && (end + flen != A.top || !room_at_top(more - flen) ||
					    commit_to(A.top + more - flen) < 0))
				return false;
			bin_remove(end);
			A.map[end].kind = K_NONE;
			if (flen > more) {
				uint32_t r = end + more;
				A.map[r].dirty = A.map[end].dirty;
				set_run(r, flen - more, K_FREE);
				bin_insert(r);
			} else if (flen < more) {
				A.top += more - flen;
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
	uint32_t i = (uint32_t)((hdr - lk_arena_base) >> PAGE_SHIFT);
	if (i >= A.top)
		return NULL;
	struct page *e = &A.map[i];
	if (i < BOOT_PAGES) { /* the boot area is one run; its blocks are found by magic alone */
		if (hdr + sizeof(struct lk_block) > A.boot_next || hdr + sizeof(struct lk_block) > A.boot_end)
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

/* malloc_usable_size of an arena pointer: the header's, if the header is that of a live block, with
 * no look at the page map, whose line a program that asks at each malloc and free (redis-server's
 * memory accounting) would otherwise miss in the cache every time: 3.2% of its time in exact
 * mode, docs/performance.md. For a pointer that malloc returned this is lk_arena_block's answer;
 * for one it did not (inside a block, say) glibc's answer is no more defined, and only pages
 * the arena has used are read. No lock: A.top only grows. */
size_t lk_arena_usable(const void *p)
{
	uintptr_t hdr = (uintptr_t)p - sizeof(struct lk_block);

	if ((uintptr_t)p & 15 ||
	    hdr - lk_arena_base > ((uintptr_t)A.top << PAGE_SHIFT) - sizeof(struct lk_block))
		return 0;
	const struct lk_block *b = (const struct lk_block *)hdr;
	return b->magic == LK_BLOCK_LIVE || b->magic == LK_BLOCK_QUIET ? b->usable : 0;
}

static void slot_free(struct lk_block *b);

bool lk_arena_flush_recent(void)
{
	bool any = false;

	for (unsigned c = 0; c < NCLASSES; c++)
		for (; A.recent[c].n; any = true)
			slot_free(recent_pop(&A.recent[c]));
	return any;
}

LK_HOT LK_INLINE void lk_arena_free(void *p)
{
	struct lk_block *b = (struct lk_block *)p - 1;
	uint32_t i = (uint32_t)(((uintptr_t)b - lk_arena_base) >> PAGE_SHIFT);
	struct page *e = &A.map[i];

	b->magic = LK_BLOCK_FREE;
	A.live_blocks--;
	if (e->kind == K_LARGE) {
		/* glibc keeps a freed block of this size resident from now on (its mmap threshold
		 * rises to the size of a freed mmapped chunk, and it trims only above twice that), so
		 * the arena does too: a sampled 8 MiB sort buffer is not given back and faulted in again
		 * at every reuse, where the program alone would have kept it. One and a half times the
		 * block, not glibc's twice: glibc's heap reuses what it keeps for blocks of any size,
		 * the arena only for samples. With twice, sqlite3 kept 32 MiB of freed pages through
		 * its heap's peak (1.22x of its plain peak RSS with run_take's give-back; 0.91x so). */
		if (e->len >= RETAIN_RISE_MIN && e->len <= RETAIN_RISE_MAX &&
		    e->len + e->len / 2 > A.retain_pages)
			A.retain_pages = e->len + e->len / 2;
		run_release(i);
		return;
	}
	/* A slot freed goes to its class's list of recent ones, if it has room: the next block of
	 * the class is the one freed last, as glibc's tcache hands out (and, as there, a full list
	 * lets a slot go), so that a program that frees and allocates a few blocks of a size in
	 * turn finds them where the cache holds them, rather than the lowest slot of a slab. */
	struct recent *r = &A.recent[e->cls];
	if (r->n < RECENT) {
		b->time_ns = (uintptr_t)r->head;
		r->head = b;
		r->n++;
		return;
	}
	slot_free(b);
}

/* Frees the slab slot of block b (not in its class's recent list). */
static void slot_free(struct lk_block *b)
{
	uint32_t i = (uint32_t)(((uintptr_t)b - lk_arena_base) >> PAGE_SHIFT);
	struct page *e = &A.map[i];
	unsigned c = e->cls, k = slot_of(c, (uintptr_t)b - page_addr(i));
	if (e->nused == slot_count(c))
		list_push(&A.partial[c], i);
	e->bits[k / 64] &= ~(1ull << (k % 64));
	/* An empty slab goes back to the runs unless it is its class's only one with room: a
	 * program that frees and allocates one block in a loop would otherwise give up a page and
	 * carve a new one every time. A class keeps at most one empty slab (a second one finds the
	 * first on the list and goes), so at most NCLASSES pages stay, empty. */
	if (--e->nused == 0 && (A.partial[c] != i || e->next != NIL)) {
		list_remove(&A.partial[c], i);
		run_release(i);
	}
}

void lk_arena_foreach(lk_block_visit_fn fn, void *ctx)
{
	for (uint32_t i = BOOT_PAGES; i < A.top; i += A.map[i].len) {
		struct page *e = &A.map[i];
		if (e->kind == K_LARGE) {
			struct lk_block *b = (struct lk_block *)(page_addr(i) + ((uintptr_t)e->nused << 4));
			if (b->magic == LK_BLOCK_LIVE) /* quiet blocks are not samples */
				fn(b, b + 1, ctx);
		} else if (e->kind == K_SLAB) {
			for (unsigned k = 0; k < slot_count(e->cls); k++)
				if (e->bits[k / 64] >> (k % 64) & 1) {
					struct lk_block *b = (struct lk_block *)(page_addr(i) + k * slot_size[e->cls]);
					if (b->magic == LK_BLOCK_LIVE)
						fn(b, b + 1, ctx);
				}
		}
	}
}

void lk_arena_get_stats(struct lk_arena_stats *s)
{
	s->reserved = (uint64_t)A.npages << PAGE_SHIFT;
	s->as_limit = A.space.limit;
	s->first_reserved = (uint64_t)A.space.first_pages << PAGE_SHIFT;
	s->max_reserved = (uint64_t)A.space.max_pages << PAGE_SHIFT;
	s->committed = (uint64_t)A.committed << PAGE_SHIFT;
	s->used_pages = A.top - A.free_pages;
	s->free_pages = A.free_pages;
	s->dirty_pages = A.dirty_pages;
	s->live_blocks = A.live_blocks;
	s->retain = A.retain_pages << PAGE_SHIFT;
}

/* Checks every invariant (mimalloc's page_is_valid, for the whole arena). */
bool lk_arena_check(void)
{
	uint64_t free_pages = 0, dirty = 0, live = 0;
	uint8_t prev_kind = K_NONE, prev_dirty = 0, empty_seen[NCLASSES] = { 0 };

	if (A.top > A.committed || A.committed > A.npages || A.map[0].kind != K_BOOT)
		return false;
	for (uint32_t i = 0; i < A.top;) {
		struct page *e = &A.map[i];
		if (e->len == 0 || i + e->len > A.top || A.map[i + e->len - 1].head != i)
			return false;
		for (uint32_t j = i + 1; j < i + e->len; j++)
			if (A.map[j].kind != K_NONE)
				return false;
		switch (e->kind) {
		case K_FREE: {
			if (e->dirty > 1 || (prev_kind == K_FREE && prev_dirty == e->dirty))
				return false; /* not coalesced */
			free_pages += e->len;
			dirty += e->dirty ? e->len : 0;
			bool found = false;
			uint32_t k = A.bins[e->dirty][bin_of(e->len)];
			for (; k != NIL; k = A.map[k].next)
				found |= k == i;
			if (!found)
				return false;
			break;
		}
		case K_SLAB: {
			unsigned n = __builtin_popcountll(e->bits[0]) + __builtin_popcountll(e->bits[1]);
			if (e->len != 1 || e->cls >= NCLASSES || n != e->nused ||
			    n > slot_count(e->cls))
				return false;
			bool listed = false;
			for (uint32_t k = A.partial[e->cls]; k != NIL; k = A.map[k].next)
				listed |= k == i;
			if (listed != (n < slot_count(e->cls)))
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
		default:
			return false;
		}
		prev_kind = e->kind;
		prev_dirty = e->dirty;
		i += e->len;
	}
	for (unsigned d = 0; d < 2; d++)
		for (unsigned b = 0; b < NBINS; b++) {
			bool nonempty = A.bins[d][b] != NIL;
			if (nonempty != !!(A.binmask[d][b / 64] >> (b % 64) & 1))
				return false;
			for (uint32_t k = A.bins[d][b]; k != NIL; k = A.map[k].next)
				if (A.map[k].kind != K_FREE || bin_of(A.map[k].len) != b ||
				    A.map[k].dirty != d)
					return false;
		}
	uint64_t listed = 0;
	for (unsigned c = 0; c < NCLASSES; c++) {
		const struct recent *r = &A.recent[c];
		const struct lk_block *b = r->head;
		if (r->n > RECENT)
			return false;
		for (uint32_t j = 0; j < r->n; j++, b = (const struct lk_block *)(uintptr_t)b->time_ns) {
			uintptr_t off = (uintptr_t)b - lk_arena_base;
			uint32_t i = (uint32_t)(off >> PAGE_SHIFT);
			if (off >= (uintptr_t)A.top << PAGE_SHIFT || A.map[i].kind != K_SLAB ||
			    A.map[i].cls != c || b->magic != LK_BLOCK_FREE ||
			    !slot_in_use(&A.map[i], off & (PAGE - 1)))
				return false; /* a freed slot still marked in use, for the list */
			const struct lk_block *x = r->head;
			for (uint32_t l = 0; l < j; l++, x = (const struct lk_block *)(uintptr_t)x->time_ns)
				if (x == b)
					return false;
			listed++;
		}
	}
	return free_pages == A.free_pages && dirty == A.dirty_pages &&
	       live == A.live_blocks + listed && A.dirty_pages <= A.retain_pages;
}
