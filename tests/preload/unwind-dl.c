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
#include <execinfo.h>

#include "prog.h"

#define ROUNDS 24
#define PER_ROUND 6
#define MAX_FRAMES 64

typedef unsigned long entry_fn(int depth, size_t size, void (*note)(size_t));

struct note {
	size_t size;
	int n;
	void *frames[MAX_FRAMES];
};

static struct note notes[ROUNDS * PER_ROUND];
static unsigned nnotes;

static __attribute__((noinline)) void note(size_t size)
{
	void *f[MAX_FRAMES + 2];
	int n = backtrace(f, MAX_FRAMES + 2);

	if (nnotes < ROUNDS * PER_ROUND && n > 2) {
		struct note *e = &notes[nnotes++];
		e->size = size;
		e->n = n - 2;
		memcpy(e->frames, f + 2, (size_t)e->n * sizeof(void *));
	}
}

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

	const char *out = getenv("LEEK_OUTPUT");
	const char *slash = out ? strrchr(out, '/') : NULL;
	char path[4096];
	snprintf(path, sizeof(path), "%.*sunwind-dl.expect", slash ? (int)(slash - out + 1) : 0, out);
	FILE *f = fopen(path, "w");
	CHECK(f, "%s", path);
	for (unsigned i = 0; i < nnotes; i++) {
		fprintf(f, "%zu %d", notes[i].size, notes[i].n);
		for (int k = 0; k < notes[i].n; k++)
			fprintf(f, " %lx", (unsigned long)(uintptr_t)notes[i].frames[k]);
		fputc('\n', f);
	}
	CHECK(fclose(f) == 0, "fclose");
	printf("notes %u\nreused %u\n", nnotes, reused);
	return 0;
}
