/* lock.c: the one lock of the slow path, the clock, and the one-line logger.
 *
 * The arena, the stack table and the writer share lk_lock: samples are rare (two per MiB
 * allocated at the default period), so one lock costs nothing measurable and makes fork simple.
 * Whoever holds it must never call into the dynamic linker or the unwinder (both may wait for
 * the loader lock while another thread, holding the loader lock, waits for us in malloc), and
 * must never allocate through libc.
 *
 * The lock is a futex word (Drepper, "Futexes are tricky", mutex 2): taking it free and giving it
 * back with no waiter is one atomic instruction each, inline in preload.h, against about 100
 * instructions for pthread_mutex_lock and unlock. While the process has a single thread (glibc's
 * __libc_single_threaded, which glibc's own malloc trusts the same way to skip its arena locks)
 * it is not taken at all: nothing else could hold it, and a signal handler on this thread never
 * reaches it (in_slow, sampler.c).
 */
#include <dlfcn.h>
#include <errno.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "preload.h"

int lk_lock_word;
bool lk_lock_elided;
static const char never_single; /* before lk_clock_init, and without glibc's flag: take the lock */
const char *lk_single_at = &never_single;

/* Spins this many times, reading, before it sleeps: the lock is held for a sample, about 100 ns
 * to 1 us, shorter than a futex wait and wake. */
#define SPINS 100

void lk_lock_wait(void)
{
	int saved = errno;

	for (int i = 0; i < SPINS; i++) {
		int c = 0;
		if (__atomic_load_n(&lk_lock_word, __ATOMIC_RELAXED) == 0 &&
		    __atomic_compare_exchange_n(&lk_lock_word, &c, 1, false, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			goto out;
		__builtin_ia32_pause();
	}
	/* 2: held, and someone may be waiting, so that its holder wakes one at the unlock. */
	while (__atomic_exchange_n(&lk_lock_word, 2, __ATOMIC_ACQUIRE) != 0)
		syscall(SYS_futex, &lk_lock_word, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
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
		lk_lock_elided = false;
	}
}

/* The kernel's own clock_gettime in the vDSO, called without glibc's wrapper in front of it:
 * exact mode reads the clock at every sample and every free, and the wrapper's checks and calls
 * took a quarter of each reading (8.4 ns against 11.5 ns here; docs/performance.md). glibc's
 * clock_gettime without a vDSO (or before lk_clock_init). The clock is chosen once, here: the
 * coarse one in exact mode (lk_coarse_time), the same clock as of the last tick; no system call
 * either way. */
static int (*clock_read)(clockid_t, struct timespec *) = clock_gettime;
static clockid_t clock_id = CLOCK_MONOTONIC;

void lk_clock_init(void)
{
	void *vdso = dlopen("linux-vdso.so.1", RTLD_NOW | RTLD_NOLOAD);
	int (*f)(clockid_t, struct timespec *) =
		vdso ? (int (*)(clockid_t, struct timespec *))dlsym(vdso, "__vdso_clock_gettime")
		     : NULL;

	clock_id = lk_coarse_time() ? CLOCK_MONOTONIC_COARSE : CLOCK_MONOTONIC;
	if (f)
		clock_read = f;
	if (&__libc_single_threaded)
		lk_single_at = &__libc_single_threaded;
}

/* Every time in a file comes from here, so its dts never go backwards between clocks. */
LK_HOT uint64_t lk_now_ns(void)
{
	struct timespec ts;

	clock_read(clock_id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void lk_log(const char *msg)
{
	char buf[512];
	size_t n = 0, m = strlen(msg);
	int saved = errno;

	if (lk_cfg.quiet)
		return;
	if (m > sizeof(buf) - 8)
		m = sizeof(buf) - 8;
	memcpy(buf, "leek: ", 6);
	n = 6;
	memcpy(buf + n, msg, m);
	n += m;
	buf[n++] = '\n';
	while (write(STDERR_FILENO, buf, n) < 0 && errno == EINTR)
		;
	errno = saved;
}
