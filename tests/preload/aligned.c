/* aligned.c: posix_memalign, aligned_alloc, memalign, valloc and pvalloc.
 *
 * Every power-of-two alignment from 8 B to 1 MiB (and one of 64 MiB), at sizes from 0 to 300000:
 * the block is aligned as asked, writable over its whole size, and malloc_usable_size covers it;
 * valloc and pvalloc give page-aligned blocks, and pvalloc's covers the size rounded up to a page.
 * The answers to bad arguments (alignment 0, 3, 24, not a multiple of sizeof(void *), huge sizes)
 * belong to the allocator: the program prints them, one line each, and the driver requires the
 * same lines with and without leek. The checks that hold for every allocator are made here.
 *
 * Usage: aligned [--no-pvalloc].
 */
#include <errno.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

#include "prog.h"

static const size_t sizes[] = { 0, 1, 100, 4096, 4097, 65536, 300000 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static const char *errno_name(int e)
{
	return e == 0 ? "0" : e == ENOMEM ? "ENOMEM" : e == EINVAL ? "EINVAL" : "other";
}

static void use(void *p, size_t size, size_t align, const char *fn)
{
	CHECK(p, "%s(%zu, %zu) failed", fn, align, size);
	CHECK((uintptr_t)p % align == 0, "%s(%zu, %zu) = %p is misaligned", fn, align, size, p);
	CHECK(malloc_usable_size(p) >= size, "%s(%zu, %zu): usable size %zu", fn, align, size,
	      malloc_usable_size(p));
	memset(p, 0xa5, size);
	memset(p, 0x5a, malloc_usable_size(p));
	free(p);
}

int main(int argc, char **argv)
{
	size_t page = (size_t)getpagesize();
	/* Debian's jemalloc has no pvalloc: the program would get glibc's, from another heap. */
	bool with_pvalloc = !(argc > 1 && strcmp(argv[1], "--no-pvalloc") == 0);
	void *p;

	for (size_t align = 8; align <= (1u << 20); align *= 2)
		for (size_t i = 0; i < NSIZES; i++) {
			size_t size = sizes[i];
			p = NULL;
			int r = posix_memalign(&p, align, size);
			CHECK(r == 0, "posix_memalign(%zu, %zu) = %d", align, size, r);
			use(p, size, align, "posix_memalign");
			use(aligned_alloc(align, size), size, align, "aligned_alloc");
			use(memalign(align, size), size, align, "memalign");
		}
	/* Far beyond a page: the arena's over-aligned path. */
	use(memalign(64u << 20, 1000), 1000, 64u << 20, "memalign");
	p = NULL;
	CHECK(posix_memalign(&p, 64u << 20, 5u << 20) == 0, "posix_memalign(64 MiB, 5 MiB)");
	use(p, 5u << 20, 64u << 20, "posix_memalign");

	for (size_t i = 0; i < NSIZES; i++) {
		size_t size = sizes[i];
		size_t rounded = (size + page - 1) & ~(page - 1);
		use(valloc(size), size, page, "valloc");
		if (!with_pvalloc)
			continue;
		p = pvalloc(size); /* glibc's pvalloc(0) gives less than a page: its rounding misses 0 */
		CHECK(p, "pvalloc(%zu) failed", size);
		CHECK(malloc_usable_size(p) >= rounded, "pvalloc(%zu): usable %zu < %zu", size,
		      malloc_usable_size(p), rounded);
		use(p, rounded, page, "pvalloc");
	}

	/* Bad alignments and huge sizes: the allocator's own answers, printed. */
	static const size_t bad[] = { 0, 1, 2, 3, 4, 24, 48, 4097, 12288, 3u << 20 };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		void *sentinel = (void *)0x1234, *q = sentinel;
		errno = 0;
		int r = posix_memalign(&q, bad[i], 10);
		printf("posix_memalign(%zu,10) -> %s out=%s errno=%s\n", bad[i], errno_name(r),
		       q == sentinel ? "untouched" : q ? "ptr" : "NULL", errno_name(errno));
		if (r == 0)
			free(q);
		errno = 0;
		q = memalign(bad[i], 10);
		printf("memalign(%zu,10) -> %s errno=%s\n", bad[i], q ? "ptr" : "NULL", errno_name(errno));
		free(q);
		errno = 0;
		q = aligned_alloc(bad[i], 10);
		printf("aligned_alloc(%zu,10) -> %s errno=%s\n", bad[i], q ? "ptr" : "NULL",
		       errno_name(errno));
		free(q);
	}
	/* memalign rounds a bad alignment up to a power of two in glibc. */
	p = memalign(24, 100);
	printf("memalign(24,100) aligned to 32: %d\n", p ? (int)((uintptr_t)p % 32 == 0) : -1);
	free(p);

	static const size_t huge[] = { SIZE_MAX, SIZE_MAX - 100, SIZE_MAX / 2, (size_t)1 << 62 };
	for (size_t i = 0; i < 4; i++) {
		void *q = (void *)0x1234;
		errno = 0;
		int r = posix_memalign(&q, 64, huge[i]);
		printf("posix_memalign(64,%#zx) -> %s out=%s\n", huge[i], errno_name(r),
		       q == (void *)0x1234 ? "untouched" : q ? "ptr" : "NULL");
		errno = 0;
		q = aligned_alloc(4096, huge[i]);
		printf("aligned_alloc(4096,%#zx) -> %s errno=%s\n", huge[i], q ? "ptr" : "NULL",
		       errno_name(errno));
		errno = 0;
		q = valloc(huge[i]);
		printf("valloc(%#zx) -> %s errno=%s\n", huge[i], q ? "ptr" : "NULL", errno_name(errno));
		if (with_pvalloc) {
			errno = 0;
			q = pvalloc(huge[i]);
			printf("pvalloc(%#zx) -> %s errno=%s\n", huge[i], q ? "ptr" : "NULL",
			       errno_name(errno));
		}
		errno = 0;
		q = memalign((size_t)1 << 63, huge[i] >> 60);
		printf("memalign(2^63,%zu) -> %s errno=%s\n", huge[i] >> 60, q ? "ptr" : "NULL",
		       errno_name(errno));
		free(q);
	}
	return 0;
}
