/* proc.h: runs `leek` (and the fixtures under it) from the report tests, with a timeout.
 *
 * The minimal part of tests/preload/runner.c, without its profile loading: a child in its own
 * process group, with an environment cleaned of LD_PRELOAD and LEEK_* (so the outer environment
 * cannot change what is under test), stdout and stderr captured in files, and the whole group
 * killed after a timeout. proc_start() and proc_wait() are separate so that a test can signal
 * the child while it runs.
 *
 * Failures go through lk_test_fail (harness.h) and leave the test at once.
 */
#ifndef LEEK_TEST_PROC_H
#define LEEK_TEST_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

struct proc {
	pid_t pid;
	int status;     /* exit code, or 128 + the signal that killed it (as a shell shows it) */
	char *out, *err;
	size_t out_len, err_len;
	char out_path[300], err_path[300], argv0[300];
	double seconds; /* wall time from start to exit */
	long max_rss_kb; /* its peak resident set (wait4's ru_maxrss): memory, never a timing */
	unsigned timeout;
	struct timespec start;
};

/* A fresh temporary directory "$TMPDIR/leek-report-XXXXXX" in dir (at least 256 bytes). */
void tmp_dir(char *dir);
/* Removes dir and the files directly in it. */
void tmp_dir_remove(const char *dir);

/* Starts argv[0] (a path; the list ends with NULL), stdout and stderr going to files in dir,
 * with "NAME=value" entries of env (NULL-terminated, may be NULL) added to the cleaned
 * environment. timeout in seconds, 0: 60. */
void proc_start(struct proc *p, const char *dir, const char *const *argv, const char *const *env,
		unsigned timeout);
/* Waits for it (killing its process group at the timeout, which fails the test), then reads its
 * output. */
void proc_wait(struct proc *p);
/* Both. */
void proc_run(struct proc *p, const char *dir, const char *const *argv, const char *const *env,
	      unsigned timeout);
void proc_free(struct proc *p);

/* The whole file, NUL-terminated; *len its size if len is not NULL. Fails the test if it cannot
 * be read. */
char *read_file(const char *path, size_t *len);
void write_file(const char *path, const void *data, size_t len);

/* How many entries of dir (. and .. too) have a name that starts with prefix and ends with
 * suffix. Fails the test if dir cannot be listed. */
size_t count_files(const char *dir, const char *prefix, const char *suffix);

/* The first file in dir whose name starts with prefix (a malloc'ed path), or NULL. Fails the
 * test if there are several. */
char *find_one(const char *dir, const char *prefix);

#endif /* LEEK_TEST_PROC_H */
