/* threads.c: threads handing blocks to each other through a shared ring (mimalloc's test-stress).
 *
 * Every thread allocates blocks of 16 B..64 KiB with malloc, calloc or realloc, fills each one
 * over its whole usable size, and swaps it into a random slot of the ring; whatever it takes out
 * was made by some thread, and is checked, sometimes reallocated (its contents must survive), and
 * freed. So blocks are freed and reallocated by threads other than the one that allocated them,
 * sampled and unsampled alike. Checks: calloc memory is zero, malloc_usable_size >= the size
 * asked and constant for a block's lifetime, no block is overwritten while it lives.
 *
 * Usage: threads [ITERATIONS_PER_THREAD]. Prints "allocs N" (allocating calls made) at the end.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>

#include "prog.h"

#define NTHREADS 4
#define NSLOTS 256

struct hdr {
	uint32_t size, usable;
	uint64_t tag;
};

static void *_Atomic ring[NSLOTS];
static unsigned long iterations = 4000;
static unsigned long allocs_total;

static size_t draw_size(uint64_t *rng)
{
	/* Log-uniform 16 B..64 KiB: most blocks small, a few large enough to be sampled often. */
	unsigned lg = 4 + (unsigned)(prog_rand(rng) % 13);
	size_t lo = (size_t)1 << lg;

	return lo + prog_rand(rng) % lo; /* [2^lg, 2^(lg+1)) */
}

/* Stamps a fresh block: header, then the pattern over the rest of its usable size. */
static void stamp(void *p, size_t size, uint64_t tag)
{
	size_t usable = malloc_usable_size(p);
	struct hdr h = { (uint32_t)size, (uint32_t)usable, tag };

	CHECK(usable >= size, "malloc_usable_size %zu < %zu", usable, size);
	memcpy(p, &h, sizeof(h));
	pattern_fill((char *)p + sizeof(h), usable - sizeof(h), tag);
}

static struct hdr verify(void *p)
{
	struct hdr h;

	memcpy(&h, p, sizeof(h));
	size_t usable = malloc_usable_size(p);
	CHECK(usable == h.usable, "block %p: usable size changed from %u to %zu (size %u)", p, h.usable,
	      usable, h.size);
	size_t bad = pattern_check((char *)p + sizeof(h), usable - sizeof(h), h.tag);
	CHECK(bad == usable - sizeof(h), "block %p (size %u, usable %zu) overwritten at byte %zu", p,
	      h.size, usable, bad + sizeof(h));
	return h;
}

static void *worker(void *arg)
{
	uint64_t rng = (uintptr_t)arg * 7919 + 1;
	unsigned long allocs = 0;

	for (unsigned long it = 0; it < iterations; it++) {
		size_t size = draw_size(&rng);
		uint64_t tag = prog_rand(&rng);
		void *p;

		switch (prog_rand(&rng) % 4) {
		case 0:
			p = malloc(size);
			break;
		case 1:
			p = calloc(1, size);
			CHECK(p, "calloc(1, %zu) failed", size);
			CHECK(all_zero(p, size), "calloc(1, %zu) = %p is not zero", size, p);
			break;
		case 2:
			p = realloc(NULL, size);
			break;
		default: /* grow a small block: the realloc may move it into or out of the arena */
			p = malloc(16);
			CHECK(p, "malloc(16) failed");
			memset(p, 0x5a, 16);
			p = realloc(p, size);
			CHECK(p, "realloc(.., %zu) failed", size);
			for (int i = 0; i < 16; i++)
				CHECK(((unsigned char *)p)[i] == 0x5a, "realloc lost byte %d", i);
			allocs++;
			break;
		}
		CHECK(p, "allocation of %zu bytes failed", size);
		allocs++;
		stamp(p, size, tag);

		void *old = atomic_exchange(&ring[prog_rand(&rng) % NSLOTS], p);
		if (!old)
			continue;
		struct hdr h = verify(old);
		if (prog_rand(&rng) % 4 == 0) {
			size_t nsize = draw_size(&rng);
			void *q = realloc(old, nsize);
			CHECK(q, "realloc(%p, %zu) failed", old, nsize);
			allocs++;
			size_t keep = nsize < h.size ? nsize : h.size;
			if (keep > sizeof(h)) {
				CHECK(memcmp(q, &h, sizeof(h)) == 0, "realloc lost the header");
				size_t bad = pattern_check((char *)q + sizeof(h), keep - sizeof(h), h.tag);
				CHECK(bad == keep - sizeof(h), "realloc %u -> %zu lost byte %zu", h.size,
				      nsize, bad + sizeof(h));
			}
			old = q;
		}
		free(old);
	}
	__atomic_fetch_add(&allocs_total, allocs, __ATOMIC_RELAXED);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[NTHREADS];

	if (argc > 1)
		iterations = strtoul(argv[1], NULL, 10);
	for (uintptr_t i = 0; i < NTHREADS; i++)
		CHECK(pthread_create(&th[i], NULL, worker, (void *)(i + 1)) == 0, "pthread_create");
	for (int i = 0; i < NTHREADS; i++)
		CHECK(pthread_join(th[i], NULL) == 0, "pthread_join");
	for (int i = 0; i < NSLOTS; i++) {
		void *p = atomic_load(&ring[i]);
		if (p) {
			verify(p);
			free(p);
		}
	}
	printf("allocs %lu\n", allocs_total);
	return 0;
}
