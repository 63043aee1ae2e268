/* test-guard-threads.c: guard mode (src/preload/guard.c) with several threads taking and giving
 * back guarded slots at once, with no mprotect under lk_lock, in tests/fixtures/fx-guard-threads.c:
 * no false error however the slots move (between states, through the quarantine, across fork),
 * an overflow and a use after free made by one thread while others churn still caught and
 * classified right; and a guarded fault with every signal blocked (sigprocmask, pthread_sigmask,
 * a handler's sa_mask) still recorded and reported, with the mask the program reads back the one
 * it asked for (src/preload/signals.c).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "harness.h"
#include "leek.h"
#include "runner.h"

#define EXACT "LEEK_PERIOD=1"

/* stackless: samples that may go without a stack, one per fork and thread (runner.h). */
static void run_fx(struct run *r, const char *period, const char *guard, unsigned stackless,
		   const char *const *argv)
{
	run_prog(r, &(struct run_opts){ .env = { period, guard }, .exe = FX_GUARD_THREADS,
					 .timeout = 120, .stackless_extra = stackless },
		 argv);
}

/* 4 threads churning guarded slots: every byte of every block still its thread's, the calloc'ed
 * ones zero, no ERROR, and the slots used many times over (16 slots, some held for good by blocks
 * glibc allocates for each thread; each of the rest came back from the quarantine many times: at
 * least 1000 guarded blocks, 200 at a period of 4 KiB). */
static void churn(const char *period, unsigned long min_guarded)
{
	struct run r;
	const char *argv[] = { "fx-guard-threads", "churn", "4", "20000", NULL };

	run_fx(&r, period, "LEEK_GUARD=16", 0, argv);
	expect_clean(&r, 1, 0);
	ASSERT_CONTAINS(r.out, "churn ok\n");
	ASSERT_TRUE(!strstr(r.err, "leek: ERROR"));
	const struct profile *p = main_profile(&r);
	ASSERT_EQ(p->nerrors, 0);
	ASSERT_EQ(p->ntag[LK_REC_ERROR], 0);
	unsigned long guarded = 0, of = 0;
	const char *at = strstr(r.out, "guarded ");
	ASSERT_TRUE(at && sscanf(at, "guarded %lu of %lu", &guarded, &of) == 2);
	ASSERT_EQ(of, 80000);
	printf("# %s: %lu of %lu guarded\n", period, guarded, of);
	fflush(stdout);
	ASSERT_TRUE(guarded >= min_guarded);
	run_cleanup(&r);
}

TEST(churn_exact)
{
	churn(EXACT, 1000);
}

/* A small period: a sample every 4 KiB, about one block in four (their mean is 1 KiB), through
 * take_sample rather than exact mode's path. */
TEST(churn_small_period)
{
	churn("LEEK_PERIOD=4096", 200);
}

/* The bug's address, from the fixture's "bug at 0x...". */
static uint64_t bug_at(const struct run *r)
{
	const char *at = strstr(r->out, "bug at 0x");
	unsigned long long a = 0;

	ASSERT_TRUE(at && sscanf(at, "bug at %llx", &a) == 1);
	return a;
}

/* One thread's bug while 3 churn: killed by SIGSEGV, one ERROR of kind at the bug's address, in
 * the thread that made it, its stacks through the fixture. LEEK_GUARD=10000 is more slots than
 * the run's blocks (4 x 1500 and the bug's), so no slot comes back from the quarantine, and a
 * freed block's page stays closed: the use after free faults however the threads are scheduled. */
static const struct error *bug(struct run *r, const char *mode, uint64_t kind, uint64_t size)
{
	const char *argv[] = { "fx-guard-threads", mode, "3", "1500", NULL };

	run_fx(r, EXACT, "LEEK_GUARD=10000", 0, argv);
	if (!WIFSIGNALED(r->status) || WTERMSIG(r->status) != SIGSEGV)
		FAIL("%s: status %#x, expected SIGSEGV; stderr:\n%.4000s", mode, r->status, r->err);
	ASSERT_TRUE(!strstr(r->out, "churn ok"));
	ASSERT_EQ(r->nprof, 1);
	const struct profile *p = main_profile(r);
	ASSERT_EQ(p->nerrors, 1);
	ASSERT_EQ(p->ntag[LK_REC_ERROR], 1);
	const struct error *e = &p->errors[0];
	ASSERT_EQ(e->kind, kind);
	ASSERT_EQ(e->addr, bug_at(r));
	ASSERT_EQ(e->block_size, size);
	ASSERT_TRUE(e->tid == (uint64_t)r->pid); /* the main thread's */
	ASSERT_TRUE(stack_in_module(p, e->stack, "fx-guard-threads"));
	ASSERT_TRUE(stack_in_module(p, e->alloc_stack, "fx-guard-threads"));
	return e;
}

TEST(overflow_among_threads)
{
	struct run r;
	const struct error *e = bug(&r, "overflow", LK_ERR_OVERFLOW, 96);

	ASSERT_EQ(e->addr, e->block_addr + 96);
	ASSERT_TRUE(e->block != 0); /* live: its number */
	ASSERT_CONTAINS(r.err, "leek: ERROR: heap-buffer-overflow at 0x");
	run_cleanup(&r);
}

TEST(use_after_free_among_threads)
{
	struct run r;
	const struct error *e = bug(&r, "uaf", LK_ERR_UAF_WRITE, 192);

	ASSERT_EQ(e->addr, e->block_addr + 10);
	ASSERT_EQ(e->block, 0); /* freed */
	ASSERT_TRUE(stack_in_module(main_profile(&r), e->free_stack, "fx-guard-threads"));
	ASSERT_CONTAINS(r.err, "leek: ERROR: heap-use-after-free write at 0x");
	run_cleanup(&r);
}

/* Forks while 4 threads churn: each child (a profile of its own) gets every slot back but those
 * of the blocks live in the threads it does not have, with no error; the parent ends clean. */
TEST(fork_among_threads)
{
	struct run r;
	const char *argv[] = { "fx-guard-threads", "fork", "4", "5000", "64", NULL };

	run_fx(&r, EXACT, "LEEK_GUARD=64", 8 * 4, argv);
	expect_clean(&r, 9, 0);
	ASSERT_CONTAINS(r.out, "forks ok\n");
	ASSERT_CONTAINS(r.out, "churn ok\n");
	ASSERT_TRUE(!strstr(r.err, "leek: ERROR"));
	for (size_t i = 0; i < r.nprof; i++)
		ASSERT_EQ(r.prof[i].nerrors, 0);
	run_cleanup(&r);
}

/* Every signal blocked, then a guarded overflow: the kernel would kill the process unseen if
 * SIGSEGV were blocked; it is not, the record and the report are there, and the program reads back
 * the mask it asked for. */
static void masked(const char *how)
{
	struct run r;
	const char *argv[] = { "fx-guard-threads", "mask", how, NULL };

	run_fx(&r, EXACT, "LEEK_GUARD=8", 0, argv);
	if (!WIFSIGNALED(r.status) || WTERMSIG(r.status) != SIGSEGV)
		FAIL("%s: status %#x, expected SIGSEGV; stderr:\n%.4000s", how, r.status, r.err);
	ASSERT_CONTAINS(r.out, "segv blocked: yes\n");
	ASSERT_TRUE(!strstr(r.out, "bug done"));
	ASSERT_CONTAINS(r.err, "leek: ERROR: heap-buffer-overflow at 0x");
	ASSERT_CONTAINS(r.err, "are in the profile: leek report errors ");
	const struct profile *p = main_profile(&r);
	ASSERT_EQ(p->nerrors, 1);
	ASSERT_EQ(p->errors[0].kind, LK_ERR_OVERFLOW);
	ASSERT_EQ(p->errors[0].addr, bug_at(&r));
	ASSERT_EQ(p->errors[0].block_size, 96);
	run_cleanup(&r);
}

TEST(mask_sigprocmask)
{
	masked("procmask");
}

TEST(mask_pthread_sigmask)
{
	masked("pthread");
}

/* A SIGUSR1 handler whose sa_mask is every signal, the fault inside it: sigaction shows SIGSEGV
 * in that sa_mask, which the kernel's action does not hold. */
TEST(mask_handler_sa_mask)
{
	masked("handler");
}
