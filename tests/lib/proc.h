/* proc.h: runs a program from a test, with a timeout, and collects its output.
 *
 * The child runs in its own process group, with an environment cleaned of LD_PRELOAD, LEEK_* and
 * glibc's malloc checks (so that the outer environment cannot change what is under test), stdin
 * from /dev/null, stdout and stderr captured in files in a directory of the test's, only
 * descriptors 0, 1 and 2 open, the default action for the signals a test sends, and the whole
 * group killed after the timeout (which fails the test). proc_start() and proc_wait() are separate
 * so that a test can signal the child while it runs.
 *
 * tests/preload/runner.c runs its programs under libleek with this; tests/lib/leek.c runs the leek
 * binary. Failures go through FAIL (harness.h) and leave the test at once.
 */
#ifndef LEEK_TEST_PROC_H
#define LEEK_TEST_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

struct proc {
	pid_t pid;
	int status;      /* exit code, or 128 + the signal that killed it (as a shell shows it) */
	int wstatus;     /* the same, as waitpid gave it */
	char *out, *err; /* what it wrote, NUL-terminated */
	size_t out_len, err_len;
	char out_path[300], err_path[300], argv0[300];
	long max_rss_kb; /* its peak resident set (wait4's ru_maxrss): memory, never a timing */
	unsigned timeout;
	struct timespec start;
};

struct proc_opts {
	const char *const *env; /* "NAME=value" entries (NULL-terminated, may be NULL), which come
				 * before the cleaned environment's and hide its own of that name */
	unsigned timeout;       /* seconds; 0: 60 */
	const char *exe;        /* the file to run; NULL: argv[0] */
	const char *cwd;        /* its working directory; NULL: the test's */
	uint64_t limit_as;      /* its RLIMIT_AS, bytes; 0: the test's */
	uint64_t limit_fsize;   /* its RLIMIT_FSIZE (its stdout and stderr too); 0: the test's */
};

/* Starts argv (the list ends with NULL), its stdout and stderr going to files in dir. */
void proc_start_with(struct proc *p, const char *dir, const char *const *argv,
		     const struct proc_opts *o);
/* The same with only env and timeout (0: 60 s) of the options. */
void proc_start(struct proc *p, const char *dir, const char *const *argv, const char *const *env,
		unsigned timeout);
/* Waits for it (killing its process group at the timeout, which fails the test), then reads its
 * output. */
void proc_wait(struct proc *p);
/* Both. */
void proc_run(struct proc *p, const char *dir, const char *const *argv, const char *const *env,
	      unsigned timeout);
/* Frees its output; a zeroed struct proc is freed already. */
void proc_free(struct proc *p);

#endif /* LEEK_TEST_PROC_H */
