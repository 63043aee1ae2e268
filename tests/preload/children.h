/* children.h: waiting for a child of forklock.c or spawn.c, which must end in time, and the work of
 * their threads that allocate while the main thread forks or spawns (the hammers).
 *
 * A child that runs past its deadline is taken for a deadlock after fork or spawn: it is killed
 * and the program fails, naming it. A child must exit 0.
 *
 * Each hammer does HAMMER_OPS operations per child, from the moment the child is announced
 * (hammers_wake), then naps until the next: the fork or spawn still lands among their
 * allocations, and their work (and an exact-mode profile's size) is fixed rather than grown with
 * the wall time a loaded machine takes for the children. Unbounded, spawn.c's main profile grew to
 * 155 MB at a load average of 7 on 2 cores, and the tests ran past their time.
 */
#ifndef LEEK_TEST_CHILDREN_H
#define LEEK_TEST_CHILDREN_H

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <time.h>

#include "prog.h"

#define HAMMERS_MAX 4
#define HAMMER_OPS 4000 /* many times what a fork, a clone or a vfork takes */

static atomic_uint hammer_round, hammer_seen[HAMMERS_MAX];

/* In hammer number self's loop (0 to HAMMERS_MAX - 1), before each operation, with its own round
 * and ops (both 0 at first): true if it may go on; false after a nap. */
static inline bool hammer_may(unsigned self, unsigned *round, unsigned *ops)
{
	unsigned now = atomic_load(&hammer_round);

	if (now != *round) { /* a child is coming: a new budget */
		*round = now;
		*ops = 0;
		atomic_store(&hammer_seen[self], now);
	}
	if (*ops >= HAMMER_OPS) {
		nanosleep(&(struct timespec){ .tv_nsec = 100000 }, NULL);
		return false;
	}
	++*ops;
	return true;
}

/* Announces the next child to hammers 0 to n - 1; returns once each is allocating again. */
static inline void hammers_wake(unsigned n)
{
	unsigned now = atomic_fetch_add(&hammer_round, 1) + 1;

	for (unsigned i = 0; i < n; i++)
		while (atomic_load(&hammer_seen[i]) != now)
			sched_yield();
}

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
