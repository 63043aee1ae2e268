/* aslimit.c: allocates MIB MiB in blocks of BLOCK bytes, touching every page, and keeps them all;
 * the driver starts it under an address-space limit (RLIMIT_AS, `ulimit -v`) that holds them.
 * leek's arena must not take the room the program needs.
 *
 * Usage: aslimit MIB BLOCK. Prints "allocated MIB MiB", or "failed after N MiB" and exits 1.
 */
#include "prog.h"

int main(int argc, char **argv)
{
	CHECK(argc == 3, "usage: aslimit MIB BLOCK");
	size_t total = strtoull(argv[1], NULL, 10) << 20, block = strtoull(argv[2], NULL, 10);
	size_t got = 0;

	while (got < total) {
		char *p = malloc(block);
		if (!p) {
			printf("failed after %zu MiB\n", got >> 20);
			return 1;
		}
		for (size_t i = 0; i < block; i += 4096)
			p[i] = 1;
		got += block;
	}
	printf("allocated %zu MiB\n", got >> 20);
	return 0;
}
