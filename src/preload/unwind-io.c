/* unwind-io.c: libunwind checks addresses without descriptors of the program's.
 *
 * libunwind (x86_64/Ginit.c) checks an address it is unsure of, when it steps a frame without
 * unwind information, by reading a byte back from a pipe of its own and writing one byte from the
 * address into it: write() fails with EFAULT where the address cannot be read. That pipe is two
 * descriptors held for the life of the process: a program sees them among its own (CPython's
 * test_subprocess lists a child's descriptors), and a daemon that closed every descriptor and
 * opened its own in their place would have libunwind read a byte of its input and write bytes of
 * memory into its files (tests/preload/daemon.c). So libunwind's own calls of pipe2, read, write
 * (or syscall, which it writes with) and close are pointed here, in its table of imported
 * functions: its pipe is two numbers no
 * descriptor can have, the read finds it empty, and the write asks the kernel whether the byte
 * can be read (process_vm_readv from this process, no descriptor). Every other caller in the
 * process reaches libc as before. If libunwind's table is not as expected, nothing is changed and
 * libleek's own pipe2 (exported, below) still moves libunwind's pipe above the program's
 * descriptors.
 *
 * Never: touch another object's table; change a slot that does not name one of these functions;
 * call into libunwind from here.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "preload.h"

#define FAKE_READ (INT_MAX - 2) /* above any RLIMIT_NOFILE the kernel allows (2^30) */
#define FAKE_WRITE (INT_MAX - 1)

static int fake_pipe2(int fds[2], int flags)
{
	(void)flags;
	fds[0] = FAKE_READ;
	fds[1] = FAKE_WRITE;
	return 0;
}

static ssize_t fake_read(int fd, void *buf, size_t n)
{
	if (fd != FAKE_READ)
		return read(fd, buf, n);
	errno = EAGAIN; /* an empty pipe: libunwind goes on to the write */
	return -1;
}

static ssize_t fake_write(int fd, const void *buf, size_t n)
{
	if (fd != FAKE_WRITE)
		return write(fd, buf, n);
	char byte;
	struct iovec local = { &byte, 1 }, remote = { (void *)(uintptr_t)buf, 1 };
	if (n == 0)
		return 0;
	if (syscall(SYS_process_vm_readv, getpid(), &local, 1, &remote, 1, 0) == 1)
		return 1;
	errno = EFAULT; /* unreadable, or the kernel would not say: libunwind stops there */
	return -1;
}

/* libunwind 1.6 writes with syscall(SYS_write, ...); every other system call goes through. */
static long fake_syscall(long no, long a1, long a2, long a3, long a4, long a5, long a6)
{
	if (no == SYS_write && a1 == FAKE_WRITE)
		return fake_write((int)a1, (const void *)a2, (size_t)a3);
	if (no == SYS_read && a1 == FAKE_READ)
		return fake_read((int)a1, (void *)a2, (size_t)a3);
	return syscall(no, a1, a2, a3, a4, a5, a6);
}

static int fake_close(int fd)
{
	return fd == FAKE_READ || fd == FAKE_WRITE ? 0 : close(fd);
}

static const struct {
	const char *name;
	void *fn;
} redirects[] = {
	{ "pipe2", (void *)fake_pipe2 },
	{ "read", (void *)fake_read },
	{ "write", (void *)fake_write },
	{ "syscall", (void *)fake_syscall },
	{ "close", (void *)fake_close },
};
#define NREDIRECTS (sizeof(redirects) / sizeof(redirects[0]))

/* A dynamic entry's address: glibc relocates them in place, other loaders may not. */
static uintptr_t dyn_addr(uintptr_t base, ElfW(Addr) v)
{
	return v >= base ? v : base + v;
}

/* Where libunwind did not get fake_pipe2 (its table was not as expected), its pipe is a real one,
 * opened at its first use: descriptors 3 and 4 in a fresh process, where a program would find its
 * first file on 5 instead of 3, and a daemon that closed every descriptor and opened its own files
 * on 3 and 4 would have libunwind read and write them (or, after a failed read, close them and
 * reopen the pipe there). So a pipe that libunwind asks for (its call returns into its code) is
 * moved above the descriptors programs use, as the profile's is. Anyone else's call is the system
 * call, untouched. */
static uintptr_t unwind_lo, unwind_hi; /* libunwind's code; set before its first pipe2 */

LK_EXPORT int pipe2(int fds[2], int flags)
{
	uintptr_t from = (uintptr_t)__builtin_return_address(0);
	int r = (int)syscall(SYS_pipe2, fds, flags);

	if (r == 0 && from - unwind_lo < unwind_hi - unwind_lo) {
		int saved = errno;
		for (int i = 0; i < 2; i++)
			fds[i] = lk_fd_raise(fds[i], flags & O_CLOEXEC);
		errno = saved;
	}
	return r;
}

int lk_unwind_io_init(const void *in_libunwind)
{
	struct dl_phdr_info info;
	const ElfW(Dyn) *dyn = NULL;

	lk_object_text(in_libunwind, &unwind_lo, &unwind_hi); /* for pipe2, whatever comes below */
	if (!lk_object_of(in_libunwind, &info))
		return -ENOENT;
	uintptr_t base = info.dlpi_addr;
	for (int i = 0; i < info.dlpi_phnum; i++)
		if (info.dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(base + info.dlpi_phdr[i].p_vaddr);
	if (!dyn)
		return -ENOENT;

	const ElfW(Rela) *jmprel = NULL;
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	size_t jmpsz = 0;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		if (dyn->d_tag == DT_JMPREL)
			jmprel = (const ElfW(Rela) *)dyn_addr(base, dyn->d_un.d_ptr);
		else if (dyn->d_tag == DT_PLTRELSZ)
			jmpsz = dyn->d_un.d_val;
		else if (dyn->d_tag == DT_SYMTAB)
			symtab = (const ElfW(Sym) *)dyn_addr(base, dyn->d_un.d_ptr);
		else if (dyn->d_tag == DT_STRTAB)
			strtab = (const char *)dyn_addr(base, dyn->d_un.d_ptr);
	}
	if (!jmprel || !symtab || !strtab)
		return -ENOENT;

	void **slots[NREDIRECTS] = { 0 };
	for (size_t k = 0; k < jmpsz / sizeof(*jmprel); k++) {
		const ElfW(Rela) *r = &jmprel[k];
		if (ELF64_R_TYPE(r->r_info) != R_X86_64_JUMP_SLOT)
			continue;
		const char *name = strtab + symtab[ELF64_R_SYM(r->r_info)].st_name;
		for (size_t i = 0; i < NREDIRECTS; i++)
			if (!strcmp(name, redirects[i].name))
				slots[i] = (void **)(base + r->r_offset);
	}
	if (!slots[0] || !slots[1] || (!slots[2] && !slots[3])) /* pipe2, read, a way to write */
		return -ENOENT;

	/* With lazy binding the slots are writable; where the loader made them read-only after
	 * relocation (RELRO with -z now) they are made writable for the store, then read-only again. */
	uintptr_t relro_lo = 0, relro_hi = 0, page = (uintptr_t)getpagesize();
	for (int i = 0; i < info.dlpi_phnum; i++)
		if (info.dlpi_phdr[i].p_type == PT_GNU_RELRO) {
			relro_lo = base + info.dlpi_phdr[i].p_vaddr;
			relro_hi = relro_lo + info.dlpi_phdr[i].p_memsz;
		}
	for (size_t i = 0; i < NREDIRECTS; i++) {
		uintptr_t at = (uintptr_t)slots[i], p = at & ~(page - 1);
		if (!slots[i])
			continue;
		bool ro = at - relro_lo < relro_hi - relro_lo;
		if (ro && mprotect((void *)p, page, PROT_READ | PROT_WRITE) < 0)
			return -errno;
		__atomic_store_n(slots[i], redirects[i].fn, __ATOMIC_RELEASE);
		if (ro)
			mprotect((void *)p, page, PROT_READ);
	}
	return 0;
}
