/* crash.c: a program that dies in the middle of things (exact mode).
 *
 * Usage: crash kill|segv. Allocates 100 blocks of 4111 bytes and frees 30 while a second thread
 * allocates without pause, prints its tallies (tally.h), allocates the 777777-byte marker, then
 * raises SIGKILL or writes through a null pointer. The profile must read to its last complete
 * record, have no trailer, and hold the marker.
 */
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>

#include "prog.h"
#include "tally.h"

static void *busy(void *arg)
{
	uint64_t rng = 1;

	for (;;) {
		size_t n = 16 * (1 + prog_rand(&rng) % 100);
		char *p = malloc(n);
		CHECK(p, "malloc failed");
		memset(p, 1, n);
		free(p);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	char *p[100];
	pthread_t th;
	struct rlimit no_core = { 0, 0 };

	CHECK(argc > 1, "usage: crash kill|segv");
	setrlimit(RLIMIT_CORE, &no_core);
	for (int i = 0; i < 100; i++) {
		p[i] = malloc(4111);
		CHECK(p[i], "malloc failed");
	}
	for (int i = 0; i < 30; i++)
		free(p[i]);
	CHECK(pthread_create(&th, NULL, busy, NULL) == 0, "pthread_create");
	tally(4111, 100, 0, 30);
	tally(777777, 1, 0, 0);
	char *marker = malloc(777777);
	CHECK(marker, "malloc failed");
	memset(marker, 9, 777777);
	if (strcmp(argv[1], "kill") == 0)
		raise(SIGKILL);
	else
		*(volatile char *)(uintptr_t)argc = 1; /* page 0: SIGSEGV */
	return 2;
}
