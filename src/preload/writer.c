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
 * Never: allocate, print more than one line, raise a signal in the program, hold a descriptor
 * between two uses (but on a file system without fallocate), or write to a file that is no longer
 * ours. All functions run under lk_lock except lk_writer_atfork_child.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "preload.h"
#include "record.h"

#define CHUNK ((uint64_t)1 << 20)
#define GROW_SMALL ((uint64_t)64 << 10)
/* grow() adds one step to a length that is a multiple of it: a reader relies on the most. */
_Static_assert(CHUNK <= LK_GROW_MAX && GROW_SMALL <= LK_GROW_MAX && CHUNK % GROW_SMALL == 0,
	       "the file grows by LK_GROW_MAX at most");
#define PAGE 4096u

enum { W_UNOPENED, W_OPEN, W_DEAD, W_CLOSED };

uint64_t lk_counters[LK_CNT_MAX + 1];

static struct {
	int state, fd;
	bool forked, use_pwrite;
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

/* Allocates the file up to at least `end`: 64 KiB at a time while it is small (a process that
 * execs soon after starting, like env or taskset, leaves a small file), 1 MiB at a time after. */
static int grow(uint64_t end)
{
	uint64_t step = W.len < CHUNK ? GROW_SMALL : CHUNK;
	uint64_t want = (end + step - 1) / step * step;
	int fd = file_get();

	if (fd < 0)
		return fd;
	int r = allocate(fd, W.len, want);
	file_put(fd);
	if (r)
		return -r;
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

/* put() when the record does not simply go into the open window: the file is not open yet (a
 * forked child opens at its first record), it needs growing or the window moving, or every record
 * is a pwrite. */
static LK_COLD bool put_slow(const uint8_t *rec, size_t len)
{
	int saved = errno;

	if (W.state != W_OPEN && !lk_writer_ready()) {
		lk_counters[LK_CNT_RECORDS_DROPPED]++;
		errno = saved;
		return false;
	}
	if (W.use_pwrite) {
		if (pwrite(W.fd, rec, len, (off_t)W.off) != (ssize_t)len &&
		    (file_get() < 0 || pwrite(W.fd, rec, len, (off_t)W.off) != (ssize_t)len)) {
			lk_counters[LK_CNT_RECORDS_DROPPED]++;
			errno = saved;
			return false;
		}
	} else {
		if ((W.off + len > W.len && grow(W.off + len) < 0) ||
		    ((!W.win || W.off + len > W.win_off + CHUNK) && remap(W.off) < 0)) {
			die();
			lk_counters[LK_CNT_RECORDS_DROPPED]++;
			lk_log("cannot grow the profile (disk full?); profiling stops, the program goes on");
			errno = saved;
			return false;
		}
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
	 * blocks it inherited (inherit_block()) before b's number is read below. */
	if (lk_unlikely(W.state != W_OPEN)) {
		int saved = errno;
		bool open = lk_writer_ready();
		errno = saved;
		if (!open) {
			lk_counters[LK_CNT_RECORDS_DROPPED]++;
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
	return open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0644);
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
		int fd = open(W.path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd >= 0 || errno != EEXIST)
			return fd >= 0 ? fd : -errno;
	}
	return -EEXIST;
}

static int open_file(void)
{
	static char exe[LK_MAX_PATH];
	struct lk_file_header h = { .version = LK_FORMAT_VERSION };
	ssize_t elen = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	struct timespec rt;
	int fd = -1;

	exe[elen > 0 ? elen : 0] = 0;
	/* %e is the name the program was started as: /usr/bin/redis-server is a symlink to
	 * redis-check-rdb, and the user looks for redis-server. */
	const char *name = program_invocation_short_name && *program_invocation_short_name
				   ? program_invocation_short_name
				   : exe;
	/* An absolute path: file_get opens the file by name, and a daemon may chdir("/") first
	 * (LEEK_OUTPUT is relative by default). */
	size_t cwd = 0;
	if (lk_cfg.output[0] != '/' && getcwd(W.path, sizeof(W.path) - 16)) {
		cwd = strlen(W.path);
		if (W.path[cwd - 1] != '/')
			W.path[cwd++] = '/';
	}
	if (!expand(W.path + cwd, sizeof(W.path) - cwd - 8, lk_cfg.output, name))
		return -ENAMETOOLONG;
	size_t base = strlen(W.path);
	bool unnamed = true;
	fd = open_unnamed();
	if (fd < 0) {
		unnamed = false;
		if ((fd = create_named(base)) < 0)
			return fd;
	}
	struct stat st;
	fstat(fd, &st);
	W.dev = st.st_dev;
	W.ino = st.st_ino;
	W.off = W.len = 0;
	W.win = NULL;
	set_room();
	W.use_pwrite = false;
	int r = allocate(fd, 0, GROW_SMALL);
	if (r == EOPNOTSUPP || r == EINVAL) {
		W.use_pwrite = true; /* one pwrite per record, through a descriptor kept high */
		fd = lk_fd_raise(fd, true);
	} else if (r) {
		close(fd);
		return -r;
	} else {
		W.len = GROW_SMALL;
	}
	W.fd = fd; /* until the header is stored and the file named; then only with pwrite */

	/* The header, then the strings. */
	memcpy(h.magic, LK_FORMAT_MAGIC, 8);
	h.fixed_size = LK_HEADER_FIXED_SIZE;
	h.flags = (lk_cfg.period <= 1 ? LK_HDR_EXACT : 0) | (W.forked ? LK_HDR_FORKED : 0) |
		  (lk_coarse_time() ? LK_HDR_COARSE_TIME : 0);
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

	W.state = W_OPEN;
	W.pid = h.pid;
	W.last_ns = h.start_monotonic_ns;
	W.next_rss_ns = 0;
	W.losses_written = 0;
	W.blocks = 0;
	W.prev_free = 0;
	W.tid = 0;
	/* The header goes through put() too; its first byte 'L' is stored last, like a tag. */
	lk_writer_put((const uint8_t *)scratch, h.header_size);
	if (W.state != W_OPEN)
		r = -EIO;
	else if (unnamed)
		r = name_file(fd, base);
	if (!W.use_pwrite || r < 0) {
		close(fd);
		W.fd = -1;
	}
	if (r < 0) {
		die();
		return r;
	}
	lk_stack_new_file();
	lk_modules_emit_all();
	if (W.forked)
		lk_arena_foreach(inherit_block, NULL);
	return 0;
}

bool lk_writer_owned(void)
{
	return W.state == W_OPEN && W.pid == (uint32_t)getpid();
}

/* The first event of a process (or of a forked child) opens its file. */
static LK_COLD void open_now(void)
{
	int r = open_file();

	if (r < 0) {
		char msg[LK_MAX_PATH + 96];
		size_t n = strlen(W.path);
		memcpy(msg, "cannot write the profile ", 25);
		memcpy(msg + 25, W.path, n);
		strcpy(msg + 25 + n, "; the program runs unprofiled");
		lk_log(msg);
		die();
	}
}

LK_HOT bool lk_writer_ready(void)
{
	if (lk_unlikely(W.state == W_UNOPENED))
		open_now();
	return W.state == W_OPEN;
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
	if (W.state == W_OPEN)
		W.state = W_UNOPENED;
	W.forked = true;
	memset(lk_counters, 0, sizeof(lk_counters));
}
