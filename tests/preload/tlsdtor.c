/* tlsdtor.c: thread-specific data destructors that allocate and free, at thread exit.
 *
 * 8 threads are created and joined, round after round. Each sets a pthread_key to a block it
 * allocated; the key's destructor runs after the thread's start routine has returned, while
 * glibc tears the thread down, and there it checks the block, allocates and frees more, frees
 * the block, and once sets the key again, so that glibc runs the destructors a second time.
 * Checks: every destructor ran, every block held its contents.
 *
 * Usage: tlsdtor [ROUNDS]. Prints tally lines (tally.h) for 5009 and 7001 in exact mode.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "prog.h"
#include "tally.h"

#define NTHREADS 8

static pthread_key_t key;
static atomic_ulong dtor_calls, second_calls;

struct tsd {
	size_t n;
	uint64_t tag;
	int again; /* this is the second value: do not set the key a third time */
	char data[];
};

static struct tsd *tsd_new(uint64_t tag, int again)
{
	size_t n = 5009 - sizeof(struct tsd);
	struct tsd *t = malloc(sizeof(*t) + n);

	CHECK(t, "malloc failed");
	t->n = n;
	t->tag = tag;
	t->again = again;
	pattern_fill(t->data, n, tag);
	return t;
}

static void dtor(void *v)
{
	struct tsd *t = v;

	CHECK(pattern_check(t->data, t->n, t->tag) == t->n, "a thread's block was overwritten");
	for (int i = 0; i < 4; i++) {
		void *p = i % 2 ? calloc(1, 7001) : malloc(7001);
		CHECK(p, "allocation in a TSD destructor failed");
		memset(p, i, 7001);
		/* large enough for the default period to sample */
		p = realloc(p, 300000 + (size_t)i);
		CHECK(p, "realloc in a TSD destructor failed");
		free(p);
	}
	if (!t->again) {
		CHECK(pthread_setspecific(key, tsd_new(t->tag + 1, 1)) == 0, "pthread_setspecific");
	} else {
		atomic_fetch_add(&second_calls, 1);
	}
	free(t);
	atomic_fetch_add(&dtor_calls, 1);
}

static void *worker(void *arg)
{
	uint64_t tag = (uintptr_t)arg;
	uint64_t rng = tag;

	CHECK(pthread_setspecific(key, tsd_new(tag, 0)) == 0, "pthread_setspecific");
	for (int i = 0; i < 16; i++) {
		size_t n = 1 + prog_rand(&rng) % 4000;
		void *p = malloc(n);
		CHECK(p, "malloc failed");
		memset(p, 0x5a, n);
		free(p);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long rounds = argc > 1 ? strtoul(argv[1], NULL, 10) : 50;
	pthread_t th[NTHREADS];

	CHECK(pthread_key_create(&key, dtor) == 0, "pthread_key_create");
	for (unsigned long r = 0; r < rounds; r++) {
		for (int i = 0; i < NTHREADS; i++)
			CHECK(pthread_create(&th[i], NULL, worker,
					     (void *)(uintptr_t)(r * 1000 + i * 10)) == 0,
			      "pthread_create");
		for (int i = 0; i < NTHREADS; i++)
			CHECK(pthread_join(th[i], NULL) == 0, "pthread_join");
	}
	unsigned long threads = rounds * NTHREADS;
	CHECK(dtor_calls == 2 * threads, "%lu destructor calls, expected %lu",
	      (unsigned long)dtor_calls, 2 * threads);
	CHECK(second_calls == threads, "%lu second calls, expected %lu",
	      (unsigned long)second_calls, threads);
	if (exact_mode()) {
		tally(5009, 2 * threads, 0, 2 * threads);
		tally(7001, 8 * threads, 0, 8 * threads); /* 4 per destructor call */
	}
	printf("tlsdtor ok %lu threads\n", threads);
	return 0;
}
