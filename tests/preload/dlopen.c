/* dlopen.c: allocation from several threads while another loads and unloads a library.
 *
 * Usage: dlopen PATH-TO-libdlo.so [ITERATIONS]. Three threads allocate and free without pause; a
 * fourth walks dl_iterate_phdr with a callback that allocates (it holds the loader's lock while
 * it does); the main thread dlopens libdlo.so (whose constructor allocates), calls into it and
 * dlcloses it, ITERATIONS times. It must simply finish: the driver kills it after a timeout, so a
 * deadlock between leek's lock and the dynamic linker's shows up as a failure.
 */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>

#include "prog.h"

#define NALLOC 3

static atomic_int stop;

static void *allocator(void *arg)
{
	uint64_t rng = (uintptr_t)arg;
	void *keep[32] = { 0 };

	while (!atomic_load(&stop)) {
		unsigned i = (unsigned)(prog_rand(&rng) % 32);
		size_t n = prog_rand(&rng) % 8 ? 1 + prog_rand(&rng) % 2000 : prog_rand(&rng) % 200000;
		free(keep[i]);
		keep[i] = malloc(n);
		CHECK(keep[i] || n == 0, "malloc(%zu) failed", n);
		if (keep[i])
			memset(keep[i], 0x22, n);
	}
	for (int i = 0; i < 32; i++)
		free(keep[i]);
	return NULL;
}

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	void *p = malloc(100000 + size);

	CHECK(p, "malloc in a dl_iterate_phdr callback failed");
	memset(p, 1, 100);
	free(p);
	++*(unsigned long *)data;
	return 0;
}

static void *walker(void *arg)
{
	unsigned long n = 0;

	while (!atomic_load(&stop))
		dl_iterate_phdr(phdr_cb, &n);
	CHECK(n > 0, "dl_iterate_phdr found nothing");
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[NALLOC + 1];
	unsigned long iterations = argc > 2 ? strtoul(argv[2], NULL, 10) : 150;

	CHECK(argc > 1, "usage: dlopen PATH-TO-libdlo.so [ITERATIONS]");
	for (uintptr_t i = 0; i < NALLOC; i++)
		CHECK(pthread_create(&th[i], NULL, allocator, (void *)(i + 1)) == 0, "pthread_create");
	CHECK(pthread_create(&th[NALLOC], NULL, walker, NULL) == 0, "pthread_create");

	for (unsigned long k = 0; k < iterations; k++) {
		void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
		CHECK(h, "dlopen: %s", dlerror());
		void *(*work)(size_t) = (void *(*)(size_t))dlsym(h, "dlo_work");
		CHECK(work, "dlsym(dlo_work): %s", dlerror());
		char *p = work(5000 + k);
		CHECK(p && p[0] == 0x11 && p[4999 + k] == 0x11, "dlo_work returned bad memory");
		free(p);
		CHECK(dlclose(h) == 0, "dlclose: %s", dlerror());
	}
	atomic_store(&stop, 1);
	for (int i = 0; i <= NALLOC; i++)
		CHECK(pthread_join(th[i], NULL) == 0, "pthread_join");
	printf("iterations %lu\n", iterations);
	return 0;
}
