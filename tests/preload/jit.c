/* jit.c: allocations under code that has no unwind information, as a JIT compiler makes it.
 *
 * V8's builtins and compiled JavaScript, and other JIT code, keep the frame-pointer chain but
 * register no DWARF; libunwind steps such a frame by that chain, checking every address with
 * system calls, and reports the caller's %rsp 16 bytes low. leek's unwinder gives the frame the
 * frame-pointer rule once libunwind has stepped it so (src/preload/unwind-rules.c, derive), and
 * walks on into the callers, which here have no frame pointer: their rules are offsets from the
 * CFA that the JIT frame leaves, so a wrong CFA there would show as a wrong caller.
 *
 * The "JIT code" is written into an executable mapping at run time: push %rbp; mov %rsp,%rbp;
 * 32 bytes of its own (so that its CFA, %rbp + 16, is not %rsp + 16, which is where libunwind's
 * fallback puts it); store its own return address for the test; call the C function given;
 * leave; ret. Each
 * allocation is noted with the callers that leek must find: the address after that call in the
 * JIT code, the JIT code's return into call_jit, and call_jit's callers as glibc's backtrace()
 * sees them from inside call_jit (notes.h's format, checked by test-preload.c's unwind_check).
 * Built -O2 -fomit-frame-pointer, like unwind.c. At the end, the only descriptor of leek's
 * may be its profile: libunwind checked the JIT frame's addresses through none.
 */
#include <dirent.h>
#include <sys/mman.h>
#include <unistd.h>

#include "notes.h"

static const unsigned char code[] = {
	0x55,                   /* push %rbp */
	0x48, 0x89, 0xe5,       /* mov %rsp,%rbp */
	0x48, 0x83, 0xec, 0x20, /* sub $32,%rsp: slots of its own, as V8's frames have */
	0x48, 0x8b, 0x45, 0x08, /* mov 8(%rbp),%rax: the return address */
	0x48, 0x89, 0x06,       /* mov %rax,(%rsi) */
	0xff, 0xd7,             /* call *%rdi */
	0xc9,                   /* leave */
	0xc3,                   /* ret */
};
#define AFTER_CALL 17 /* offset of the instruction after call *%rdi */

typedef void jit_fn(void (*fn)(void), void **ret);

static jit_fn *jit;
static void *jit_ret;     /* where the JIT code returns to in call_jit, stored by the code */
static void *above[NOTE_FRAMES]; /* call_jit's callers */
static int nabove;
static size_t next_size = 90001;
static volatile unsigned long sink;

static __attribute__((noinline, noclone)) void leaf_cb(void)
{
	size_t size = next_size++;
	char *p = malloc(size);

	CHECK(p, "malloc(%zu)", size);
	p[0] = 1;
	sink += (unsigned long)p[0];
	free(p);
	CHECK(nnotes < MAX_NOTES && nabove + 2 <= NOTE_FRAMES, "too many notes");
	notes[nnotes].size = size;
	notes[nnotes].frames[0] = (char *)jit + AFTER_CALL;
	notes[nnotes].frames[1] = jit_ret;
	memcpy(notes[nnotes].frames + 2, above, (size_t)nabove * sizeof(void *));
	notes[nnotes].n = nabove + 2;
	nnotes++;
}

static __attribute__((noinline, noclone)) void call_jit(int depth)
{
	volatile char pad[48]; /* no alloca, no VLA: no frame pointer, an offset rule */
	void *f[NOTE_FRAMES + 1];
	int n = backtrace(f, NOTE_FRAMES + 1);

	pad[0] = (char)depth;
	CHECK(n > 1, "backtrace");
	nabove = n - 1; /* f[0] is in call_jit itself */
	memcpy(above, f + 1, (size_t)nabove * sizeof(void *));
	jit(leaf_cb, &jit_ret);
	sink += (unsigned long)pad[0];
}

static __attribute__((noinline, noclone)) void outer(int depth)
{
	if (depth > 0) {
		outer(depth - 1);
		sink++;
		return;
	}
	call_jit(depth);
}

/* libunwind checked addresses while it stepped the JIT frame the first time (its fallback does):
 * it must have done so through no descriptor of the process (src/preload/unwind-io.c). leek's
 * own descriptors sit from 200 up; the only one there may be its profile. */
static void check_descriptors(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int high = 0;

	CHECK(d, "/proc/self/fd");
	while ((e = readdir(d))) {
		char path[64], target[4096];
		int fd = atoi(e->d_name);
		if (fd < 200 || fd == dirfd(d))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		ssize_t n = readlink(path, target, sizeof(target) - 1);
		CHECK(n > 0, "readlink %s", path);
		target[n] = 0;
		CHECK(n > 3 && !strcmp(target + n - 3, ".lk"), "descriptor %d is %s, not the profile", fd,
		      target);
		high++;
	}
	closedir(d);
	CHECK(high <= 1, "%d descriptors from 200 up", high);
}

int main(void)
{
	void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CHECK(m != MAP_FAILED, "mmap");
	memcpy(m, code, sizeof(code));
	CHECK(mprotect(m, 4096, PROT_READ | PROT_EXEC) == 0, "mprotect");
	jit = (jit_fn *)m;
	for (int i = 0; i < 60; i++)
		outer(i % 5);
	check_descriptors();
	notes_write("jit");
	return 0;
}
