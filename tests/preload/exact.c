/* exact.c: a fixture with known allocations, for exact mode (LEEK_PERIOD=1).
 *
 * Every size below is one that libc never asks for itself, so the driver can count the ALLOC,
 * FREE records of each size in the profile and compare them with the tally lines printed here
 * (tally.h): they must be equal, and the stacks of those records must pass through this program.
 */
#include <malloc.h>

#include "prog.h"
#include "tally.h"

static char *keep[2000];
static unsigned nkeep;

static void *must(void *p, const char *what)
{
	CHECK(p, "%s failed", what);
	return p;
}

static void mallocs(void)
{
	char *p[1000];

	for (int i = 0; i < 1000; i++) {
		p[i] = must(malloc(4099), "malloc(4099)");
		memset(p[i], i, 4099);
	}
	for (int i = 0; i < 1000; i++) {
		if (i % 5 < 3)
			free(p[i]); /* 600 freed */
		else
			keep[nkeep++] = p[i];
	}
	tally(4099, 1000, 0, 600);
}

static void callocs(void)
{
	for (int i = 0; i < 500; i++) {
		char *p = must(calloc(3, 1367), "calloc(3, 1367)");
		CHECK(all_zero(p, 4101), "calloc(3, 1367) is not zero");
		if (i % 5 == 0)
			free(p); /* 100 freed */
		else
			keep[nkeep++] = p;
	}
	tally(4101, 500, 0, 100);
}

static void reallocs(void)
{
	for (int i = 0; i < 10; i++) {
		char *p = must(malloc(5001), "malloc(5001)");
		memset(p, 7, 5001);
		p = must(realloc(p, 9001), "realloc(9001)");
		p = must(realloc(p, 13001), "realloc(13001)");
		CHECK(p[5000] == 7, "realloc lost the contents");
		if (i < 4)
			free(p);
		else
			keep[nkeep++] = p;
	}
	tally(5001, 10, 0, 10);
	tally(9001, 10, 0, 10);
	tally(13001, 10, 0, 4);
}

/* A slab block realloc'ed within its size class stays where it is: its sample ends (a FREE of 101
 * bytes) and a new one starts (an ALLOC of 109) in the same block. */
static void reallocs_in_place(void)
{
	for (int i = 0; i < 12; i++) {
		char *p = must(malloc(101), "malloc(101)");
		memset(p, 9, 101);
		p = must(realloc(p, 109), "realloc(109)");
		CHECK(p[100] == 9, "realloc lost the contents");
		if (i < 5)
			free(p);
		else
			keep[nkeep++] = p;
	}
	tally(101, 12, 0, 12);
	tally(109, 12, 0, 5);
}

static void aligned(void)
{
	for (int i = 0; i < 20; i++) {
		void *p = NULL;
		CHECK(posix_memalign(&p, 4096, 6007) == 0, "posix_memalign");
		CHECK((uintptr_t)p % 4096 == 0, "posix_memalign(4096): misaligned");
		free(p);
	}
	for (int i = 0; i < 7; i++) {
		keep[nkeep] = must(memalign(128, 3001), "memalign(128, 3001)");
		CHECK((uintptr_t)keep[nkeep++] % 128 == 0, "memalign(128): misaligned");
	}
	for (int i = 0; i < 3; i++) {
		void *p = must(valloc(7013), "valloc(7013)");
		CHECK((uintptr_t)p % 4096 == 0, "valloc: misaligned");
		free(p);
	}
	tally(6007, 20, 0, 20);
	tally(3001, 7, 0, 0);
	tally(7013, 3, 0, 3);
}

int main(void)
{
	mallocs();
	callocs();
	reallocs();
	reallocs_in_place();
	aligned();
	/* What is in keep[] stays live: the profile ends with those blocks unfreed. */
	printf("live %u\n", nkeep);
	return 0;
}
