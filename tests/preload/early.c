/* early.c: allocation before leek is initialised, and blocks from then freed much later.
 *
 * The executable's .preinit_array runs before any library's constructor, libleek's included, and
 * a constructor of priority 101 runs before the program's other constructors. Both allocate,
 * write, free and realloc, and keep some blocks (small, large, calloc'ed, realloc'ed) that main
 * checks, reallocates and frees: each must be freed by whichever allocator served it, whether leek
 * was initialised by that first call or not.
 *
 * Prints tally lines (tally.h) for 5003 and 300007 in exact mode, where every block is sampled
 * once leek is up (it starts at the first allocation, so these are all recorded).
 */
#include "prog.h"
#include "tally.h"

#define NKEPT 8

struct kept {
	void *p;
	size_t n;
	uint64_t tag;
};

static struct kept kept[2][NKEPT];

static void work(int stage)
{
	/* allocate, write, free */
	for (int i = 0; i < 4; i++) {
		size_t n = i % 2 ? 300007 : 5003;
		char *p = malloc(n);
		if (!p)
			abort(); /* no stdio yet from .preinit_array: be blunt */
		pattern_fill(p, n, (uint64_t)i);
		if (pattern_check(p, n, (uint64_t)i) != n)
			abort();
		free(p);
	}
	/* realloc across sizes, the contents kept */
	char *p = malloc(100);
	if (!p)
		abort();
	pattern_fill(p, 100, 7);
	for (size_t n = 200; n <= 400000; n *= 3) {
		p = realloc(p, n);
		if (!p || pattern_check(p, 100, 7) != 100)
			abort();
	}
	free(p);
	/* blocks main frees */
	for (int i = 0; i < NKEPT; i++) {
		struct kept *k = &kept[stage][i];
		k->n = i % 4 == 3 ? 300007 : 5003;
		k->tag = (uint64_t)(stage * 100 + i);
		if (i % 4 == 1) {
			k->p = calloc(1, k->n);
			if (!k->p || !all_zero(k->p, k->n))
				abort();
		} else if (i % 4 == 2) {
			k->p = realloc(malloc(64), k->n);
		} else {
			k->p = malloc(k->n);
		}
		if (!k->p)
			abort();
		pattern_fill(k->p, k->n, k->tag);
	}
}

static void preinit(void)
{
	work(0);
}

__attribute__((section(".preinit_array"), used)) static void (*const preinit_fn)(void) = preinit;

__attribute__((constructor(101))) static void early_ctor(void)
{
	work(1);
}

int main(void)
{
	for (int s = 0; s < 2; s++)
		for (int i = 0; i < NKEPT; i++) {
			struct kept *k = &kept[s][i];
			CHECK(pattern_check(k->p, k->n, k->tag) == k->n,
			      "stage %d block %d overwritten", s, i);
			if (i % 2) {
				k->p = realloc(k->p, k->n + 1000);
				CHECK(k->p, "realloc failed");
				CHECK(pattern_check(k->p, k->n, k->tag) == k->n,
				      "stage %d block %d lost its contents in realloc", s, i);
			}
		}
	for (int s = 0; s < 2; s++)
		for (int i = 0; i < NKEPT; i++)
			free(kept[s][i].p);
	if (exact_mode()) {
		/* per stage: 2 + 6 kept of 5003 (two through realloc), 2 + 2 kept of 300007 */
		tally(5003, 2 * 8, 0, 2 * 8);
		tally(300007, 2 * 4, 0, 2 * 4);
	}
	printf("early ok\n");
	return 0;
}
