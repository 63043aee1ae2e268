/* usdt.c: a few known allocations for test-usdt.c, which counts leek's USDT probes while this runs.
 *
 * In the main thread and in a second one (a thread with a record of its own takes other slow
 * paths: sampler.c's exact_own and free_own), blocks of distinct sizes, half of them freed, one
 * realloc'ed and one left for the exit. The sizes come from the profile; this program only makes
 * them happen.
 */
#include <pthread.h>

#include "prog.h"

#define N 40

static void allocate(size_t base)
{
	void *volatile p[N];

	for (int i = 0; i < N; i++) {
		p[i] = malloc(base + (size_t)i * 8);
		CHECK(p[i], "malloc");
		memset(p[i], i, base + (size_t)i * 8);
	}
	for (int i = 0; i < N; i += 2)
		free(p[i]);
	p[1] = realloc(p[1], 3 * base);
	CHECK(p[1], "realloc");
	for (int i = 1; i < N; i += 2)
		free(p[i]);
}

static void *thread_main(void *arg)
{
	allocate(3000);
	return arg;
}

int main(void)
{
	pthread_t t;

	allocate(1000);
	CHECK(pthread_create(&t, NULL, thread_main, NULL) == 0, "pthread_create");
	CHECK(pthread_join(t, NULL) == 0, "pthread_join");
	void *volatile left = malloc(77777); /* live at the exit: a sample without a free */
	CHECK(left, "malloc");
	return 0;
}
