/* compress.c: turns a finished raw profile into FILE.zst beside it (compress.h).
 *
 * It must never lose a profile: the raw file is removed only once its compressed copy is complete,
 * on disk (fsync, then the directory's fsync after the rename) and under its final name; any
 * failure before that removes the temporary file and leaves the raw one as it was. The temporary
 * file is an unnamed O_TMPFILE in the same directory where the file system has them, so that a
 * Ctrl-C or a crash in the middle leaves nothing behind; elsewhere it is FILE.zst.XXXXXX. It must
 * never overwrite a file either (libleek never does): the final name is taken with linkat(2) or
 * RENAME_NOREPLACE, which fail rather than replace. And it must not compress a profile that is
 * still being written, by a process that outlived `leek run`'s program: libleek keeps its profile
 * mapped (and, on a file system without fallocate, open) until it exits or execs, so a profile
 * that its header's process holds is refused, and one whose size or time changed while it was
 * read is dropped at the end.
 */
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <zstd.h>

#include "compress.h"
#include "leek/format.h"
#include "read-z.h"
#include "util.h"

#define IO_BUF (256 * 1024)
#define MAX_NAMES 1000 /* FILE.zst, FILE.1.zst, ... FILE.999.zst, as libleek's suffixes */
#define SUFFIX ".zst"

_Static_assert(LK_COMPRESS_WINDOW_LOG <= LK_ZSTD_WINDOW_LOG_MAX, "a reader refuses the window");

static int fail(char **msg, int r, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char **msg, int r, const char *fmt, ...)
{
	va_list ap;

	if (msg && !*msg) {
		va_start(ap, fmt);
		if (vasprintf(msg, fmt, ap) < 0)
			*msg = NULL;
		va_end(ap);
	}
	return r;
}

/* Whether process pid has the file (dev, ino) mapped: libleek holds its profile mapped, not open,
 * while it writes (a window of it, from the header on). 1, 0, or -1 when it cannot tell. */
static int held_mapped(pid_t pid, dev_t dev, ino_t ino)
{
	char path[64], line[4096];
	unsigned maj, min;
	unsigned long long inode;
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	if (!(f = fopen(path, "re")))
		return errno == ENOENT ? 0 : -1;
	while (!found && fgets(line, sizeof(line), f))
		/* start-end perms offset major:minor inode [path] */
		found = sscanf(line, "%*s %*s %*s %x:%x %llu", &maj, &min, &inode) == 3 &&
			inode == (unsigned long long)ino && makedev(maj, min) == dev;
	fclose(f);
	return found;
}

/* Whether process pid holds the file (dev, ino) open or mapped: 1, 0, or 1 when it cannot tell
 * (a live process of another user), since compressing a profile under its writer would lose
 * records. */
static int held_open(pid_t pid, dev_t dev, ino_t ino)
{
	char dir[64];
	struct dirent *de;
	struct stat st;
	bool found = false;
	DIR *d;

	if (pid <= 0)
		return 0;
	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	d = opendir(dir);
	if (!d)
		return errno != ENOENT && (kill(pid, 0) == 0 || errno == EPERM);
	while (!found && (de = readdir(d)))
		found = de->d_name[0] != '.' && fstatat(dirfd(d), de->d_name, &st, 0) == 0 &&
			st.st_dev == dev && st.st_ino == ino;
	closedir(d);
	/* Its descriptors could be read, so it is ours or we are root: maps that cannot be read
	 * (pid 1 in some containers) say nothing about a writer. */
	return found || held_mapped(pid, dev, ino) == 1;
}

/* 0 if fd holds a raw profile that no process is writing; else a negative errno and *msg. */
static int check_profile(int fd, const struct stat *st, char **msg)
{
	struct lk_file_header h;
	ssize_t k = pread(fd, &h, sizeof(h), 0);
	enum lk_codec codec;

	if (k < 0)
		return fail(msg, -errno, "cannot read it: %s", strerror(errno));
	codec = lk_codec_of(&h, (size_t)k);
	if (codec != LK_CODEC_NONE)
		return fail(msg, -EALREADY, "already %s-compressed", lk_codec_name(codec));
	if (k < 8 || memcmp(h.magic, LK_FORMAT_MAGIC, 8) != 0)
		return fail(msg, -EMEDIUMTYPE, "not a leek profile (no %s magic)", LK_FORMAT_MAGIC);
	if (k == (ssize_t)sizeof(h) && held_open((pid_t)le32toh(h.pid), st->st_dev, st->st_ino))
		return fail(msg, -EBUSY, "still being written by pid %u", le32toh(h.pid));
	return 0;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			return -EIO;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* The level for a profile of `size` bytes: zstd's higher levels are slow only on data in which
 * they find few long matches, so LK_COMPRESS_PROBE bytes from the middle of the file, or from
 * LK_COMPRESS_PROBE_AT in a larger one (past the modules and stacks at its start, either way),
 * are compressed at LK_COMPRESS_LEVEL_BEST, and a profile they show to shrink less than
 * LK_COMPRESS_GOOD_RATIO times gets LK_COMPRESS_LEVEL_FAST. One level for the whole file, chosen
 * from the bytes alone, so a profile always compresses to the same file, and a large one can be
 * compressed as it is written once its first 2 * LK_COMPRESS_PROBE_AT bytes are
 * (lk_compress_stream_feed). */
static int choose_level(int fd, uint64_t size)
{
	_cleanup_(freep) uint8_t *in = NULL, *out = NULL;
	size_t bound = ZSTD_compressBound(LK_COMPRESS_PROBE), packed;
	ssize_t n;

	if (size <= 2 * LK_COMPRESS_PROBE)
		return LK_COMPRESS_LEVEL_BEST;
	in = malloc(LK_COMPRESS_PROBE);
	out = malloc(bound);
	if (!in || !out)
		return LK_COMPRESS_LEVEL_FAST;
	n = pread(fd, in, LK_COMPRESS_PROBE,
		  (off_t)(size / 2 < LK_COMPRESS_PROBE_AT ? size / 2 : LK_COMPRESS_PROBE_AT));
	if (n <= 0)
		return LK_COMPRESS_LEVEL_FAST;
	packed = ZSTD_compress(out, bound, in, (size_t)n, LK_COMPRESS_LEVEL_BEST);
	if (ZSTD_isError(packed))
		return LK_COMPRESS_LEVEL_FAST;
	return (size_t)n >= packed * LK_COMPRESS_GOOD_RATIO ? LK_COMPRESS_LEVEL_BEST
							    : LK_COMPRESS_LEVEL_FAST;
}

/* A compression in progress: the profile (read at offsets, never moved through), the temporary
 * file that takes its zstd frame, and how far it has got. */
struct lk_compress_stream {
	int in, out;
	char *dir, *tmp;  /* tmp: the temporary file's name, NULL if it has none (O_TMPFILE) */
	ZSTD_CCtx *cc;    /* set up at the level chosen; NULL before */
	uint64_t done;    /* raw bytes compressed */
	uint8_t *ibuf, *obuf; /* obuf: ZSTD_CStreamOutSize(), a whole block, no partial flush */
};

/* Compresses the profile from s->done up to `end` (at most; the end of the file first if
 * finish), into s->out as one zstd frame; finish: then ends the frame. */
static int compress_some(struct lk_compress_stream *s, uint64_t end, bool finish)
{
	int k = 0;

	do {
		size_t want = IO_BUF, left;
		if (end - s->done < want)
			want = (size_t)(end - s->done);
		ssize_t n = want ? pread(s->in, s->ibuf, want, (off_t)s->done) : 0;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		s->done += (uint64_t)n;
		ZSTD_inBuffer in = { s->ibuf, (size_t)n, 0 };
		ZSTD_EndDirective how = n == 0 && finish ? ZSTD_e_end : ZSTD_e_continue;
		do {
			ZSTD_outBuffer out = { s->obuf, ZSTD_CStreamOutSize(), 0 };
			left = ZSTD_compressStream2(s->cc, &out, &in, how);
			if (ZSTD_isError(left))
				return -ENOMEM; /* its only failure on valid arguments */
			k = write_all(s->out, s->obuf, out.pos);
			/* e_continue: until the input is taken; e_end: until the frame is out. */
		} while (k == 0 && (how == ZSTD_e_end ? left > 0 : in.pos < in.size));
		if (n == 0)
			break;
	} while (k == 0);
	return k;
}

/* A zstd context set up as leek compresses at `level`: LK_COMPRESS_LEVEL_BEST with its window of
 * 2^LK_COMPRESS_WINDOW_LOG bytes, and zstd's content checksum, which tells a damaged file from a
 * profile cut short, as gzip's CRC does. 0, -ENOMEM or -EINVAL. */
static int setup(ZSTD_CCtx *cc, int level)
{
	if (ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, level)) ||
	    (level == LK_COMPRESS_LEVEL_BEST &&
	     ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_windowLog, LK_COMPRESS_WINDOW_LOG))) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1)))
		return -EINVAL;
	return 0;
}

static int stream_start(struct lk_compress_stream *s, int level)
{
	s->cc = ZSTD_createCCtx();
	if (!s->cc)
		return -ENOMEM;
	return setup(s->cc, level);
}

/* Gives the temporary file (fd, named tmp, or unnamed if tmp is NULL) the name `name` unless a
 * file has it: 0, or -1 and errno (EEXIST if taken). */
static int place(int fd, const char *tmp, const char *name)
{
	char proc[64];
	int k;

	if (!tmp) {
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		return linkat(AT_FDCWD, proc, AT_FDCWD, name, AT_SYMLINK_FOLLOW);
	}
	k = renameat2(AT_FDCWD, tmp, AT_FDCWD, name, RENAME_NOREPLACE);
	if (k < 0 && (errno == EINVAL || errno == ENOSYS)) {
		/* No RENAME_NOREPLACE here: link(2) never replaces either. */
		k = link(tmp, name);
		if (k == 0)
			unlink(tmp);
	}
	return k;
}

/* Names the temporary file the first free one of FILE.zst, FILE.1.zst, ...: 0 and *ret, or a
 * negative errno. Never replaces a file. */
static int name_free(int fd, const char *tmp, const char *path, char **ret)
{
	for (unsigned i = 0; i < MAX_NAMES; i++) {
		char *name;
		int k;

		if ((i ? asprintf(&name, "%s.%u" SUFFIX, path, i)
		       : asprintf(&name, "%s" SUFFIX, path)) < 0)
			return -ENOMEM;
		k = place(fd, tmp, name);
		if (k == 0) {
			*ret = name;
			return 0;
		}
		k = -errno;
		free(name);
		if (k != -EEXIST)
			return k;
	}
	return -EEXIST;
}

/* The directory of path (malloc'ed, NULL when out of memory). */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? strndup(path, (size_t)(slash - path) + 1) : strdup(".");
}

/* Makes a new name in dir durable; best effort (some file systems refuse). */
static void sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0) {
		(void)fsync(fd);
		close(fd);
	}
}

/* A temporary file in dir for FILE.zst: unnamed (*tmp NULL) where the file system allows, else
 * FILE.zst.XXXXXX (*tmp malloc'ed). The descriptor, or a negative errno. */
static int open_temp(const char *dir, const char *path, char **tmp)
{
	int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);

	*tmp = NULL;
	if (fd >= 0)
		return fd;
	if (asprintf(tmp, "%s" SUFFIX ".XXXXXX", path) < 0) {
		*tmp = NULL;
		return -ENOMEM;
	}
	fd = mkostemp(*tmp, O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static bool same_file_state(const struct stat *a, const struct stat *b)
{
	return a->st_size == b->st_size && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

struct lk_compress_stream *lk_compress_stream_free(struct lk_compress_stream *s)
{
	if (!s)
		return NULL;
	ZSTD_freeCCtx(s->cc); /* accepts NULL */
	if (s->tmp)
		unlink(s->tmp);
	if (s->in >= 0)
		close(s->in);
	if (s->out >= 0)
		close(s->out);
	free(s->dir);
	free(s->tmp);
	free(s->ibuf);
	free(s->obuf);
	free(s);
	return NULL;
}

/* The profile at path opened, checked first if `check` (check_profile: refused before any
 * temporary file is made), and its temporary file: 0, or a negative errno (and *msg). */
static int stream_new(const char *path, bool check, struct stat *st,
		      struct lk_compress_stream **ret, char **msg)
{
	struct lk_compress_stream *s = calloc(1, sizeof(*s));
	int k;

	if (!s)
		return -ENOMEM;
	s->out = -1;
	s->in = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (s->in < 0 || fstat(s->in, st) < 0) {
		k = -errno;
		lk_compress_stream_free(s);
		return k;
	}
	if (!S_ISREG(st->st_mode))
		k = fail(msg, -EINVAL, "not a regular file");
	else
		k = check ? check_profile(s->in, st, msg) : 0;
	if (k == 0 && (!(s->dir = dir_of(path)) || !(s->ibuf = malloc(IO_BUF)) ||
		       !(s->obuf = malloc(ZSTD_CStreamOutSize()))))
		k = -ENOMEM;
	if (k == 0)
		k = s->out = open_temp(s->dir, path, &s->tmp);
	if (k < 0) {
		lk_compress_stream_free(s);
		return k;
	}
	*ret = s;
	return 0;
}

int lk_compress_stream_new(const char *path, struct lk_compress_stream **ret)
{
	struct stat st;

	return stream_new(path, false, &st, ret, NULL); /* its writer holds it: checked at the end */
}

int lk_compress_stream_feed(struct lk_compress_stream *s, uint64_t limit)
{
	int k;

	if (!s->cc) {
		/* The level is the one the whole file will get (choose_level): known as soon as
		 * the file is longer than twice the probe's offset. */
		if (limit < 2 * (uint64_t)LK_COMPRESS_PROBE_AT)
			return 0;
		k = stream_start(s, choose_level(s->in, limit));
		if (k < 0)
			return k;
	}
	return limit > s->done ? compress_some(s, limit, false) : 0;
}

int lk_compress_profile(const char *path, int level, unsigned flags, struct lk_compressed *ret,
			char **msg)
{
	return lk_compress_stream_finish(NULL, path, level, flags, ret, msg);
}

int lk_compress_stream_finish(struct lk_compress_stream *s, const char *path, int level,
			      unsigned flags, struct lk_compressed *ret, char **msg)
{
	_cleanup_(freep) char *name = NULL;
	struct stat st, st2, ost;
	int k;

	if (s) {
		if (fstat(s->in, &st) < 0) {
			k = -errno;
			goto out;
		}
		if (s->cc && level != LK_COMPRESS_LEVEL) {
			k = -EINVAL; /* a stream is only ever started at the level chosen */
			goto out;
		}
		k = check_profile(s->in, &st, msg);
	} else {
		k = stream_new(path, true, &st, &s, msg);
		if (k < 0)
			return k;
	}
	if (k == 0 && !s->cc)
		k = stream_start(s, level != LK_COMPRESS_LEVEL
					    ? level
					    : choose_level(s->in, (uint64_t)st.st_size));
	if (k == 0)
		k = compress_some(s, UINT64_MAX, true);
	/* Mode 0600 whatever the umask or the profile's mode: a profile holds the command line and
	 * every module's load address. The profile's times: its mtime is when its process stopped
	 * writing. */
	if (k == 0 && (fchmod(s->out, 0600) < 0 ||
		       futimens(s->out, (const struct timespec[2]){ st.st_atim, st.st_mtim }) < 0 ||
		       fsync(s->out) < 0 || fstat(s->out, &ost) < 0 || fstat(s->in, &st2) < 0))
		k = -errno;
	if (k == 0 && (s->done != (uint64_t)st.st_size || !same_file_state(&st, &st2)))
		k = fail(msg, -ESTALE, "it changed while it was being compressed (is a process "
			 "still writing it?)");
	if (k == 0)
		k = name_free(s->out, s->tmp, path, &name);
	if (k < 0)
		goto out;
	free(s->tmp); /* named now: not to be removed */
	s->tmp = NULL;
	sync_dir(s->dir);
	if (!(flags & LK_COMPRESS_KEEP_RAW) && unlink(path) < 0) {
		k = -errno;
		fail(msg, k, "compressed into %s, but cannot remove the raw file: %s", name,
		     strerror(-k));
		goto out;
	}
	*ret = (struct lk_compressed){ .path = name, .raw_bytes = s->done,
				       .packed_bytes = (uint64_t)ost.st_size };
	name = NULL;
out:
	lk_compress_stream_free(s);
	return k;
}
