/* unwind-dl.c: stacks through libraries unloaded and replaced at the same addresses.
 *
 * Loads libuw-a.so and libuw-b.so in turn (argv[1], argv[2]: the same code, laid out alike,
 * with 4 KiB and 8 KiB frames, so other unwinding rules at the same return addresses), each
 * time calling into it to allocate at the bottom of a recursion, then unloads it. Right after
 * each allocation the program asks glibc's backtrace() for the callers, and writes
 * "size n frame..." lines to unwind-dl.expect beside its profile; test-preload.c checks the
 * profile's stacks against them, as for unwind.c. Prints "reused N": how many loads landed
 * where the other library had been, which is what makes a stale rule possible at all.
 */
#include <dlfcn.h>

#include "notes.h"

#define ROUNDS 24
#define PER_ROUND 6

typedef unsigned long entry_fn(int depth, size_t size, void (*note)(size_t));

int main(int argc, char **argv)
{
	uintptr_t last_base[2] = { 0, 0 };
	unsigned reused = 0;
	size_t size = 90001;
	volatile unsigned long sink = 0;

	CHECK(argc == 3, "usage: unwind-dl LIBA LIBB");
	for (int round = 0; round < ROUNDS; round++) {
		int which = round % 2;
		void *h = dlopen(argv[1 + which], RTLD_NOW | RTLD_LOCAL);
		CHECK(h, "dlopen %s: %s", argv[1 + which], dlerror());
		entry_fn *entry = (entry_fn *)dlsym(h, "uw_entry");
		CHECK(entry, "dlsym: %s", dlerror());
		Dl_info info;
		CHECK(dladdr((void *)entry, &info), "dladdr");
		reused += (uintptr_t)info.dli_fbase == last_base[!which];
		last_base[which] = (uintptr_t)info.dli_fbase;
		for (int k = 0; k < PER_ROUND; k++)
			sink += entry(2 + (round + k) % 9, size++, note);
		CHECK(dlclose(h) == 0, "dlclose: %s", dlerror());
	}

	notes_write("unwind-dl");
	printf("reused %u\n", reused);
	return 0;
}
