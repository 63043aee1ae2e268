/* micro.c: the driver of bench/micro.sh: N malloc+free pairs of one shape, timed, in ns per pair.
 *
 * usage: micro [--cost] CASE ITERATIONS [THREADS]
 *   128     malloc(128), free, N times
 *   16k     malloc(16 KiB), free
 *   1m      malloc(1 MiB), free
 *   ring    a ring of 1024 live blocks of mixed sizes, 16 to 4096 B: each step frees the oldest
 *           block and allocates a new one in its place (the ring is filled before the clock starts)
 *
 * Each of THREADS threads (default 1, which is the main thread itself) runs its own loop of
 * ITERATIONS pairs; they start together at a barrier, and the time is taken with CLOCK_MONOTONIC
 * from the barrier to the last join, so with 2 threads on 2 CPUs it is the time of one pair while
 * another thread allocates beside it. The start is the first thread's clock on leaving the
 * barrier, not the main thread's: with as many threads as CPUs or more, main may wait for a CPU
 * until the others have finished.
 * Each thread first runs ITERATIONS/16 untimed pairs (a warm-up: a profiler's per-thread set-up,
 * its first samples, the allocator's first trip to the kernel), then starts the clock.
 * Prints one number, ns per pair, and nothing else (bench/micro.sh reads it). The blocks are never
 * touched: this measures the allocator (and whatever is preloaded in front of it), not the memory.
 *
 * --cost prints three numbers on one line instead, for bench/exact-threads.sh, which compares
 * one thread's cost of a pair with that of many threads on few cores:
 *   WALL  the number above: wall ns from the start to the last join, over ITERATIONS
 *   CORE  core-ns per pair: wall ns x min(THREADS, CPUs) / (THREADS x ITERATIONS), the time of
 *         the cores the threads could keep busy, shared out over every pair any thread made.
 *         CPUs are those this process may run on (sched_getaffinity: the online CPUs, unless
 *         taskset narrowed them). On an idle machine, with threads that never wait, it equals
 *         CPU; a core left idle while threads sleep on a lock counts in CORE and not in CPU.
 *   CPU   CPU-ns per pair: the process's user+system time over the same stretch (getrusage
 *         RUSAGE_SELF: every thread, a profiler's own threads included) over THREADS x
 *         ITERATIONS. A thread that spins counts here; a thread that another program's thread
 *         keeps off its core does not, so on a busy machine CPU is the steadier of the two.
 * Both start where the clock starts, after every thread's warm-up.
 *
 * Build with -fno-builtin (and keep the volatile sinks), or gcc deletes malloc+free pairs whose
 * result is unused. The ring's sizes are drawn before the clock starts, from a fixed seed, so every
 * configuration allocates the same sequence.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define RING 1024
#define RING_SIZES 4096 /* a power of two: the size table is walked with a mask */

static long arg_iterations;
static size_t arg_size;      /* 0 for the ring */
static int arg_threads;
static pthread_barrier_t start;
static uint64_t start_ns[64], start_cpu[64]; /* each thread's start: the clock, the CPU time */
static uint32_t ring_sizes[RING_SIZES];

/* Every pointer is stored here, so no pair can be elided. One per thread: a shared one would be a
 * line that every pair of every thread writes, and its passing from core to core would be the
 * cost measured (it made glibc alone 1.5 to 1.9 times as dear a pair on two threads as on one). */
static __thread void *volatile sink;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* User+system ns of every thread of the process, the ones that have exited included. */
static uint64_t cpu_ns(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000u +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000u;
}

/* The CPUs this process may run on; the online CPUs if that cannot be told. */
static int usable_cpus(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		return CPU_COUNT(&set);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}

/* Starts the clock: alone, here; with threads, each thread notes its start when all have met at
 * the barrier, and main takes the earliest. */
static void go(int idx)
{
	if (arg_threads > 1)
		pthread_barrier_wait(&start);
	start_cpu[idx] = cpu_ns();
	start_ns[idx] = now_ns();
}

static void *run_fixed(int idx)
{
	size_t size = arg_size;

	for (long i = 0; i < arg_iterations / 16; i++) { /* warm-up, untimed */
		void *p = malloc(size);
		sink = p;
		free(p);
	}
	go(idx);
	for (long i = 0; i < arg_iterations; i++) {
		void *p = malloc(size);
		sink = p;
		free(p);
	}
	return NULL;
}

/* One step of the ring: step j frees the block in slot j % RING (allocated RING steps earlier, so
 * the oldest) and puts a new one of the next size in its place. */
static inline void ring_step(void **ring, long j)
{
	unsigned slot = (unsigned)j % RING;

	free(ring[slot]);
	ring[slot] = malloc(ring_sizes[(unsigned)(j + RING) % RING_SIZES]);
	sink = ring[slot];
}

static void *run_ring(int idx)
{
	void *ring[RING];
	/* A whole number of passes over the size table, so the timed steps allocate the same
	 * sequence whatever the warm-up. */
	long warm = arg_iterations / 16 / RING_SIZES * RING_SIZES;

	for (int i = 0; i < RING; i++)
		ring[i] = malloc(ring_sizes[i]);
	for (long j = 0; j < warm; j++)
		ring_step(ring, j);
	go(idx);
	for (long j = warm; j < warm + arg_iterations; j++)
		ring_step(ring, j);
	for (int i = 0; i < RING; i++)
		free(ring[i]);
	return NULL;
}

static void *thread_main(void *idx)
{
	if (arg_size == 0)
		return run_ring((int)(intptr_t)idx);
	return run_fixed((int)(intptr_t)idx);
}

int main(int argc, char **argv)
{
	bool cost = argc > 1 && !strcmp(argv[1], "--cost");

	if (cost)
		argc--, argv++;
	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: micro [--cost] 128|16k|1m|ring ITERATIONS [THREADS]\n");
		return 2;
	}
	if (!strcmp(argv[1], "128"))
		arg_size = 128;
	else if (!strcmp(argv[1], "16k"))
		arg_size = 16 * 1024;
	else if (!strcmp(argv[1], "1m"))
		arg_size = 1024 * 1024;
	else if (strcmp(argv[1], "ring")) {
		fprintf(stderr, "micro: unknown case '%s'\n", argv[1]);
		return 2;
	}
	arg_iterations = atol(argv[2]);
	arg_threads = argc == 4 ? atoi(argv[3]) : 1;
	if (arg_iterations <= 0 || arg_threads < 1 || arg_threads > 64) {
		fprintf(stderr, "micro: bad iterations or threads\n");
		return 2;
	}

	/* Sizes 16..4096, uniform on a log scale (small blocks are the common ones), xorshift32. */
	uint32_t x = 2463534242u;
	for (int i = 0; i < RING_SIZES; i++) {
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		ring_sizes[i] = (uint32_t)(16 << (x % 9)) + (x >> 9) % (16u << (x % 9));
		if (ring_sizes[i] > 4096)
			ring_sizes[i] = 4096;
	}

	/* One thread runs on the main thread: no second thread may switch off libc's single-thread
	 * paths or move the loop into a secondary malloc arena. */
	if (arg_threads == 1) {
		thread_main((void *)(intptr_t)0);
	} else {
		pthread_t tid[64];
		pthread_barrier_init(&start, NULL, (unsigned)arg_threads + 1);
		for (int i = 0; i < arg_threads; i++)
			if (pthread_create(&tid[i], NULL, thread_main, (void *)(intptr_t)i)) {
				fprintf(stderr, "micro: pthread_create failed\n");
				return 1;
			}
		pthread_barrier_wait(&start);
		for (int i = 0; i < arg_threads; i++)
			pthread_join(tid[i], NULL);
	}
	uint64_t t1 = now_ns();
	uint64_t cpu1 = cpu_ns();
	int first = 0;

	for (int i = 1; i < arg_threads; i++)
		if (start_ns[i] < start_ns[first])
			first = i;
	double wall = (double)(t1 - start_ns[first]);
	double pairs = (double)arg_threads * (double)arg_iterations;
	int cores = usable_cpus() < arg_threads ? usable_cpus() : arg_threads;

	if (cost)
		printf("%.2f %.2f %.2f\n", wall / (double)arg_iterations, wall * cores / pairs,
		       (double)(cpu1 - start_cpu[first]) / pairs);
	else
		printf("%.2f\n", wall / (double)arg_iterations);
	return 0;
}
