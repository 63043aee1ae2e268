/* ctl.c: posting a command into the control block of a running process's profile, and checking
 * that libleek carried it out (ctl.h; the block: include/leek/format.h, docs/format.md "The
 * control block").
 *
 * A pid's profile is the file of its header's pid that the process maps (libleek's window into
 * it, whose name in /proc/PID/maps is the unnamed file's it was created as), opened through
 * /proc/PID/map_files, or else the one `leek watch` finds by the process's LEEK_OUTPUT
 * (follow.c).
 *
 * Never: write a file that is not a version 7 profile with a control block, or anything in it but
 * the block's command fields and seq; hold the lock while waiting for libleek.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "follow.h"
#include "leek/format.h"
#include "util.h"

#define LOCK_POLL_US 5000 /* how often a lock held by another `leek ctl` is tried again */

/* The header at fd if it is a profile of pid (0: any) with a control block: 0, or -EINVAL
 * (*why says what it is instead). */
static int read_header(int fd, uint32_t pid, struct lk_file_header *h, const char **why)
{
	if (pread(fd, h, sizeof(*h), 0) != (ssize_t)sizeof(*h) ||
	    memcmp(h->magic, LK_FORMAT_MAGIC, 8) != 0) {
		*why = "not a leek profile (or a compressed one: only a running process's raw "
		       "profile takes commands)";
		return -EINVAL;
	}
	if (le16toh(h->version) > LK_FORMAT_VERSION ||
	    le16toh(h->fixed_size) != LK_HEADER_FIXED_SIZE ||
	    le32toh(h->header_size) > LK_HEADER_FIXED_SIZE + 2 * LK_MAX_PATH + 65536 ||
	    le32toh(h->header_size) % 8) {
		*why = "a damaged header, or a profile of a newer leek";
		return -EINVAL;
	}
	if (le16toh(h->version) < 7 || !(le32toh(h->flags) & LK_HDR_CTL)) {
		*why = "a profile without a control block (written by a libleek before format "
		       "version 7)";
		return -EINVAL;
	}
	if (le32toh(h->header_size) < LK_HEADER_FIXED_SIZE + LK_CTL_SIZE) {
		*why = "a profile whose header is too short for its control block";
		return -EINVAL;
	}
	if (pid && le32toh(h->pid) != pid) {
		*why = "another process's profile";
		return -EINVAL;
	}
	return 0;
}

/* fd, if it is a profile of pid with a control block (else closed): fd or -1. */
static int keep_if_profile(int fd, uint32_t pid)
{
	struct lk_file_header h;
	const char *why;

	if (fd >= 0 && read_header(fd, pid, &h, &why) == 0)
		return fd;
	if (fd >= 0)
		close(fd);
	return -1;
}

/* The profile that process pid writes, open for writing; -1 if none. */
static int profile_of(uint32_t pid)
{
	_cleanup_(freep) char *named = NULL;
	char path[128], line[PATH_MAX + 256];
	unsigned long long start, end, ino;
	char perms[8];
	int fd = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%" PRIu32 "/maps", pid);
	if ((f = fopen(path, "re"))) {
		while (fd < 0 && fgets(line, sizeof(line), f)) {
			if (sscanf(line, "%llx-%llx %7s %*x %*x:%*x %llu", &start, &end, perms, &ino) !=
				    4 ||
			    perms[3] != 's' || !ino)
				continue;
			snprintf(path, sizeof(path), "/proc/%" PRIu32 "/map_files/%llx-%llx", pid,
				 start, end);
			fd = keep_if_profile(open(path, O_RDWR | O_CLOEXEC), pid);
		}
		fclose(f);
	}
	if (fd < 0 && lk_follow_find_pid((pid_t)pid, &named) == 0)
		fd = keep_if_profile(open(named, O_RDWR | O_CLOEXEC | O_NOFOLLOW), pid);
	return fd;
}

int lk_ctl_open(struct lk_ctl *c, uint32_t pid, const char *path, const char **why)
{
	struct lk_file_header h;
	int r;

	*c = (struct lk_ctl){ .fd = -1 };
	*why = NULL;
	if (path)
		c->fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	else
		c->fd = profile_of(pid);
	if (c->fd < 0)
		return path ? -errno : -ENOENT;
	r = read_header(c->fd, pid, &h, why);
	if (r < 0) {
		lk_ctl_close(c);
		return r;
	}
	c->at = (off_t)(le32toh(h.header_size) - LK_CTL_SIZE);
	c->pid = le32toh(h.pid);
	return 0;
}

void lk_ctl_close(struct lk_ctl *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->seq = 0;
}

/* Takes the exclusive lock within timeout_ns: 0, or -ETIMEDOUT. */
static int lock_within(int fd, uint64_t timeout_ns)
{
	uint64_t until = lk_monotonic_ns() + timeout_ns;

	while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		if (lk_monotonic_ns() >= until)
			return -ETIMEDOUT;
		usleep(LOCK_POLL_US);
	}
	return 0;
}

static int post_locked(struct lk_ctl *c, uint32_t cmd, const char *name, bool replace,
		       bool *replaced)
{
	struct lk_ctl_block b;
	struct timespec rt;
	uint32_t seq, v;

	if (pread(c->fd, &b, sizeof(b), c->at) != (ssize_t)sizeof(b) ||
	    memcmp(b.magic, LK_CTL_MAGIC, 4) != 0)
		return -EBADMSG; /* cut short, or damaged */
	if (b.ack != b.seq) {
		if (!replace)
			return -EBUSY;
		*replaced = true;
	}
	seq = le32toh(b.seq) + 1;
	if (!seq)
		seq = 1; /* 0 means none here; libleek compares for inequality only */
	b.cmd = htole32(cmd);
	clock_gettime(CLOCK_REALTIME, &rt);
	b.sent_realtime_ns = htole64((uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec);
	memset(b.name, 0, sizeof(b.name));
	if (name)
		memcpy(b.name, name, strnlen(name, sizeof(b.name)));
	/* The command's fields, then seq: libleek acts on a seq it has not acknowledged. */
	if (pwrite(c->fd, &b.cmd, sizeof(b.cmd), c->at + offsetof(struct lk_ctl_block, cmd)) < 0 ||
	    pwrite(c->fd, (const char *)&b + offsetof(struct lk_ctl_block, sent_realtime_ns),
		   LK_CTL_SIZE - offsetof(struct lk_ctl_block, sent_realtime_ns),
		   c->at + offsetof(struct lk_ctl_block, sent_realtime_ns)) < 0)
		return -errno;
	v = htole32(seq);
	if (pwrite(c->fd, &v, sizeof(v), c->at + offsetof(struct lk_ctl_block, seq)) < 0)
		return -errno;
	c->seq = seq;
	c->posted_ns = lk_monotonic_ns();
	return 0;
}

int lk_ctl_post(struct lk_ctl *c, uint32_t cmd, const char *name, uint64_t timeout_ns,
		bool replace, bool *replaced)
{
	bool dummy = false;
	int r = lock_within(c->fd, timeout_ns);

	if (r < 0)
		return r == -ETIMEDOUT ? -EAGAIN : r;
	r = post_locked(c, cmd, name, replace, replaced ? replaced : &dummy);
	flock(c->fd, LOCK_UN);
	return r;
}

int lk_ctl_check(struct lk_ctl *c, uint64_t *synced)
{
	struct lk_ctl_block b;
	int r = 0;

	if (!c->seq)
		return -ECANCELED;
	if (synced && flock(c->fd, LOCK_EX | LOCK_NB) < 0)
		return errno == EWOULDBLOCK || errno == EINTR ? 0 : -errno;
	if (pread(c->fd, &b, sizeof(b), c->at) != (ssize_t)sizeof(b) ||
	    memcmp(b.magic, LK_CTL_MAGIC, 4) != 0)
		r = -EBADMSG;
	else if (le32toh(b.seq) != c->seq)
		r = -ECANCELED; /* another poster's command came after it */
	else if (le32toh(b.ack) == c->seq)
		r = 1;
	if (r == 1 && synced)
		*synced = le64toh(b.synced);
	if (synced)
		flock(c->fd, LOCK_UN);
	if (r != 0)
		c->seq = 0;
	return r;
}
