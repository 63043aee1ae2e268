/* churn.c: a plain program that allocates and frees a mix of sizes from a few call sites and
 * exits 0: what the tests of leek's environment variables and output paths run.
 *
 * Prints "done".
 */
#include "prog.h"

static void *keep[256];

int main(void)
{
	uint64_t seed = 7;

	for (int i = 0; i < 50000; i++) {
		size_t size = 16 + prog_rand(&seed) % 20000;
		void *p = malloc(size);
		CHECK(p, "malloc(%zu)", size);
		memset(p, 1, size < 64 ? size : 64);
		free(keep[i % 256]);
		keep[i % 256] = p;
	}
	printf("done\n");
	return 0;
}
