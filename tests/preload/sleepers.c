/* sleepers.c: threads that allocate in bursts and sleep between them, beside one that allocates
 * all the time. The file leaves a sleeper's thread segment behind while it sleeps, and libleek
 * ends that body from the busy thread (writer-segment.c, lk_seg_seal), at times while the sleeper
 * is storing a record. Nothing may be lost for it: in exact mode every block's ALLOC and FREE is in
 * the profile (tally.h).
 *
 * One more thread allocates a block of ONCE_SIZE, sleeps until the busy thread has made
 * ONCE_PAIRS pairs (several MiB of profile), then allocates a second one: if its first body was
 * ended meanwhile, the second block is in a body of its own. It prints "once TID" for the test to
 * find its bodies.
 *
 * Usage: sleepers [ROUNDS] (default 400). Exits 0; prints the tallies, then "once TID".
 */
#include <pthread.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <time.h>

#include "prog.h"
#include "tally.h"

#define NSLEEPERS 4
#define SLEEPER_SIZE 4099 /* sleeper i: SLEEPER_SIZE + 2 i */
#define BUSY_SIZE 5003
#define ONCE_SIZE 6007
#define ONCE_PAIRS 1500000 /* about 13 MiB of records: past lk_seg_seal's 4 MiB */

static unsigned long rounds = 400;
static unsigned long sleeper_pairs[NSLEEPERS];
static unsigned long busy_pairs_done;
static int sleepers_done;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void *sleeper(void *arg)
{
	uintptr_t i = (uintptr_t)arg;
	uint64_t rng = i * 7919 + 17;
	unsigned long pairs = 0;

	for (unsigned long r = 0; r < rounds; r++) {
		unsigned burst = (unsigned)(prog_rand(&rng) % 64);
		for (unsigned k = 0; k < burst; k++) {
			void *p = malloc(SLEEPER_SIZE + 2 * i);
			CHECK(p, "malloc failed");
			*(volatile char *)p = 1;
			free(p);
			pairs++;
		}
		nanosleep(&(struct timespec){ 0, (long)(prog_rand(&rng) % 500) * 1000 }, NULL);
	}
	sleeper_pairs[i] = pairs;
	return NULL;
}

static void *busy(void *arg)
{
	unsigned long pairs = 0;

	(void)arg;
	for (;;) {
		for (int k = 0; k < 1000; k++) {
			void *p = malloc(BUSY_SIZE);
			CHECK(p, "malloc failed");
			*(volatile char *)p = 1;
			free(p);
		}
		pairs += 1000;
		pthread_mutex_lock(&mu);
		__atomic_store_n(&busy_pairs_done, pairs, __ATOMIC_RELAXED);
		pthread_cond_broadcast(&cv);
		bool stop = sleepers_done && pairs >= ONCE_PAIRS;
		pthread_mutex_unlock(&mu);
		if (stop)
			return NULL;
	}
}

static long once_tid;

static void *once(void *arg)
{
	(void)arg;
	once_tid = syscall(SYS_gettid);
	void *a = malloc(ONCE_SIZE);
	CHECK(a, "malloc failed");
	pthread_mutex_lock(&mu);
	while (busy_pairs_done < ONCE_PAIRS)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	void *b = malloc(ONCE_SIZE);
	CHECK(b, "malloc failed");
	free(a);
	free(b);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[NSLEEPERS], busy_th, once_th;

	if (argc > 1)
		rounds = strtoul(argv[1], NULL, 10);
	CHECK(pthread_create(&once_th, NULL, once, NULL) == 0, "pthread_create");
	CHECK(pthread_create(&busy_th, NULL, busy, NULL) == 0, "pthread_create");
	for (uintptr_t i = 0; i < NSLEEPERS; i++)
		CHECK(pthread_create(&th[i], NULL, sleeper, (void *)i) == 0, "pthread_create");
	for (int i = 0; i < NSLEEPERS; i++)
		CHECK(pthread_join(th[i], NULL) == 0, "pthread_join");
	pthread_mutex_lock(&mu);
	sleepers_done = 1;
	pthread_mutex_unlock(&mu);
	CHECK(pthread_join(busy_th, NULL) == 0, "pthread_join");
	CHECK(pthread_join(once_th, NULL) == 0, "pthread_join");
	for (int i = 0; i < NSLEEPERS; i++)
		tally(SLEEPER_SIZE + 2 * (size_t)i, sleeper_pairs[i], 0, sleeper_pairs[i]);
	tally(BUSY_SIZE, busy_pairs_done, 0, busy_pairs_done);
	tally(ONCE_SIZE, 2, 0, 2);
	printf("once %ld\n", once_tid);
	return 0;
}
