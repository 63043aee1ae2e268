/* holders.c: a service for test-ctl's sync test: HOLDERS threads each allocate BLOCKS blocks of
 * 4 KiB and hold them, then sleep with their thread segments open, while the main thread
 * allocates and frees a small block every 10 ms, so that it samples (under LEEK_PERIOD=1) and
 * looks at the control block. It writes "ready" once every holder holds its blocks, and returns
 * once the file "stop" appears in its working directory.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <unistd.h>

#include "prog.h"

#define HOLDERS 3
#define BLOCKS 500

static atomic_int holding;
static void *volatile sink;

static void touch(const char *name)
{
	FILE *f = fopen(name, "w");

	if (f)
		fclose(f);
}

static __attribute__((noinline)) void *hold(void *arg)
{
	void **kept = calloc(BLOCKS, sizeof(*kept));

	(void)arg;
	CHECK(kept, "calloc");
	for (int i = 0; i < BLOCKS; i++)
		CHECK((kept[i] = malloc(4096)), "malloc");
	atomic_fetch_add(&holding, 1);
	while (access("stop", F_OK) != 0)
		usleep(20000);
	for (int i = 0; i < BLOCKS; i++)
		free(kept[i]);
	free(kept);
	return NULL;
}

int main(void)
{
	pthread_t t[HOLDERS];
	bool ready = false;

	for (int i = 0; i < HOLDERS; i++)
		CHECK(pthread_create(&t[i], NULL, hold, NULL) == 0, "pthread_create");
	while (access("stop", F_OK) != 0) {
		sink = malloc(64);
		free(sink);
		if (!ready && atomic_load(&holding) == HOLDERS) {
			touch("ready");
			ready = true;
		}
		usleep(10000);
	}
	for (int i = 0; i < HOLDERS; i++)
		pthread_join(t[i], NULL);
	return 0;
}
