/* errno.c: a successful allocator call leaves errno alone, sampled or not.
 *
 * Sets errno to a sentinel before every call and checks it after, over enough iterations (with
 * blocks of 1 MiB among them) that the default period samples many of the calls too, and again
 * in a second thread, whose first allocation is where leek initialises the thread.
 *
 * Two options make the program sound on allocators that fail it alone (the driver runs it with
 * and without leek, and both runs must exit 0):
 *   --no-pvalloc  Debian's jemalloc has no pvalloc: glibc's would hand jemalloc's free a block of
 *                 glibc's heap (a crash without leek);
 *   --warm        one malloc and free before the first check: mimalloc's first malloc leaves ENOENT
 *                 in errno (its NUMA probe of /sys/devices/system/node/node1).
 *
 * Usage: errno [--no-pvalloc] [--warm].
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>

#include "prog.h"

#define SENTINEL 4242

static bool with_pvalloc = true;

#define KEEP(call)                                                                                 \
	({                                                                                         \
		errno = SENTINEL;                                                                  \
		__typeof__(call) _v = (call);                                                      \
		CHECK(errno == SENTINEL, "%s changed errno to %d", #call, errno);                  \
		_v;                                                                                \
	})

static void round_trip(unsigned it)
{
	size_t big = (1u << 20) + it;
	void *p;

	p = KEEP(malloc(24));
	CHECK(p, "malloc failed");
	KEEP(malloc_usable_size(p));
	p = KEEP(realloc(p, 5000));
	CHECK(p, "realloc failed");
	p = KEEP(realloc(p, big));
	CHECK(p, "realloc failed");
	p = KEEP(realloc(p, 100));
	CHECK(p, "realloc failed");
	KEEP((free(p), 0));

	p = KEEP(malloc(big));
	CHECK(p, "malloc failed");
	memset(p, 1, big);
	KEEP((free(p), 0));
	p = KEEP(calloc(10, 100));
	CHECK(p, "calloc failed");
	KEEP((free(p), 0));
	p = KEEP(calloc(1, big));
	CHECK(p, "calloc failed");
	KEEP((free(p), 0));
	p = KEEP(realloc(NULL, big / 2));
	CHECK(p, "realloc(NULL) failed");
	KEEP((free(p), 0));
	p = KEEP(memalign(64, big));
	CHECK(p, "memalign failed");
	KEEP((free(p), 0));
	p = NULL;
	CHECK(KEEP(posix_memalign(&p, 4096, big)) == 0, "posix_memalign failed");
	KEEP((free(p), 0));
	p = KEEP(aligned_alloc(256, 1024));
	CHECK(p, "aligned_alloc failed");
	KEEP((free(p), 0));
	p = KEEP(valloc(big));
	CHECK(p, "valloc failed");
	KEEP((free(p), 0));
	if (with_pvalloc) {
		p = KEEP(pvalloc(5000));
		CHECK(p, "pvalloc failed");
		KEEP((free(p), 0));
	}
	p = KEEP(reallocarray(NULL, 100, 1000));
	CHECK(p, "reallocarray failed");
	KEEP((free(p), 0));
	KEEP((free(NULL), 0));
}

static void *thread_main(void *arg)
{
	errno = SENTINEL;
	void *p = malloc(100);
	CHECK(errno == SENTINEL, "a thread's first malloc changed errno to %d", errno);
	free(p);
	for (unsigned it = 0; it < 200; it++)
		round_trip(it);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--no-pvalloc"))
			with_pvalloc = false;
		else if (!strcmp(argv[i], "--warm"))
			free(malloc(1));
		else
			CHECK(0, "usage: errno [--no-pvalloc] [--warm], not %s", argv[i]);
	}

	for (unsigned it = 0; it < 300; it++)
		round_trip(it);
	CHECK(pthread_create(&th, NULL, thread_main, NULL) == 0, "pthread_create");
	CHECK(pthread_join(th, NULL) == 0, "pthread_join");
	return 0;
}
