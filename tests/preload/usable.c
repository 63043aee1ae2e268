/* usable.c: malloc_usable_size and calloc of sampled blocks (run with LEEK_PERIOD=1).
 *
 * For every size from 0 to 4 KiB, and in steps up to 128 KiB, the program prints
 * "usable N U" where U = malloc_usable_size(malloc(N)). The driver runs it with and without leek
 * and requires the same table: a sampled block must report what the real allocator would have
 * (redis, for one, writes up to the usable size). It also checks here that the whole usable size
 * is writable, and that calloc returns zeroed memory even where a freed block was dirty just
 * before (the arena reuses its slots at once).
 */
#include <malloc.h>

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

int main(void)
{
	CHECK(malloc_usable_size(NULL) == 0, "malloc_usable_size(NULL) = %zu", malloc_usable_size(NULL));
	for (size_t n = 0; n <= 4096; n++)
		one(n);
	for (size_t n = 4097; n < (128u << 10); n += 509)
		one(n);
	/* Large blocks: the usable size depends on glibc's moving mmap threshold, so it is only
	 * required to cover the request. */
	for (size_t n = 128u << 10; n <= (4u << 20); n = n * 3 / 2) {
		char *p = calloc(1, n);
		CHECK(p && all_zero(p, n), "calloc(1, %zu) is not zero", n);
		CHECK(malloc_usable_size(p) >= n, "malloc_usable_size(calloc(1, %zu)) = %zu", n,
		      malloc_usable_size(p));
		memset(p, 0x77, malloc_usable_size(p));
		free(p);
	}
	return 0;
}
