/* fastpath.c: N calls of one allocator function on its fast path, for callgrind.
 *
 * usage: fastpath malloc|calloc|realloc N SIZE
 * Each round is one malloc-family call and one free, so the per-call instruction counts of the
 * hooks come out of callgrind's per-function totals divided by N. Never timed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	long n = atol(argv[2]);
	size_t size = (size_t)atol(argv[3]);
	void *volatile p;

	if (!strcmp(argv[1], "malloc")) {
		for (long i = 0; i < n; i++) {
			p = malloc(size);
			free(p);
		}
	} else if (!strcmp(argv[1], "calloc")) {
		for (long i = 0; i < n; i++) {
			p = calloc(1, size);
			free(p);
		}
	} else if (!strcmp(argv[1], "realloc")) {
		p = malloc(size);
		for (long i = 0; i < n; i++)
			p = realloc(p, size + (i & 1) * 16);
		free(p);
	} else {
		return 2;
	}
	return 0;
}
