/* mtrace-prog.c: a program that traces its own heap with glibc's mtrace() and knows its leaks.
 *
 * Run with MALLOC_TRACE=FILE and LD_PRELOAD=libc_malloc_debug.so.0 (glibc 2.34 and later). It
 * allocates through three functions of its own, frees some blocks, reallocs some, and prints
 * each block it leaves allocated as "LEAK ADDRESS SIZE FUNCTION", which test-import-run.c
 * compares with what `leek import` finds in the trace.
 */
#include <mcheck.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) static void *leak_small(size_t n)
{
	return malloc(n);
}

__attribute__((noinline)) static void *leak_zeroed(size_t n)
{
	return calloc(1, n);
}

__attribute__((noinline)) static void *grow(void *p, size_t n)
{
	return realloc(p, n);
}

int main(void)
{
	void *keep[64];
	size_t sizes[64];
	const char *fn[64];

	mtrace();
	for (int i = 0; i < 64; i++) {
		sizes[i] = 16 + (size_t)i * 8;
		keep[i] = i % 2 ? leak_small(sizes[i]) : leak_zeroed(sizes[i]);
		fn[i] = i % 2 ? "leak_small" : "leak_zeroed";
	}
	for (int i = 0; i < 64; i++) {
		if (i % 3 == 0) {
			free(keep[i]);
			keep[i] = NULL;
		} else if (i % 5 == 0) {
			sizes[i] *= 4;
			keep[i] = grow(keep[i], sizes[i]);
			fn[i] = "grow";
		}
	}
	for (int i = 0; i < 64; i++) /* churn that leaves nothing */
		free(malloc(100 + (size_t)i));
	muntrace();
	for (int i = 0; i < 64; i++)
		if (keep[i])
			printf("LEAK %p %zu %s\n", keep[i], sizes[i], fn[i]);
	return 0;
}
