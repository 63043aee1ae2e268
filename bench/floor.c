/* floor.c: the cheapest LD_PRELOAD interposer there can be, as a reference for bench/micro.sh.
 *
 * It does what leek's fast path does and nothing else: malloc, calloc and realloc count down a
 * thread-local byte counter (initial-exec TLS, one predictable branch) and tail-call the next
 * allocator; free does one range check (against the boot buffer, where leek checks its arena) and
 * tail-calls the next free. When the counter runs out it is only reset: nothing is ever sampled.
 * So leek's distance from this floor is the price of sampling itself, and the floor's distance
 * from no interposer is the price of any interposer at all (a PLT call more per call).
 *
 * The next allocator comes from dlsym(RTLD_NEXT, ...). dlsym may call calloc (glibc: dlerror's
 * buffer) before we know the real calloc; that is served from a small static buffer, which free
 * recognises by address and never hands to the real allocator. The counter starts at 0, so each
 * thread's first call takes the slow path, which is also where the process is initialised.
 *
 * The other names of the family (memalign, posix_memalign, malloc_usable_size...) are not
 * interposed: the microbenchmarks never call them, and in front of glibc they reach the same heap.
 * Never: sample, lock, allocate, or use this in front of anything but the benchmark.
 *
 *   cc -O2 -shared -fPIC -fno-builtin -ftls-model=initial-exec -o libfloor.so bench/floor.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
#define COLD __attribute__((noinline, cold))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* The same mean distance as leek's default period, so the slow branch is taken as often. */
#define PERIOD (512 * 1024)

static __thread uint64_t bytes_left __attribute__((tls_model("initial-exec")));

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void boot_free(void *p);
static void (*real_free)(void *) = boot_free; /* until init: start up first, as leek does */

/* dlsym's calloc during start-up: a bump allocator over a static buffer, never freed. */
static _Alignas(16) char boot[16384];
static size_t boot_used;

static inline int boot_owns(const void *p)
{
	return (uintptr_t)p - (uintptr_t)boot < sizeof(boot);
}

static void *boot_calloc(size_t n, size_t m)
{
	size_t size = (n * m + 15) & ~(size_t)15;

	if (n && m > sizeof(boot) / n)
		return NULL;
	if (size > sizeof(boot) - boot_used)
		return NULL;
	boot_used += size;
	return boot + boot_used - size; /* static storage: already zero */
}

static COLD void init(void)
{
	static int busy;

	if (real_malloc || busy)
		return;
	busy = 1; /* dlsym's own calloc sees real_calloc NULL and takes the boot buffer */
	real_malloc = dlsym(RTLD_NEXT, "malloc");
	real_calloc = dlsym(RTLD_NEXT, "calloc");
	real_realloc = dlsym(RTLD_NEXT, "realloc");
	real_free = dlsym(RTLD_NEXT, "free");
	busy = 0;
}

static void boot_free(void *p)
{
	init();
	real_free(p);
}

__attribute__((constructor)) static void floor_ctor(void)
{
	init();
}

/* The countdown ran out (or this thread is new): start a new distance. Nothing is recorded. */
static COLD void refill(void)
{
	init();
	bytes_left = PERIOD;
}

EXPORT void *malloc(size_t size)
{
	uint64_t left = bytes_left;

	if (likely(size < left)) {
		bytes_left = left - size;
		return real_malloc(size);
	}
	refill();
	return real_malloc(size);
}

EXPORT void *calloc(size_t n, size_t m)
{
	uint64_t left = bytes_left;
	size_t size = n * m; /* an overflow only makes the branch go slow; real calloc reports it */

	if (likely(size < left)) {
		bytes_left = left - size;
		return real_calloc(n, m);
	}
	if (!real_calloc)
		return boot_calloc(n, m);
	refill();
	return real_calloc(n, m);
}

EXPORT void *realloc(void *p, size_t size)
{
	uint64_t left = bytes_left;

	if (unlikely(boot_owns(p))) { /* keep the boot block, copy it out */
		void *q = malloc(size);
		if (q)
			memcpy(q, p, size < sizeof(boot) ? size : sizeof(boot));
		return q;
	}
	if (likely(size < left)) {
		bytes_left = left - size;
		return real_realloc(p, size);
	}
	refill();
	return real_realloc(p, size);
}

EXPORT void free(void *p)
{
	if (unlikely(boot_owns(p)))
		return;
	real_free(p);
}
