/* spawn.c: vfork+exec and posix_spawn, with and without file actions, while threads allocate.
 *
 * Two threads allocate and free blocks of 16 B to 64 KiB without pause around each spawn (so that
 * the spawning thread's vfork or clone lands while they hold the allocator's locks or leek's), a
 * fixed work per spawn (children.h). The main thread
 * starts ROUNDS times each of: vfork+execve of this program as a child; posix_spawn of it with no
 * attributes or file actions; posix_spawn of it with file actions (its stdout dup2'ed onto a pipe,
 * both pipe ends, 50 and 51, closed, /dev/null opened on descriptor 5) and attributes (a signal
 * mask); and
 * posix_spawnp of "true" found through PATH. A child allocates blocks of 3001 bytes, checks that
 * its descriptors are as the file actions left them, and prints a greeting and its tally lines
 * (tally.h); the parent reads the greeting from the pipe and passes the tally lines on. Every
 * child must exit 0 within 10 seconds (otherwise it is killed: a deadlock). Prints "rounds N".
 *
 * Usage: spawn ROUNDS | spawn --child [--piped].
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "children.h"
#include "tally.h"

#define NTHREADS 2
#define NSLOTS 64
#define CHILD_BLOCKS 10
#define CHILD_SECONDS 10

extern char **environ;

static atomic_int stop;

static void *hammer(void *arg)
{
	unsigned self = (unsigned)(uintptr_t)arg - 1, round = 0, ops = 0;
	uint64_t rng = (uint64_t)(uintptr_t)arg;
	void *slot[NSLOTS] = { 0 };

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		if (!hammer_may(self, &round, &ops))
			continue;
		unsigned i = (unsigned)(prog_rand(&rng) % NSLOTS);
		unsigned lg = 4 + (unsigned)(prog_rand(&rng) % 12);
		size_t size = (((size_t)1 << lg) + prog_rand(&rng) % ((size_t)1 << lg)) & ~(size_t)15;
		free(slot[i]);
		slot[i] = malloc(size);
		CHECK(slot[i], "malloc(%zu) failed", size);
		memset(slot[i], 0x3c, size < 256 ? size : 256);
	}
	for (int i = 0; i < NSLOTS; i++)
		free(slot[i]);
	return NULL;
}

static int child_main(bool piped)
{
	char *b[CHILD_BLOCKS];

	for (int i = 0; i < CHILD_BLOCKS; i++) {
		b[i] = malloc(3001);
		CHECK(b[i], "child: malloc failed");
		pattern_fill(b[i], 3001, (uint64_t)i);
	}
	for (int i = 0; i < CHILD_BLOCKS; i++) {
		CHECK(pattern_check(b[i], 3001, (uint64_t)i) == 3001, "child: block %d damaged", i);
		free(b[i]);
	}
	if (piped) {
		struct stat st;
		CHECK(fstat(1, &st) == 0 && S_ISFIFO(st.st_mode), "child: stdout is not the pipe");
		CHECK(fcntl(5, F_GETFD) >= 0, "child: descriptor 5 (/dev/null) is not open");
		CHECK(fcntl(50, F_GETFD) < 0 && fcntl(51, F_GETFD) < 0, "child: the pipe ends are open");
		sigset_t mask;
		CHECK(sigprocmask(SIG_BLOCK, NULL, &mask) == 0 && sigismember(&mask, SIGUSR1),
		      "child: the spawn attributes' signal mask was not applied");
		printf("hello from the piped child\n");
	}
	tally(3001, CHILD_BLOCKS, 0, CHILD_BLOCKS);
	return 0;
}

int main(int argc, char **argv)
{
	char self[PATH_MAX];
	pthread_t th[NTHREADS];
	pid_t pid;
	int r;

	if (argc > 1 && !strcmp(argv[1], "--child"))
		return child_main(argc > 2 && !strcmp(argv[2], "--piped"));
	int rounds = argc > 1 ? atoi(argv[1]) : 20;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	CHECK(n > 0, "readlink /proc/self/exe: %s", strerror(errno));
	self[n] = 0;
	char *child_argv[] = { "spawn", "--child", NULL };
	char *piped_argv[] = { "spawn", "--child", "--piped", NULL };
	char *true_argv[] = { "true", NULL };

	for (int i = 0; i < NTHREADS; i++)
		CHECK(pthread_create(&th[i], NULL, hammer, (void *)(uintptr_t)(i + 1)) == 0,
		      "pthread_create");
	for (int k = 0; k < rounds; k++) {
		fflush(stdout);
		/* vfork: the child shares our memory until it execs, and calls nothing else. */
		hammers_wake(NTHREADS);
		pid = vfork();
		if (pid == 0) {
			execve(self, child_argv, environ);
			_exit(127);
		}
		CHECK(pid > 0, "vfork: %s", strerror(errno));
		wait_child(pid, "vfork+execve", k, CHILD_SECONDS);

		hammers_wake(NTHREADS);
		r = posix_spawn(&pid, self, NULL, NULL, child_argv, environ);
		CHECK(r == 0, "posix_spawn: %s", strerror(r));
		wait_child(pid, "posix_spawn", k, CHILD_SECONDS);

		int fds[2];
		CHECK(pipe(fds) == 0, "pipe: %s", strerror(errno));
		/* The pipe on 50 and 51, so that the child can tell that both were closed. */
		CHECK(dup2(fds[0], 50) == 50 && dup2(fds[1], 51) == 51, "dup2: %s", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		posix_spawn_file_actions_t fa;
		posix_spawnattr_t attr;
		sigset_t mask;
		sigemptyset(&mask);
		sigaddset(&mask, SIGUSR1);
		CHECK(posix_spawn_file_actions_init(&fa) == 0 &&
			      posix_spawn_file_actions_adddup2(&fa, 51, 1) == 0 &&
			      posix_spawn_file_actions_addclose(&fa, 50) == 0 &&
			      posix_spawn_file_actions_addclose(&fa, 51) == 0 &&
			      posix_spawn_file_actions_addopen(&fa, 5, "/dev/null", O_RDONLY, 0) == 0,
		      "posix_spawn_file_actions");
		CHECK(posix_spawnattr_init(&attr) == 0 &&
			      posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK) == 0 &&
			      posix_spawnattr_setsigmask(&attr, &mask) == 0,
		      "posix_spawnattr");
		hammers_wake(NTHREADS);
		r = posix_spawn(&pid, self, &fa, &attr, piped_argv, environ);
		CHECK(r == 0, "posix_spawn with file actions: %s", strerror(r));
		posix_spawn_file_actions_destroy(&fa);
		posix_spawnattr_destroy(&attr);
		close(51);
		char buf[4096];
		size_t len = 0;
		ssize_t got;
		while (len < sizeof(buf) - 1 && (got = read(50, buf + len, sizeof(buf) - 1 - len)) != 0) {
			CHECK(got > 0 || errno == EINTR, "read from the pipe: %s", strerror(errno));
			len += got > 0 ? (size_t)got : 0;
		}
		close(50);
		buf[len] = 0;
		wait_child(pid, "posix_spawn with file actions", k, CHILD_SECONDS);
		CHECK(!strncmp(buf, "hello from the piped child\n", 27),
		      "the piped child said \"%.200s\"", buf);
		fputs(buf + 27, stdout); /* its tally lines */

		hammers_wake(NTHREADS);
		r = posix_spawnp(&pid, "true", NULL, NULL, true_argv, environ);
		CHECK(r == 0, "posix_spawnp true: %s", strerror(r));
		wait_child(pid, "posix_spawnp of true", k, CHILD_SECONDS);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < NTHREADS; i++)
		CHECK(pthread_join(th[i], NULL) == 0, "pthread_join");
	printf("rounds %d\n", rounds);
	return 0;
}
