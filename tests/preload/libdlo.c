/* libdlo.c: the small library that dlopen.c loads and unloads in a loop.
 *
 * Its constructor and destructor allocate and free while the dynamic linker holds its lock, which
 * is where a profiler that calls into the loader from malloc can deadlock.
 */
#include <stdlib.h>
#include <string.h>

#define NKEPT 16

void *dlo_work(size_t n);

static void *kept[NKEPT];

__attribute__((constructor)) static void dlo_init(void)
{
	for (int i = 0; i < NKEPT; i++) {
		/* One large block, so that the default period samples here too. */
		size_t n = i == 0 ? 300000 : 8191 + 16 * (size_t)i;
		kept[i] = malloc(n);
		if (kept[i])
			memset(kept[i], i, n);
	}
}

__attribute__((destructor)) static void dlo_fini(void)
{
	for (int i = 0; i < NKEPT; i++)
		free(kept[i]);
}

void *dlo_work(size_t n)
{
	void *p = malloc(n);

	if (p)
		memset(p, 0x11, n);
	return p;
}
