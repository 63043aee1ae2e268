/* ctl.c: a service for test-ctl: it allocates and frees 256 KiB blocks, about 250 MB a second,
 * until the file "stop" appears in its working directory. With the argument "wait" it first
 * sleeps, allocating nothing, until the file "go" appears. It writes "ready" once it has begun to
 * allocate.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void touch(const char *name)
{
	FILE *f = fopen(name, "w");

	if (f)
		fclose(f);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "wait"))
		while (access("go", F_OK) != 0)
			usleep(10000);
	for (unsigned long i = 0;; i++) {
		for (int k = 0; k < 64; k++) {
			char *p = malloc(256 << 10);
			if (!p)
				return 1;
			p[0] = (char)k;
			free(p);
		}
		if (i == 0)
			touch("ready");
		if (access("stop", F_OK) == 0)
			return 0;
		usleep(50000);
	}
}
