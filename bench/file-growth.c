/* file-growth.c: what a MiB of profile costs the kernel, by how the writer grows its file.
 *
 * The writer (src/preload/writer.c) grows the profile a MiB at a time and stores its records
 * through a shared mapping of a 1 MiB window. This program does the same with a scratch file of
 * 48 MiB in DIR (a store every 64 bytes, as the records come), in each of these ways:
 *
 *   fallocate        posix_fallocate only: each page faults in through the file system
 *   fallocate+64k    and the range written as zeros 64 KiB a write first (what the writer does)
 *   fallocate+1m     and the range written as zeros in one write of 1 MiB
 *   populate         fallocate, then MADV_POPULATE_WRITE on the window
 *   willneed         fallocate, then POSIX_FADV_WILLNEED on the range
 *
 * and prints, for each, the median over ROUNDS rounds (in turn, in a new order each round) of the
 * milliseconds from the first grow to the last store, the minor faults, and the milliseconds that
 * the file's removal takes. Run by hand (never a pass/fail test):
 *
 *   cc -O2 -o /tmp/file-growth bench/file-growth.c && /tmp/file-growth /tmp 9
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define MIB (1u << 20)
#define TOTAL (48u * MIB)
#define MAX_ROUNDS 64

enum { FALLOCATE, ZEROS_64K, ZEROS_1M, POPULATE, WILLNEED, NWAYS };
static const char *const names[NWAYS] = { "fallocate", "fallocate+64k", "fallocate+1m",
					   "populate", "willneed" };
static char zeros[MIB];

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static long minor_faults(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

/* One round of one way: *ms, *faults, *rm_ms. */
static int one(const char *path, int way, double *ms, double *faults, double *rm_ms)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0)
		return -1;
	long f0 = minor_faults();
	double t0 = now_ms();
	for (off_t at = 0; at < TOTAL; at += MIB) {
		if (posix_fallocate(fd, at, MIB))
			return -1;
		if (way == ZEROS_64K)
			for (off_t z = 0; z < MIB; z += 64 << 10)
				(void)!pwrite(fd, zeros, 64 << 10, at + z);
		if (way == ZEROS_1M)
			(void)!pwrite(fd, zeros, MIB, at);
		if (way == WILLNEED)
			posix_fadvise(fd, at, MIB, POSIX_FADV_WILLNEED);
		char *m = mmap(NULL, MIB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, at);
		if (m == MAP_FAILED)
			return -1;
		if (way == POPULATE)
			madvise(m, MIB, MADV_POPULATE_WRITE);
		for (size_t i = 0; i < MIB; i += 64)
			m[i] = 1;
		munmap(m, MIB);
	}
	*ms = now_ms() - t0;
	*faults = (double)(minor_faults() - f0);
	close(fd);
	t0 = now_ms();
	unlink(path);
	*rm_ms = now_ms() - t0;
	return 0;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	static double ms[NWAYS][MAX_ROUNDS], faults[NWAYS][MAX_ROUNDS], rm[NWAYS][MAX_ROUNDS];
	int rounds = argc > 2 ? atoi(argv[2]) : 9;
	char path[4096];

	if (argc < 2 || rounds < 1 || rounds > MAX_ROUNDS) {
		fprintf(stderr, "usage: %s DIR [ROUNDS (1..%d)]\n", argv[0], MAX_ROUNDS);
		return 2;
	}
	snprintf(path, sizeof(path), "%s/file-growth.%d.tmp", argv[1], (int)getpid());
	srand((unsigned)getpid());
	for (int r = 0; r < rounds; r++) {
		int order[NWAYS];
		for (int i = 0; i < NWAYS; i++)
			order[i] = i;
		for (int i = NWAYS - 1; i > 0; i--) {
			int j = rand() % (i + 1), t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
		for (int i = 0; i < NWAYS; i++) {
			int w = order[i];
			if (one(path, w, &ms[w][r], &faults[w][r], &rm[w][r]) < 0) {
				perror(path);
				unlink(path);
				return 1;
			}
		}
	}
	printf("48 MiB through a 1 MiB shared window, grown a MiB at a time; medians of %d rounds\n",
	       rounds);
	printf("%-16s %10s %10s %10s\n", "", "ms", "faults", "rm ms");
	for (int w = 0; w < NWAYS; w++)
		printf("%-16s %10.1f %10.0f %10.1f\n", names[w], median(ms[w], rounds),
		       median(faults[w], rounds), median(rm[w], rounds));
	return 0;
}
