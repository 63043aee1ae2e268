/* rotate.c: a program whose profile rotates (LEEK_MAX_SIZE, LEEK_MAX_AGE), for test-rotate.c.
 *
 *   rotate run N          LIVE blocks of 4099 bytes kept, then N malloc/free pairs of 5003 bytes,
 *                         then the LIVE blocks' first half freed; tallies, exit 0
 *   rotate age SECONDS    LIVE blocks kept, then a pair of 5003 bytes every 20 ms for SECONDS
 *   rotate kill SEED      LIVE blocks kept, then pairs of 5003 bytes until a second thread,
 *                         after 40 000 pairs and a delay drawn from SEED (0 to 20 ms), sends
 *                         the process SIGKILL
 *   rotate ro N           LIVE blocks kept, then the profile's directory made read-only
 *                         (immutable as root, mode 0555 otherwise; the test puts it back) for N
 *                         pairs; tallies, exit 0; "skip REASON" on stdout if it cannot
 *
 * In exact mode (LEEK_PERIOD=1) the tallies (tally.h) say what the segments hold together.
 *
 * Never: free a kept block before its phase, or depend on the machine's speed for a tally.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tally.h"

#define LIVE 1500
#define KEPT 4099
#define CHURN 5003

static void *kept[LIVE];
static void *volatile sink;

static void keep(void)
{
	for (int i = 0; i < LIVE; i++)
		kept[i] = malloc(KEPT);
}

static void pair(void)
{
	sink = malloc(CHURN);
	free(sink);
}

static volatile unsigned long pairs_done;

/* Waits for 40 000 pairs (320 KB of exact mode: a rotation at 64 KiB at least, however slow the
 * machine), then for a delay drawn from the seed, 0 to 20 ms, then kills. */
static void *killer(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	struct timespec poll = { 0, 1000000 }, ts = { 0, (long)(rand_r(&seed) % 20000) * 1000 };

	while (pairs_done < 40000)
		nanosleep(&poll, NULL);
	nanosleep(&ts, NULL);
	kill(getpid(), SIGKILL);
	return NULL;
}

/* The profile's directory, from LEEK_OUTPUT. */
static int output_dir(void)
{
	char dir[4096];
	const char *out = getenv("LEEK_OUTPUT");
	const char *slash = out ? strrchr(out, '/') : NULL;

	if (!slash)
		return -1;
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - out), out);
	return open(dir, O_RDONLY | O_DIRECTORY);
}

#include "read-only.h"

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	long n = atol(argv[2]);

	keep();
	if (!strcmp(argv[1], "run")) {
		for (long i = 0; i < n; i++)
			pair();
		for (int i = 0; i < LIVE / 2; i++)
			free(kept[i]);
		tally(KEPT, LIVE, 0, LIVE / 2);
		tally(CHURN, (unsigned long)n, 0, (unsigned long)n);
		return 0;
	}
	if (!strcmp(argv[1], "age")) {
		struct timespec start, now, tick = { 0, 20000000 };
		unsigned long pairs = 0;
		clock_gettime(CLOCK_MONOTONIC, &start);
		do {
			pair();
			pairs++;
			nanosleep(&tick, NULL);
			clock_gettime(CLOCK_MONOTONIC, &now);
		} while (now.tv_sec - start.tv_sec < n);
		tally(KEPT, LIVE, 0, 0);
		tally(CHURN, pairs, 0, pairs);
		return 0;
	}
	if (!strcmp(argv[1], "kill")) {
		pthread_t th;
		if (pthread_create(&th, NULL, killer, (void *)(uintptr_t)n))
			return 3;
		for (;;) {
			pair();
			pairs_done++;
		}
	}
	if (!strcmp(argv[1], "ro")) {
		int dfd = output_dir();
		if (dfd < 0 || !dir_read_only(dfd, true)) {
			printf("skip cannot make the profile's directory read-only: %s\n",
			       strerror(errno));
			return 0;
		}
		for (long i = 0; i < n; i++)
			pair();
		tally(KEPT, LIVE, 0, 0);
		tally(CHURN, (unsigned long)n, 0, (unsigned long)n);
		return 0;
	}
	return 2;
}
