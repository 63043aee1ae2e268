/* arena-runs.c: the arena's runs of pages: free bins, what stays resident, the committed top.
 *
 * The arena's range is a sequence of runs of whole pages (arena.c). A free run is dirty (freed, its
 * pages still resident) or clean (given back to the kernel, or never touched), coalesced with free
 * neighbours in the same state and kept in size bins, one set for each state. New blocks take
 * dirty pages first, so they cost no page faults while there are some; up to `retain` bytes of
 * dirty pages stay (exactly: a clean run never counts as dirty), and the excess is returned with
 * MADV_DONTNEED in batches, down to half of `retain`; a request that no dirty run can hold gives
 * back as many dirty pages as it is about to fault in. Above the runs, the range is made
 * read-write COMMIT_STEP at a time, the page map with it, and grown under an address-space limit
 * (arena-space.c).
 *
 * Never: touch a page it has not committed; leave two free runs in the same state side by side;
 * keep more dirty pages than `retain` allows; call malloc or stdio. Caller holds lk_lock.
 */
#include <errno.h>
#include <sys/mman.h>

#include "arena.h"
#include "preload.h"

void lk_bin_insert(uint32_t h)
{
	unsigned b = bin_of(arena.map[h].len), d = arena.map[h].dirty;

	list_push(&arena.bins[d][b], h);
	arena.binmask[d][b / 64] |= 1ull << (b % 64);
	arena.free_pages += arena.map[h].len;
	arena.dirty_pages += d ? arena.map[h].len : 0;
}

void lk_bin_remove(uint32_t h)
{
	unsigned b = bin_of(arena.map[h].len), d = arena.map[h].dirty;

	list_remove(&arena.bins[d][b], h);
	if (arena.bins[d][b] == NIL)
		arena.binmask[d][b / 64] &= ~(1ull << (b % 64));
	arena.free_pages -= arena.map[h].len;
	arena.dirty_pages -= d ? arena.map[h].len : 0;
}

/* Makes [h, h + len) a free run in the dirty or the clean bins, merged with the free runs beside it
 * that are in the same state. A dirty run and a clean one may touch: the arena knows exactly which
 * free pages still hold memory, and hands those out first. */
static void free_insert(uint32_t h, uint32_t len, uint8_t dirty)
{
	uint32_t r = h + len;

	if (r < arena.top && arena.map[r].kind == K_FREE && arena.map[r].dirty == dirty) {
		lk_bin_remove(r);
		len += arena.map[r].len;
		arena.map[r].kind = K_NONE;
	}
	if (h > 0) {
		uint32_t p = arena.map[h - 1].head;
		if (p < h && arena.map[p].kind == K_FREE && arena.map[p].dirty == dirty &&
		    p + arena.map[p].len == h) {
			lk_bin_remove(p);
			len += arena.map[p].len;
			arena.map[h].kind = K_NONE;
			h = p;
		}
	}
	arena.map[h].dirty = dirty;
	set_run(h, len, K_FREE);
	lk_bin_insert(h);
}

int lk_run_commit(uint32_t pages)
{
	if (pages <= arena.committed)
		return 0;
	uint64_t step = COMMIT_STEP >> PAGE_SHIFT;
	uint64_t want = (pages + step - 1) / step * step;
	if (want > arena.npages)
		want = arena.npages;
	size_t off = (size_t)arena.committed << PAGE_SHIFT;
	size_t len = (size_t)(want - arena.committed) << PAGE_SHIFT;
	size_t moff = (size_t)arena.committed * sizeof(struct page) & ~(size_t)(PAGE - 1);
	size_t mend = ((size_t)want * sizeof(struct page) + PAGE - 1) & ~(size_t)(PAGE - 1);

	if (mprotect((char *)arena.map + moff, mend - moff, PROT_READ | PROT_WRITE) < 0)
		return -errno;
	if (mprotect((char *)lk_arena_base + off, len, PROT_READ | PROT_WRITE) < 0)
		return -errno;
	arena.committed = (uint32_t)want;
	return 0;
}

/* Whether n more pages fit above arena.top, the reservation grown for them if it must and can
 * (under an address-space limit: arena-space.c). */
bool lk_run_room(uint64_t n)
{
	if (n <= arena.npages - arena.top)
		return true;
	if (!lk_space_grow(&arena.space, arena.top + n - arena.npages))
		return false;
	arena.npages = arena.space.pages;
	/* Free reads the span without the lock: a pointer it is handed from the new pages comes
	 * from an allocation that saw the store. */
	__atomic_store_n(&lk_arena_span, (uintptr_t)arena.npages << PAGE_SHIFT, __ATOMIC_RELEASE);
	return true;
}

/* The smallest free run of at least n pages in the dirty (d = 1) or clean bins, or NIL. */
static uint32_t bin_find(unsigned d, uint32_t n)
{
	unsigned b = bin_of(n);
	uint32_t h = NIL;

	if (b >= 64)
		for (uint32_t i = arena.bins[d][b]; i != NIL; i = arena.map[i].next)
			if (arena.map[i].len >= n) {
				h = i;
				break;
			}
	for (unsigned w = (b + (h == NIL && b >= 64)) / 64; h == NIL && w < NBINS / 64; w++) {
		uint64_t m = arena.binmask[d][w];
		unsigned first = b + (b >= 64);
		if (w == first / 64)
			m &= ~0ull << (first % 64);
		if (m)
			h = arena.bins[d][w * 64 + __builtin_ctzll(m)];
	}
	return h;
}

static void purge(uint64_t keep);

/* Takes a free run of at least n pages, splitting it; returns its head or NIL. Retained (dirty)
 * pages first, so that a new block costs no page faults while the arena holds freed memory. When
 * no retained run is long enough, the block is about to fault n pages in: as many retained pages
 * go back to the kernel first, the ones that could not serve it, so that keeping freed pages
 * never makes the arena grow past what it holds live and retains (without it, python3.11's peak
 * RSS under leek rose past its plain run's: bench/real.sh, docs/performance.md). In exact mode
 * (give_back false) the arena is the whole heap, and keeps them as glibc's heap keeps its free
 * chunks: giving them back made sqlite3's exact run fault the same pages in again and again
 * (bench/faults-real.sh). */
uint32_t lk_run_take(uint32_t n)
{
	uint32_t h = bin_find(1, n);

	if (h == NIL && arena.dirty_pages && arena.give_back)
		purge(arena.dirty_pages > n ? arena.dirty_pages - n : 0);
	if (h == NIL)
		h = bin_find(0, n);
	if (h == NIL && (!lk_run_room(n) || lk_run_commit(arena.top + n) < 0)) {
		/* No room at the top. Dirty and clean runs side by side may add up to n: return
		 * every dirty page, so that all free runs merge, and look again. */
		if (arena.dirty_pages == 0)
			return NIL;
		purge(0);
		if ((h = bin_find(0, n)) == NIL)
			return NIL;
	} else if (h == NIL) {
		h = arena.top;
		arena.top += n;
		arena.map[h].dirty = 0;
		set_run(h, n, K_NONE);
		return h;
	}
	lk_bin_remove(h);
	uint32_t len = arena.map[h].len;
	if (len > n) {
		uint32_t r = h + n;
		arena.map[r].dirty = arena.map[h].dirty;
		set_run(r, len - n, K_FREE);
		lk_bin_insert(r);
		arena.map[h].len = n;
		arena.map[h + n - 1].head = h;
	}
	return h;
}

/* Returns dirty pages to the kernel until at most `keep` are left: largest runs first, for the
 * fewest madvise calls per byte. */
static void purge(uint64_t keep)
{
	while (arena.dirty_pages > keep) {
		unsigned w = NBINS / 64;
		while (w > 0 && !arena.binmask[1][w - 1])
			w--;
		if (w == 0)
			return;
		unsigned bin = (w - 1) * 64 + 63 - __builtin_clzll(arena.binmask[1][w - 1]);
		uint32_t h = arena.bins[1][bin];
		uint32_t len = arena.map[h].len;
		lk_bin_remove(h);
		madvise((void *)page_addr(h), (size_t)len << PAGE_SHIFT, MADV_DONTNEED);
		arena.map[h].kind = K_NONE;
		free_insert(h, len, 0);
	}
}

/* Returns run h (its pages written to) to the dirty bins, merged with dirty neighbours. */
void lk_run_release(uint32_t h)
{
	uint32_t len = arena.map[h].len;

	arena.map[h].kind = K_NONE;
	free_insert(h, len, 1);
	if (arena.dirty_pages > arena.retain_pages)
		purge(arena.retain_pages / 2);
}
