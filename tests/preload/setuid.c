/* setuid.c: a program that the driver makes setuid root, with libleek.so as a DT_NEEDED library
 * (as /etc/ld.so.preload would load it), and runs as another user. It allocates as any program
 * does and says whether it runs in secure-execution mode.
 *
 * Prints "euid E ruid R secure S leek L" (L: whether libleek.so is mapped), then its first
 * argument, then "done".
 */
#include <sys/auxv.h>
#include <unistd.h>

#include "prog.h"

static int leek_mapped(void)
{
	char line[1024];
	FILE *f = fopen("/proc/self/maps", "r");
	int found = 0;

	CHECK(f, "/proc/self/maps");
	while (fgets(line, sizeof(line), f))
		found |= strstr(line, "/libleek.so") != NULL;
	fclose(f);
	return found;
}

int main(int argc, char **argv)
{
	printf("euid %d ruid %d secure %lu leek %d\n", (int)geteuid(), (int)getuid(),
	       getauxval(AT_SECURE), leek_mapped());
	for (int i = 0; i < 20000; i++)
		free(malloc(100 + (size_t)i % 5000));
	printf("%s\ndone\n", argc > 1 ? argv[1] : "");
	return 0;
}
