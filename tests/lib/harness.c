/* harness.c: runs the tests that TEST() put in the "lk_tests" section (see harness.h).
 *
 * Usage: test-foo [--no-fork] [FILTER]. Each test runs in a forked child under an alarm
 * (LK_TEST_TIMEOUT seconds, default 60), so one crash or hang costs one test, not the run. The
 * last line of output is always "N passed, N failed, N skipped". Never share state between tests.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

/* The linker defines these for any section named like a C identifier; weak, so that a test
 * program with no tests still links. */
extern const struct lk_test *const __start_lk_tests[] __attribute__((weak));
extern const struct lk_test *const __stop_lk_tests[] __attribute__((weak));

static jmp_buf fail_jmp;

/* How a test ended; a forked child exits with its number. EXIT_SKIP is automake's and meson's
 * code for a skipped test. */
enum { PASSED = 0, FAILED = 1, SKIPPED = 77 };

void lk_test_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
	longjmp(fail_jmp, FAILED);
}

void lk_test_skip(const char *fmt, ...)
{
	va_list ap;

	fputs("skipped: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
	longjmp(fail_jmp, SKIPPED);
}

bool lk_test_streq(const char *a, const char *b)
{
	return a && b ? strcmp(a, b) == 0 : a == b;
}

bool lk_test_contains(const char *a, const char *b)
{
	return strstr(a, b) != NULL;
}

const char *lk_test_strerror(int e)
{
	return strerror(e);
}

/* PASSED, FAILED or SKIPPED; runs in whatever process calls it. */
static int run_here(const struct lk_test *t)
{
	int r = setjmp(fail_jmp);

	if (r)
		return r;
	t->fn();
	return PASSED;
}

static int run_forked(const struct lk_test *t, unsigned timeout)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "%s: fork: %s\n", t->name, strerror(errno));
		return FAILED;
	}
	if (pid == 0) {
		alarm(timeout);
		_exit(run_here(t));
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return FAILED;
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		fprintf(stderr, "%s: killed by signal SIG%s (%s)%s\n", t->name, sigabbrev_np(sig),
			strsignal(sig), sig == SIGALRM ? ": timed out" : "");
		return FAILED;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == SKIPPED)
		return SKIPPED;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? PASSED : FAILED;
}

int main(int argc, char *argv[])
{
	const char *filter = NULL, *s = getenv("LK_TEST_TIMEOUT");
	unsigned timeout = s ? (unsigned)atoi(s) : 60, passed = 0, failed = 0, skipped = 0;
	bool fork_tests = true;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--no-fork") == 0)
			fork_tests = false;
		else if (argv[i][0] == '-') {
			fprintf(stderr, "usage: %s [--no-fork] [FILTER]\n", argv[0]);
			return 2;
		} else
			filter = argv[i];
	}

	for (const struct lk_test *const *t = __start_lk_tests; t && t < __stop_lk_tests; t++) {
		if (!*t || (filter && !strstr((*t)->name, filter)))
			continue;
		int r = fork_tests ? run_forked(*t, timeout) : run_here(*t);
		printf("%s %s\n", r == PASSED ? "ok  " : r == SKIPPED ? "skip" : "FAIL", (*t)->name);
		fflush(stdout);
		passed += r == PASSED;
		failed += r == FAILED;
		skipped += r == SKIPPED;
	}
	printf("%u passed, %u failed, %u skipped\n", passed, failed, skipped);
	return failed ? 1 : 0;
}
