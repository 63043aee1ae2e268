/* writer-window.c: the window into the profile, and the file's growth.
 *
 * Records are stored into a MAP_SHARED window of the file (CHUNK bytes, writer.c). A store into a
 * shared file mapping is in the page cache at once, so it survives SIGKILL and SIGSEGV of the
 * process. The file grows by fallocate in 64 KiB, then 1 MiB steps (never by a sparse ftruncate:
 * a store into a hole on a full disk would raise SIGBUS in the program), and each range it
 * allocates is put into the page cache as zeros first (page_in). A file system without fallocate
 * gets one pwrite per record instead (writer.use_pwrite).
 *
 * The file grows only when a record does not fit before its end, after every record before it is
 * stored, and by LK_GROW_MAX at most: `leek run` reads the profile as it grows on that promise
 * (docs/format.md, "Reading a profile being written"), so no record may ever be stored below the
 * file's end after a grow.
 *
 * The file is opened by its path for each grow and window move and closed again, so the program
 * never sees a descriptor of leek's (CPython's test_subprocess lists a child's descriptors;
 * daemons close or dup2 over every descriptor): about six system calls a MiB of profile, and the
 * 16 writes of zeros that put its pages into the page cache.
 *
 * Whatever is done to the file, the program goes on as it would without leek:
 * - The file never grows past RLIMIT_FSIZE (`ulimit -f`), which would raise SIGXFSZ in the
 *   program: the limit is read again at each grow, and the last FINAL_ROOM bytes below it are kept
 *   for the records of a clean exit (writer.c stops the profile at the limit: W_FULL).
 * - A file cut short under the window (`truncate -s 0`, logrotate's copytruncate) would make the
 *   next store raise SIGBUS: signals.c's handler asks lk_writer_fault, which puts anonymous memory
 *   in the window's place, and the state W_CUT drops records until writer-open.c begins the file
 *   again. A grow that finds the file shorter than it left it does the same.
 *
 * Never: hold a descriptor between two uses (but on a file system without fallocate, where it is
 * kept above the program's), grow the file by more than LK_GROW_MAX or past RLIMIT_FSIZE, leave a
 * hole in it, map or write a file that is no longer ours (same_file), or raise a signal in the
 * program.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "options.h"
#include "preload.h"
#include "record.h"
#include "writer.h"

#define GROW_SMALL ((uint64_t)64 << 10)
/* lk_window_grow adds one step to a length that is a multiple of it: a reader relies on the
 * most. */
_Static_assert(CHUNK <= LK_GROW_MAX && GROW_SMALL <= LK_GROW_MAX && CHUNK % GROW_SMALL == 0,
	       "the file grows by LK_GROW_MAX at most");
#define PAGE 4096u
/* Kept below RLIMIT_FSIZE for the last records: RSS, LOSS and TRAILER. */
#define FINAL_ROOM ((1 + 2 * LK_VARINT_MAX + 2 * LK_COUNTERS_MAX + 255) & ~(uint64_t)255)

static bool same_file(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && st.st_dev == writer.dev && st.st_ino == writer.ino;
}

/* Also for libunwind's pipe (unwind-io.c): leek's descriptors stay clear of the program's. */
int lk_fd_raise(int fd, bool cloexec)
{
	int high = fcntl(fd, cloexec ? F_DUPFD_CLOEXEC : F_DUPFD, LK_FD_FLOOR);

	if (high < 0)
		return fd;
	close(fd);
	return high;
}

/* A descriptor of our file, found again by its path: leek holds none between uses (a program
 * that lists, closes or dup2s over its descriptors finds none of leek's), except on a file system
 * without fallocate, where every record is a pwrite and one is kept, above the program's. Give it
 * back with lk_window_fd_put. */
int lk_window_fd(void)
{
	if (writer.fd >= 0 && same_file(writer.fd))
		return writer.fd;
	int fd = open(writer.path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (!same_file(fd)) {
		close(fd);
		return -ESTALE;
	}
	if (writer.use_pwrite)
		writer.fd = fd = lk_fd_raise(fd, true);
	return fd;
}

void lk_window_fd_put(int fd)
{
	if (fd >= 0 && fd != writer.fd)
		close(fd);
}

/* writer.room after a change to the window or the file's length: one compare for a record's
 * store. */
void lk_window_set_room(void)
{
	uint64_t end = writer.win_off + CHUNK;

	writer.room = !writer.win ? 0 : writer.len < end ? writer.len : end;
}

/* No window from now on (async-signal-safe: the fork child's handler calls it). */
void lk_window_unmap(void)
{
	if (writer.win)
		munmap(writer.win, CHUNK);
	writer.win = NULL;
	lk_window_set_room();
}


/* Puts [from, to) of the file, just allocated, into the page cache as zeros, PAGE_IN bytes a
 * write. The window's first store into each page then finds it there: a store that faulted in a
 * page of a fallocated range paid for a read-ahead of zeros, the page's buffers and a journal
 * handle (ext4_page_mkwrite), 4 KiB a fault; a page written here is a 64 KiB folio on a kernel
 * whose page cache has large folios, mapped whole at its first fault, which makes the faults and
 * the file's removal several times cheaper (bench/file-growth.c measures both ways;
 * docs/performance.md). PAGE_IN bytes a write on purpose: a write of 1 MiB makes larger folios,
 * whose faults still come a page at a time, and cost more each (the same benchmark). The zeros
 * are what fallocate reads back anyway; a write that fails costs nothing but the faults it would
 * have saved. */
#define PAGE_IN ((uint64_t)64 << 10)
static uint8_t zeros[PAGE_IN]; /* .bss: never written, so its pages are the zero page */

static void page_in(int fd, uint64_t from, uint64_t to)
{
	for (uint64_t at = from; at < to; at += PAGE_IN)
		if (pwrite(fd, zeros, to - at < PAGE_IN ? to - at : PAGE_IN, (off_t)at) <= 0)
			return;
}

/* Allocates [from, to) of the file and puts it into the page cache; posix_fallocate's result. */
static int allocate(int fd, uint64_t from, uint64_t to)
{
	int r = posix_fallocate(fd, (off_t)from, (off_t)(to - from));

	if (!r)
		page_in(fd, from, to);
	return r;
}

/* The most the file may grow to: RLIMIT_FSIZE, read again at each grow since the program may lower
 * it, less FINAL_ROOM unless the records of the exit are being written. */
static uint64_t file_cap(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_FSIZE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return UINT64_MAX;
	if (writer.closing)
		return rl.rlim_cur;
	return rl.rlim_cur > FINAL_ROOM ? rl.rlim_cur - FINAL_ROOM : 0;
}

/* Allocates the file up to at least `end`: 64 KiB at a time while it is small (a process that
 * execs soon after starting, like env or taskset, leaves a small file), 1 MiB at a time after, and
 * never past file_cap() (-EFBIG). Finds a file cut short under the window (-ESTALE, W_CUT). With
 * pwrite, nothing is allocated: writer.len is how far the limit was checked. */
int lk_window_grow(uint64_t end)
{
	uint64_t step = writer.len < CHUNK ? GROW_SMALL : CHUNK;
	uint64_t want = (end + step - 1) / step * step, cap = file_cap();
	struct stat st;
	int r = 0;

	if (end > cap)
		return -EFBIG;
	if (want > cap)
		want = cap;
	int fd = lk_window_fd();
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) == 0 &&
	    (uint64_t)st.st_size < (writer.use_pwrite ? writer.off : writer.len)) {
		writer.state = W_CUT;
		r = -ESTALE;
	} else if (!writer.use_pwrite) {
		r = -allocate(fd, writer.len, want);
	}
	lk_window_fd_put(fd);
	if (r)
		return r;
	writer.len = want;
	lk_window_set_room();
	if (lk_rotate_size_due()) /* the rotation at the next sample (writer-rotate.c) */
		__atomic_store_n(&writer.next_rss_ns, 0, __ATOMIC_RELAXED);
	return 0;
}

/* Maps the window that holds off. Its pages past the end of the file are never touched: writer.c
 * grows the file before it stores there. */
int lk_window_map(uint64_t off)
{
	uint64_t woff = off & ~(uint64_t)(PAGE - 1);
	int fd = lk_window_fd();

	if (fd < 0)
		return fd;
	lk_window_unmap();
	writer.win = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)woff);
	lk_window_fd_put(fd);
	if (writer.win == MAP_FAILED) {
		writer.win = NULL;
		lk_window_set_room();
		return -errno;
	}
	writer.win_off = woff;
	lk_window_set_room();
	return 0;
}

/* SIGBUS at addr (signals.c, in the handler): true if it is the window's, which then gets
 * anonymous memory in place of the file's pages, so that the store that faulted completes, and the
 * file begins again at the next sample (W_CUT). Async-signal-safe. */
bool lk_writer_fault(const void *addr)
{
	uint8_t *win = __atomic_load_n(&writer.win, __ATOMIC_RELAXED);

	if (lk_seg_fault(addr)) {
		writer.state = W_CUT;
		writer.room = 0;
		return true;
	}
	if (!win || (uintptr_t)addr - (uintptr_t)win >= CHUNK)
		return false;
	if (mmap(win, CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
		 0) == MAP_FAILED)
		return false;
	writer.state = W_CUT;
	writer.room = 0;
	return true;
}
