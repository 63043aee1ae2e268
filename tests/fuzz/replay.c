/* replay.c: runs the fuzz target (fuzz-reader.c) on every file of a corpus directory, without
 * libFuzzer, so that CI's gcc builds (plain and ASan+UBSan) keep every input the fuzzer ever
 * found from coming back.
 *
 * Usage: replay-reader DIR... [FILE...]. Each file runs in a forked child under an alarm
 * (LK_TEST_TIMEOUT seconds, default 60, as in tests/lib/harness.c), so a crash, a sanitizer abort
 * or a hang fails that file alone and names it. Like every harness program it ends with exactly
 * one line, "N passed, N failed", and exits non-zero if anything failed or nothing was found.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The whole file, or NULL with errno set. */
static uint8_t *read_file(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	uint8_t *data = NULL;
	size_t len = 0, cap = 0, n;

	if (!f)
		return NULL;
	do {
		if (len == cap) {
			uint8_t *p = realloc(data, cap = cap ? 2 * cap : 4096);
			if (!p) {
				fclose(f);
				free(data);
				errno = ENOMEM;
				return NULL;
			}
			data = p;
		}
		n = fread(data + len, 1, cap - len, f);
		len += n;
	} while (n > 0);
	if (ferror(f)) {
		fclose(f);
		free(data);
		errno = EIO;
		return NULL;
	}
	fclose(f);
	*size = len;
	return data;
}

static bool run_one(const char *path, unsigned timeout)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "%s: fork: %s\n", path, strerror(errno));
		return false;
	}
	if (pid == 0) {
		size_t size = 0;
		uint8_t *data = read_file(path, &size);

		if (!data) {
			fprintf(stderr, "%s: %s\n", path, strerror(errno));
			_exit(1);
		}
		alarm(timeout);
		LLVMFuzzerTestOneInput(data, size);
		free(data);
		_exit(0);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return false;
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		fprintf(stderr, "%s: killed by signal SIG%s (%s)%s\n", path, sigabbrev_np(sig),
			strsignal(sig), sig == SIGALRM ? ": timed out" : "");
		return false;
	}
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static void count(const char *path, unsigned timeout, unsigned *passed, unsigned *failed)
{
	bool ok = run_one(path, timeout);

	printf("%s %s\n", ok ? "ok  " : "FAIL", path);
	fflush(stdout);
	++*(ok ? passed : failed);
}

int main(int argc, char *argv[])
{
	const char *s = getenv("LK_TEST_TIMEOUT");
	unsigned timeout = s ? (unsigned)atoi(s) : 60, passed = 0, failed = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s DIR|FILE...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		struct dirent **names;
		struct stat st;
		int n;

		if (stat(argv[i], &st) < 0) {
			fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
			failed++;
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			count(argv[i], timeout, &passed, &failed);
			continue;
		}
		n = scandir(argv[i], &names, NULL, by_name);
		if (n < 0) {
			fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
			failed++;
			continue;
		}
		for (int k = 0; k < n; k++) {
			char *path;

			if (names[k]->d_name[0] != '.' &&
			    asprintf(&path, "%s/%s", argv[i], names[k]->d_name) >= 0) {
				count(path, timeout, &passed, &failed);
				free(path);
			}
			free(names[k]);
		}
		free(names);
	}
	if (passed + failed == 0) {
		fprintf(stderr, "no corpus files found\n");
		failed++;
	}
	printf("%u passed, %u failed\n", passed, failed);
	return failed ? 1 : 0;
}
