/* usable.c: malloc_usable_size and calloc of sampled blocks (run with LEEK_PERIOD=1).
 *
 * For every size from 0 to 4 KiB, and in steps up to 128 KiB, the program prints
 * "usable N U" where U = malloc_usable_size(malloc(N)). The driver runs it with and without leek
 * and requires the same table: a sampled block must report what the real allocator would have
 * (redis, for one, writes up to the usable size). It also checks here that the whole usable size
 * is writable, and that calloc returns zeroed memory even where a freed block was dirty just
 * before (the arena reuses its slots at once).
 *
 * Two more tables, for allocators whose answer depends on the request alone (jemalloc, tcmalloc,
 * mimalloc below its largest alignments), not on where the block landed (glibc: the mmap threshold
 * moves when a mapped block is freed, and an aligned chunk keeps a remainder too small to split):
 *   --large          "large N U" for blocks from 128 KiB to 64 MiB, by malloc and calloc;
 *   --aligned MAX    "FN A N U" for memalign, posix_memalign and aligned_alloc at every
 *                    power-of-two alignment A from 32 to MAX, and "valloc N U".
 *
 * Usage: usable [--large] [--aligned MAX].
 */
#include <malloc.h>
#include <stdbool.h>

#include "prog.h"

static void one(size_t n)
{
	char *p = malloc(n);

	CHECK(p, "malloc(%zu) failed", n);
	size_t u = malloc_usable_size(p);
	CHECK(u >= n, "malloc_usable_size(malloc(%zu)) = %zu", n, u);
	memset(p, 0xaa, u); /* dirty every usable byte, then hand it back */
	free(p);
	printf("usable %zu %zu\n", n, u);

	char *q = calloc(1, n);
	CHECK(q, "calloc(1, %zu) failed", n);
	CHECK(all_zero(q, n), "calloc(1, %zu) = %p is not zero", n, q);
	CHECK(malloc_usable_size(q) == u, "calloc(1, %zu): usable %zu, malloc's was %zu", n,
	      malloc_usable_size(q), u);
	memset(q, 0x55, u);
	free(q);

	q = calloc(n ? n : 1, 1); /* the other way round */
	CHECK(q && all_zero(q, n), "calloc(%zu, 1) is not zero", n);
	free(q);
}

static const size_t large_sizes[] = { 131072, 140000, 262145, 1000000, 1048577, 2000000, 4194304,
				       5000000, 16777216, 33554433, 67108864 };
#define NLARGE (sizeof(large_sizes) / sizeof(large_sizes[0]))

static void large(void)
{
	for (size_t i = 0; i < NLARGE; i++) {
		size_t n = large_sizes[i];
		char *p = malloc(n);
		CHECK(p && malloc_usable_size(p) >= n, "malloc(%zu) failed or is short", n);
		printf("large malloc %zu %zu\n", n, malloc_usable_size(p));
		memset(p, 0x33, malloc_usable_size(p));
		free(p);
		p = calloc(n, 1);
		CHECK(p && all_zero(p, n), "calloc(%zu, 1) failed or is not zero", n);
		printf("large calloc %zu %zu\n", n, malloc_usable_size(p));
		free(p);
	}
}

static void aligned_row(const char *fn, size_t align, size_t n, void *p)
{
	CHECK(p && (uintptr_t)p % align == 0, "%s(%zu, %zu) = %p", fn, align, n, p);
	size_t u = malloc_usable_size(p);
	CHECK(u >= n, "%s(%zu, %zu): usable %zu", fn, align, n, u);
	memset(p, 0x44, u);
	printf("%s %zu %zu %zu\n", fn, align, n, u);
	free(p);
}

static void aligned(size_t max)
{
	static const size_t sizes[] = { 1, 24, 100, 1000, 4095, 4097, 40000, 100000, 300000, 2000000 };

	for (size_t align = 32; align <= max; align *= 2)
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			size_t n = sizes[i];
			void *p = NULL;
			aligned_row("memalign", align, n, memalign(align, n));
			CHECK(posix_memalign(&p, align, n) == 0, "posix_memalign(%zu, %zu)", align, n);
			aligned_row("posix_memalign", align, n, p);
			aligned_row("aligned_alloc", align, n, aligned_alloc(align, n));
		}
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		aligned_row("valloc", 4096, sizes[i], valloc(sizes[i]));
}

int main(int argc, char **argv)
{
	bool with_large = false;
	size_t max_align = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--large"))
			with_large = true;
		else if (!strcmp(argv[i], "--aligned") && i + 1 < argc)
			max_align = strtoul(argv[++i], NULL, 0);
		else
			CHECK(0, "usage: usable [--large] [--aligned MAX], not %s", argv[i]);
	}
	CHECK(malloc_usable_size(NULL) == 0, "malloc_usable_size(NULL) = %zu", malloc_usable_size(NULL));
	for (size_t n = 0; n <= 4096; n++)
		one(n);
	for (size_t n = 4097; n < (128u << 10); n += 509)
		one(n);
	/* Large blocks: the usable size depends on glibc's moving mmap threshold, so here it is only
	 * required to cover the request (--large prints it, for the allocators where it does not). */
	for (size_t n = 128u << 10; n <= (4u << 20); n = n * 3 / 2) {
		char *p = calloc(1, n);
		CHECK(p && all_zero(p, n), "calloc(1, %zu) is not zero", n);
		CHECK(malloc_usable_size(p) >= n, "malloc_usable_size(calloc(1, %zu)) = %zu", n,
		      malloc_usable_size(p));
		memset(p, 0x77, malloc_usable_size(p));
		free(p);
	}
	if (with_large)
		large();
	if (max_align)
		aligned(max_align);
	return 0;
}
