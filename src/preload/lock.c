/* lock.c: the one lock of the slow path.
 *
 * The arena, the stack table and the writer share lk_lock: samples are rare (two per MiB
 * allocated at the default period), so one lock costs nothing measurable and makes fork simple.
 * Whoever holds it must never call into the dynamic linker or the unwinder (both may wait for
 * the loader lock while another thread, holding the loader lock, waits for us in malloc), and
 * must never allocate through libc.
 *
 * The lock is a futex word taken with one compare-and-swap and given back with a plain store: no
 * atomic instruction at the unlock, whose exchange, a full barrier, waited for the critical
 * section's stores to drain (a large share of exact mode's sample in redis-server, which has
 * threads from its start: docs/performance.md, "a lock without an exchange"). A waiter spins, then
 * sleeps on the word with a timeout, counted in lk_lock_sleepers, which the unlock reads after its
 * store: without a barrier between the two, a waiter that began to sleep just then is not woken,
 * and wakes at its timeout (SLEEP_NS), the price of that race, which a lock held for a sample meets
 * seldom. Taking it free and giving it back with no waiter: one atomic instruction in all, inline
 * in preload.h, where pthread_mutex_lock and unlock take many times the instructions
 * (bench/callgrind-real.sh). While the process has a single thread (glibc's __libc_single_threaded,
 * which glibc's own malloc trusts the same way to skip its arena locks) it is not taken at all:
 * nothing else could hold it, and a signal handler on this thread never reaches it (in_slow,
 * sampler.c).
 *
 * Never: block a thread without a timeout; take the lock in a signal handler that may have
 * interrupted its holder (in_slow keeps handlers out); change errno.
 */
#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "preload.h"

int lk_lock_word;
int lk_lock_sleepers;
bool lk_lock_elided;
static const char never_single; /* before lk_lock_init, and without glibc's flag: take the lock */
const char *lk_single_at = &never_single;

/* Spins this many times, reading, before it sleeps: the lock is held for a sample, which takes
 * less time than a futex wait and wake. A sleep ends at a wake or after SLEEP_NS, the
 * longest a waiter waits on an unlock that missed it (above). */
#define SPINS 100
#define SLEEP_NS 200000

static bool try_take(void)
{
	int c = 0;

	return __atomic_load_n(&lk_lock_word, __ATOMIC_RELAXED) == 0 &&
	       __atomic_compare_exchange_n(&lk_lock_word, &c, 1, false, __ATOMIC_ACQUIRE,
					   __ATOMIC_RELAXED);
}

void lk_lock_wait(void)
{
	int saved = errno;

	for (int i = 0; i < SPINS; i++) {
		if (try_take())
			goto out;
		__builtin_ia32_pause();
	}
	for (;;) {
		/* Counted before the last look, so that an unlock after that look sees the count. */
		__atomic_fetch_add(&lk_lock_sleepers, 1, __ATOMIC_SEQ_CST);
		bool got = try_take();
		if (!got) {
			struct timespec ts = { 0, SLEEP_NS };
			syscall(SYS_futex, &lk_lock_word, FUTEX_WAIT_PRIVATE, 1, &ts, NULL, 0);
		}
		__atomic_fetch_sub(&lk_lock_sleepers, 1, __ATOMIC_RELAXED);
		if (got || try_take())
			break;
	}
out:
	errno = saved;
}

void lk_lock_wake(void)
{
	int saved = errno;

	syscall(SYS_futex, &lk_lock_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	errno = saved;
}

/* pthread_atfork: the child gets a lock nobody holds and state nobody was changing. */
void lk_lock_atfork(int phase)
{
	if (phase == LK_FORK_PREPARE) {
		lk_lock();
	} else if (phase == LK_FORK_PARENT) {
		lk_unlock();
	} else {
		lk_lock_word = 0;
		lk_lock_sleepers = 0;
		lk_lock_elided = false;
	}
}

/* glibc's single-thread flag, where it has one (glibc 2.32): its address tested once, here. */
void lk_lock_init(void)
{
	if (&__libc_single_threaded)
		lk_single_at = &__libc_single_threaded;
}
