/* handoff.c: threads whose first allocator call frees what another thread allocated.
 *
 * The main thread starts a spinning thread, so that the process has threads, then allocates
 * ROUNDS batches of blocks of 4111 bytes; for each batch a new thread is started whose very first
 * call into the allocator is free() of the batch's blocks (a consumer, as redis-server's I/O
 * threads are), before it allocates and frees blocks of 5003 bytes of its own. In exact mode
 * every block is a sample, so each free finds a thread that leek has not set up yet. Prints its
 * tallies (tally.h).
 */
#include <pthread.h>
#include <stdatomic.h>

#include "prog.h"
#include "tally.h"

#define ROUNDS 20
#define BATCH 64

static atomic_int stop;

static void *spin(void *arg)
{
	while (!atomic_load(&stop))
		;
	return arg;
}

static void *consume(void *arg)
{
	char **batch = arg;

	for (int i = 0; i < BATCH; i++) /* the thread's first calls */
		free(batch[i]);
	for (int i = 0; i < BATCH; i++) {
		char *p = malloc(5003);
		CHECK(p, "malloc failed");
		memset(p, 3, 5003);
		free(p);
	}
	return NULL;
}

int main(void)
{
	static char *batch[BATCH];
	pthread_t s, t;

	CHECK(pthread_create(&s, NULL, spin, NULL) == 0, "pthread_create");
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < BATCH; i++) {
			batch[i] = malloc(4111);
			CHECK(batch[i], "malloc failed");
			memset(batch[i], 1, 4111);
		}
		CHECK(pthread_create(&t, NULL, consume, batch) == 0, "pthread_create");
		CHECK(pthread_join(t, NULL) == 0, "pthread_join");
	}
	atomic_store(&stop, 1);
	CHECK(pthread_join(s, NULL) == 0, "pthread_join");
	tally(4111, ROUNDS * BATCH, 0, ROUNDS * BATCH);
	tally(5003, ROUNDS * BATCH, 0, ROUNDS * BATCH);
	return 0;
}
