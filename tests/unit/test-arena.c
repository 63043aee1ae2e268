/* test-arena.c: src/preload/arena.c on its own, checked after every operation.
 *
 * Each test initialises a fresh arena (the harness runs every test in its own forked child) and
 * drives it with a fixed-seed random mix of allocations and frees, asserting lk_arena_check()
 * after every call, the alignment of every pointer, a fill pattern over every block's whole usable
 * size (so that two blocks that overlap, or a header that overlaps a block, show up), what
 * lk_arena_block answers for live, freed, interior, misaligned and foreign pointers, what
 * lk_arena_foreach visits, the dirty-page bound and the number of kernel mappings.
 *
 * Never: call malloc between the two counts of /proc/self/maps (a malloc of a large block would
 * add a mapping of its own). All bookkeeping lives in static arrays for that reason.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "harness.h"
#include "preload.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)
#define MAX_LIVE 96
#define RECENT 64

struct slot {
	uint8_t *p;
	size_t usable, align;
	uint64_t tag;
};

/* libleek's table of thread records (threads.c), whose own lists of slots the arena keeps and
 * checks: the arena's library has no threads.c, so the test holds the table. */
struct lk_trec lk_trecs[LK_TRECS];

static struct slot live[MAX_LIVE];
static unsigned nlive;
static uintptr_t recent_freed[RECENT]; /* pointers freed lately, for lk_arena_block */
static unsigned nrecent;
static uint64_t rng_state;

/* splitmix64: a fixed stream, independent of libc's rand. */
static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rnd_below(uint64_t n)
{
	return rnd() % n;
}

/* ---- fill patterns: word i of a block holds tag ^ i, the tail bytes the tag's low byte ---- */

static void fill(const struct slot *s)
{
	uint64_t *w = (uint64_t *)s->p;
	size_t nw = s->usable / 8;

	for (size_t i = 0; i < nw; i++)
		w[i] = s->tag ^ i;
	memset(s->p + nw * 8, (int)(s->tag & 0xff), s->usable % 8);
}

static bool verify(const struct slot *s)
{
	const uint64_t *w = (const uint64_t *)s->p;
	size_t nw = s->usable / 8;

	for (size_t i = 0; i < nw; i++)
		if (w[i] != (s->tag ^ i))
			return false;
	for (size_t i = nw * 8; i < s->usable; i++)
		if (s->p[i] != (uint8_t)(s->tag & 0xff))
			return false;
	return true;
}

/* ---- /proc/self/maps, read without malloc ---- */

static char maps_buf[1 << 20];

static unsigned count_mappings(void)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	size_t total = 0;
	ssize_t n;
	unsigned lines = 0;

	ASSERT_TRUE(fd >= 0);
	while (total < sizeof(maps_buf) && (n = read(fd, maps_buf + total, sizeof(maps_buf) - total)) > 0)
		total += (size_t)n;
	close(fd);
	ASSERT_TRUE(total < sizeof(maps_buf));
	for (size_t i = 0; i < total; i++)
		lines += maps_buf[i] == '\n';
	return lines;
}

/* ---- operations, each followed by the checker ---- */

static size_t random_size(void)
{
	/* Log-uniform over 0..3 MiB, so that slabs, small runs and large runs all get traffic and
	 * the patterns stay cheap to write. */
	switch (rnd_below(8)) {
	case 0:
		return rnd_below(65);
	case 1:
	case 2:
	case 3:
		return rnd_below(2049);
	case 4:
	case 5:
		return rnd_below(64 * KIB + 1);
	case 6:
		return rnd_below(512 * KIB + 1);
	default:
		return rnd_below(3 * MIB + 1);
	}
}

static size_t random_align(void)
{
	/* Half of the blocks plain (16), the rest a power of two from 1 to 1 MiB: 1 and 8 must still
	 * give 16-aligned blocks. */
	if (rnd_below(2))
		return 16;
	return (size_t)1 << rnd_below(21);
}

static void check_block(const struct slot *s)
{
	struct lk_block *b = lk_arena_block(s->p);

	ASSERT_TRUE(b != NULL);
	ASSERT_TRUE((uint8_t *)(b + 1) == s->p);
	ASSERT_EQ(b->magic, LK_BLOCK_LIVE);
	ASSERT_EQ(b->usable, s->usable);
	ASSERT_TRUE(lk_arena_owns(s->p));
	ASSERT_TRUE(!lk_arena_is_boot(s->p));
}

static bool do_alloc(size_t usable, size_t align)
{
	ASSERT_TRUE(nlive < MAX_LIVE);
	uint8_t *p = lk_arena_alloc(usable, align);
	ASSERT_TRUE(lk_arena_check());
	if (!p)
		return false;
	struct slot *s = &live[nlive++];
	s->p = p;
	s->usable = usable;
	s->align = align;
	s->tag = rnd() | 1;
	ASSERT_EQ((uintptr_t)p % 16, 0);
	ASSERT_EQ((uintptr_t)p % (align ? align : 1), 0);
	check_block(s);
	fill(s);
	/* The header is the arena's: the block's own bytes must not have reached it. */
	ASSERT_EQ(lk_arena_block(p)->usable, usable);
	return true;
}

static void do_free(unsigned i)
{
	struct slot *s = &live[i];
	uint8_t *p = s->p;

	if (!verify(s))
		FAIL("block %p (%zu bytes, align %zu) was overwritten", (void *)p, s->usable,
		     s->align);
	check_block(s);
	lk_arena_free(p);
	ASSERT_TRUE(lk_arena_check());
	ASSERT_TRUE(lk_arena_block(p) == NULL);
	recent_freed[nrecent++ % RECENT] = (uintptr_t)p;
	*s = live[--nlive];
}

static bool is_live(uintptr_t p)
{
	for (unsigned i = 0; i < nlive; i++)
		if ((uintptr_t)live[i].p == p)
			return true;
	return false;
}

/* lk_arena_block must refuse everything that is not the start of a live block. */
static void check_lookups(void)
{
	static int on_stack_marker;
	void *outside[] = { NULL, &on_stack_marker, (void *)lk_arena_base, (void *)(lk_arena_base - 4096),
			    (void *)(lk_arena_base + lk_arena_span), (void *)(lk_arena_base + lk_arena_span + 32),
			    (void *)maps_buf };

	for (size_t i = 0; i < sizeof(outside) / sizeof(outside[0]); i++)
		ASSERT_TRUE(lk_arena_block(outside[i]) == NULL);
	for (unsigned i = 0; i < RECENT && i < nrecent; i++)
		if (!is_live(recent_freed[i]))
			ASSERT_TRUE(lk_arena_block((void *)recent_freed[i]) == NULL);
	for (unsigned i = 0; i < nlive; i++) {
		const struct slot *s = &live[i];
		check_block(s);
		for (size_t k = 1; k < 16; k *= 2) /* misaligned */
			ASSERT_TRUE(lk_arena_block(s->p + k) == NULL);
		/* Interior pointers, 16-aligned: the next one, the middle, a page in, the last. */
		size_t offs[] = { 16, s->usable / 2 & ~(size_t)15, 4096, 4096 + 32, (s->usable - 1) & ~(size_t)15 };
		for (size_t k = 0; k < sizeof(offs) / sizeof(offs[0]); k++)
			if (offs[k] && offs[k] < s->usable)
				ASSERT_TRUE(lk_arena_block(s->p + offs[k]) == NULL);
	}
}

/* ---- foreach ---- */

static uintptr_t visited[MAX_LIVE + 1];
static unsigned nvisited;
static bool visit_bad;

static void visit(struct lk_block *b, void *user, void *ctx)
{
	if (ctx != (void *)visited || (void *)(b + 1) != user || b->magic != LK_BLOCK_LIVE ||
	    nvisited > MAX_LIVE) {
		visit_bad = true;
		return;
	}
	visited[nvisited++] = (uintptr_t)user;
}

static int cmp_uptr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;

	return x < y ? -1 : x > y;
}

static void check_foreach(void)
{
	static uintptr_t want[MAX_LIVE];

	nvisited = 0;
	visit_bad = false;
	lk_arena_foreach(visit, visited);
	ASSERT_TRUE(!visit_bad);
	ASSERT_EQ(nvisited, nlive);
	for (unsigned i = 0; i < nlive; i++)
		want[i] = (uintptr_t)live[i].p;
	qsort(want, nlive, sizeof(want[0]), cmp_uptr);
	qsort(visited, nvisited, sizeof(visited[0]), cmp_uptr);
	for (unsigned i = 0; i < nlive; i++)
		ASSERT_EQ(visited[i], want[i]);

	struct lk_arena_stats st;
	lk_arena_get_stats(&st);
	ASSERT_EQ(st.live_blocks, nlive);
}

/* ---- tests ---- */

/* Fixed-seed random allocs and frees, up to MAX_LIVE blocks of 0..3 MiB. */
TEST(arena_random)
{
	const uint64_t retain = 4 * MIB;
	struct lk_arena_stats st;

	rng_state = 42;
	ASSERT_OK(lk_arena_init(1ull << 30, retain, true));
	ASSERT_TRUE(lk_arena_check());
	for (unsigned op = 0; op < 6000; op++) {
		/* Grow towards MAX_LIVE / 2, with swings. */
		bool alloc = nlive == 0 || (nlive < MAX_LIVE && rnd_below(MAX_LIVE) >= nlive / 2 + 8);
		if (alloc)
			ASSERT_TRUE(do_alloc(random_size(), random_align()));
		else
			do_free((unsigned)rnd_below(nlive));
		lk_arena_get_stats(&st);
		ASSERT_TRUE(st.dirty_pages * 4096 <= st.retain);
		ASSERT_EQ(st.live_blocks, nlive);
		if (op % 97 == 0) {
			check_lookups();
			check_foreach();
		}
	}
	check_lookups();
	check_foreach();
	while (nlive)
		do_free(nlive - 1);
	check_foreach();
	lk_arena_get_stats(&st);
	/* Only the boot area is left, at most one empty slab for each of the 20 size classes, and
	 * the slabs of the slots each class keeps to hand out again. */
	ASSERT_TRUE(st.used_pages >= 64 && st.used_pages <= 64 + 20 + 20 * LK_ARENA_RECENT);
	ASSERT_TRUE(lk_arena_flush_recent());
	ASSERT_TRUE(lk_arena_check());
	ASSERT_TRUE(!lk_arena_flush_recent());
	lk_arena_get_stats(&st);
	ASSERT_TRUE(st.used_pages >= 64 && st.used_pages <= 64 + 20);
	ASSERT_TRUE(st.dirty_pages * 4096 <= st.retain);
}

/* Every alignment from 1 to 1 MiB, at sizes around the slab/run boundaries. */
TEST(arena_alignments)
{
	static const size_t sizes[] = { 0, 1, 15, 16, 17, 2016, 2017, 4064, 4065, 4096, 12345, 1 << 20 };

	rng_state = 7;
	ASSERT_OK(lk_arena_init(1ull << 30, 4 * MIB, true));
	for (size_t a = 1; a <= MIB; a *= 2)
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			ASSERT_TRUE(do_alloc(sizes[i], a));
			if (nlive == MAX_LIVE || rnd_below(3) == 0)
				do_free((unsigned)rnd_below(nlive));
		}
	check_lookups();
	check_foreach();
	while (nlive)
		do_free((unsigned)rnd_below(nlive));
	check_foreach();
}

/* A slot freed is the next one its class hands out: of a run of frees, the first LK_ARENA_RECENT
 * are kept and come back last freed first (glibc's tcache keeps so), and the next free after an
 * allocation is the next one handed out. The slots kept never cost a block room: an arena full
 * of slabs of one class gives them up to a request of another class. */
TEST(arena_recent)
{
	static uint8_t *p[40], *q[40];
	const unsigned pages = 256 - 64; /* the arena's, less the boot area */
	unsigned n = 0;

	ASSERT_OK(lk_arena_init(256 * 4096, 1 * MIB, true));
	for (unsigned i = 0; i < 40; i++)
		ASSERT_TRUE((p[i] = lk_arena_alloc(100, 16)) != NULL);
	for (unsigned i = 0; i < 40; i++) {
		lk_arena_free(p[i]);
		ASSERT_TRUE(lk_arena_block(p[i]) == NULL);
		ASSERT_TRUE(lk_arena_check());
	}
	for (unsigned i = 0; i < 40; i++) {
		ASSERT_TRUE((q[i] = lk_arena_alloc(100, 16)) != NULL);
		if (i < LK_ARENA_RECENT)
			ASSERT_TRUE(q[i] == p[LK_ARENA_RECENT - 1 - i]);
		ASSERT_TRUE(lk_arena_check());
	}
	for (unsigned i = 0; i < 40; i += 2) { /* churn: each free's slot is the next block */
		lk_arena_free(q[i]);
		ASSERT_TRUE(lk_arena_alloc(100, 16) == q[i]);
	}
	for (unsigned i = 0; i < 40; i++)
		lk_arena_free(q[i]);

	/* Two slots a page of the largest class, until the arena is full; then all freed, the
	 * last ones kept. */
	static uint8_t *big[2 * 192];
	unsigned nbig = 0;
	while (nbig < 2 * pages && (big[nbig] = lk_arena_alloc(2000, 16)))
		nbig++;
	ASSERT_TRUE(nbig > 2 * pages - 4 && lk_arena_alloc(2000, 16) == NULL);
	for (unsigned i = 0; i < nbig; i++)
		lk_arena_free(big[i]);
	ASSERT_TRUE(lk_arena_check());
	/* 85 slots a page of the smallest class take every page but the one empty slab that each
	 * of the two classes used keeps. */
	while (lk_arena_alloc(16, 16))
		n++;
	ASSERT_TRUE(lk_arena_check());
	ASSERT_TRUE(n >= (pages - 2) * (4096 / 48));
}

/* The slots on a thread's own lists, of every class. */
static uint32_t listed(const struct lk_trec *r)
{
	uint32_t n = 0;

	for (unsigned c = 0; c < LK_ARENA_CLASSES; c++)
		n += r->recent[c].n;
	return n;
}

/* A thread's own lists (threads.c): a thread that allocates more than it frees gets slots in
 * batches of RECENT / 2 (lk_arena_fill_own), one that frees more gives half its list back when it
 * is full (lk_arena_free_spill), it keeps one run for a block of as many pages, and a thread
 * that exits gives every slot back (lk_arena_give_back). The invariants hold at every step: a listed slot is neither free nor
 * live, and the live count adds the threads' shares. */
TEST(arena_own_lists)
{
	static struct lk_block *b[64];
	struct lk_trec *r = &lk_trecs[0], *s = &lk_trecs[1];
	struct lk_arena_stats st;

	ASSERT_OK(lk_arena_init(1ull << 30, 1 * MIB, true));
	*r = (struct lk_trec){ .used = 1 };
	*s = (struct lk_trec){ .used = 1 };
	ASSERT_TRUE(lk_arena_take_own(r, 100) == NULL); /* nothing freed here yet */
	ASSERT_TRUE(lk_arena_fill_own(r, 100));
	ASSERT_EQ(listed(r), LK_ARENA_RECENT / 2);
	ASSERT_TRUE(lk_arena_check());
	lk_arena_get_stats(&st);
	ASSERT_EQ(st.live_blocks, 0);
	for (unsigned i = 0; i < LK_ARENA_RECENT / 2; i++) {
		ASSERT_TRUE((b[i] = lk_arena_take_own(r, 100)) != NULL);
		*b[i] = (struct lk_block){ .usable = 100, .magic = LK_BLOCK_LIVE };
		ASSERT_TRUE(lk_arena_block(b[i] + 1) == b[i]);
	}
	ASSERT_TRUE(lk_arena_take_own(r, 100) == NULL);
	ASSERT_TRUE(lk_arena_check());
	lk_arena_get_stats(&st);
	ASSERT_EQ(st.live_blocks, LK_ARENA_RECENT / 2);
	/* Another thread frees them all, and more, from the shared arena: its list fills, then
	 * spills half back. */
	for (unsigned i = LK_ARENA_RECENT / 2; i < 40; i++) {
		ASSERT_TRUE((b[i] = lk_arena_take(100, 16)) != NULL);
		*b[i] = (struct lk_block){ .usable = 100, .magic = LK_BLOCK_LIVE };
	}
	for (unsigned i = 0; i < 40; i++) {
		if (!lk_arena_free_own(s, b[i]))
			lk_arena_free_spill(s, b[i]);
		ASSERT_TRUE(lk_arena_block(b[i] + 1) == NULL); /* a second free is caught */
		ASSERT_TRUE(lk_arena_check());
	}
	ASSERT_TRUE(listed(s) >= LK_ARENA_RECENT / 2 && listed(s) <= LK_ARENA_RECENT);
	lk_arena_get_stats(&st);
	ASSERT_EQ(st.live_blocks, 0);
	/* A thread keeps one run, freed, and hands it out again for a block of as many pages. */
	struct lk_block *big = lk_arena_take(64 * KIB, 16), *big2 = lk_arena_take(64 * KIB, 16);
	ASSERT_TRUE(big != NULL && big2 != NULL);
	*big = (struct lk_block){ .usable = 64 * KIB, .magic = LK_BLOCK_LIVE };
	*big2 = (struct lk_block){ .usable = 64 * KIB, .magic = LK_BLOCK_LIVE };
	ASSERT_TRUE(lk_arena_free_own(s, big));
	ASSERT_TRUE(lk_arena_block(big + 1) == NULL);
	ASSERT_TRUE(!lk_arena_free_own(s, big2)); /* one run a thread */
	lk_arena_free_spill(s, big2);
	ASSERT_TRUE(lk_arena_check());
	ASSERT_TRUE(lk_arena_take_own(s, 128 * KIB) == NULL); /* more pages than it has */
	ASSERT_TRUE(lk_arena_take_own(s, 64 * KIB - 16) == big); /* 17 pages, as 64 KiB */
	*big = (struct lk_block){ .usable = 64 * KIB - 16, .magic = LK_BLOCK_LIVE };
	ASSERT_TRUE(lk_arena_check());
	ASSERT_TRUE(lk_arena_free_own(s, big));
	ASSERT_TRUE(lk_arena_check());
	/* Larger than LK_ARENA_OWN_RUN pages: freed under lk_lock as before. */
	struct lk_block *huge = lk_arena_take((size_t)LK_ARENA_OWN_RUN * 4096, 16);
	ASSERT_TRUE(huge != NULL);
	*huge = (struct lk_block){ .usable = (size_t)LK_ARENA_OWN_RUN * 4096,
				   .magic = LK_BLOCK_LIVE };
	ASSERT_TRUE(!lk_arena_free_own(r, huge));
	lk_arena_free_spill(r, huge);
	ASSERT_TRUE(lk_arena_check());
	/* Both threads exit. */
	lk_arena_give_back(r);
	lk_arena_give_back(s);
	r->used = s->used = 0;
	ASSERT_TRUE(lk_arena_check());
	lk_arena_get_stats(&st);
	ASSERT_EQ(st.live_blocks, 0);
}

/* A small arena fills up: NULL, then room again after frees, and freed runs coalesce. */
TEST(arena_full)
{
	struct lk_arena_stats st;
	unsigned big = 0;

	rng_state = 3;
	ASSERT_OK(lk_arena_init(4 * MIB, 1 * MIB, true));
	lk_arena_get_stats(&st);
	ASSERT_EQ(st.reserved, 4 * MIB);

	while (do_alloc(MIB, 16))
		big++;
	ASSERT_EQ(big, 3); /* 1024 pages, 64 for boot: three runs of 257 pages fit, a fourth does not */
	ASSERT_TRUE(lk_arena_alloc(MIB, 16) == NULL);
	ASSERT_TRUE(lk_arena_alloc(64 * MIB, 16) == NULL);
	ASSERT_TRUE(lk_arena_alloc(SIZE_MAX / 2, 16) == NULL);
	ASSERT_TRUE(lk_arena_check());

	/* Fill the rest with small blocks, until the arena says no. */
	unsigned small = 0;
	while (nlive < MAX_LIVE && do_alloc(60 * KIB, 16))
		small++;
	ASSERT_TRUE(small > 0 && nlive < MAX_LIVE);
	ASSERT_TRUE(lk_arena_alloc(60 * KIB, 16) == NULL);
	ASSERT_TRUE(lk_arena_check());

	/* Free one 1 MiB block: a 1 MiB block fits again, a second does not. */
	do_free(0);
	ASSERT_TRUE(do_alloc(MIB, 16));
	ASSERT_TRUE(lk_arena_alloc(MIB, 16) == NULL);
	ASSERT_TRUE(lk_arena_check());
	check_foreach();

	/* Free everything in random order: the free pages coalesce into one run, which takes a
	 * single block as large as all of them (its header included). */
	while (nlive)
		do_free((unsigned)rnd_below(nlive));
	lk_arena_get_stats(&st);
	ASSERT_EQ(st.used_pages, 64);
	ASSERT_TRUE(st.free_pages > 900);
	ASSERT_TRUE(do_alloc(st.free_pages * 4096 - 32, 16));
	do_free(0);
	/* And small slabs can take it all again. */
	unsigned slabs = 0;
	while (nlive < MAX_LIVE && do_alloc(2000, 16))
		slabs++;
	ASSERT_EQ(slabs, MAX_LIVE);
	while (nlive)
		do_free((unsigned)rnd_below(nlive));
	check_foreach();
}

/* Under an address-space limit (arena-space.c) the arena first reserves a sixteenth of the room the
 * limit leaves, and grows in place as blocks need it, holding unused at most a sixteenth of the
 * room and one step: 90 blocks of 4 MiB under a 1 GiB limit, where it began with under 64 MiB. */
TEST(arena_grows_under_address_space_limit)
{
	struct lk_arena_stats st;
	struct rlimit rl;

#if defined(__SANITIZE_ADDRESS__)
	SKIP("ASan's shadow memory is far above any address-space limit");
#endif
	ASSERT_EQ(getrlimit(RLIMIT_AS, &rl), 0);
	rl.rlim_cur = 1ull << 30;
	ASSERT_EQ(setrlimit(RLIMIT_AS, &rl), 0);
	ASSERT_OK(lk_arena_init(64ull << 30, 4 * MIB, true));
	lk_arena_get_stats(&st);
	ASSERT_EQ(st.as_limit, 1ull << 30);
	ASSERT_EQ(st.max_reserved, 1ull << 30);
	ASSERT_TRUE(st.reserved <= (1ull << 30) / 16);
	ASSERT_EQ(st.first_reserved, st.reserved);
	for (unsigned i = 0; i < 90; i++) {
		ASSERT_TRUE(do_alloc(4 * MIB, 16));
		lk_arena_get_stats(&st);
		ASSERT_TRUE(st.reserved - st.used_pages * 4096 <= (1ull << 30) / 16 + 36 * MIB);
	}
	ASSERT_TRUE(st.reserved >= 360 * MIB);
	ASSERT_TRUE(lk_arena_alloc(1ull << 30, 16) == NULL); /* never past the limit */
	ASSERT_TRUE(lk_arena_check());
	check_foreach();
	while (nlive)
		do_free(nlive - 1);
	ASSERT_TRUE(lk_arena_check());
}

/* An arena (give_back as lk_arena_init() takes it) with eight freed runs of 15 pages, kept apart
 * by live blocks, and a retained amount far above them. */
static void eight_retained_runs(bool give_back)
{
	struct lk_arena_stats st;

	rng_state = 12;
	ASSERT_OK(lk_arena_init(1ull << 30, 8 * MIB, give_back));
	for (unsigned k = 0; k < 8; k++) {
		ASSERT_TRUE(do_alloc(60000, 16)); /* 15 pages with its header */
		ASSERT_TRUE(do_alloc(5000, 16));  /* 2 pages: a live neighbour */
	}
	for (int k = 7; k >= 0; k--)
		do_free((unsigned)k * 2); /* each free moves a live neighbour into the hole */
	lk_arena_get_stats(&st);
	ASSERT_EQ(st.dirty_pages, 8 * 15);
}

/* A block that no retained run can hold gives back as many retained pages as it faults in
 * (largest runs first, whole runs), and one that a retained run can hold gives back none. */
TEST(arena_gives_back_what_it_cannot_use)
{
	struct lk_arena_stats st;

	eight_retained_runs(true);
	ASSERT_TRUE(do_alloc(30 * 4096 - 64, 16)); /* 30 pages: no retained run holds it */
	lk_arena_get_stats(&st);
	ASSERT_EQ(st.dirty_pages, 8 * 15 - 2 * 15); /* two whole runs went back */
	ASSERT_TRUE(do_alloc(10 * 4096 - 64, 16)); /* 10 pages: taken from a retained run */
	lk_arena_get_stats(&st);
	ASSERT_EQ(st.dirty_pages, 8 * 15 - 2 * 15 - 10);
	while (nlive)
		do_free(nlive - 1);
	ASSERT_TRUE(lk_arena_check());
}

/* Exact mode's arena (give_back false) keeps the retained runs that a block cannot use, as a heap
 * does: the same eight runs, and the same two blocks. */
TEST(arena_exact_keeps_what_it_cannot_use)
{
	struct lk_arena_stats st;

	eight_retained_runs(false);
	ASSERT_TRUE(do_alloc(30 * 4096 - 64, 16)); /* 30 pages: fresh ones, and nothing goes back */
	lk_arena_get_stats(&st);
	ASSERT_EQ(st.dirty_pages, 8 * 15);
	ASSERT_TRUE(do_alloc(10 * 4096 - 64, 16));
	lk_arena_get_stats(&st);
	ASSERT_EQ(st.dirty_pages, 8 * 15 - 10);
	while (nlive)
		do_free(nlive - 1);
	ASSERT_TRUE(lk_arena_check());
}

/* Freeing much more than the retained amount keeps at most that much in dirty pages, and the
 * pages really go back to the kernel (mincore). Freed 3 MiB blocks raise it to one and a half
 * times their run, and no more: blocks of 40 MiB, above glibc's mmap threshold cap, do not. */
TEST(arena_retain)
{
	static unsigned char vec[(1u << 30) / 4096];
	const uint64_t run = 3 * MIB / 4096 + 1, retain = 2 * MIB, three = (run + run / 2) * 4096;
	struct lk_arena_stats st;

	rng_state = 11;
	ASSERT_OK(lk_arena_init(1ull << 30, retain, true));
	lk_arena_get_stats(&st);
	ASSERT_EQ(st.retain, retain);
	for (unsigned round = 0; round < 4; round++) {
		while (nlive < 64)
			ASSERT_TRUE(do_alloc(rnd_below(2) ? 3 * MIB : 1000 + rnd_below(30000), 16));
		while (nlive) {
			do_free((unsigned)rnd_below(nlive));
			lk_arena_get_stats(&st);
			ASSERT_TRUE(st.dirty_pages * 4096 <= st.retain);
		}
		ASSERT_EQ(st.retain, three); /* a 3 MiB block and its header: 769 pages, and 384 */
	}
	ASSERT_TRUE(do_alloc(40 * MIB, 16));
	do_free(0);
	lk_arena_get_stats(&st);
	ASSERT_EQ(st.retain, three);
	ASSERT_EQ(st.live_blocks, 0);
	ASSERT_TRUE(st.committed > 64 * MIB);
	ASSERT_TRUE(st.dirty_pages * 4096 <= three);

	ASSERT_EQ(mincore((void *)lk_arena_base, lk_arena_span, vec), 0);
	uint64_t resident = 0;
	for (size_t i = 0; i < lk_arena_span / 4096; i++)
		resident += vec[i] & 1;
	/* Dirty pages we kept plus the boot area, which nothing here touched. */
	if (resident > st.dirty_pages + 64)
		FAIL("%llu pages resident after freeing all, %llu dirty",
		     (unsigned long long)resident, (unsigned long long)st.dirty_pages);
}

/* Thousands of operations over a 1 GiB arena add at most 4 kernel mappings: the arena and its
 * page map, each split in two by the committed prefix. */
TEST(arena_mappings)
{
	rng_state = 5;
	unsigned before = count_mappings();
	ASSERT_OK(lk_arena_init(1ull << 30, 4 * MIB, true));
	for (unsigned op = 0; op < 20000; op++) {
		if (nlive == 0 || (nlive < MAX_LIVE && rnd_below(2)))
			ASSERT_TRUE(do_alloc(rnd_below(4) ? rnd_below(3000) : rnd_below(MIB), random_align()));
		else
			do_free((unsigned)rnd_below(nlive));
	}
	unsigned after = count_mappings();
	if (after > before + 4)
		FAIL("%u mappings before, %u after:\n%s", before, after, maps_buf);
	while (nlive)
		do_free(nlive - 1);
	ASSERT_TRUE(count_mappings() <= before + 4);
}

/* The boot area: zeroed, 16-aligned, recognised, never mixed with ordinary blocks. */
TEST(arena_boot)
{
	static uint8_t *boot[64];
	static size_t boot_size[64];
	unsigned nboot = 0;

	rng_state = 9;
	ASSERT_OK(lk_arena_init(64 * MIB, 4 * MIB, true));
	ASSERT_TRUE(do_alloc(100, 16));
	ASSERT_TRUE(!lk_arena_is_boot(live[0].p));

	for (size_t size = 1; nboot < 64; size = size * 3 + 5) {
		if (size > 32 * KIB)
			size = 17;
		uint8_t *p = lk_arena_boot_alloc(size);
		if (!p)
			break;
		ASSERT_EQ((uintptr_t)p % 16, 0);
		ASSERT_TRUE(lk_arena_owns(p));
		ASSERT_TRUE(lk_arena_is_boot(p));
		ASSERT_TRUE(lk_arena_is_boot(p + size - 1));
		struct lk_block *b = lk_arena_block(p);
		ASSERT_TRUE(b != NULL);
		ASSERT_EQ(b->size, size);
		ASSERT_TRUE(b->usable >= size);
		for (size_t i = 0; i < size; i++)
			if (p[i])
				FAIL("boot block %p byte %zu is %u", (void *)p, i, p[i]);
		memset(p, (int)(nboot + 1), size);
		boot[nboot] = p;
		boot_size[nboot++] = size;
		ASSERT_TRUE(lk_arena_check());
	}
	ASSERT_TRUE(nboot >= 8);
	/* Too big for the boot area, and the area is finite. */
	ASSERT_TRUE(lk_arena_boot_alloc(1 * MIB) == NULL);
	while (lk_arena_boot_alloc(4000))
		;
	ASSERT_TRUE(lk_arena_boot_alloc(1) == NULL);

	/* Ordinary blocks are never boot blocks, and never overlap them. */
	for (unsigned i = 0; i < 40; i++) {
		ASSERT_TRUE(do_alloc(random_size() % (256 * KIB), 16));
		ASSERT_TRUE(!lk_arena_is_boot(live[nlive - 1].p));
	}
	for (unsigned i = 0; i < nboot; i++)
		for (size_t k = 0; k < boot_size[i]; k++)
			ASSERT_EQ(boot[i][k], i + 1);
	ASSERT_TRUE(!lk_arena_is_boot(NULL));
	ASSERT_TRUE(!lk_arena_is_boot(maps_buf));
	check_foreach(); /* boot blocks are not sampled blocks: foreach leaves them out */
	while (nlive)
		do_free(nlive - 1);
	ASSERT_TRUE(lk_arena_check());
}

/* Resizes the live block in slot i in place to `usable` bytes if the arena can; the bytes both sizes
 * share must survive, and the block is then refilled at its new size. */
static bool do_resize(unsigned i, size_t usable)
{
	struct slot *s = &live[i];
	size_t keep = s->usable < usable ? s->usable : usable;

	ASSERT_TRUE(verify(s));
	if (!lk_arena_resize(s->p, usable)) {
		ASSERT_TRUE(lk_arena_check());
		check_block(s); /* unchanged */
		return false;
	}
	ASSERT_TRUE(lk_arena_check());
	struct slot shared = *s;
	shared.usable = keep & ~(size_t)7; /* whole words of the old pattern */
	ASSERT_TRUE(verify(&shared));
	s->usable = usable;
	check_block(s);
	s->tag = rnd() | 1;
	fill(s);
	return true;
}

/* In-place resizing: a run grows into the top of the arena and into the free run after it, and
 * shrinks by giving back whole pages; a slab block keeps its class; a block with a live neighbour
 * right after it cannot grow. Every other block stays intact throughout. */
TEST(arena_resize)
{
	struct lk_arena_stats st;

	rng_state = 13;
	ASSERT_OK(lk_arena_init(1ull << 30, 4 * MIB, true));
	ASSERT_TRUE(do_alloc(100 * KIB, 16)); /* live[0], at the top */
	ASSERT_TRUE(do_resize(0, 3 * MIB));    /* grows into the top */
	ASSERT_TRUE(do_resize(0, 5 * MIB + 17));
	ASSERT_TRUE(do_resize(0, 40 * KIB));   /* shrinks: the rest is a free run after it */
	lk_arena_get_stats(&st);
	ASSERT_TRUE(st.free_pages * 4096 >= 5 * MIB - 40 * KIB - 4096);
	ASSERT_TRUE(do_resize(0, 2 * MIB));    /* grows into that free run, which it splits */
	ASSERT_TRUE(do_resize(0, 5 * MIB + 100 * KIB)); /* the rest of it, and the top */
	ASSERT_TRUE(do_alloc(10 * KIB, 16));   /* live[1], at the top: right after live[0] */
	ASSERT_TRUE(live[1].p > live[0].p + live[0].usable);
	ASSERT_TRUE((size_t)(live[1].p - (live[0].p + live[0].usable)) < 8 * KIB);
	ASSERT_TRUE(!do_resize(0, 6 * MIB));   /* a live neighbour: no room, nothing changes */
	do_free(1);
	ASSERT_TRUE(do_resize(0, 6 * MIB));    /* its free pages, and the top */
	/* Too big for the arena, or for a run: no. */
	ASSERT_TRUE(!do_resize(0, (size_t)2 << 30));
	ASSERT_TRUE(!lk_arena_resize(live[0].p, SIZE_MAX / 2));
	/* Down to slab size: a run cannot become a slot, it moves. */
	ASSERT_TRUE(!do_resize(0, 100));

	/* Slab blocks: within their class only. */
	ASSERT_TRUE(do_alloc(100, 16)); /* class 160 (100 + 32 header) */
	unsigned k = nlive - 1;
	ASSERT_TRUE(do_resize(k, 120));
	ASSERT_TRUE(do_resize(k, 97));  /* 97 + 32 > 112: still the 160 class */
	ASSERT_TRUE(!do_resize(k, 60)); /* 92: a smaller class */
	ASSERT_TRUE(!do_resize(k, 200));
	check_lookups();
	check_foreach();

	/* Random resizes among random blocks keep every invariant and every byte. */
	for (unsigned op = 0; op < 3000; op++) {
		unsigned r = (unsigned)rnd_below(4);
		if (nlive == 0 || (r == 0 && nlive < MAX_LIVE))
			ASSERT_TRUE(do_alloc(random_size(), random_align()));
		else if (r == 1)
			do_free((unsigned)rnd_below(nlive));
		else
			do_resize((unsigned)rnd_below(nlive), random_size());
		if (op % 97 == 0) {
			check_lookups();
			check_foreach();
		}
		lk_arena_get_stats(&st);
		ASSERT_TRUE(st.dirty_pages * 4096 <= st.retain);
	}
	while (nlive)
		do_free(nlive - 1);
	check_foreach();
}
