/* lock.c: the one lock of the slow path, the clock, and the one-line logger.
 *
 * The arena, the stack table and the writer share lk_lock: samples are rare (two per MiB
 * allocated at the default period), so one lock costs nothing measurable and makes fork simple.
 * Whoever holds it must never call into the dynamic linker or the unwinder (both may wait for
 * the loader lock while another thread, holding the loader lock, waits for us in malloc), and
 * must never allocate through libc.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "preload.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

void lk_lock(void)
{
	pthread_mutex_lock(&lock);
}

void lk_unlock(void)
{
	pthread_mutex_unlock(&lock);
}

/* pthread_atfork: the child gets a lock nobody holds and state nobody was changing. */
void lk_lock_atfork(int phase)
{
	if (phase == LK_FORK_PREPARE)
		pthread_mutex_lock(&lock);
	else if (phase == LK_FORK_PARENT)
		pthread_mutex_unlock(&lock);
	else
		pthread_mutex_init(&lock, NULL);
}

/* Every time in a file comes from here, so its dts never go backwards between clocks. */
uint64_t lk_now_ns(void)
{
	struct timespec ts;

	/* vDSO: no syscall. The coarse clock is the same clock as of the last tick. */
	clock_gettime(lk_coarse_time() ? CLOCK_MONOTONIC_COARSE : CLOCK_MONOTONIC, &ts);
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
