/* writer.c: the profile writer (docs/format.md): crash-safe, fork-aware, no syscall per record.
 *
 * Records are stored into a MAP_SHARED window of the file. A store into a shared file mapping is in
 * the page cache at once, so it survives SIGKILL and SIGSEGV of the process: a record is in the
 * file as soon as its tag byte is stored, and the tag is stored last. The file grows by fallocate
 * in 64 KiB, then 1 MiB steps (never by a sparse ftruncate: a store into a hole on a full disk would raise
 * SIGBUS in the program); at a clean exit it is cut to its length and ends with a trailer. A file
 * system without fallocate gets one pwrite per record instead.
 *
 * After fork the child drops the parent's window and opens its own file at its next event,
 * starting with every module, and an INHERIT record for every sampled block it inherited.
 *
 * ALLOC and FREE are coded against the file's state (format.h): the thread of the previous one
 * (a THREAD record goes first when the thread changes), the blocks numbered so far (each ALLOC and
 * INHERIT numbers one, in struct lk_block's id) and the previous FREE's block. That state moves on
 * only once a record is stored, so a dropped record never leaves the next one coded against it,
 * and a block whose ALLOC was dropped has no number and gets no FREE.
 *
 * The file grows only when a record does not fit before its end, after every record before it is
 * stored, and by LK_GROW_MAX at most: `leek run` reads the profile as it grows on that promise
 * (docs/format.md, "Reading a profile being written"), so no record may ever be stored below the
 * file's end after a grow.
 *
 * The file is opened by its path for each grow and window move and closed again, so the program
 * never sees a descriptor of leek's (CPython's test_subprocess lists a child's descriptors;
 * daemons close or dup2 over every descriptor): about six system calls a MiB of profile, and the
 * 16 writes of zeros that put its pages into the page cache (page_in).
 *
 * The file is the program's user's alone (0600): it holds the command line, which may carry
 * secrets, and every module's load address, which would defeat ASLR for a daemon whose
 * /proc/PID/maps other users cannot read.
 *
 * Whatever is done to the file, the program goes on as it would without leek:
 * - The file never grows past RLIMIT_FSIZE (`ulimit -f`), which would raise SIGXFSZ in the
 *   program: the limit is read again at each grow, and the last FINAL_ROOM bytes below it are kept
 *   for the records of a clean exit. A record that does not fit stops the profile (W_FULL: every
 *   record from then on is counted in file_limit), and the exit still writes its trailer.
 * - A file cut short under the window (`truncate -s 0`, logrotate's copytruncate) would make the
 *   next store raise SIGBUS: signals.c's handler asks lk_writer_fault, which puts anonymous memory
 *   in the window's place, and the state W_CUT drops records until the next sample or exit
 *   begins the file again from its start, as a forked child begins its own (every module, and an
 *   INHERIT for every live block), with the header flag LK_HDR_CONTINUED and file_cut counting the
 *   cuts. A grow that finds the file shorter than it left it does the same.
 *
 * Never: allocate, print more than one line, raise a signal in the program, hold a descriptor
 * between two uses (but on a file system without fallocate), or write to a file that is no longer
 * ours. All functions run under lk_lock except lk_writer_atfork_child and lk_writer_fault.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "options.h"
#include "preload.h"
#include "record.h"

#define CHUNK ((uint64_t)1 << 20)
#define GROW_SMALL ((uint64_t)64 << 10)
/* grow() adds one step to a length that is a multiple of it: a reader relies on the most. */
_Static_assert(CHUNK <= LK_GROW_MAX && GROW_SMALL <= LK_GROW_MAX && CHUNK % GROW_SMALL == 0,
	       "the file grows by LK_GROW_MAX at most");
#define PAGE 4096u
/* Kept below RLIMIT_FSIZE for the last records: RSS, LOSS and TRAILER. */
#define FINAL_ROOM ((1 + 2 * LK_VARINT_MAX + 2 * LK_COUNTERS_MAX + 255) & ~(uint64_t)255)

/* W_FULL: the file reached RLIMIT_FSIZE; only lk_writer_close writes, into FINAL_ROOM. W_CUT: the
 * file was cut short under the window; lk_writer_ready begins it again. */
enum { W_UNOPENED, W_OPEN, W_FULL, W_CUT, W_DEAD, W_CLOSED };

uint64_t lk_counters[LK_CNT_MAX + 1];

static struct {
	int state, fd;
	bool forked, use_pwrite, closing;
	uint32_t pid;
	uint64_t off, len;              /* bytes written; bytes allocated to the file */
	uint8_t *win;                   /* mapped window [win_off, win_off + CHUNK) */
	uint64_t win_off;
	uint64_t room;                  /* where the window's stores must stop: the end of the window
					 * or of the file, the nearer; 0 without a window (set_room) */
	uint64_t last_ns, next_rss_ns, losses_written; /* next_rss_ns 0: at the next sample */
	uint64_t blocks;                /* ALLOC and INHERIT records stored: the last block's id */
	uint64_t prev_free;             /* the block of the file's last FREE; 0 at first */
	uint32_t tid;                   /* of the file's last ALLOC or FREE; 0 (no thread has it): none */
	dev_t dev;
	ino_t ino;
	char path[LK_MAX_PATH];
} W = { .fd = -1 };

static char scratch[LK_HEADER_FIXED_SIZE + 2 * LK_MAX_PATH + 16384]; /* header; under lk_lock */

static bool same_file(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && st.st_dev == W.dev && st.st_ino == W.ino;
}

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
 * back with file_put. */
static int file_get(void)
{
	if (W.fd >= 0 && same_file(W.fd))
		return W.fd;
	int fd = open(W.path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (!same_file(fd)) {
		close(fd);
		return -ESTALE;
	}
	if (W.use_pwrite)
		W.fd = fd = lk_fd_raise(fd, true);
	return fd;
}

static void file_put(int fd)
{
	if (fd >= 0 && fd != W.fd)
		close(fd);
}

/* W.room after a change to the window or the file's length: one compare for a record's store. */
static void set_room(void)
{
	uint64_t end = W.win_off + CHUNK;

	W.room = !W.win ? 0 : W.len < end ? W.len : end;
}

/* No window from now on (async-signal-safe: the fork child's handler calls it). */
static void unmap_window(void)
{
	if (W.win)
		munmap(W.win, CHUNK);
	W.win = NULL;
	set_room();
}

static void die(void)
{
	unmap_window();
	W.state = W_DEAD;
}

/* Puts [from, to) of the file, just allocated, into the page cache as zeros, PAGE_IN bytes a
 * write. The window's first store into each page then finds it there: a store that faulted in a
 * page of a fallocated range paid for a read-ahead of zeros, the page's buffers and a journal
 * handle (ext4_page_mkwrite), 4 KiB a fault; a page written here is a 64 KiB folio on a kernel
 * whose page cache has large folios, mapped whole at its first fault. On Linux 6.18 and ext4,
 * 48 MiB cost 50 to 60 ms of faults that way and cost 10 to 18 ms this way, and the file's
 * removal 11 to 14 ms where it now costs 4 (bench/file-growth.c). PAGE_IN bytes a write on
 * purpose: a write of 1 MiB makes larger folios, whose faults still came a page at a time, and
 * cost more each (70 to 97 ms). The zeros are what fallocate reads back anyway; a write that fails
 * costs nothing but the faults it would have saved. */
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
	if (W.closing)
		return rl.rlim_cur;
	return rl.rlim_cur > FINAL_ROOM ? rl.rlim_cur - FINAL_ROOM : 0;
}

/* Allocates the file up to at least `end`: 64 KiB at a time while it is small (a process that
 * execs soon after starting, like env or taskset, leaves a small file), 1 MiB at a time after, and
 * never past file_cap() (-EFBIG). Finds a file cut short under the window (-ESTALE, W_CUT). With
 * pwrite, nothing is allocated: W.len is how far the limit was checked. */
static int grow(uint64_t end)
{
	uint64_t step = W.len < CHUNK ? GROW_SMALL : CHUNK;
	uint64_t want = (end + step - 1) / step * step, cap = file_cap();
	struct stat st;
	int r = 0;

	if (end > cap)
		return -EFBIG;
	if (want > cap)
		want = cap;
	int fd = file_get();
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) == 0 && (uint64_t)st.st_size < (W.use_pwrite ? W.off : W.len)) {
		W.state = W_CUT;
		r = -ESTALE;
	} else if (!W.use_pwrite) {
		r = -allocate(fd, W.len, want);
	}
	file_put(fd);
	if (r)
		return r;
	W.len = want;
	set_room();
	return 0;
}

/* Maps the window that holds off. Its pages past the end of the file are never touched: put()
 * grows the file before it stores there. */
static int remap(uint64_t off)
{
	uint64_t woff = off & ~(uint64_t)(PAGE - 1);
	int fd = file_get();

	if (fd < 0)
		return fd;
	unmap_window();
	W.win = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)woff);
	file_put(fd);
	if (W.win == MAP_FAILED) {
		W.win = NULL;
		set_room();
		return -errno;
	}
	W.win_off = woff;
	set_room();
	return 0;
}

/* A record not written: counted by why. */
static void drop(void)
{
	lk_counters[W.state == W_FULL ? LK_CNT_FILE_LIMIT : LK_CNT_RECORDS_DROPPED]++;
}

/* The file stops at its size limit: what it holds stays readable, and the exit's records still
 * go in (lk_writer_close). */
static void stop_full(void)
{
	struct lk_line l = LK_LINE_INIT;

	W.state = W_FULL;
	unmap_window();
	lk_line_str(&l, "the profile reached the file-size limit (ulimit -f) at ");
	lk_line_u64(&l, W.off);
	lk_line_str(&l, " bytes; profiling stops, the program goes on");
	lk_line_print(&l);
}

static bool ready(bool begin_again);

/* put() when the record does not simply go into the open window: the file is not open yet (a
 * forked child opens at its first record), it needs growing or the window moving, or every record
 * is a pwrite. */
static LK_COLD bool put_slow(const uint8_t *rec, size_t len)
{
	int saved = errno, r = 0;

	/* Not begun again here after a cut: the record may be one of several that belong together
	 * (a STACK and the ALLOC that names it), and the next sample begins the file at a record
	 * boundary. */
	if (W.state != W_OPEN && !ready(false)) {
		drop();
		errno = saved;
		return false;
	}
	if (W.off + len > W.len)
		r = grow(W.off + len);
	if (r == 0 && W.use_pwrite) {
		if (pwrite(W.fd, rec, len, (off_t)W.off) != (ssize_t)len &&
		    (file_get() < 0 || pwrite(W.fd, rec, len, (off_t)W.off) != (ssize_t)len))
			r = -EIO;
	} else if (r == 0 && (!W.win || W.off + len > W.win_off + CHUNK)) {
		r = remap(W.off);
	}
	if (r < 0) {
		if (r == -EFBIG)
			stop_full();
		else if (W.state != W_CUT && !W.use_pwrite) {
			die();
			lk_log("cannot grow the profile (disk full?); profiling stops, the program "
			       "goes on");
		}
		drop();
		errno = saved;
		return false;
	}
	if (!W.use_pwrite) {
		uint8_t *d = W.win + (W.off - W.win_off);
		memcpy(d + 1, rec + 1, len - 1);
		__atomic_store_n(d, rec[0], __ATOMIC_RELEASE); /* commit */
	}
	W.off += len;
	errno = saved;
	return true;
}

/* Stores rec (one record, several whose first tag commits them all, or the header) at the end of
 * the file: its payload, then its first byte; false if it is dropped. Nearly every record is a few
 * bytes into the open window, copied inline, with no call and errno left alone. */
static bool put(const uint8_t *rec, size_t len)
{
	if (lk_unlikely(W.state != W_OPEN || W.off + len > W.room || len > 64))
		return put_slow(rec, len); /* W.room is 0 without a window, as with pwrite */
	uint8_t *d = W.win + (W.off - W.win_off);
	for (size_t i = 1; i < len; i++)
		d[i] = rec[i];
	__atomic_store_n(d, rec[0], __ATOMIC_RELEASE); /* commit */
	W.off += len;
	return true;
}

void lk_writer_put(const uint8_t *rec, size_t len)
{
	put(rec, len);
}

/* The time step from the file's previous timed record to now_ns: never negative, so that times
 * read from two clocks never go backwards in the file. */
static inline uint64_t since_last(uint64_t now_ns)
{
	return now_ns > W.last_ns ? now_ns - W.last_ns : 0;
}

/* ALLOC (tag LK_REC_ALLOC) or FREE of b, preceded by a THREAD record if the file's previous ALLOC
 * or FREE was another thread's (or there was none). The two are stored as one: a crash leaves both
 * or neither. */
static LK_COLD void put_event(uint8_t tag, uint32_t tid, uint64_t now_ns, struct lk_block *b,
			     uint32_t stack)
{
	uint8_t rec[LK_THREAD_MAX + LK_ALLOC_MAX];
	uint64_t prev, dt;
	size_t n = 0;

	/* The file first: a forked child's opens here, starts with no thread, and numbers the
	 * blocks it inherited (inherit_block()) before b's number is read below; a file cut short
	 * begins again here the same way. Not for an ALLOC, whose block is live already and would be
	 * inherited too: every sample readies the file before it takes its block, so an ALLOC finds
	 * it open unless it was cut since, and then its block comes back as an INHERIT. */
	if (lk_unlikely(W.state != W_OPEN)) {
		int saved = errno;
		bool open = ready(tag == LK_REC_FREE);
		errno = saved;
		if (!open) {
			drop();
			b->id = 0;
			return;
		}
	}
	if (!tid) /* a thread that never took the slow path, draining deferred frees at exit */
		tid = (uint32_t)gettid(); /* cannot fail: errno stays */
	if (tag == LK_REC_FREE && !b->id)
		return; /* its ALLOC was dropped: the file never had it */
	prev = W.prev_free;
	dt = since_last(now_ns);
	if (tid != W.tid)
		n = lk_rec_thread(rec, tid);
	if (tag == LK_REC_ALLOC)
		n += lk_rec_alloc(rec + n, dt, b->size, stack);
	else
		n += lk_rec_free(rec + n, dt, W.blocks, &prev, b->id);
	b->id = 0;
	if (!put(rec, n))
		return;
	if (tag == LK_REC_ALLOC)
		b->id = ++W.blocks;
	W.tid = tid;
	W.prev_free = prev;
	W.last_ns += dt;
}

/* ---- the common event, in one store ----
 *
 * Most ALLOC and FREE records are the same thread's as the record before (tid 0 is none: that
 * goes through put_event, which finds it) and come at the time of the record before (dt 0: exact
 * mode's coarse clock ticks every few milliseconds), with a size and a stack id below 2^16, and
 * a freed block's code (its age or its step from the previous FREE's, lk_free_code) below 2^16.
 * Such a record is an ALLOC_FIXED or a FREE_FIXED (format.h), whose fields sit at fixed places:
 * it is put together in a register with two shifts, where varints would each need their length
 * found and the fields after them moved (62 instructions more a malloc and free pair, for a file
 * about as large after zstd: docs/format.md). Anything else goes through put_event. */

/* The record rec (tag in its low byte, n bytes in all) at the end of the open window, if it is
 * open and has 8 bytes of room: its payload first, as a word whose bytes past the record are
 * zeros (as the file is past its last record), then its tag, which commits it. */
static inline bool store_small(uint64_t rec, unsigned n)
{
	if (lk_unlikely(W.off + 8 > W.room))
		return false; /* only a mapped window has room: the file is open, without pwrite */
	uint8_t *d = W.win + (W.off - W.win_off);
	uint64_t payload = rec & ~(uint64_t)0xff;
	memcpy(d, &payload, 8); /* its first byte stays 0 */
	__atomic_store_n(d, (uint8_t)rec, __ATOMIC_RELEASE);
	W.off += n;
	return true;
}

LK_HOT LK_INLINE void lk_writer_alloc(uint32_t tid, uint64_t now_ns, struct lk_block *b,
				       uint64_t size, uint32_t stack)
{
	if (lk_likely(tid == W.tid && tid && now_ns <= W.last_ns && size < (1u << 16) &&
		      stack < (1u << 16)) &&
	    store_small(lk_rec_alloc_fixed_word(size, stack), LK_ALLOC_FIXED_SIZE)) {
		b->id = ++W.blocks;
		return;
	}
	put_event(LK_REC_ALLOC, tid, now_ns, b, stack);
}

LK_HOT LK_INLINE void lk_writer_free(uint32_t tid, uint64_t now_ns, struct lk_block *b)
{
	uint64_t code = lk_free_code(W.blocks, W.prev_free, b->id);

	if (lk_likely(tid == W.tid && tid && b->id && now_ns <= W.last_ns && code < (1u << 16)) &&
	    store_small(lk_rec_free_fixed_word(code), LK_FREE_FIXED_SIZE)) {
		W.prev_free = b->id;
		b->id = 0;
		return;
	}
	put_event(LK_REC_FREE, tid, now_ns, b, 0);
}

uint64_t lk_writer_dt(uint64_t now_ns)
{
	uint64_t dt = since_last(now_ns);

	W.last_ns += dt;
	return dt;
}

/* Appends "%p"-expanded pattern to buf; returns false if it does not fit. */
static bool expand(char *buf, size_t size, const char *pat, const char *exe)
{
	size_t n = 0;
	char num[24];

	for (const char *p = pat; *p; p++) {
		const char *s = p;
		size_t m = 1;
		if (*p == '%' && (p[1] == 'p' || p[1] == 'e' || p[1] == '%')) {
			p++;
			if (*p == 'p') {
				unsigned v = (unsigned)getpid(), k = sizeof(num);
				do
					num[--k] = (char)('0' + v % 10);
				while (v /= 10);
				s = num + k;
				m = sizeof(num) - k;
			} else if (*p == 'e') {
				const char *slash = strrchr(exe, '/');
				s = slash ? slash + 1 : exe;
				m = strlen(s);
			}
		}
		if (n + m >= size)
			return false;
		memcpy(buf + n, s, m);
		n += m;
	}
	buf[n] = 0;
	return true;
}

static int read_small(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n, total = 0;

	if (fd < 0)
		return -errno;
	while ((size_t)total < size && (n = read(fd, buf + total, size - (size_t)total)) > 0)
		total += n;
	close(fd);
	return (int)total;
}

/* Numbers b in the child's file: its id in the parent's file means nothing here. */
static void inherit_block(struct lk_block *b, void *user, void *ctx)
{
	uint8_t rec[LK_INHERIT_MAX];
	uint32_t sid = lk_stack_file_id((uint32_t)b->stack);

	b->id = put(rec, lk_rec_inherit(rec, b->size, sid, b->time_ns)) ? ++W.blocks : 0;
}

/* W.path from base on: "" for k = 0, else ".k": a profile never overwrites a file. */
static void set_suffix(size_t base, unsigned k)
{
	char *p = W.path + base;

	if (k) {
		*p++ = '.';
		if (k >= 100)
			*p++ = (char)('0' + k / 100);
		if (k >= 10)
			*p++ = (char)('0' + k / 10 % 10);
		*p++ = (char)('0' + k % 10);
	}
	*p = 0;
}

/* W.path: LEEK_OUTPUT with %p and %e expanded (name: %e), made absolute (file_get opens the file by
 * name, and a daemon may chdir("/") first), and the default name inside it if it names a directory
 * or ends in '/'. Its length, where a .N suffix goes; 0 for /dev/null, which asks for no profile;
 * or a negative errno (-ENOTDIR: it names something that is neither a file nor a directory). */
static int resolve_path(const char *name)
{
	size_t n = 0, room = sizeof(W.path) - 8; /* 8: the suffix */
	struct stat st;

	if (lk_cfg.output[0] != '/' && getcwd(W.path, room)) {
		n = strlen(W.path);
		if (W.path[n - 1] != '/')
			W.path[n++] = '/';
	}
	if (!expand(W.path + n, room - n, lk_cfg.output, name))
		return -ENAMETOOLONG;
	n = strlen(W.path);
	if (W.path[n - 1] != '/' && stat(W.path, &st) == 0) {
		if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3))
			return 0;
		if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
			return -ENOTDIR;
		if (S_ISDIR(st.st_mode))
			W.path[n++] = '/';
	}
	if (W.path[n - 1] == '/' && !expand(W.path + n, room - n, LK_OUTPUT_DEFAULT, name))
		return -ENAMETOOLONG;
	return (int)strlen(W.path);
}

/* An unnamed file in W.path's directory (O_TMPFILE), to be named once its header is stored: a
 * process killed in between leaves no profile rather than one without a header. -1 where the
 * file system has no O_TMPFILE, or /proc (which names it) is missing. */
static int open_unnamed(void)
{
	char dir[LK_MAX_PATH];
	const char *slash = strrchr(W.path, '/');

	if (!slash || access("/proc/self/fd", X_OK) < 0)
		return -1;
	size_t n = slash == W.path ? 1 : (size_t)(slash - W.path);
	memcpy(dir, W.path, n);
	dir[n] = 0;
	return open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
}

/* Names the unnamed file fd W.path, or the first free W.path.N. */
static int name_file(int fd, size_t base)
{
	char proc[32] = "/proc/self/fd/", digits[12];
	size_t n = 0, at = strlen(proc);

	do /* no stdio in libleek */
		digits[n++] = (char)('0' + fd % 10);
	while ((fd /= 10) > 0);
	while (n)
		proc[at++] = digits[--n];
	proc[at] = 0;
	for (unsigned k = 0; k < 1000; k++) {
		set_suffix(base, k);
		if (linkat(AT_FDCWD, proc, AT_FDCWD, W.path, AT_SYMLINK_FOLLOW) == 0)
			return 0;
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

/* Creates W.path, or the first free W.path.N. */
static int create_named(size_t base)
{
	for (unsigned k = 0; k < 1000; k++) {
		set_suffix(base, k);
		int fd = open(W.path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd >= 0 || errno != EEXIST)
			return fd >= 0 ? fd : -errno;
	}
	return -EEXIST;
}

/* The header in scratch: the fixed part, the executable's path and the command line; its size. */
static uint32_t make_header(const char *exe, uint32_t flags)
{
	struct lk_file_header h = { .version = LK_FORMAT_VERSION };
	struct timespec rt;

	memcpy(h.magic, LK_FORMAT_MAGIC, 8);
	h.fixed_size = LK_HEADER_FIXED_SIZE;
	h.flags = flags | (lk_cfg.period <= 1 ? LK_HDR_EXACT : 0) |
		  (W.forked ? LK_HDR_FORKED : 0) | (lk_coarse_time() ? LK_HDR_COARSE_TIME : 0);
	h.pid = (uint32_t)getpid();
	h.ppid = (uint32_t)getppid();
	h.clock = LK_CLOCK_MONOTONIC;
	h.period = lk_cfg.period;
	clock_gettime(CLOCK_REALTIME, &rt);
	h.start_realtime_ns = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
	h.start_monotonic_ns = lk_now_ns(); /* the clock of every record, coarse or not */
	h.session = lk_cfg.session;
	h.seed = lk_cfg.seed;
	h.page_size = (uint32_t)getpagesize();
	h.max_frames = (uint32_t)lk_cfg.max_frames;
	h.exe_len = (uint32_t)strlen(exe);
	char *cmd = scratch + LK_HEADER_FIXED_SIZE + h.exe_len;
	size_t room = sizeof(scratch) - LK_HEADER_FIXED_SIZE - h.exe_len - 8;
	int clen = read_small("/proc/self/cmdline", cmd, room);
	if (clen < 0)
		clen = 0;
	if ((size_t)clen == room)
		h.flags |= LK_HDR_CMDLINE_CUT;
	if (clen > 0 && cmd[clen - 1] == 0)
		clen--; /* separators between arguments, not after the last */
	h.cmdline_len = (uint32_t)clen;
	h.header_size = (LK_HEADER_FIXED_SIZE + h.exe_len + h.cmdline_len + 7) & ~7u;
	memcpy(scratch + LK_HEADER_FIXED_SIZE, exe, h.exe_len);
	memset(scratch + LK_HEADER_FIXED_SIZE + h.exe_len + h.cmdline_len, 0,
	       h.header_size - LK_HEADER_FIXED_SIZE - h.exe_len - h.cmdline_len);
	memcpy(scratch, &h, sizeof(h));
	W.last_ns = h.start_monotonic_ns;
	return h.header_size;
}

/* Begins the profile in fd, an empty file of ours: its first allocation, the header, then every
 * module and, in a forked child's file or one begun again, an INHERIT for every live block.
 * base: where W.path's suffix goes if fd is still unnamed (named here once its header is in),
 * else 0. */
static int begin_file(int fd, size_t base, uint32_t flags)
{
	static char exe[LK_MAX_PATH];
	ssize_t elen = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	struct stat st;
	int r;

	exe[elen > 0 ? elen : 0] = 0;
	fstat(fd, &st);
	W.dev = st.st_dev;
	W.ino = st.st_ino;
	W.off = W.len = 0;
	W.win = NULL;
	set_room();
	W.use_pwrite = false;
	W.fd = fd; /* until the header is stored and the file named; then only with pwrite */
	W.state = W_OPEN;
	W.pid = (uint32_t)getpid();
	W.next_rss_ns = 0;
	W.losses_written = 0;
	W.blocks = 0;
	W.prev_free = 0;
	W.tid = 0;
	uint32_t size = make_header(exe, flags);
	r = grow(size);
	if (r == -EOPNOTSUPP || r == -EINVAL) {
		W.use_pwrite = true; /* one pwrite per record, through a descriptor kept high */
		W.fd = lk_fd_raise(fd, true);
		r = grow(size);
	}
	/* The header goes through put() too; its first byte 'L' is stored last, like a tag. */
	if (r == 0)
		r = put((const uint8_t *)scratch, size) && W.state == W_OPEN ? 0 : -EIO;
	if (r == 0 && base)
		r = name_file(W.fd, base);
	if (!W.use_pwrite || r < 0) {
		close(W.fd);
		W.fd = -1;
	}
	if (r < 0) {
		die();
		return r;
	}
	lk_stack_new_file();
	lk_modules_emit_all();
	if (W.forked || flags & LK_HDR_CONTINUED)
		lk_arena_foreach(inherit_block, NULL);
	return 0;
}

static int open_file(void)
{
	/* %e is the name the program was started as: /usr/bin/redis-server is a symlink to
	 * redis-check-rdb, and the user looks for redis-server. */
	const char *name = program_invocation_short_name;
	char exe[LK_MAX_PATH];

	if (!name || !*name) {
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		exe[n > 0 ? n : 0] = 0;
		name = exe;
	}
	int base = resolve_path(name);
	if (base <= 0)
		return base < 0 ? base : 1; /* 1: no profile, as asked */
	size_t named = 0;
	int fd = open_unnamed();
	if (fd >= 0)
		named = (size_t)base;
	else if ((fd = create_named((size_t)base)) < 0)
		return fd;
	return begin_file(fd, named, 0);
}

/* A file cut short under the window begins again from its start (header comment). */
static int begin_again(void)
{
	uint64_t cuts = lk_counters[LK_CNT_FILE_CUT] + 1;

	unmap_window(); /* the anonymous memory that stood in for it */
	int fd = file_get();
	if (fd < 0)
		return fd;
	if (W.use_pwrite)
		W.fd = -1; /* begin_file takes it, and keeps it again */
	if (ftruncate(fd, 0) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	memset(lk_counters, 0, sizeof(lk_counters)); /* a new file: its own counts */
	lk_counters[LK_CNT_FILE_CUT] = cuts;
	return begin_file(fd, 0, LK_HDR_CONTINUED);
}

bool lk_writer_owned(void)
{
	return (W.state == W_OPEN || W.state == W_FULL || W.state == W_CUT) &&
	       W.pid == (uint32_t)getpid();
}

/* The first event of a process (or of a forked child) opens its file; the first after a cut
 * begins it again. One line if it cannot, and the program runs unprofiled from then on. */
static LK_COLD void open_now(void)
{
	bool again = W.state == W_CUT;
	int r = again ? begin_again() : open_file();
	struct lk_line l = LK_LINE_INIT;

	if (r == 0)
		return;
	die();
	if (r > 0)
		return; /* /dev/null: no profile, as asked */
	lk_line_str(&l, again ? "cannot write the profile again after it was cut short: "
			      : "cannot write the profile ");
	lk_line_path(&l, W.path);
	lk_line_str(&l, " (");
	lk_line_str(&l, r == -ENOTDIR ? "not a file or a directory"
		    : r == -EFBIG     ? "the file-size limit, ulimit -f, is too small"
				      : strerrordesc_np(-r) ?: "error");
	lk_line_str(&l, "); the program runs unprofiled");
	lk_line_print(&l);
}

/* Whether records can be written: the file opened first if this process has none yet, and, if
 * begin_again, begun again if it was cut short (a point between two records of a sample). */
static bool ready(bool begin_again_ok)
{
	if (W.state == W_UNOPENED || (W.state == W_CUT && begin_again_ok))
		open_now();
	return W.state == W_OPEN;
}

LK_HOT bool lk_writer_ready(void)
{
	if (lk_unlikely(W.state != W_OPEN))
		return ready(true);
	return true;
}

/* SIGBUS at addr (signals.c, in the handler): true if it is the window's, which then gets
 * anonymous memory in place of the file's pages, so that the store that faulted completes, and the
 * file begins again at the next sample (W_CUT). Async-signal-safe. */
bool lk_writer_fault(const void *addr)
{
	uint8_t *win = __atomic_load_n(&W.win, __ATOMIC_RELAXED);

	if (!win || (uintptr_t)addr - (uintptr_t)win >= CHUNK)
		return false;
	if (mmap(win, CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
		 0) == MAP_FAILED)
		return false;
	W.state = W_CUT;
	W.room = 0;
	return true;
}

static LK_COLD void rss_write(uint64_t now_ns)
{
	char buf[128];
	uint8_t rec[LK_COUNTERS_MAX];
	uint64_t losses = 0, rss = 0;

	W.next_rss_ns = now_ns + lk_cfg.rss_interval_ns < now_ns ? UINT64_MAX
								: now_ns + lk_cfg.rss_interval_ns;
	int n = read_small("/proc/self/statm", buf, sizeof(buf) - 1);
	if (n > 0) {
		buf[n] = 0;
		const char *p = strchr(buf, ' ');
		for (p = p ? p + 1 : buf + n; *p >= '0' && *p <= '9'; p++)
			rss = rss * 10 + (uint64_t)(*p - '0');
		lk_writer_put(rec, lk_rec_pair(rec, LK_REC_RSS, lk_writer_dt(now_ns),
					       rss * (uint64_t)getpagesize()));
	}
	for (int i = 1; i <= LK_CNT_MAX; i++)
		if (i != LK_CNT_SAMPLES && i != LK_CNT_FREES && i != LK_CNT_STACK_TRUNCATED &&
		    i != LK_CNT_DEFERRED_FREES)
			losses += lk_counters[i];
	if (losses != W.losses_written) {
		W.losses_written = losses;
		lk_writer_put(rec, lk_rec_counters(rec, LK_REC_LOSS, lk_writer_dt(now_ns), 0, lk_counters));
	}
}

LK_HOT void lk_writer_rss_maybe(uint64_t now_ns)
{
	if (now_ns >= W.next_rss_ns)
		rss_write(now_ns); /* its buffers are not set up at every sample */
}

void lk_writer_close(void)
{
	uint8_t rec[LK_COUNTERS_MAX];
	struct timespec rt;

	W.closing = true; /* the last records may use FINAL_ROOM */
	if (W.state == W_CUT)
		ready(true); /* the trailer goes into a whole file */
	if (W.state == W_FULL)
		W.state = W_OPEN;
	if (W.state != W_OPEN)
		return;
	uint64_t now = lk_now_ns();
	W.next_rss_ns = 0;
	lk_writer_rss_maybe(now);
	clock_gettime(CLOCK_REALTIME, &rt);
	lk_writer_put(rec, lk_rec_counters(rec, LK_REC_TRAILER, lk_writer_dt(now),
					   (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec,
					   lk_counters));
	if (W.state != W_OPEN)
		return;
	unmap_window();
	int fd = file_get();
	if (fd >= 0) {
		ftruncate(fd, (off_t)W.off);
		close(fd);
	}
	W.fd = -1;
	W.state = W_CLOSED;
}

/* In the child of fork: async-signal-safe calls only. */
void lk_writer_atfork_child(void)
{
	unmap_window();
	if (W.fd >= 0)
		close(W.fd);
	W.fd = -1;
	if (W.state == W_OPEN || W.state == W_FULL || W.state == W_CUT)
		W.state = W_UNOPENED;
	W.forked = true;
	W.closing = false;
	memset(lk_counters, 0, sizeof(lk_counters));
}
