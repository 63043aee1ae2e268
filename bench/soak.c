/* soak.c: the multi-threaded workload of bench/soak.sh, which keeps its own exact tally.
 *
 * usage: soak [-d SECONDS] [-t THREADS] [-s SEED] [-r RATE] [-o TALLY]
 *        (defaults: 600 s, 4 threads, seed 1, no rate limit, tally on stdout)
 *
 * Every thread runs its own fixed xoshiro256** stream (seed + thread index) through a mix of
 * fourteen allocation sites until the deadline, then the process exits with part of its heap
 * still allocated. Each site is a function of its own (noinline, noclone, built with
 * -fno-ipa-icf and -fno-optimize-sibling-calls by soak.sh) that makes exactly one call to the
 * allocator, so each has one stack and one line in leek's report:
 *
 *   site_small_churn      malloc 16 B - 512 B, freed a few dozen operations later
 *   site_medium_churn     malloc 1 KiB - 64 KiB, freed soon
 *   site_large_churn      malloc 64 KiB - 1 MiB, freed soon
 *   site_memalign         memalign 16 B - 8 KiB, alignments 16 B - 4 KiB, freed soon
 *   site_strdup           strdup, 16 B - 512 B with the NUL (leek skips strdup: the site is ours)
 *   site_pool_small       malloc 16 B - 1 KiB into a pool of 4096, random replacement
 *   site_pool_large       malloc 4 KiB - 1 MiB into a pool of 16
 *   site_calloc           calloc, 16 B - 16 KiB, pool of 512 (checked zeroed)
 *   site_aligned_alloc    aligned_alloc, 64 B - 64 KiB, alignments 16 B - 4 KiB, pool of 256
 *   site_posix_memalign   posix_memalign, 16 B - 128 KiB, alignments 8 B - 64 KiB, pool of 128
 *   site_realloc          realloc: eight buffers per thread grown from realloc(NULL) to about
 *                         1 MiB (and sometimes shrunk), and blocks of the small pool doubled
 *   site_handoff          malloc 256 B - 16 KiB, handed to the next thread, which frees it
 *   site_leak_small       malloc 64 B - 1 KiB, never freed: 1.5 MiB per thread over the run
 *   site_leak_large       malloc 16 KiB - 1 MiB, never freed: 8 MiB per thread over the run
 *
 * The churn sites' blocks are freed when a thread ends, so their bytes live at exit are exactly
 * 0; the pools, the realloc buffers, the handoff mailboxes and the leaks stay allocated until
 * exit. The tally counts what leek counts (docs/sampling.md section 4): each successful call is
 * one allocation of the bytes asked for (calloc: nmemb * size), and a realloc ends the life of
 * the old block, whichever site made it, and starts one of the realloc site. Every block carries
 * a pattern derived from its own tag (its first and last 256 bytes and one byte per 4 KiB page),
 * checked before each free and realloc (the realloc's prefix after it), and in every block still
 * allocated when the threads end; calloc's bytes are checked to be zero, every aligned block's
 * alignment and strdup's copy. A failed check counts in "check_failures" and makes the exit
 * status 1; an allocation that fails ends the program with status 2.
 *
 * With -r, each thread sleeps so as to make at most RATE allocations a second (exact mode
 * records every one; the rate bounds the profile's size). The threads start one after the
 * other, each after the previous one made its first allocation, so with a fixed LEEK_SEED each
 * thread draws the same sampler stream from run to run. (The deadline and the leaks' clock make
 * the sequence of allocations, and so what those streams sample, depend on the machine's speed.)
 *
 * The tally, written after the threads are joined (before exit's own allocations):
 *
 *   seed 1
 *   threads 4
 *   duration_s 600.000
 *   allocations 123456789
 *   check_failures 0
 *   site NAME ALLOCATIONS ALLOC_BYTES LIVE_OBJECTS LIVE_BYTES     (one line per site)
 *
 * Never: allocate from a site function more than once, free a block it did not check, or let
 * the tally count anything but successful calls made from the site functions.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SITE __attribute__((noinline, noclone, used))

enum site {
	SMALL_CHURN,
	MEDIUM_CHURN,
	LARGE_CHURN,
	MEMALIGN,
	STRDUP,
	POOL_SMALL,
	POOL_LARGE,
	CALLOC,
	ALIGNED_ALLOC,
	POSIX_MEMALIGN,
	REALLOC,
	HANDOFF,
	LEAK_SMALL,
	LEAK_LARGE,
	_SITE_MAX,
};

static const char *const site_names[_SITE_MAX] = {
	[SMALL_CHURN] = "site_small_churn",
	[MEDIUM_CHURN] = "site_medium_churn",
	[LARGE_CHURN] = "site_large_churn",
	[MEMALIGN] = "site_memalign",
	[STRDUP] = "site_strdup",
	[POOL_SMALL] = "site_pool_small",
	[POOL_LARGE] = "site_pool_large",
	[CALLOC] = "site_calloc",
	[ALIGNED_ALLOC] = "site_aligned_alloc",
	[POSIX_MEMALIGN] = "site_posix_memalign",
	[REALLOC] = "site_realloc",
	[HANDOFF] = "site_handoff",
	[LEAK_SMALL] = "site_leak_small",
	[LEAK_LARGE] = "site_leak_large",
};

#define SMALL_RING        64
#define MEDIUM_RING       16
#define LARGE_RING        2
#define POOL_SMALL_N      4096
#define POOL_LARGE_N      16
#define CALLOC_N          512
#define ALIGNED_N         256
#define POSIX_N           128
#define GROW_N            8
#define MAILBOX_N         64
#define MAX_THREADS       64
#define LEAK_SMALL_BUDGET (1536u * 1024)
#define LEAK_LARGE_BUDGET (8u * 1024 * 1024)
#define EDGE              256  /* pattern bytes at each end of a block */
#define STRIDE            4096 /* and one in every STRIDE in between */

/* A block, as its owner knows it: where, how big, which site's tally holds it, its tag. */
struct blk {
	unsigned char *p;
	size_t size;
	uint32_t tag;
	uint8_t site;
	bool zero; /* calloc'd: zero until written */
};

struct tally {
	uint64_t allocs, bytes;
	int64_t live_objects, live_bytes; /* a thread that frees another's block goes negative */
};

struct mailbox {
	pthread_mutex_t lock;
	unsigned n;
	struct blk b[MAILBOX_N];
};

struct thread {
	unsigned id;
	pthread_t pthread;
	uint64_t rng[4];
	uint32_t next_tag;
	uint64_t allocs, failures;
	struct tally site[_SITE_MAX];
	struct blk small_ring[SMALL_RING], medium_ring[MEDIUM_RING], large_ring[LARGE_RING];
	struct blk memalign_ring[MEDIUM_RING], strdup_ring[SMALL_RING];
	struct blk pool_small[POOL_SMALL_N], pool_large[POOL_LARGE_N], calloc_pool[CALLOC_N];
	struct blk aligned_pool[ALIGNED_N], posix_pool[POSIX_N], grow[GROW_N];
	uint64_t leaked_small, leaked_large;
	unsigned nleaks;
	struct blk leaks[LEAK_SMALL_BUDGET / 64 + LEAK_LARGE_BUDGET / 16384 + 2];
	char text[520];
};

static double arg_duration = 600;
static unsigned arg_threads = 4;
static uint64_t arg_seed = 1;
static double arg_rate;
static const char *arg_output;

static struct timespec start;
static struct thread *threads;
static struct mailbox mailboxes[MAX_THREADS];
static atomic_uint started;

static double elapsed(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - start.tv_sec) + (double)(now.tv_nsec - start.tv_nsec) * 1e-9;
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

/* xoshiro256** (Blackman and Vigna), seeded through splitmix64. */
static uint64_t next(struct thread *t)
{
	uint64_t *s = t->rng, result = rotl(s[1] * 5, 7) * 9, u = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= u;
	s[3] = rotl(s[3], 45);
	return result;
}

static void seed_rng(struct thread *t, uint64_t seed)
{
	for (int i = 0; i < 4; i++) {
		uint64_t z = (seed += 0x9e3779b97f4a7c15ull);

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		t->rng[i] = z ^ (z >> 31);
	}
}

static uint64_t below(struct thread *t, uint64_t n)
{
	return next(t) % n;
}

/* Log-uniform in [lo, hi): an octave at random, then a size within it. */
static size_t size_between(struct thread *t, size_t lo, size_t hi)
{
	unsigned octaves = 0;

	while ((lo << (octaves + 1)) <= hi)
		octaves++;
	size_t base = lo << below(t, octaves ? octaves : 1);
	size_t top = base * 2 < hi ? base * 2 : hi;

	return base + below(t, top - base);
}

static unsigned char pattern(uint32_t tag, size_t i)
{
	return (unsigned char)(tag * 0x9e3779b1u + i * 131 + (i >> 8));
}

/* The offsets that carry a block's pattern: the first and last EDGE bytes, and every STRIDE-th
 * byte in between. fill() and check() walk the same ones. */
static size_t next_offset(size_t i, size_t size)
{
	size_t s;

	i++;
	if (i < EDGE || size < 2 * EDGE || i >= size - EDGE)
		return i;
	s = (i + STRIDE - 1) / STRIDE * STRIDE;
	return s < size - EDGE ? s : size - EDGE;
}

#define FOR_PATTERN(i, size) for (size_t i = 0; i < (size); i = next_offset(i, (size)))

static void fill(const struct blk *b)
{
	FOR_PATTERN (i, b->size)
		b->p[i] = pattern(b->tag, i);
}

static void fail(struct thread *t, const struct blk *b, const char *what)
{
	if (t->failures++ < 10)
		fprintf(stderr, "soak: thread %u: %s (%s block %p, %zu bytes)\n", t->id, what,
			site_names[b->site], (void *)b->p, b->size);
}

/* Check the pattern of a block written with b->size, at the offsets below upto. */
static void check(struct thread *t, const struct blk *b, size_t upto)
{
	FOR_PATTERN (i, b->size) {
		if (i >= upto)
			break;
		if (b->p[i] != (b->zero ? 0 : pattern(b->tag, i))) {
			fail(t, b, b->zero ? "calloc'd byte not zero" : "pattern overwritten");
			return;
		}
	}
}

/* A block just returned by a site: tally it, check it, write its pattern. */
static void born(struct thread *t, struct blk *b, enum site s, void *p, size_t size, size_t align)
{
	if (!p) {
		fprintf(stderr, "soak: %s(%zu) failed: %s\n", site_names[s], size, strerror(errno));
		exit(2);
	}
	b->p = p;
	b->size = size;
	b->site = (uint8_t)s;
	b->tag = t->next_tag++ * 2654435761u + t->id;
	t->site[s].allocs++;
	t->site[s].bytes += size;
	t->site[s].live_objects++;
	t->site[s].live_bytes += (int64_t)size;
	t->allocs++;
	if (align && (uintptr_t)p % align)
		fail(t, b, "misaligned");
	if (b->zero)
		check(t, b, size);
	b->zero = false;
	fill(b);
}

/* Lower the tally of the site that holds b, in t's own tally (t may not be b's maker). */
static void died(struct thread *t, struct blk *b)
{
	t->site[b->site].live_objects--;
	t->site[b->site].live_bytes -= (int64_t)b->size;
	b->p = NULL;
}

static void release(struct thread *t, struct blk *b)
{
	if (!b->p)
		return;
	check(t, b, b->size);
	free(b->p);
	died(t, b);
}

/* Check every block of an array that stays allocated until exit. */
static void check_all(struct thread *t, const struct blk *b, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (b[i].p)
			check(t, &b[i], b[i].size);
}

/* The sites: one allocator call each. Their bodies differ (a volatile, an empty asm) so that
 * even a build without -fno-ipa-icf cannot fold two of them into one function. */

SITE void *site_small_churn(size_t n)
{
	return malloc(n);
}

SITE void *site_medium_churn(size_t n)
{
	void *p = malloc(n);

	return p;
}

SITE void *site_large_churn(size_t n)
{
	void *volatile p = malloc(n);

	return p;
}

SITE void *site_memalign(size_t align, size_t n)
{
	return memalign(align, n);
}

SITE char *site_strdup(const char *s)
{
	return strdup(s);
}

SITE void *site_pool_small(size_t n)
{
	void *volatile p = malloc(n);

	return (char *)p + 0;
}

SITE void *site_pool_large(size_t n)
{
	void *p = malloc(n);

	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

SITE void *site_calloc(size_t nmemb, size_t size)
{
	return calloc(nmemb, size);
}

SITE void *site_aligned_alloc(size_t align, size_t n)
{
	return aligned_alloc(align, n);
}

SITE void *site_posix_memalign(size_t align, size_t n)
{
	void *p = NULL;
	int r = posix_memalign(&p, align, n);

	if (r)
		errno = r;
	return r ? NULL : p;
}

SITE void *site_realloc(void *p, size_t n)
{
	return realloc(p, n);
}

SITE void *site_handoff(size_t n)
{
	void *volatile p = malloc(n);

	__asm__ volatile("" : : : "memory");
	return p;
}

SITE void *site_leak_small(size_t n)
{
	void *p = malloc(n);

	__asm__ volatile("" : "+r"(p) : : "memory");
	return p;
}

SITE void *site_leak_large(size_t n)
{
	void *p = malloc(n);

	__asm__ volatile("" : "+r"(p) : "r"(n) : "memory");
	return p;
}

/* The operations. */

static void churn(struct thread *t, struct blk *ring, unsigned n, enum site s)
{
	struct blk *b = &ring[below(t, n)];
	size_t size, align = 0;
	void *p;

	release(t, b);
	switch (s) {
	case SMALL_CHURN:
		size = size_between(t, 16, 512);
		p = site_small_churn(size);
		break;
	case MEDIUM_CHURN:
		size = size_between(t, 1024, 65536);
		p = site_medium_churn(size);
		break;
	case LARGE_CHURN:
		size = size_between(t, 65536, 1 << 20);
		p = site_large_churn(size);
		break;
	case MEMALIGN:
		align = (size_t)16 << below(t, 9);
		size = size_between(t, 16, 8192);
		p = site_memalign(align, size);
		break;
	default: /* STRDUP */
		size = size_between(t, 16, 512);
		memset(t->text, 'a' + (int)below(t, 26), size - 1);
		t->text[size - 1] = '\0';
		p = site_strdup(t->text);
		break;
	}
	if (s == STRDUP && p && memcmp(p, t->text, size) != 0) {
		struct blk copy = { .p = p, .size = size, .site = STRDUP };

		fail(t, &copy, "strdup copy differs");
	}
	born(t, b, s, p, size, align);
}

static void pool_small(struct thread *t)
{
	struct blk *b = &t->pool_small[below(t, POOL_SMALL_N)];
	size_t size = size_between(t, 16, 1024);

	release(t, b);
	born(t, b, POOL_SMALL, site_pool_small(size), size, 0);
}

static void pool_large(struct thread *t)
{
	struct blk *b = &t->pool_large[below(t, POOL_LARGE_N)];
	size_t size = size_between(t, 4096, 1 << 20);

	release(t, b);
	born(t, b, POOL_LARGE, site_pool_large(size), size, 0);
}

static void calloc_pool(struct thread *t)
{
	struct blk *b = &t->calloc_pool[below(t, CALLOC_N)];
	size_t size = size_between(t, 16, 256), nmemb = 1 + below(t, 64);

	release(t, b);
	b->zero = true;
	born(t, b, CALLOC, site_calloc(nmemb, size), nmemb * size, 0);
}

static void aligned_pool(struct thread *t)
{
	struct blk *b = &t->aligned_pool[below(t, ALIGNED_N)];
	size_t align = (size_t)16 << below(t, 9);
	size_t size = size_between(t, 64, 65536);

	size = (size + align - 1) / align * align; /* C11: a multiple of the alignment */
	release(t, b);
	born(t, b, ALIGNED_ALLOC, site_aligned_alloc(align, size), size, align);
}

static void posix_pool(struct thread *t)
{
	struct blk *b = &t->posix_pool[below(t, POSIX_N)];
	size_t align = (size_t)8 << below(t, 14);
	size_t size = size_between(t, 16, 131072);

	release(t, b);
	born(t, b, POSIX_MEMALIGN, site_posix_memalign(align, size), size, align);
}

/* realloc b to size: the old block dies (in whichever site's tally), the realloc site's is born
 * with the same tag, its prefix checked. */
static void grow_to(struct thread *t, struct blk *b, size_t size)
{
	struct blk old = *b;
	void *p;

	if (old.p)
		check(t, &old, old.size);
	p = site_realloc(old.p, size);
	if (!p) {
		fprintf(stderr, "soak: realloc(%zu) failed: %s\n", size, strerror(errno));
		exit(2);
	}
	if (old.p)
		died(t, &old);
	b->p = p;
	b->size = size;
	b->site = REALLOC;
	t->site[REALLOC].allocs++;
	t->site[REALLOC].bytes += size;
	t->site[REALLOC].live_objects++;
	t->site[REALLOC].live_bytes += (int64_t)size;
	t->allocs++;
	if (old.p) {
		old.p = p; /* the old contents, where they are now */
		check(t, &old, old.size < size ? old.size : size);
	} else {
		b->tag = t->next_tag++ * 2654435761u + t->id;
	}
	fill(b);
}

static void realloc_op(struct thread *t)
{
	if (below(t, 4) == 0) {
		/* a block of the small pool, doubled: it leaves site_pool_small's tally */
		struct blk *b = &t->pool_small[below(t, POOL_SMALL_N)];

		if (b->p)
			grow_to(t, b, b->size * 2);
		return;
	}
	struct blk *b = &t->grow[below(t, GROW_N)];

	if (b->p && b->size > (1 << 20)) {
		release(t, b);
		return;
	}
	if (!b->p)
		grow_to(t, b, size_between(t, 16, 256));
	else if (below(t, 8) == 0)
		grow_to(t, b, b->size / 2 + 1);
	else
		grow_to(t, b, b->size + 1 + below(t, b->size));
}

/* Hand a block to the next thread, which frees it; if its mailbox is full, free it here. */
static void handoff(struct thread *t)
{
	struct mailbox *m = &mailboxes[(t->id + 1) % arg_threads];
	struct blk b = { 0 };
	size_t size = size_between(t, 256, 16384);

	born(t, &b, HANDOFF, site_handoff(size), size, 0);
	pthread_mutex_lock(&m->lock);
	if (m->n < MAILBOX_N) {
		m->b[m->n++] = b;
		b.p = NULL;
	}
	pthread_mutex_unlock(&m->lock);
	release(t, &b);
}

static void drain(struct thread *t)
{
	struct mailbox *m = &mailboxes[t->id];
	struct blk b[MAILBOX_N];
	unsigned n;

	pthread_mutex_lock(&m->lock);
	n = m->n;
	memcpy(b, m->b, n * sizeof(b[0]));
	m->n = 0;
	pthread_mutex_unlock(&m->lock);
	for (unsigned i = 0; i < n; i++)
		release(t, &b[i]);
}

/* Leak on a schedule: by time x of the run, x / duration of each budget. */
static void leak(struct thread *t, double now)
{
	double part = now >= arg_duration ? 1 : now / arg_duration;
	size_t size;

	/* at most LEAK_SMALL_BUDGET / 64 + 1 small ones, LEAK_LARGE_BUDGET / 16384 + 1 large */
	while (t->leaked_small < part * LEAK_SMALL_BUDGET) {
		size = size_between(t, 64, 1024);
		born(t, &t->leaks[t->nleaks++], LEAK_SMALL, site_leak_small(size), size, 0);
		t->leaked_small += size;
	}
	while (t->leaked_large < part * LEAK_LARGE_BUDGET) {
		size = size_between(t, 16384, 1 << 20);
		born(t, &t->leaks[t->nleaks++], LEAK_LARGE, site_leak_large(size), size, 0);
		t->leaked_large += size;
	}
}

static void one_op(struct thread *t)
{
	uint64_t r = below(t, 1000);

	if (r < 300)
		churn(t, t->small_ring, SMALL_RING, SMALL_CHURN);
	else if (r < 400)
		churn(t, t->medium_ring, MEDIUM_RING, MEDIUM_CHURN);
	else if (r < 410)
		churn(t, t->large_ring, LARGE_RING, LARGE_CHURN);
	else if (r < 440)
		churn(t, t->memalign_ring, MEDIUM_RING, MEMALIGN);
	else if (r < 500)
		churn(t, t->strdup_ring, SMALL_RING, STRDUP);
	else if (r < 700)
		pool_small(t);
	else if (r < 710)
		pool_large(t);
	else if (r < 790)
		calloc_pool(t);
	else if (r < 840)
		aligned_pool(t);
	else if (r < 870)
		posix_pool(t);
	else if (r < 950)
		realloc_op(t);
	else
		handoff(t);
}

static void *run(void *arg)
{
	struct thread *t = arg;
	struct timespec pause;
	double now;

	churn(t, t->small_ring, SMALL_RING, SMALL_CHURN);
	atomic_fetch_add(&started, 1); /* the next thread may start: sampler streams in order */
	for (;;) {
		for (int i = 0; i < 256; i++)
			one_op(t);
		drain(t);
		now = elapsed();
		leak(t, now);
		if (now >= arg_duration)
			break;
		if (arg_rate > 0 && t->allocs > arg_rate * now) {
			double ahead = (double)t->allocs / arg_rate - now;

			pause.tv_sec = (time_t)ahead;
			pause.tv_nsec = (long)((ahead - (double)pause.tv_sec) * 1e9);
			nanosleep(&pause, NULL);
		}
	}
	/* The churn sites end with nothing live; everything else stays allocated until exit. */
	for (unsigned i = 0; i < SMALL_RING; i++) {
		release(t, &t->small_ring[i]);
		release(t, &t->strdup_ring[i]);
	}
	for (unsigned i = 0; i < MEDIUM_RING; i++) {
		release(t, &t->medium_ring[i]);
		release(t, &t->memalign_ring[i]);
	}
	for (unsigned i = 0; i < LARGE_RING; i++)
		release(t, &t->large_ring[i]);
	check_all(t, t->pool_small, POOL_SMALL_N);
	check_all(t, t->pool_large, POOL_LARGE_N);
	check_all(t, t->calloc_pool, CALLOC_N);
	check_all(t, t->aligned_pool, ALIGNED_N);
	check_all(t, t->posix_pool, POSIX_N);
	check_all(t, t->grow, GROW_N);
	check_all(t, t->leaks, t->nleaks);
	return NULL;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: soak [-d SECONDS] [-t THREADS] [-s SEED] [-r RATE] [-o TALLY]\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct tally sum[_SITE_MAX] = { 0 };
	uint64_t allocs = 0, failures = 0;
	FILE *out = stdout;
	int c;

	while ((c = getopt(argc, argv, "d:t:s:r:o:")) != -1) {
		switch (c) {
		case 'd':
			arg_duration = strtod(optarg, NULL);
			break;
		case 't':
			arg_threads = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 's':
			arg_seed = strtoull(optarg, NULL, 0);
			break;
		case 'r':
			arg_rate = strtod(optarg, NULL);
			break;
		case 'o':
			arg_output = optarg;
			break;
		default:
			return usage();
		}
	}
	if (optind != argc || arg_threads < 1 || arg_threads > MAX_THREADS || !(arg_duration > 0))
		return usage();

	threads = calloc(arg_threads, sizeof(*threads));
	if (!threads) {
		perror("soak: calloc");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (unsigned i = 0; i < arg_threads; i++) {
		struct thread *t = &threads[i];
		struct timespec wait = { 0, 100000 };
		int r;

		t->id = i;
		seed_rng(t, arg_seed + i);
		pthread_mutex_init(&mailboxes[i].lock, NULL);
		r = pthread_create(&t->pthread, NULL, run, t);
		if (r) {
			fprintf(stderr, "soak: pthread_create: %s\n", strerror(r));
			return 2;
		}
		while (atomic_load(&started) <= i)
			nanosleep(&wait, NULL);
	}
	for (unsigned i = 0; i < arg_threads; i++)
		pthread_join(threads[i].pthread, NULL);
	for (unsigned i = 0; i < arg_threads; i++) /* what is left in the mailboxes */
		check_all(&threads[i], mailboxes[i].b, mailboxes[i].n);

	for (unsigned i = 0; i < arg_threads; i++) {
		allocs += threads[i].allocs;
		failures += threads[i].failures;
		for (unsigned s = 0; s < _SITE_MAX; s++) {
			sum[s].allocs += threads[i].site[s].allocs;
			sum[s].bytes += threads[i].site[s].bytes;
			sum[s].live_objects += threads[i].site[s].live_objects;
			sum[s].live_bytes += threads[i].site[s].live_bytes;
		}
	}
	if (arg_output && !(out = fopen(arg_output, "w"))) {
		fprintf(stderr, "soak: cannot write '%s': %s\n", arg_output, strerror(errno));
		return 2;
	}
	fprintf(out, "seed %" PRIu64 "\nthreads %u\nduration_s %.3f\nallocations %" PRIu64
		     "\ncheck_failures %" PRIu64 "\n",
		arg_seed, arg_threads, elapsed(), allocs, failures);
	for (unsigned s = 0; s < _SITE_MAX; s++)
		fprintf(out, "site %s %" PRIu64 " %" PRIu64 " %" PRId64 " %" PRId64 "\n",
			site_names[s], sum[s].allocs, sum[s].bytes, sum[s].live_objects,
			sum[s].live_bytes);
	if (fflush(out) != 0 || ferror(out) || (out != stdout && fclose(out) != 0)) {
		fprintf(stderr, "soak: writing the tally failed\n");
		return 2;
	}
	return failures ? 1 : 0;
}
