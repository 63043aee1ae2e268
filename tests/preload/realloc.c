/* realloc.c: realloc, reallocarray and calloc, including their edge cases and failures.
 *
 * Chains of realloc from 1 byte to 4 MiB and back cross between sampled and unsampled blocks (the
 * driver runs this at several periods); the contents must survive every step. The edge cases
 * (realloc(p, 0), realloc(NULL, 0), failures) differ between allocators, so they are not judged
 * here: the program prints one line per case, and the driver compares the output under leek with
 * the output of the same allocator without leek, which must be identical. What every allocator
 * must do (a failed realloc leaves the old block intact) is checked here.
 */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>

#include "prog.h"

/* A realloc that fails leaves its block alive, and this file checks exactly that. */
#pragma GCC diagnostic ignored "-Wuse-after-free"

#define BIG (4u << 20)

/* Hides a constant from the compiler, which would warn about the huge sizes passed on purpose. */
static size_t opaque(size_t x)
{
	volatile size_t v = x;

	return v;
}

static const char *errno_name(int e)
{
	return e == 0 ? "unchanged" : e == ENOMEM ? "ENOMEM" : e == EINVAL ? "EINVAL" : "other";
}

/* Prints what a call that may fail returned; errno was 0 before it. */
static void report(const char *what, const void *p, int err)
{
	printf("%s -> %s errno=%s\n", what, p ? "ptr" : "NULL", errno_name(err));
}

static void chain(uint64_t tag)
{
	size_t size = 1;
	char *p = malloc(size);

	CHECK(p, "malloc(1) failed");
	pattern_fill(p, size, tag);
	while (size < BIG) {
		size_t next = size + size / 2 + 1;
		next = next > BIG ? BIG : next;
		p = realloc(p, next);
		CHECK(p, "realloc(.., %zu) failed", next);
		size_t bad = pattern_check(p, size, tag);
		CHECK(bad == size, "realloc %zu -> %zu: byte %zu lost", size, next, bad);
		for (size_t i = size; i < next; i++)
			p[i] = (char)pattern_byte(tag, i);
		CHECK(malloc_usable_size(p) >= next, "usable %zu < %zu", malloc_usable_size(p), next);
		size = next;
	}
	while (size > 1) {
		size_t next = size * 2 / 3;
		next = next ? next : 1;
		p = realloc(p, next);
		CHECK(p, "realloc(.., %zu) failed", next);
		size_t bad = pattern_check(p, next, tag);
		CHECK(bad == next, "realloc %zu -> %zu: byte %zu lost", size, next, bad);
		size = next;
	}
	free(p);
}

int main(void)
{
	char *p, *q;

	for (uint64_t tag = 1; tag <= 4; tag++)
		chain(tag);

	/* realloc(NULL, n) is malloc(n). */
	p = realloc(NULL, 1000);
	CHECK(p, "realloc(NULL, 1000) failed");
	memset(p, 1, 1000);
	free(p);
	p = realloc(NULL, 300000);
	CHECK(p, "realloc(NULL, 300000) failed");
	memset(p, 1, 300000);
	free(p);
	errno = 0;
	p = realloc(NULL, 0);
	report("realloc(NULL,0)", p, errno);
	free(p);

	/* realloc(p, 0): glibc frees p and returns NULL; other allocators may return a block. */
	static const size_t zero_from[] = { 1, 100, 5000, 300000 };
	for (int i = 0; i < 4; i++) {
		p = malloc(zero_from[i]);
		CHECK(p, "malloc failed");
		memset(p, 2, zero_from[i]);
		errno = 0;
		q = realloc(p, 0);
		char what[64];
		snprintf(what, sizeof(what), "realloc(malloc(%zu),0)", zero_from[i]);
		report(what, q, errno);
		free(q);
	}

	/* Failures leave the old block as it was. */
	static const size_t huge[] = { SIZE_MAX, SIZE_MAX - 4096, SIZE_MAX / 2, (size_t)1 << 62 };
	for (int i = 0; i < 4; i++)
		for (size_t from = 100; from <= 1000000; from *= 100) {
			p = malloc(from);
			CHECK(p, "malloc failed");
			pattern_fill(p, from, from);
			errno = 0;
			q = realloc(p, opaque(huge[i]));
			char what[96];
			snprintf(what, sizeof(what), "realloc(malloc(%zu),%#zx)", from, huge[i]);
			report(what, q, errno);
			CHECK(!q, "realloc to %#zx succeeded", huge[i]);
			CHECK(pattern_check(p, from, from) == from, "failed realloc damaged the block");
			free(p);
		}

	/* reallocarray: the product overflows. */
	p = malloc(64);
	CHECK(p, "malloc failed");
	pattern_fill(p, 64, 9);
	errno = 0;
	q = reallocarray(p, opaque(SIZE_MAX / 2), 3);
	report("reallocarray(p,SIZE_MAX/2,3)", q, errno);
	CHECK(!q, "overflowing reallocarray succeeded");
	CHECK(pattern_check(p, 64, 9) == 64, "failed reallocarray damaged the block");
	errno = 0;
	q = reallocarray(p, opaque((size_t)1 << 33), (size_t)1 << 33);
	report("reallocarray(p,2^33,2^33)", q, errno);
	CHECK(pattern_check(p, 64, 9) == 64, "failed reallocarray damaged the block");
	q = reallocarray(p, 100, 30);
	CHECK(q && pattern_check(q, 64, 9) == 64, "reallocarray(p, 100, 30) lost the contents");
	free(q);
	errno = 0;
	q = reallocarray(NULL, opaque(SIZE_MAX / 2), 3);
	report("reallocarray(NULL,SIZE_MAX/2,3)", q, errno);
	q = reallocarray(NULL, 10, 10);
	CHECK(q, "reallocarray(NULL, 10, 10) failed");
	free(q);

	/* calloc: the product overflows, or is just too large. */
	errno = 0;
	p = calloc(opaque(SIZE_MAX / 2), 3);
	report("calloc(SIZE_MAX/2,3)", p, errno);
	CHECK(!p, "overflowing calloc succeeded");
	errno = 0;
	p = calloc(opaque((size_t)1 << 40), (size_t)1 << 40);
	report("calloc(2^40,2^40)", p, errno);
	CHECK(!p, "overflowing calloc succeeded");
	errno = 0;
	p = calloc(1, opaque(SIZE_MAX - 100));
	report("calloc(1,SIZE_MAX-100)", p, errno);
	CHECK(!p, "huge calloc succeeded");
	errno = 0;
	p = malloc(opaque(SIZE_MAX));
	report("malloc(SIZE_MAX)", p, errno);
	CHECK(!p, "malloc(SIZE_MAX) succeeded");
	errno = 0;
	p = calloc(0, 0);
	report("calloc(0,0)", p, errno);
	free(p);
	return 0;
}
