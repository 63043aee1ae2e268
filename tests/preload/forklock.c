/* forklock.c: fork, many times, while other threads hold the allocator's locks and leek's.
 *
 * Three threads allocate, reallocate and free without pause, blocks of 16 B to 64 KiB (at a period
 * of 4 KiB most of their calls take leek's sample path: the unwinder, the stack table, the arena,
 * the writer), so that fork lands while one of them holds glibc's arena lock, leek's lock, or is
 * half-way through the unwinder: a fixed work per fork (children.h). Meanwhile the main thread
 * forks FORKS times, at a jittered pace. Each child must allocate and free (blocks of 4099 bytes in the forking thread, of 6007 in
 * a thread of its own), and exit 0 through exit(), so that its profile ends with a trailer, within
 * 10 seconds: a child that takes longer is killed, and the program fails naming the fork, because
 * that is a deadlock. Prints "forks N" and the children's tally lines (tally.h).
 *
 * Usage: forklock FORKS.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "children.h"
#include "tally.h"

#define NTHREADS 3
#define NSLOTS 64
#define CHILD_BLOCKS 20
#define CHILD_THREAD_BLOCKS 100
#define CHILD_SECONDS 10

static atomic_int stop;

static size_t draw_size(uint64_t *rng)
{
	unsigned lg = 4 + (unsigned)(prog_rand(rng) % 12);
	size_t lo = (size_t)1 << lg;

	return (lo + prog_rand(rng) % lo) & ~(size_t)15; /* multiples of 16: never a tally size */
}

static void *hammer(void *arg)
{
	unsigned self = (unsigned)(uintptr_t)arg - 1, round = 0, ops = 0;
	uint64_t rng = (uint64_t)(uintptr_t)arg;
	void *slot[NSLOTS] = { 0 };

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		if (!hammer_may(self, &round, &ops))
			continue;
		unsigned i = (unsigned)(prog_rand(&rng) % NSLOTS);
		size_t size = draw_size(&rng);
		switch (prog_rand(&rng) % 4) {
		case 0:
			free(slot[i]);
			slot[i] = malloc(size);
			break;
		case 1:
			free(slot[i]);
			slot[i] = calloc(1, size);
			break;
		case 2:
			slot[i] = realloc(slot[i], size);
			break;
		default:
			free(slot[i]);
			slot[i] = NULL;
			CHECK(posix_memalign(&slot[i], 64, size) == 0, "posix_memalign failed");
			break;
		}
		CHECK(slot[i], "allocation of %zu bytes failed", size);
		memset(slot[i], 0x5c, size < 256 ? size : 256);
	}
	for (int i = 0; i < NSLOTS; i++)
		free(slot[i]);
	return NULL;
}

static void *child_thread(void *arg)
{
	for (int i = 0; i < CHILD_THREAD_BLOCKS; i++) {
		char *p = malloc(6007);
		CHECK(p, "child thread: malloc failed");
		pattern_fill(p, 6007, (uint64_t)i);
		CHECK(pattern_check(p, 6007, (uint64_t)i) == 6007, "child thread: block damaged");
		free(p);
	}
	return arg;
}

static void child(void)
{
	char *b[CHILD_BLOCKS];
	pthread_t th;

	for (int i = 0; i < CHILD_BLOCKS; i++) {
		b[i] = malloc(4099);
		CHECK(b[i], "child: malloc failed");
		pattern_fill(b[i], 4099, (uint64_t)i);
	}
	CHECK(pthread_create(&th, NULL, child_thread, NULL) == 0, "child: pthread_create");
	CHECK(pthread_join(th, NULL) == 0, "child: pthread_join");
	for (int i = 0; i < CHILD_BLOCKS; i++) {
		CHECK(pattern_check(b[i], 4099, (uint64_t)i) == 4099, "child: block %d damaged", i);
		free(b[i]);
	}
	tally(4099, CHILD_BLOCKS, 0, CHILD_BLOCKS);
	tally(6007, CHILD_THREAD_BLOCKS, 0, CHILD_THREAD_BLOCKS);
	exit(0); /* not _exit: the profile must end with its trailer */
}

int main(int argc, char **argv)
{
	pthread_t th[NTHREADS];
	int forks = argc > 1 ? atoi(argv[1]) : 100;
	uint64_t rng = 77;

	for (int i = 0; i < NTHREADS; i++)
		CHECK(pthread_create(&th[i], NULL, hammer, (void *)(uintptr_t)(i + 1)) == 0,
		      "pthread_create");
	for (int k = 0; k < forks; k++) {
		/* Let the threads run for a while (0 to 500 us), so that fork lands anywhere. */
		hammers_wake(NTHREADS);
		struct timespec nap = { 0, (long)(prog_rand(&rng) % 500) * 1000 };
		nanosleep(&nap, NULL);
		fflush(stdout);
		pid_t pid = fork();
		CHECK(pid >= 0, "fork: %s", strerror(errno));
		if (pid == 0)
			child();
		wait_child(pid, "the child of fork", k, CHILD_SECONDS);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < NTHREADS; i++)
		CHECK(pthread_join(th[i], NULL) == 0, "pthread_join");
	printf("forks %d\n", forks);
	return 0;
}
