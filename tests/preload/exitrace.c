/* exitrace.c: exit() while other threads allocate and free without pause.
 *
 * Four threads allocate, write and free blocks (some large enough for the default period to
 * sample) in a loop that never ends; an atexit handler allocates and frees too. The main thread
 * lets them run for a moment and calls exit(0): destructors, libleek's trailer among them, run
 * while the threads go on allocating, freeing sampled blocks and taking leek's slow path. The
 * process must leave promptly with status 0; the driver kills it after a timeout.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "prog.h"

#define NTHREADS 4

static atomic_ulong rounds;

static void *churn(void *arg)
{
	uint64_t rng = (uintptr_t)arg;
	void *keep[16] = { 0 };

	for (;;) {
		unsigned i = (unsigned)(prog_rand(&rng) % 16);
		size_t n = prog_rand(&rng) % 16 ? 1 + prog_rand(&rng) % 5000
						: 100000 + prog_rand(&rng) % 300000;
		free(keep[i]);
		keep[i] = prog_rand(&rng) % 2 ? malloc(n) : calloc(1, n);
		if (!keep[i])
			abort();
		memset(keep[i], 0x33, n);
		atomic_fetch_add(&rounds, 1);
	}
	return NULL;
}

static void at_exit(void)
{
	for (int i = 0; i < 64; i++) {
		size_t n = i % 8 ? 6007 : 400000;
		char *p = malloc(n);
		if (!p)
			abort();
		pattern_fill(p, n, (uint64_t)i);
		if (pattern_check(p, n, (uint64_t)i) != n)
			abort();
		free(p);
	}
}

int main(void)
{
	pthread_t th;

	CHECK(atexit(at_exit) == 0, "atexit");
	for (int i = 0; i < NTHREADS; i++)
		CHECK(pthread_create(&th, NULL, churn, (void *)(uintptr_t)(i + 1)) == 0,
		      "pthread_create");
	while (atomic_load(&rounds) < 20000)
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	printf("exitrace: exiting with %d threads allocating\n", NTHREADS);
	fflush(stdout);
	exit(0);
}
