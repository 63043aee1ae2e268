/* cut.c: cuts its own profile short while it allocates, as `truncate -s 0` and logrotate's
 * copytruncate do, and must go on as if leek were not there.
 *
 * Usage: cut MODE. Its profile is $LEEK_OUTPUT with %p expanded. Every round allocates and frees
 * in exact mode (a record each), so the writer's next store after the cut lands in pages the file
 * no longer has, and then cuts the file. MODE:
 *   plain    nothing else
 *   blocked  every signal blocked first, in this thread and in a second one that allocates too
 *            (the sigwait design of servers); SIGBUS must still read back as blocked
 *   handler  a SIGBUS handler of its own (sigaction, SA_SIGINFO), which leek's faults must never
 *            reach, read back as set; then a SIGBUS of its own (a store past the end of a file it
 *            mapped), which must reach it, at the right address
 *   signal   the same with signal()
 *   copy     copies the profile to PROFILE.copy before each cut (copytruncate); the copy must
 *            read up to its last record
 *   default  then a SIGBUS of its own with no handler: it must die of SIGBUS, as without leek
 * Prints "cuts N" and "done" on success.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include "prog.h"

#define ROUNDS 3
#define KEEP 64

static char profile[512];
static volatile sig_atomic_t handled;
static void *volatile fault_addr, *volatile handled_addr;
static sigjmp_buf back;

/* The blocks that churn keeps, one in 1000, 64 at most: alive across a cut, so that the file
 * begun again has INHERIT records. One array a thread, never shared: two threads that read the
 * same slot at once would both free its block: a double free of the program's own, which glibc
 * alone aborts on ("double free or corruption") and leek counts as bad_free. The worker's array
 * passes from each round's worker to the next through pthread_join and pthread_create. */
static void *main_keep[KEEP], *worker_keep[KEEP];

/* n blocks allocated and freed but for every 1000th, which replaces the oldest of keep's. */
static void churn(void **keep, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		void *p = malloc(16 + i % 3000);
		CHECK(p, "malloc");
		memset(p, (int)i, 16);
		if (i % 1000 == 0) {
			free(keep[i / 1000 % KEEP]);
			keep[i / 1000 % KEEP] = p;
		} else {
			free(p);
		}
	}
}

static void find_profile(void)
{
	const char *pat = getenv("LEEK_OUTPUT");
	size_t n = 0;

	CHECK(pat, "LEEK_OUTPUT is not set");
	for (; *pat && n < sizeof(profile) - 16; pat++) {
		if (pat[0] == '%' && pat[1] == 'p') {
			n += (size_t)snprintf(profile + n, sizeof(profile) - n, "%d", (int)getpid());
			pat++;
		} else if (pat[0] == '%' && pat[1] == 'e') {
			n += (size_t)snprintf(profile + n, sizeof(profile) - n, "%s",
					      program_invocation_short_name);
			pat++;
		} else {
			profile[n++] = *pat;
		}
	}
	profile[n] = 0;
}

static void copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ssize_t k;

	CHECK(in >= 0 && out >= 0, "copy %s to %s", from, to);
	while ((k = read(in, buf, sizeof(buf))) > 0)
		CHECK(write(out, buf, (size_t)k) == k, "write %s", to);
	close(in);
	close(out);
}

static void on_bus(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	handled++;
	handled_addr = si->si_addr;
	if (sig == SIGBUS && si->si_addr == fault_addr)
		siglongjmp(back, 1);
}

static void on_bus_plain(int sig)
{
	handled++;
	if (sig == SIGBUS)
		siglongjmp(back, 1);
}

/* A SIGBUS of the program's own: a store into a page past the end of a file it mapped. */
static void own_sigbus(void)
{
	char path[600];
	snprintf(path, sizeof(path), "%s.mapped", profile);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0 && unlink(path) == 0 && ftruncate(fd, 4096) == 0, "%s", path);
	char *p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(p != MAP_FAILED, "mmap");
	fault_addr = p + 4096;
	if (sigsetjmp(back, 1) == 0)
		p[4096] = 1; /* the second page is past the end of the file */
	munmap(p, 8192);
	close(fd);
}

static void *worker(void *arg)
{
	(void)arg;
	churn(worker_keep, 100000);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "plain";
	pthread_t th;
	unsigned cuts = 0;

	find_profile();
	if (!strcmp(mode, "blocked")) {
		sigset_t all, now;
		sigfillset(&all);
		CHECK(pthread_sigmask(SIG_BLOCK, &all, NULL) == 0, "pthread_sigmask");
		CHECK(sigprocmask(SIG_SETMASK, NULL, &now) == 0, "sigprocmask");
		CHECK(sigismember(&now, SIGBUS) == 1, "SIGBUS reads back unblocked after blocking all");
	} else if (!strcmp(mode, "handler")) {
		struct sigaction sa = { .sa_sigaction = on_bus, .sa_flags = SA_SIGINFO }, back_sa;
		sigemptyset(&sa.sa_mask);
		sigaddset(&sa.sa_mask, SIGUSR2);
		CHECK(sigaction(SIGBUS, &sa, NULL) == 0, "sigaction");
		CHECK(sigaction(SIGBUS, NULL, &back_sa) == 0, "sigaction");
		CHECK(back_sa.sa_sigaction == on_bus && (back_sa.sa_flags & SA_SIGINFO) &&
			      sigismember(&back_sa.sa_mask, SIGUSR2) == 1,
		      "the SIGBUS action does not read back as set");
	} else if (!strcmp(mode, "signal")) {
		CHECK(signal(SIGBUS, on_bus_plain) == SIG_DFL, "signal: the action before");
		CHECK(signal(SIGBUS, on_bus_plain) == on_bus_plain, "signal: reads back");
	}
	for (int round = 0; round < ROUNDS; round++) {
		if (!strcmp(mode, "blocked")) {
			CHECK(pthread_create(&th, NULL, worker, NULL) == 0, "pthread_create");
			churn(main_keep, 100000);
			CHECK(pthread_join(th, NULL) == 0, "pthread_join");
		} else {
			churn(main_keep, 200000);
		}
		if (!strcmp(mode, "copy")) {
			char to[600];
			snprintf(to, sizeof(to), "%s.copy%d", profile, round);
			copy_file(profile, to);
		}
		CHECK(truncate(profile, 0) == 0, "truncate %s", profile);
		cuts++;
		churn(main_keep, 50000); /* stores into the cut file */
	}
	CHECK(handled == 0, "the program's SIGBUS handler ran %d times for leek's faults",
	      (int)handled);
	if (!strcmp(mode, "handler") || !strcmp(mode, "signal")) {
		own_sigbus();
		CHECK(handled == 1, "the program's SIGBUS handler ran %d times for its own fault",
		      (int)handled);
		if (!strcmp(mode, "handler"))
			CHECK(handled_addr == fault_addr, "its handler saw %p, the fault was at %p",
			      handled_addr, fault_addr);
	}
	printf("cuts %u\n", cuts);
	if (!strcmp(mode, "default")) {
		fflush(stdout);
		own_sigbus(); /* dies here */
		printf("survived its own SIGBUS\n");
	}
	printf("done\n");
	return 0;
}
