/* badfree.c: frees that the program gets wrong, which leek must count and, with
 * LEEK_ABORT_ON_ERROR=0, otherwise ignore.
 *
 * In exact mode (LEEK_PERIOD=1) every block is in leek's arena, so a second free of a block
 * reaches leek, which finds its header no longer live. Each such call is one bad_free, counted
 * once, and nothing else: no second FREE record (tally lines, tally.h), no block handed back
 * twice, and the program goes on. The calls: a double free of a slab's slot and of a run of its
 * own, on the only thread (under lk_lock) and on a second thread (which frees with no lock
 * through its own record: sampler.c's free_own), and a realloc of a freed block (NULL, ENOMEM).
 * Prints "bad N", the count the profile must hold.
 *
 * Never run without leek: glibc aborts at a double free it sees.
 */
#include <errno.h>
#include <pthread.h>

#include "prog.h"
#include "tally.h"

/* The block at p, allocated and freed: p is the program's dangling pointer. */
static void *freed(size_t size)
{
	char *p = malloc(size);

	CHECK(p, "malloc(%zu)", size);
	memset(p, 1, size);
	free(p);
	return p;
}

/* A double free of a block of each size; a block of each size after it, which must be a block of
 * its own (the arena did not list the slot or run twice). */
static unsigned double_frees(const size_t *sizes, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		void *p = freed(sizes[i]);
		free(p);
		char *a = malloc(sizes[i]), *b = malloc(sizes[i]);
		CHECK(a && b && a != b, "two blocks of %zu bytes at %p and %p", sizes[i], a, b);
		memset(a, 2, sizes[i]);
		memset(b, 3, sizes[i]);
		CHECK(a[0] == 2 && b[0] == 3, "blocks of %zu bytes overlap", sizes[i]);
		free(a);
		free(b);
		tally(sizes[i], 3, 0, 3);
	}
	return (unsigned)n;
}

static void *worker(void *arg)
{
	static const size_t sizes[] = { 1019, 5009 }; /* a slab's slot, a run */

	*(unsigned *)arg = double_frees(sizes, 2);
	return NULL;
}

int main(void)
{
	static const size_t sizes[] = { 1013, 5003 };
	unsigned bad = double_frees(sizes, 2), more = 0;
	pthread_t th;

	void *p = freed(3011);
	errno = 0;
	CHECK(realloc(p, 4000) == NULL && errno == ENOMEM, "realloc of a freed block, errno %d",
	      errno);
	tally(3011, 1, 0, 1);
	bad++;

	CHECK(pthread_create(&th, NULL, worker, &more) == 0, "pthread_create");
	CHECK(pthread_join(th, NULL) == 0, "pthread_join");
	printf("bad %u\n", bad + more);
	return 0;
}
