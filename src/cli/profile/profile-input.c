/* profile-input.c: how profile.c opens its input twice, and how it words its failures.
 *
 * profile.c reads a profile in two passes. A regular file is simply read again from its start; a
 * pipe can be read once only, so it is first copied to an unlinked temporary file (on disk, in
 * $TMPDIR or /tmp: memory must not follow the size of the input). Never prints: every failure
 * becomes a malloc'ed one-line message, "offset N: what is wrong" when a record is at fault.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "budget.h"
#include "profile-internal.h"
#include "read-z.h"

int profile_fail(char **msg, int r, const char *fmt, ...)
{
	va_list ap;

	if (msg && !*msg) { /* the first message is the cause; keep it */
		va_start(ap, fmt);
		if (vasprintf(msg, fmt, ap) < 0)
			*msg = NULL;
		va_end(ap);
	}
	return r;
}

int profile_fail_reader(char **msg, const struct lk_reader *rd, int r)
{
	const char *s = rd ? lk_reader_error(rd) : "";

	return profile_fail(msg, r, "%s", *s ? s : strerror(-r));
}

int profile_fail_record(char **msg, const struct lk_record *rec, int r, const char *what)
{
	return profile_fail(msg, r, "offset %" PRIu64 ": %s", rec->offset,
			    what ? what : strerror(-r));
}

int profile_fail_budget(char **msg, int r, uint64_t offset, const struct lk_profile *p,
			const struct live_set *ls)
{
	char limit[32];
	size_t stacks = p->nstacks - 1; /* stack 0, "no stack", is no STACK record */

	return profile_fail(msg, r, "offset %" PRIu64 ": the profile needs more than %s of memory "
			    "to read (--max-memory; %" PRIu64 " live block%s and %zu stack%s so far)",
			    offset, lk_budget_format(limit, sizeof(limit), lk_budget_limit()),
			    ls->count, ls->count == 1 ? "" : "s", stacks, stacks == 1 ? "" : "s");
}

/* Copies a pipe into an unlinked temporary file; closes fd. Only a profile is copied to its end:
 * past 8 bytes without the magic (or zstd's or gzip's, still compressed: the reader decompresses
 * it) the copy stops, and the reader says what the input is not (`leek report /dev/zero` must not
 * fill the disk). */
static int spool(int fd, int *ret, char **msg)
{
	const char *dir = getenv("TMPDIR");
	char tmp[4096], buf[65536], head[8];
	size_t got = 0;
	int out, k = 0;
	ssize_t n;

	if (!dir || !*dir)
		dir = "/tmp";
	out = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (out < 0 && snprintf(tmp, sizeof(tmp), "%s/leek-XXXXXX", dir) < (int)sizeof(tmp)) {
		out = mkostemp(tmp, O_CLOEXEC); /* file systems without O_TMPFILE */
		if (out >= 0)
			unlink(tmp);
	}
	if (out < 0)
		k = -errno;
	while (k == 0 && (n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			k = -errno;
			break;
		}
		errno = 0;
		if (write(out, buf, (size_t)n) != n) { /* a regular file takes it all or fails */
			k = errno ? -errno : -EIO;
			break;
		}
		for (ssize_t i = 0; i < n && got < sizeof(head); i++)
			head[got++] = buf[i];
		if (got == sizeof(head) && memcmp(head, LK_FORMAT_MAGIC, sizeof(head)) != 0 &&
		    lk_codec_of(head, got) == LK_CODEC_NONE)
			break;
	}
	close(fd);
	if (k < 0) {
		if (out >= 0)
			close(out);
		return profile_fail(msg, k, "copying the input to a temporary file: %s",
				    strerror(-k));
	}
	*ret = out;
	return 0;
}

int profile_open_input(const char *path, int *ret, char **msg)
{
	struct stat st;
	int fd, fl, k;

	/* O_NONBLOCK: opening a FIFO must not wait for a writer (as the reader does). */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return profile_fail(msg, -errno, "%s", strerror(errno));
	if (fstat(fd, &st) < 0)
		k = errno;
	else if (S_ISDIR(st.st_mode))
		k = EISDIR;
	else if ((fl = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
		k = errno;
	else
		k = 0;
	if (k) {
		close(fd);
		return profile_fail(msg, -k, "%s", strerror(k));
	}
	if (!S_ISREG(st.st_mode))
		return spool(fd, ret, msg);
	*ret = fd;
	return 0;
}

int profile_open_reader(int fd, uint64_t limit, uint64_t whole, struct lk_reader **ret, char **msg)
{
	struct lk_reader *rd;
	int r;

	if (lseek(fd, 0, SEEK_SET) < 0)
		return profile_fail(msg, -errno, "%s", strerror(errno));
	rd = lk_reader_new();
	if (!rd)
		return profile_fail(msg, -ENOMEM, "out of memory");
	r = limit ? lk_reader_follow(rd, limit) : 0; /* before opening: the header too */
	if (limit)
		lk_reader_follow_whole(rd, whole);
	if (r >= 0)
		r = lk_reader_open_fd(rd, fd);
	if (r < 0) {
		profile_fail_reader(msg, rd, r);
		lk_reader_free(rd);
		return r;
	}
	*ret = rd;
	return 0;
}

int profile_open_chain(const struct lk_profile *p, struct lk_reader **ret, char **msg)
{
	struct lk_reader *rd = lk_reader_new();
	int r;

	if (!rd)
		return profile_fail(msg, -ENOMEM, "out of memory");
	r = p->opts.limit ? lk_reader_follow(rd, p->opts.limit) : 0; /* the newest segment's */
	if (p->opts.limit)
		lk_reader_follow_whole(rd, p->opts.limit_whole);
	if (r >= 0)
		r = lk_reader_open_chain(rd, (const char *const *)p->chain.paths, p->chain.n,
					 p->chain.segments[0]);
	if (r < 0) {
		profile_fail_reader(msg, rd, r);
		lk_reader_free(rd);
		return r;
	}
	*ret = rd;
	return 0;
}
