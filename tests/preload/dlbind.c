/* dlbind.c: a library loaded with RTLD_DEEPBIND, and blocks that outlive their library.
 *
 * Usage: dlbind PATH-TO-libdlo.so. Loads libdlo.so twice in turn: with RTLD_DEEPBIND, where the
 * library's own references to malloc bind to libc ahead of libleek (its blocks come from glibc,
 * and leek's free must pass them on), and plainly, where they are leek's. Each time the library
 * allocates blocks through dlo_work (its constructor and destructor allocate and free too); main
 * checks and frees half of them while the library is loaded and the rest after dlclose, when the
 * code that allocated them is gone.
 */
#include <dlfcn.h>

#include "prog.h"

#define NBLOCKS 64

int main(int argc, char **argv)
{
	CHECK(argc > 1, "usage: dlbind PATH-TO-libdlo.so");
	static const int modes[] = { RTLD_NOW | RTLD_DEEPBIND, RTLD_NOW,
				     RTLD_LAZY | RTLD_DEEPBIND };

	for (int round = 0; round < 20; round++) {
		int mode = modes[round % 3];
		void *h = dlopen(argv[1], mode);
		CHECK(h, "dlopen %s: %s", argv[1], dlerror());
		void *(*work)(size_t) = (void *(*)(size_t))dlsym(h, "dlo_work");
		CHECK(work, "dlsym dlo_work: %s", dlerror());
		char *blocks[NBLOCKS];
		size_t sizes[NBLOCKS];
		for (int i = 0; i < NBLOCKS; i++) {
			sizes[i] = i % 8 ? 4111 + (size_t)i : 300000 + (size_t)i;
			blocks[i] = work(sizes[i]);
			CHECK(blocks[i], "dlo_work(%zu) failed", sizes[i]);
		}
		for (int i = 0; i < NBLOCKS; i += 2) {
			CHECK(blocks[i][sizes[i] - 1] == 0x11, "block %d not filled", i);
			free(blocks[i]);
		}
		CHECK(dlclose(h) == 0, "dlclose: %s", dlerror());
		for (int i = 1; i < NBLOCKS; i += 2) {
			CHECK(blocks[i][0] == 0x11 && blocks[i][sizes[i] - 1] == 0x11,
			      "block %d changed after dlclose", i);
			blocks[i] = realloc(blocks[i], sizes[i] * 2);
			CHECK(blocks[i] && blocks[i][sizes[i] - 1] == 0x11,
			      "realloc after dlclose");
			free(blocks[i]);
		}
	}
	printf("dlbind ok\n");
	return 0;
}
