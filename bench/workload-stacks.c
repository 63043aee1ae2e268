/* workload-stacks.c: a program with many distinct allocation stacks, for bench/html-report.sh.
 *
 * usage: workload-stacks [DEPTH]      (default 17: 131 072 stacks)
 *
 * step() recurses DEPTH times, calling left() or right() at each level by one bit of a path
 * number, and allocates at the bottom: every path is its own stack (2^DEPTH of them, up to
 * 2 * DEPTH + 4 frames deep), and the flame graph of its profile is a full binary tree of about
 * 2^(DEPTH + 2) frames before pruning, the worst shape for a page: wide, deep, and no frame much
 * larger than its siblings. Four rounds walk every path; each block is 32 B to 4 KiB (a hash of
 * the path), a third of them kept to the end, the rest freed in the next round, so the heap
 * grows and churns. Never timed on its own.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define ROUNDS 4

static int depth = 17;
static void **kept;
static void *volatile sink;

static void step(int d, uint32_t path);

__attribute__((noinline)) static void leaf(uint32_t path, int round)
{
	size_t size = 32 + ((path * 2654435761u) >> 20) % 4064;
	void *p = malloc(size);

	sink = p;
	if (path % 3 == 0 && round == 0)
		kept[path] = p;
	else
		free(p);
}

__attribute__((noinline)) static void left(int d, uint32_t path)
{
	step(d, path);
	sink = NULL;
}

__attribute__((noinline)) static void right(int d, uint32_t path)
{
	step(d, path);
	sink = &kept; /* not left's code, or the compiler folds the two into one (-fipa-icf) */
}

static int round_no;

__attribute__((noinline)) static void step(int d, uint32_t path)
{
	if (d == depth)
		leaf(path, round_no);
	else if ((path >> d) & 1)
		right(d + 1, path);
	else
		left(d + 1, path);
	sink = NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		depth = atoi(argv[1]);
	if (depth < 1 || depth > 24)
		return 2;
	kept = calloc((size_t)1 << depth, sizeof(*kept));
	for (round_no = 0; round_no < ROUNDS; round_no++)
		for (uint32_t path = 0; path < (1u << depth); path++)
			step(0, path);
	printf("stacks: %u\n", 1u << depth);
	return 0;
}
