/* inherit.c: exec a shell that prints $LD_PRELOAD, to see what exec'd children inherit.
 *
 * With LEEK_INHERIT=0 libleek must be gone from the child's LD_PRELOAD (and nothing else may be);
 * by default it must still be there.
 */
#include <unistd.h>

#include "prog.h"

int main(void)
{
	char *p = malloc(1000); /* some allocation of our own before the exec */

	CHECK(p, "malloc failed");
	memset(p, 1, 1000);
	fflush(stdout);
	execl("/bin/sh", "sh", "-c", "echo \"[$LD_PRELOAD]\"", (char *)NULL);
	CHECK(0, "execl /bin/sh failed");
	return 1;
}
