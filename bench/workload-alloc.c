/* workload-alloc.c: an allocation-heavy program for the report-throughput benchmark.
 *
 * usage: workload-alloc [SCALE]      (default 1: 3.1 million allocations)
 *
 * Six call sites: short-lived small strings, a linked list built and torn down, a table of
 * mixed-size values that is grown with realloc, calloc'd buffers, and occasional large blocks.
 * Each round reaches them through a different depth of nest() (0 to 11 extra frames), so the
 * profile holds about a hundred distinct stacks, up to 19 frames deep, rather than six.
 * About 1% of the blocks are leaked on purpose. Sizes and choices come from a fixed xorshift
 * stream, so every run allocates exactly the same sequence. The last line printed is
 * "allocations: N" (its calls to malloc, calloc and realloc), which the
 * benchmark uses as the common unit of work. Never timed on its own.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static unsigned long allocations;
static void *volatile sink;

static uint64_t next_random(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

/* Most allocations are small; one in 64 is between 1 and 64 KiB. */
static size_t mixed_size(void)
{
	uint64_t r = next_random();

	if ((r & 63) == 0)
		return 1024 + (r >> 8) % (63 * 1024);
	return 8 + (r >> 8) % 248;
}

static void *counted_malloc(size_t size)
{
	allocations++;
	return malloc(size);
}

__attribute__((noinline)) static void make_strings(int n)
{
	for (int i = 0; i < n; i++) {
		size_t len = 8 + next_random() % 56;
		char *s = counted_malloc(len);

		memset(s, 'a' + i % 26, len - 1);
		s[len - 1] = '\0';
		sink = s;
		if (next_random() % 128 == 0)
			continue; /* leaked */
		free(s);
	}
}

struct node {
	struct node *next;
	char payload[];
};

__attribute__((noinline)) static void build_list(int n)
{
	struct node *head = NULL;

	for (int i = 0; i < n; i++) {
		struct node *p = counted_malloc(sizeof(*p) + next_random() % 96);

		p->next = head;
		head = p;
	}
	while (head) {
		struct node *next = head->next;

		if (next_random() % 100 != 0) /* about 1% leaked */
			free(head);
		head = next;
	}
}

__attribute__((noinline)) static void *table_value(void)
{
	return counted_malloc(mixed_size());
}

__attribute__((noinline)) static void churn_table(int n)
{
	size_t cap = 16, len = 0;
	void **slots = counted_malloc(cap * sizeof(*slots));

	for (int i = 0; i < n; i++) {
		if (len == cap) {
			cap *= 2;
			slots = realloc(slots, cap * sizeof(*slots));
			allocations++;
		}
		slots[len++] = table_value();
		/* Replace a random older value now and then, so blocks die at mixed ages. */
		if (len > 4 && next_random() % 3 == 0) {
			size_t k = next_random() % len;

			free(slots[k]);
			slots[k] = table_value();
		}
	}
	for (size_t k = 0; k < len; k++)
		if (next_random() % 200 != 0) /* 0.5% leaked */
			free(slots[k]);
	free(slots);
}

__attribute__((noinline)) static void zeroed_buffers(int n)
{
	for (int i = 0; i < n; i++) {
		unsigned char *b = calloc(1 + next_random() % 16, 64);

		allocations++;
		sink = b;
		free(b);
	}
}

__attribute__((noinline)) static void large_blocks(int n)
{
	for (int i = 0; i < n; i++) {
		size_t size = 128 * 1024 + next_random() % (1024 * 1024);
		char *b = counted_malloc(size);

		b[0] = b[size - 1] = 1;
		sink = b;
		if (i % 50 == 0)
			continue; /* leaked */
		free(b);
	}
}

/* Two layers of callers, so one call site shows up under different stacks. */
__attribute__((noinline)) static void phase_parse(int scale)
{
	make_strings(40000 * scale);
	build_list(20000 * scale);
}

__attribute__((noinline)) static void phase_index(int scale)
{
	churn_table(30000 * scale);
	zeroed_buffers(10000 * scale);
}

__attribute__((noinline)) static void one_round(int scale)
{
	phase_parse(scale);
	phase_index(scale);
	make_strings(20000 * scale); /* the same call site, reached one frame higher */
	large_blocks(5 * scale);
}

/* Not a tail call (the store after it), so each level stays a frame of its own. */
__attribute__((noinline)) static void nest(int depth, int scale)
{
	if (depth == 0)
		one_round(scale);
	else
		nest(depth - 1, scale);
	sink = &rng_state;
}

int main(int argc, char **argv)
{
	int scale = argc > 1 ? atoi(argv[1]) : 1;

	if (scale < 1)
		return 2;
	for (int round = 0; round < 24; round++)
		nest(round % 12, scale);
	printf("allocations: %lu\n", allocations);
	return 0;
}
