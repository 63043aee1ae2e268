/* signals.c: allocation and free from signal handlers.
 *
 * malloc and free are not async-signal-safe: a handler that interrupts malloc and calls malloc is
 * undefined behaviour in glibc itself, with or without leek. So the two phases here only do what
 * is defined:
 *
 * 1. SIGALRM is blocked except inside sigsuspend, so the handler never interrupts an allocator
 *    call. The handler mallocs, fills, checks and frees blocks, and frees the 3333-byte blocks
 *    that the main loop hands it through atomic slots.
 *
 * 2. Exact mode only (LEEK_PERIOD=1, where every block the program gets is one of leek's sampled
 *    blocks and glibc's heap is never touched by the program): SIGALRM arrives at any point,
 *    also in the middle of malloc, free and leek's own slow path, and the handler only frees
 *    5555-byte blocks handed over by the main loop. leek must free them at once or defer them
 *    (LK_CNT_DEFERRED_FREES) and record every one of them eventually.
 *
 * Prints tally lines (tally.h) for the sizes 3333, 4444 and 5555.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "prog.h"
#include "tally.h"

#define NSLOTS 8

static char *_Atomic slot[NSLOTS];
static atomic_ulong handled, handler_frees, handler_allocs;
static size_t slot_size;
static int phase;

/* The handler's way out: write(2) and _exit, both async-signal-safe. */
static void hfail(const char *msg)
{
	ssize_t r = write(STDERR_FILENO, msg, strlen(msg));

	(void)r;
	_exit(3);
}

static void take_slots(void)
{
	for (int i = 0; i < NSLOTS; i++) {
		char *p = atomic_exchange(&slot[i], NULL);
		if (!p)
			continue;
		if (pattern_check(p, slot_size, (uint64_t)(uintptr_t)p) != slot_size)
			hfail("signals: a handed-over block was overwritten\n");
		free(p);
		atomic_fetch_add(&handler_frees, 1);
	}
}

static void on_alarm(int sig)
{
	int saved = errno;

	atomic_fetch_add(&handled, 1);
	if (phase == 1) {
		static const size_t sizes[] = { 24, 4444, 200000 };
		for (int i = 0; i < 3; i++) {
			char *p = malloc(sizes[i]);
			if (!p)
				hfail("signals: malloc in the handler failed\n");
			if (sizes[i] == 4444)
				atomic_fetch_add(&handler_allocs, 1);
			pattern_fill(p, sizes[i], 77);
			if (pattern_check(p, sizes[i], 77) != sizes[i])
				hfail("signals: handler block overwritten\n");
			free(p);
		}
	}
	take_slots();
	errno = saved;
}

static void set_timer(long usec)
{
	struct itimerval it = { { 0, usec }, { 0, usec } };

	CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0, "setitimer: %s", strerror(errno));
}

/* Fills empty slots with fresh blocks of slot_size; returns how many it allocated. */
static unsigned long refill(void)
{
	unsigned long n = 0;

	for (int i = 0; i < NSLOTS; i++) {
		if (atomic_load(&slot[i]))
			continue;
		char *p = malloc(slot_size);
		CHECK(p, "malloc(%zu) failed", slot_size);
		pattern_fill(p, slot_size, (uint64_t)(uintptr_t)p);
		n++;
		char *expected = NULL;
		if (!atomic_compare_exchange_strong(&slot[i], &expected, p)) {
			free(p);
			n--;
		}
	}
	return n;
}

/* Frees what is left in the slots, from the main loop; returns how many. */
static unsigned long drain(void)
{
	unsigned long n = 0;

	for (int i = 0; i < NSLOTS; i++) {
		char *p = atomic_exchange(&slot[i], NULL);
		if (p) {
			free(p);
			n++;
		}
	}
	return n;
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
	sigset_t block, during;
	unsigned long allocs = 0, main_frees = 0;

	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGALRM, &sa, NULL) == 0, "sigaction");

	/* Phase 1: the handler runs inside sigsuspend only. */
	sigemptyset(&block);
	sigaddset(&block, SIGALRM);
	CHECK(sigprocmask(SIG_BLOCK, &block, &during) == 0, "sigprocmask");
	sigdelset(&during, SIGALRM);
	phase = 1;
	slot_size = 3333;
	set_timer(300);
	while (atomic_load(&handled) < 300) {
		allocs += refill();
		void *p = malloc(100000); /* and some traffic of the main loop's own */
		CHECK(p, "malloc failed");
		memset(p, 1, 100000);
		free(p);
		sigsuspend(&during);
	}
	set_timer(0);
	main_frees += drain();
	CHECK(allocs == main_frees + atomic_load(&handler_frees), "phase 1: %lu allocated, %lu freed",
	      allocs, main_frees + atomic_load(&handler_frees));
	CHECK(atomic_load(&handler_allocs) >= 300, "phase 1: the handler ran %lu times",
	      atomic_load(&handler_allocs));
	tally(3333, allocs, 0, allocs);
	tally(4444, atomic_load(&handler_allocs), 0, atomic_load(&handler_allocs));

	/* Phase 2: the handler interrupts anything, and only frees leek's sampled blocks. */
	if (exact_mode()) {
		unsigned long allocs2 = 0, frees2 = 0, handler_before = atomic_load(&handler_frees);
		uint64_t rng = 5;
		struct timespec t0, t;

		phase = 2;
		slot_size = 5555;
		atomic_store(&handled, 0);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		CHECK(sigprocmask(SIG_UNBLOCK, &block, NULL) == 0, "sigprocmask");
		set_timer(100);
		do {
			allocs2 += refill();
			for (int k = 0; k < 20; k++) {
				size_t n = 16 * (1 + prog_rand(&rng) % 300);
				char *p = malloc(n);
				CHECK(p, "malloc(%zu) failed", n);
				memset(p, 3, n);
				p = realloc(p, n + 16);
				CHECK(p, "realloc failed");
				free(p);
			}
			clock_gettime(CLOCK_MONOTONIC, &t);
		} while (atomic_load(&handled) < 1000 && t.tv_sec - t0.tv_sec < 3);
		set_timer(0);
		CHECK(sigprocmask(SIG_BLOCK, &block, NULL) == 0, "sigprocmask");
		frees2 = drain() + atomic_load(&handler_frees) - handler_before;
		CHECK(allocs2 == frees2, "phase 2: %lu allocated, %lu freed", allocs2, frees2);
		CHECK(atomic_load(&handled) >= 100, "phase 2: the handler ran only %lu times",
		      atomic_load(&handled));
		tally(5555, allocs2, 0, allocs2);
	}
	return 0;
}
