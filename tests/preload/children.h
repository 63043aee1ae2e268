/* children.h: waiting for a child of forklock.c or spawn.c, which must end in time.
 *
 * A child that runs past its deadline is taken for a deadlock after fork or spawn: it is killed
 * and the program fails, naming it. A child must exit 0.
 */
#ifndef LEEK_TEST_CHILDREN_H
#define LEEK_TEST_CHILDREN_H

#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "prog.h"

/* Waits for pid, "what, round N", for at most seconds. */
static inline void wait_child(pid_t pid, const char *what, int round, int seconds)
{
	struct timespec start, now, nap = { 0, 200 * 1000 };
	int status;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		CHECK(w == 0 || errno == EINTR, "waitpid: %s", strerror(errno));
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - start.tv_sec >= seconds) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			CHECK(0, "%s, round %d (pid %d) hung for %d s: a deadlock", what, round,
			      (int)pid, seconds);
		}
		nanosleep(&nap, NULL);
	}
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s, round %d: status %#x", what, round,
	      status);
}

#endif /* LEEK_TEST_CHILDREN_H */
