/* smallstack.c: sampled allocations on small stacks, where leek's unwinding must fit.
 *
 * 1. Threads whose whole stack is PTHREAD_STACK_MIN + EXTRA bytes (argument 1, default 0)
 *    allocate at every level of a 12-deep recursion, so that the deepest call leaves less stack
 *    to leek than the thread's first one did.
 * 2. A signal handler running on a sigaltstack of MINSIGSTKSZ * 2 bytes mallocs, fills and frees
 *    blocks. SIGUSR1 is blocked except inside sigsuspend, so the handler never interrupts an
 *    allocator call (which would be undefined in glibc itself).
 *
 * Exact mode (LEEK_PERIOD=1) samples, and so unwinds, every one of these allocations. Prints
 * tally lines (tally.h) for 5011 and 6011.
 *
 * Usage: smallstack [EXTRA_BYTES]
 */
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

#include "prog.h"
#include "tally.h"

#define NTHREADS 4
#define DEPTH 12
#define ROUNDS 20

static atomic_ulong handled;

/* noinline and a little frame of its own, so the recursion is real. */
__attribute__((noinline)) static unsigned recurse(int depth, uint64_t tag)
{
	char pad[64];
	char *p = malloc(5011);

	CHECK(p, "malloc failed at depth %d", depth);
	memset(pad, depth, sizeof(pad));
	__asm__ volatile("" : : "r"(pad) : "memory"); /* the frame stays */
	pattern_fill(p, 5011, tag + (uint64_t)depth);
	unsigned n = depth < DEPTH ? recurse(depth + 1, tag) : 0;
	CHECK(pattern_check(p, 5011, tag + (uint64_t)depth) == 5011,
	      "block at depth %d overwritten", depth);
	free(p);
	return n + 1;
}

static void *worker(void *arg)
{
	unsigned n = 0;

	for (int r = 0; r < ROUNDS; r++)
		n += recurse(1, (uintptr_t)arg * 1000 + (uint64_t)r);
	return (void *)(uintptr_t)n;
}

static void on_usr1(int sig)
{
	(void)sig;
	for (int i = 0; i < 4; i++) {
		char *p = malloc(6011);
		if (!p)
			_exit(3);
		pattern_fill(p, 6011, (uint64_t)i);
		if (pattern_check(p, 6011, (uint64_t)i) != 6011)
			_exit(4);
		free(p);
	}
	atomic_fetch_add(&handled, 1);
}

int main(int argc, char **argv)
{
	size_t stack = PTHREAD_STACK_MIN + (argc > 1 ? strtoul(argv[1], NULL, 10) : 0);
	pthread_attr_t attr;
	pthread_t th[NTHREADS];

	CHECK(pthread_attr_init(&attr) == 0, "pthread_attr_init");
	CHECK(pthread_attr_setstacksize(&attr, stack) == 0, "pthread_attr_setstacksize(%zu)",
	      stack);
	for (int i = 0; i < NTHREADS; i++)
		CHECK(pthread_create(&th[i], &attr, worker, (void *)(uintptr_t)(i + 1)) == 0,
		      "pthread_create with a %zu-byte stack", stack);
	for (int i = 0; i < NTHREADS; i++) {
		void *n;
		CHECK(pthread_join(th[i], &n) == 0, "pthread_join");
		CHECK((uintptr_t)n == ROUNDS * DEPTH, "a thread made %lu allocations",
		      (unsigned long)(uintptr_t)n);
	}
	pthread_attr_destroy(&attr);

	size_t altsize = MINSIGSTKSZ * 2;
	stack_t ss = { .ss_sp = malloc(altsize), .ss_size = altsize };
	CHECK(ss.ss_sp, "malloc failed");
	CHECK(sigaltstack(&ss, NULL) == 0, "sigaltstack(%zu)", altsize);
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_ONSTACK };
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0, "sigaction");
	sigset_t block, wait;
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	CHECK(sigprocmask(SIG_BLOCK, &block, &wait) == 0, "sigprocmask");
	sigdelset(&wait, SIGUSR1);
	for (int i = 0; i < 50; i++) {
		raise(SIGUSR1);
		sigsuspend(&wait);
	}
	CHECK(handled == 50, "%lu signals handled", (unsigned long)handled);
	ss.ss_flags = SS_DISABLE;
	CHECK(sigaltstack(&ss, NULL) == 0, "sigaltstack off");
	free(ss.ss_sp);

	if (exact_mode()) {
		tally(5011, NTHREADS * ROUNDS * DEPTH, 0, NTHREADS * ROUNDS * DEPTH);
		tally(6011, 50 * 4, 0, 50 * 4);
	}
	printf("smallstack ok: %zu-byte thread stacks, %zu-byte signal stack\n", stack, altsize);
	return 0;
}
