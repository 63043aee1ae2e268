/* fork.c: fork, vfork+exec and posix_spawn under libleek.
 *
 * The parent allocates 100 blocks of 5003 bytes, then forks 24 times while a second thread keeps
 * allocating (so that fork lands while leek's lock and glibc's are busy). Each child checks the
 * inherited blocks, frees half of them, reallocates one, allocates and frees blocks of its own,
 * and exits through exit() (so that its profile ends with a trailer). The first child forks a
 * grandchild that frees everything it inherited. Then one vfork+exec and one posix_spawn of
 * /bin/true. Every child must exit 0, and the parent's blocks must be intact after each fork.
 * Every process prints its tally lines (tally.h).
 *
 * Usage: fork [--walk-phdr].
 */
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/wait.h>

#include "prog.h"
#include "tally.h"

#define NBLOCKS 100
#define NFORKS 24
#define NOWN 50

extern char **environ;

static char *blocks[NBLOCKS];
static atomic_int stop;
static bool walk_phdr;

static int count_object(struct dl_phdr_info *info, size_t size, void *data)
{
	++*(unsigned long *)data;
	return 0;
}

/* The second thread allocates. With --walk-phdr it also walks the loaded objects, as libunwind,
 * Rust's backtrace or libgcc before glibc 2.35 do, so that fork often lands while it holds the
 * loader's lock. The children never call dl_iterate_phdr themselves: without leek they never
 * meet that lock, so they must not meet it with leek either. */
static void *churn(void *arg)
{
	uint64_t rng = 99;
	void *keep[64] = { 0 };
	unsigned long objects = 0;

	while (!atomic_load(&stop)) {
		if (walk_phdr)
			dl_iterate_phdr(count_object, &objects);
		unsigned i = (unsigned)(prog_rand(&rng) % 64);
		free(keep[i]);
		keep[i] = malloc(16 * (1 + prog_rand(&rng) % 256)); /* multiples of 16: never a tally size */
		CHECK(keep[i], "churn malloc failed");
	}
	for (int i = 0; i < 64; i++)
		free(keep[i]);
	return NULL;
}

static void check_block(int i)
{
	size_t bad = pattern_check(blocks[i], 5003, (uint64_t)i);

	CHECK(bad == 5003, "pid %d: block %d overwritten at byte %zu", (int)getpid(), i, bad);
}

static void wait_ok(pid_t pid, const char *what)
{
	int status;

	CHECK(pid > 0, "%s failed", what);
	while (waitpid(pid, &status, 0) < 0)
		CHECK(errno == EINTR, "waitpid: %s", strerror(errno));
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: child status %#x", what, status);
}

/* The grandchild: frees everything it inherited from its parent (the first child). */
static void grandchild(char *moved, char **own)
{
	for (int i = 1; i < NBLOCKS; i += 2)
		if (i != 1) {
			check_block(i);
			free(blocks[i]);
		}
	CHECK(pattern_check(moved, 5003, 1) == 5003, "grandchild: moved block overwritten");
	free(moved);
	for (int i = 0; i < NOWN / 2; i++)
		free(own[i]);
	tally(5003, 0, NBLOCKS / 2 - 1, NBLOCKS / 2 - 1);
	tally(7001, 0, 1, 1);
	tally(6007, 0, NOWN / 2, NOWN / 2);
	exit(0);
}

static void child(int k)
{
	char *own[NOWN];
	/* Half the children start with an ALLOC: their file opens at it, and INHERITs every block
	 * live then, which must not include this new one (it is an ALLOC only). */
	char *first = k % 2 ? malloc(4093) : NULL;

	CHECK(first || k % 2 == 0, "malloc(4093) failed");
	for (int i = 0; i < NBLOCKS; i++)
		check_block(i);
	for (int i = 0; i < NBLOCKS; i += 2)
		free(blocks[i]);
	char *moved = realloc(blocks[1], 7001);
	CHECK(moved, "realloc of an inherited block failed");
	CHECK(pattern_check(moved, 5003, 1) == 5003, "realloc lost an inherited block's contents");
	for (int i = 0; i < NOWN; i++) {
		own[i] = malloc(6007);
		CHECK(own[i], "malloc(6007) failed");
		pattern_fill(own[i], 6007, 1000 + (uint64_t)i);
	}
	for (int i = 0; i < NOWN; i += 2)
		free(own[i]);
	char *live[NOWN / 2];
	for (int i = 0; i < NOWN / 2; i++)
		live[i] = own[2 * i + 1];
	if (k == 0) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0)
			grandchild(moved, live);
		wait_ok(pid, "fork of the grandchild");
	}
	for (int i = 0; i < NOWN / 2; i++)
		CHECK(pattern_check(live[i], 6007, 1000 + 2 * (uint64_t)i + 1) == 6007,
		      "child's own block %d overwritten", 2 * i + 1);
	free(moved);
	tally(5003, 0, NBLOCKS, NBLOCKS / 2 + 1);
	tally(7001, 1, 0, 1);
	tally(6007, NOWN, 0, NOWN / 2);
	tally(4093, k % 2, 0, 0); /* first stays live */
	exit(0); /* not _exit: the profile must end with its trailer */
}

int main(int argc, char **argv)
{
	pthread_t th;

	walk_phdr = argc > 1 && strcmp(argv[1], "--walk-phdr") == 0;
	for (int i = 0; i < NBLOCKS; i++) {
		blocks[i] = malloc(5003);
		CHECK(blocks[i], "malloc(5003) failed");
		pattern_fill(blocks[i], 5003, (uint64_t)i);
	}
	CHECK(pthread_create(&th, NULL, churn, NULL) == 0, "pthread_create");
	for (int k = 0; k < NFORKS; k++) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0)
			child(k);
		wait_ok(pid, "fork");
		for (int i = 0; i < NBLOCKS; i++)
			check_block(i);
	}
	atomic_store(&stop, 1);
	CHECK(pthread_join(th, NULL) == 0, "pthread_join");

	/* vfork: the child shares our memory until it execs, and calls nothing else. */
	pid_t pid = vfork();
	if (pid == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	wait_ok(pid, "vfork+exec of /bin/true");

	char *spawn_argv[] = { "true", NULL };
	int r = posix_spawn(&pid, "/bin/true", NULL, NULL, spawn_argv, environ);
	CHECK(r == 0, "posix_spawn: %s", strerror(r));
	wait_ok(pid, "posix_spawn of /bin/true");

	for (int i = 0; i < NBLOCKS; i++) {
		check_block(i);
		free(blocks[i]);
	}
	tally(5003, NBLOCKS, 0, NBLOCKS);
	return 0;
}
