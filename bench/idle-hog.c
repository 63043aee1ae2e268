/* idle-hog.c: a neighbour that only wants CPU, for bench/idle-neighbour.sh: run it at SCHED_IDLE
 * beside a program to see what a thread that takes only the CPU nobody wants still costs it.
 *
 * usage: idle-hog 0      spins on registers: no memory touched
 *        idle-hog MiB    writes at random over MiB of memory (a reader's live set, a window)
 *
 * Runs until killed. Never a pass/fail test.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char *argv[])
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 0;
	volatile uint64_t sink = 0;
	uint64_t x = 88172645463325252ull, s = 0;

	if (!mib)
		for (;;)
			sink = sink * 3 + 1;
	size_t n = mib << 17; /* 8-byte words */
	uint64_t *a = malloc(n * sizeof(*a));
	if (!a)
		return 1;
	memset(a, 1, n * sizeof(*a));
	for (;;) { /* xorshift64: a word anywhere, every time */
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		a[x % n] += s++;
	}
}
