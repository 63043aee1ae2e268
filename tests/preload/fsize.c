/* fsize.c: allocates under a file-size limit (RLIMIT_FSIZE, `ulimit -f`), which the driver sets
 * before it starts; exceeding it raises SIGXFSZ, which kills. leek must stop its profile below the
 * limit instead, and the program must run to its end.
 *
 * Usage: fsize [LOWER]: with LOWER (bytes), the program lowers its own limit to that halfway
 * through, as a program may. Prints "done".
 */
#include "prog.h"

static void churn(unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		void *p = malloc(16 + i % 2000);
		CHECK(p, "malloc");
		free(p);
	}
}

int main(int argc, char **argv)
{
	churn(100000);
	if (argc > 1) {
		struct rlimit rl;
		CHECK(getrlimit(RLIMIT_FSIZE, &rl) == 0, "getrlimit");
		rl.rlim_cur = strtoull(argv[1], NULL, 10);
		CHECK(setrlimit(RLIMIT_FSIZE, &rl) == 0, "setrlimit");
	}
	churn(300000);
	printf("done\n");
	return 0;
}
