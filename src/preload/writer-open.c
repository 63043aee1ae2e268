/* writer-open.c: the profile's creation, naming and header, and its beginning again.
 *
 * The first event of a process opens its file (lk_writer_ready): LEEK_OUTPUT with %p and %e
 * expanded and made absolute, created unnamed (O_TMPFILE) and named only once its header is
 * stored, so that a process killed in between leaves no profile rather than one without a header;
 * a name taken already gets a suffix (.1, .2, ...): a profile never overwrites a file. The header
 * is followed by every module (modules.c) and, in a file that is not the process's first, an
 * INHERIT record for every live sampled block.
 *
 * After fork the child drops the parent's window and opens its own file at its next event,
 * starting with every module, and an INHERIT record for every sampled block it inherited. A file
 * cut short under the window (W_CUT: writer-window.c) begins again from its start the same way,
 * with the header flag LK_HDR_CONTINUED and file_cut counting the cuts.
 *
 * The file is the program's user's alone (0600): it holds the command line, which may carry
 * secrets, and every module's load address, which would defeat ASLR for a daemon whose
 * /proc/PID/maps other users cannot read.
 *
 * Never: overwrite or follow into a file that is not ours, leave a named file without its header,
 * print more than one line when the profile cannot be written, or touch the parent's file from a
 * forked or vfork'ed child (lk_writer_owned).
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "options.h"
#include "preload.h"
#include "record.h"
#include "writer.h"

static char scratch[LK_HEADER_FIXED_SIZE + 2 * LK_MAX_PATH + 16384]; /* header; under lk_lock */


/* Appends "%p"-expanded pattern to buf; returns false if it does not fit. */
static bool expand(char *buf, size_t size, const char *pat, const char *exe)
{
	size_t n = 0;
	char num[LK_U64_CHARS];

	for (const char *p = pat; *p; p++) {
		const char *s = p;
		size_t m = 1;
		if (*p == '%' && (p[1] == 'p' || p[1] == 'e' || p[1] == '%')) {
			p++;
			if (*p == 'p') {
				s = lk_fmt_u64(num, (uint64_t)getpid());
				m = strlen(s);
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

/* Numbers b in the child's file: its id in the parent's file means nothing here. */
static void inherit_block(struct lk_block *b, void *user, void *ctx)
{
	uint8_t rec[LK_INHERIT_MAX];
	uint32_t sid = lk_stack_file_id((uint32_t)b->stack);
	size_t n = lk_rec_inherit(rec, b->size, sid, b->time_ns);

	b->id = lk_writer_store(rec, n) ? ++writer.blocks : 0;
}

/* writer.path from base on: "" for k = 0, else ".k": a profile never overwrites a file. */
static void set_suffix(size_t base, unsigned k)
{
	char *p = writer.path + base, num[LK_U64_CHARS];

	if (k) {
		const char *digits = lk_fmt_u64(num, k);
		*p++ = '.';
		memcpy(p, digits, strlen(digits));
		p += strlen(digits);
	}
	*p = 0;
}

/* writer.path: LEEK_OUTPUT with %p and %e expanded (name: %e), made absolute (lk_window_fd opens
 * the file by name, and a daemon may chdir("/") first), and the default name inside it if it names
 * a directory or ends in '/'. Its length, where a .N suffix goes; 0 for /dev/null, which asks for
 * no profile; or a negative errno (-ENOTDIR: it names something that is neither a file nor a
 * directory). */
static int resolve_path(const char *name)
{
	size_t n = 0, room = sizeof(writer.path) - 8; /* 8: the suffix */
	struct stat st;

	if (lk_cfg.output[0] != '/' && getcwd(writer.path, room)) {
		n = strlen(writer.path);
		if (writer.path[n - 1] != '/')
			writer.path[n++] = '/';
	}
	if (!expand(writer.path + n, room - n, lk_cfg.output, name))
		return -ENAMETOOLONG;
	n = strlen(writer.path);
	if (writer.path[n - 1] != '/' && stat(writer.path, &st) == 0) {
		if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3))
			return 0;
		if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
			return -ENOTDIR;
		if (S_ISDIR(st.st_mode))
			writer.path[n++] = '/';
	}
	if (writer.path[n - 1] == '/' &&
	    !expand(writer.path + n, room - n, LK_OUTPUT_DEFAULT, name))
		return -ENAMETOOLONG;
	return (int)strlen(writer.path);
}

/* An unnamed file in writer.path's directory (O_TMPFILE), to be named once its header is stored: a
 * process killed in between leaves no profile rather than one without a header. -1 where the
 * file system has no O_TMPFILE, or /proc (which names it) is missing. */
int lk_writer_open_unnamed(const char *path)
{
	char dir[LK_MAX_PATH];
	const char *slash = strrchr(path, '/');

	if (!slash || access("/proc/self/fd", X_OK) < 0)
		return -1;
	size_t n = slash == path ? 1 : (size_t)(slash - path);
	memcpy(dir, path, n);
	dir[n] = 0;
	return open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
}

/* Names the unnamed file fd writer.path, or the first free writer.path.N. */
int lk_writer_name(int fd, size_t base)
{
	char proc[16 + LK_U64_CHARS] = "/proc/self/fd/", num[LK_U64_CHARS];
	const char *digits = lk_fmt_u64(num, (uint64_t)fd);

	memcpy(proc + strlen(proc), digits, strlen(digits) + 1);
	for (unsigned k = 0; k < 1000; k++) {
		set_suffix(base, k);
		if (linkat(AT_FDCWD, proc, AT_FDCWD, writer.path, AT_SYMLINK_FOLLOW) == 0)
			return 0;
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

/* Creates writer.path, or the first free writer.path.N. */
static int create_named(size_t base)
{
	for (unsigned k = 0; k < 1000; k++) {
		set_suffix(base, k);
		int fd = open(writer.path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
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
		  (writer.forked ? LK_HDR_FORKED : 0) | (lk_coarse_time() ? LK_HDR_COARSE_TIME : 0);
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
	size_t room = sizeof(scratch) - LK_HEADER_FIXED_SIZE - h.exe_len - 8 - LK_CTL_SIZE -
		      LK_ROT_SIZE;
	int clen = lk_proc_read("/proc/self/cmdline", cmd, room);
	if (clen < 0)
		clen = 0;
	if ((size_t)clen == room)
		h.flags |= LK_HDR_CMDLINE_CUT;
	if (clen > 0 && cmd[clen - 1] == 0)
		clen--; /* separators between arguments, not after the last */
	h.cmdline_len = (uint32_t)clen;
	/* The control block last, 8-aligned: `leek ctl`'s commands (control.c); in a rotated
	 * segment the rotation block before it (writer-rotate.c). */
	uint32_t rot = writer.segment ? LK_ROT_SIZE : 0;
	h.flags |= LK_HDR_CTL | (rot ? LK_HDR_ROTATED : 0);
	h.header_size = ((LK_HEADER_FIXED_SIZE + h.exe_len + h.cmdline_len + 7) & ~7u) + rot +
			LK_CTL_SIZE;
	memcpy(scratch + LK_HEADER_FIXED_SIZE, exe, h.exe_len);
	memset(scratch + LK_HEADER_FIXED_SIZE + h.exe_len + h.cmdline_len, 0,
	       h.header_size - LK_HEADER_FIXED_SIZE - h.exe_len - h.cmdline_len);
	memcpy(scratch + h.header_size - LK_CTL_SIZE, LK_CTL_MAGIC, 4);
	if (!writer.segment)
		writer.origin_ns = h.start_realtime_ns;
	if (rot) {
		struct lk_rot_block b = { .segment = htole32(writer.segment),
					  .origin_realtime_ns = htole64(writer.origin_ns) };
		memcpy(b.magic, LK_ROT_MAGIC, 4);
		memcpy(scratch + h.header_size - LK_CTL_SIZE - rot, &b, sizeof(b));
	}
	writer.start_ns = h.start_monotonic_ns;
	writer.ctl_off = h.header_size - LK_CTL_SIZE;
	writer.ctl_seen = 0;
	memcpy(scratch, &h, sizeof(h));
	writer.last_ns = h.start_monotonic_ns;
	return h.header_size;
}

/* The empty file fd made the writer's, with its header stored (writer.h). */
int lk_writer_start(int fd, uint32_t flags)
{
	static char exe[LK_MAX_PATH];
	struct stat st;
	int r;

	lk_proc_exe(exe, sizeof(exe));
	fstat(fd, &st);
	writer.dev = st.st_dev;
	writer.ino = st.st_ino;
	writer.off = writer.len = writer.ckpt_end = 0;
	writer.win = NULL;
	lk_window_set_room();
	writer.use_pwrite = false;
	writer.fd = fd; /* until the header is stored and the file named; then only with pwrite */
	writer.state = W_OPEN;
	writer.pid = (uint32_t)getpid();
	__atomic_store_n(&writer.next_rss_ns, 0, __ATOMIC_RELAXED);
	writer.losses_written = 0;
	writer.gen++;
	writer.blocks = writer.prev_free = (uint64_t)writer.gen << LK_ID_GEN_SHIFT;
	writer.tid = 0;
	uint32_t size = make_header(exe, flags);
	r = lk_window_grow(size);
	if (r == -EOPNOTSUPP || r == -EINVAL) {
		writer.use_pwrite = true; /* a pwrite per record, through a descriptor kept high */
		writer.fd = lk_fd_raise(fd, true);
		r = lk_window_grow(size);
	}
	/* The header is stored as a record is; its first byte 'L' is stored last, like a tag. */
	if (r == 0 && (!lk_writer_store((const uint8_t *)scratch, size) || writer.state != W_OPEN))
		r = -EIO;
	return r;
}

void lk_writer_checkpoint(bool inherit)
{
	lk_stack_new_file();
	lk_modules_emit_all();
	if (inherit)
		lk_arena_foreach(inherit_block, NULL);
	lk_ctl_file_begun(lk_now_ns());
	writer.ckpt_end = writer.off;
}

/* Begins the profile in fd, an empty file of ours: its first allocation, the header, then every
 * module and, in a forked child's file or one begun again, an INHERIT for every live block.
 * base: where writer.path's suffix goes if fd is still unnamed (named here once its header is in),
 * else 0. */
static int begin_file(int fd, size_t base, uint32_t flags)
{
	int r = lk_writer_start(fd, flags);

	if (r == 0 && base)
		r = lk_writer_name(writer.fd, base);
	if (!writer.use_pwrite || r < 0) {
		close(writer.fd);
		writer.fd = -1;
	}
	if (r < 0) {
		lk_writer_die();
		return r;
	}
	if (!(flags & LK_HDR_CONTINUED))
		lk_rotate_file_opened();
	lk_writer_checkpoint(writer.forked || flags & LK_HDR_CONTINUED);
	return 0;
}

static int open_file(void)
{
	/* %e is the name the program was started as: /usr/bin/redis-server is a symlink to
	 * redis-check-rdb, and the user looks for redis-server. */
	const char *name = program_invocation_short_name;
	char exe[LK_MAX_PATH];

	if (!name || !*name) {
		lk_proc_exe(exe, sizeof(exe));
		name = exe;
	}
	int base = resolve_path(name);
	if (base <= 0)
		return base < 0 ? base : 1; /* 1: no profile, as asked */
	size_t named = 0;
	int fd = lk_writer_open_unnamed(writer.path);
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

	lk_window_unmap(); /* the anonymous memory that stood in for it */
	lk_seg_abandon_all();
	int fd = lk_window_fd();
	if (fd < 0)
		return fd;
	if (writer.use_pwrite)
		writer.fd = -1; /* begin_file takes it, and keeps it again */
	if (ftruncate(fd, 0) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	memset(lk_counters, 0, sizeof(lk_counters)); /* a new file: its own counts */
	lk_trecs_new_file();
	lk_counters[LK_CNT_FILE_CUT] = cuts;
	return begin_file(fd, 0, LK_HDR_CONTINUED);
}

bool lk_writer_owned(void)
{
	return lk_writer_has_file() && writer.pid == (uint32_t)getpid();
}

void lk_writer_path(char *buf, size_t size)
{
	size_t n = 0;

	if (lk_writer_has_file())
		while (writer.path[n] && n + 1 < size) {
			buf[n] = writer.path[n];
			n++;
		}
	buf[n] = 0;
}

/* The first event of a process (or of a forked child) opens its file; the first after a cut
 * begins it again. One line if it cannot, and the program runs unprofiled from then on. */
LK_COLD void lk_writer_open_now(void)
{
	bool again = writer.state == W_CUT;
	int r = again ? begin_again() : open_file();
	struct lk_line l = LK_LINE_INIT;

	if (r == 0)
		return;
	lk_writer_die();
	if (r > 0)
		return; /* /dev/null: no profile, as asked */
	lk_line_str(&l, again ? "cannot write the profile again after it was cut short: "
			      : "cannot write the profile ");
	lk_line_path(&l, writer.path);
	lk_line_str(&l, " (");
	lk_line_str(&l, r == -ENOTDIR ? "not a file or a directory"
		    : r == -EFBIG     ? "the file-size limit, ulimit -f, is too small"
				      : strerrordesc_np(-r) ?: "error");
	lk_line_str(&l, "); the program runs unprofiled");
	lk_line_print(&l);
}

LK_HOT bool lk_writer_ready(void)
{
	if (lk_unlikely(writer.state != W_OPEN))
		return lk_writer_begin(true);
	return true;
}

/* In the child of fork: async-signal-safe calls only. */
void lk_writer_atfork_child(void)
{
	lk_window_unmap();
	if (writer.fd >= 0)
		close(writer.fd);
	writer.fd = -1;
	if (lk_writer_has_file())
		writer.state = W_UNOPENED;
	writer.forked = true;
	writer.closing = false;
	writer.segment = 0; /* the child's files are a chain of their own */
	memset(lk_counters, 0, sizeof(lk_counters));
}
