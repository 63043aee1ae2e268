/* arena-space.c: where the arena's address range and its page map come from.
 *
 * Without an address-space limit the arena reserves LEEK_ARENA_SIZE (64 GiB) at once: PROT_NONE and
 * MAP_NORESERVE, so it costs no memory, only addresses, of which a 47-bit process has 128 TiB.
 *
 * Under a limit (RLIMIT_AS, `ulimit -v`), every page reserved counts against what the program may
 * map, used or not: a 64 GiB reservation does not fit, and the largest that fits leaves the program
 * nothing (a 1 GiB arena under a 1.14 GiB limit left a program that allocates 700 MiB failing
 * early: tests/preload/aslimit.c). So the arena reserves a sixteenth of the room the limit leaves
 * (RESERVE_SHARE), and when sampled blocks fill it, grows in place by the larger of what they need
 * and a sixteenth of the room left then: what it holds unused is at most a sixteenth of what the
 * program could still map. The page map is reserved whole for the largest arena the limit allows,
 * 40 bytes a page (1% of the limit), so that it never moves. Growing in place needs free addresses
 * above the arena, so the arena is placed below the addresses the kernel hands out next (it gives
 * them top-down), at a distance that the program's own mappings cannot cover under the limit: twice
 * the limit and the arena's largest size. Where the kernel cannot put it there, or the addresses
 * above are taken after all, the arena stays the size it has and a block it cannot hold goes to the
 * real allocator, counted (arena_full).
 *
 * Never: take more than a sixteenth of the room left under a limit at once, move the arena (free
 * compares pointers with its base and length without a lock), or map over anything (growth uses
 * MAP_FIXED_NOREPLACE, and checks the address it got on kernels that take that flag as a hint).
 */
#include <errno.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "arena.h"
#include "preload.h"

#define RESERVE_SHARE 16
#define STEP_PAGES (COMMIT_STEP >> PAGE_SHIFT) /* the least growth: the arena's commit step */
#define MAP_FLAGS (MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE)
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000 /* Linux 4.17 */
#endif

/* The bytes the process has mapped (statm's first field), or the limit itself when it cannot be
 * read: then the arena gets no more room. */
static uint64_t mapped_bytes(uint64_t limit)
{
	uint64_t pages;

	return lk_proc_statm(0, &pages) ? pages * PAGE : limit;
}

/* A sixteenth of what the limit still leaves, in pages. */
static uint64_t share(const struct lk_space *s)
{
	uint64_t used = mapped_bytes(s->limit);

	return s->limit > used ? (s->limit - used) / RESERVE_SHARE >> PAGE_SHIFT : 0;
}

/* Where an arena that must grow upwards goes: below the next addresses the kernel would hand out,
 * far enough for the program's mappings, which the limit bounds, not to reach it. NULL: anywhere
 * (no room for such a distance, as under a limit of many TiB). */
static void *below_next_mappings(const struct lk_space *s)
{
	void *probe = mmap(NULL, PAGE, PROT_NONE, MAP_FLAGS, -1, 0);

	if (probe == MAP_FAILED)
		return NULL;
	munmap(probe, PAGE);
	uint64_t distance = 2 * s->limit + ((uint64_t)s->max_pages << PAGE_SHIFT);
	if ((uintptr_t)probe / 4 < distance)
		return NULL;
	return (void *)(((uintptr_t)probe - distance) & ~(uintptr_t)(PAGE - 1));
}

int lk_space_reserve(struct lk_space *s, uint64_t pages, uint64_t min_pages, size_t entry_size)
{
	int saved = errno;
	struct rlimit rl;
	void *hint = NULL;

	if (pages < min_pages)
		pages = min_pages;
	s->limit = 0;
	s->max_pages = (uint32_t)pages;
	if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
		s->limit = rl.rlim_cur;
		if (s->max_pages > s->limit >> PAGE_SHIFT)
			s->max_pages = (uint32_t)(s->limit >> PAGE_SHIFT);
		if (s->max_pages < min_pages)
			s->max_pages = (uint32_t)min_pages;
		uint64_t first = share(s);
		pages = first < min_pages ? min_pages : first > s->max_pages ? s->max_pages : first;
		hint = below_next_mappings(s);
	}
	void *base, *map;
	/* Halving, for a cap that no limit tells of (valgrind's own address space). */
	for (;;) {
		base = mmap(hint, pages << PAGE_SHIFT, PROT_NONE, MAP_FLAGS, -1, 0);
		map = mmap(NULL, (size_t)s->max_pages * entry_size, PROT_NONE, MAP_FLAGS, -1, 0);
		if (base != MAP_FAILED && map != MAP_FAILED)
			break;
		int r = -errno;
		if (base != MAP_FAILED)
			munmap(base, pages << PAGE_SHIFT);
		if (map != MAP_FAILED)
			munmap(map, (size_t)s->max_pages * entry_size);
		if (pages < 2 * min_pages) {
			errno = saved;
			return r;
		}
		pages /= 2;
		s->max_pages = s->limit && s->max_pages / 2 > pages ? s->max_pages / 2 : (uint32_t)pages;
	}
	s->base = (uintptr_t)base;
	s->map = map;
	s->pages = (uint32_t)pages;
	s->first_pages = s->pages;
	errno = saved;
	return 0;
}

uint32_t lk_space_grow(struct lk_space *s, uint64_t need)
{
	int saved = errno;

	if (!s->limit || s->pages >= s->max_pages || need > s->max_pages - s->pages)
		return 0;
	uint64_t more = share(s);
	if (more < need)
		more = need;
	if (more < STEP_PAGES)
		more = STEP_PAGES;
	if (more > s->max_pages - s->pages)
		more = s->max_pages - s->pages;
	void *at = (void *)(s->base + ((uintptr_t)s->pages << PAGE_SHIFT));
	void *p = mmap(at, more << PAGE_SHIFT, PROT_NONE, MAP_FLAGS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p != MAP_FAILED && p != at) {
		munmap(p, more << PAGE_SHIFT);
		p = MAP_FAILED;
	}
	errno = saved;
	if (p == MAP_FAILED)
		return 0;
	s->pages += (uint32_t)more;
	return (uint32_t)more;
}
