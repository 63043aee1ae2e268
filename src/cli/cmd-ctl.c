/* cmd-ctl.c: `leek ctl PID|FILE on|off|mark NAME`: switches a running process's profiling on or
 * off, or marks a moment in its profile, without a restart.
 *
 * The command goes through the control block at the end of the profile's header (format.h,
 * struct lk_ctl_block): cmd, time and name first, then seq + 1, which libleek reads at its next
 * look (with an RSS record: src/preload/writer-control.c) and acknowledges by storing ack = seq,
 * with a CTL record in the profile. This waits for that ack, up to --timeout. An exclusive
 * flock(2) of the profile keeps two `leek ctl`s from writing the block at once; libleek takes no
 * lock and needs none (it reads seq, and the block, in one pread).
 *
 * A PID's profile is the file of its header's pid that the process maps (libleek's window into
 * it), or else the one `leek watch` finds by the process's LEEK_OUTPUT (follow.c). Never: write a file that is not
 * a version 7 profile with a control block, or anything in it but the block's command fields.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "follow.h"
#include "leek/format.h"
#include "report.h"
#include "util.h"

enum { CTL_EXIT_PENDING = 3 }; /* written, not carried out within --timeout */

static const char *arg_timeout = "5s";

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

/* The profile that process pid writes, open for writing: a shared mapping of a file of its (the
 * window into its profile, whose name in /proc/PID/maps is the unnamed file's it was created as)
 * opened through /proc/PID/map_files, or else the file `leek watch` finds by the process's
 * LEEK_OUTPUT (follow.c). -1 if none. */
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

/* Takes the exclusive lock within timeout_ns: 0, or -ETIMEDOUT. */
static int lock_within(int fd, uint64_t timeout_ns)
{
	uint64_t until = lk_monotonic_ns() + timeout_ns;

	while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		if (lk_monotonic_ns() >= until)
			return -ETIMEDOUT;
		usleep(5000);
	}
	return 0;
}

/* Sends cmd (with name, for a mark) through the control block at ctl, and waits up to timeout_ns
 * for its ack: 0 and *took_ns, -ETIMEDOUT (written, not carried out yet), or another negative
 * errno. */
static int send_cmd(int fd, off_t ctl, uint32_t cmd, const char *name, uint64_t timeout_ns,
		    uint64_t *took_ns)
{
	struct lk_ctl_block c;
	uint32_t seq, v;
	uint64_t t0;

	if (pread(fd, &c, sizeof(c), ctl) != (ssize_t)sizeof(c) ||
	    memcmp(c.magic, LK_CTL_MAGIC, 4) != 0)
		return -EBADMSG; /* cut short, or damaged */
	if (c.ack != c.seq)
		lk_msg("ctl: a command sent before was not carried out yet; this one replaces it");
	seq = le32toh(c.seq) + 1;
	c.cmd = htole32(cmd);
	struct timespec rt;
	clock_gettime(CLOCK_REALTIME, &rt);
	c.sent_realtime_ns = htole64((uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec);
	memset(c.name, 0, sizeof(c.name));
	if (name)
		memcpy(c.name, name, strlen(name));
	/* The command's fields, then seq: libleek acts on a seq it has not acknowledged. */
	if (pwrite(fd, &c.cmd, sizeof(c.cmd), ctl + offsetof(struct lk_ctl_block, cmd)) < 0 ||
	    pwrite(fd, (const char *)&c + offsetof(struct lk_ctl_block, sent_realtime_ns),
		   LK_CTL_SIZE - offsetof(struct lk_ctl_block, sent_realtime_ns),
		   ctl + offsetof(struct lk_ctl_block, sent_realtime_ns)) < 0)
		return -errno;
	v = htole32(seq);
	t0 = lk_monotonic_ns();
	if (pwrite(fd, &v, sizeof(v), ctl + offsetof(struct lk_ctl_block, seq)) < 0)
		return -errno;
	for (;;) {
		if (pread(fd, &v, sizeof(v), ctl + offsetof(struct lk_ctl_block, ack)) ==
			    (ssize_t)sizeof(v) &&
		    le32toh(v) == seq) {
			*took_ns = lk_monotonic_ns() - t0;
			return 0;
		}
		if (lk_monotonic_ns() - t0 >= timeout_ns)
			return -ETIMEDOUT;
		usleep(2000);
	}
}

int lk_cmd_ctl(int argc, char *argv[])
{
	static const struct option options[] = {
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	struct lk_file_header h;
	const char *target, *what, *name = NULL, *path, *why = NULL;
	uint64_t timeout_ns, took = 0;
	uint32_t cmd, pid = 0;
	char *end, pidname[64];
	int c, fd, k;

	optind = 0;
	while ((c = getopt_long(argc, argv, "t:h", options, NULL)) >= 0) {
		switch (c) {
		case 't':
			arg_timeout = optarg;
			break;
		case 'h':
			return lk_cmd_usage(stdout, "ctl", LK_EXIT_OK);
		default:
			return lk_cmd_usage(stderr, "ctl", LK_EXIT_USAGE);
		}
	}
	if (argc - optind < 2)
		return lk_cmd_usage(stderr, "ctl", LK_EXIT_USAGE);
	target = argv[optind];
	what = argv[optind + 1];
	if (!strcmp(what, "on") || !strcmp(what, "off")) {
		cmd = what[1] == 'n' ? LK_CTL_ON : LK_CTL_OFF;
		if (argc - optind != 2)
			return lk_cmd_usage(stderr, "ctl", LK_EXIT_USAGE);
	} else if (!strcmp(what, "mark")) {
		cmd = LK_CTL_MARK;
		if (argc - optind != 3)
			return lk_cmd_usage(stderr, "ctl", LK_EXIT_USAGE);
		name = argv[optind + 2];
		if (!lk_mark_name_ok(name)) {
			lk_msg("ctl: mark '%s': a name is 1 to %d printable bytes, without spaces",
			       name, LK_CTL_NAME_MAX);
			return LK_EXIT_USAGE;
		}
	} else {
		lk_msg("ctl: '%s' is not on, off or mark", what);
		return LK_EXIT_USAGE;
	}
	if (lk_parse_duration(arg_timeout, &timeout_ns) < 0) {
		lk_msg("ctl: --timeout: '%s' is not a time (e.g. 5s, 500ms)", arg_timeout);
		return LK_EXIT_USAGE;
	}

	/* A number is a pid unless a file of that name is there. */
	errno = 0;
	unsigned long v = strtoul(target, &end, 10);
	path = target;
	if (*target && !*end && !errno && v > 0 && v <= UINT32_MAX && access(target, F_OK) != 0) {
		pid = (uint32_t)v;
		fd = profile_of(pid);
		if (fd < 0) {
			lk_msg("ctl: process %" PRIu32 " holds no leek profile that takes commands (is "
			       "it running, under libleek.so of format version 7 or later, and yours?)",
			       pid);
			return LK_EXIT_FILE;
		}
		snprintf(pidname, sizeof(pidname), "process %" PRIu32 "'s profile", pid);
		path = pidname;
	} else if ((fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW)) < 0) {
		return lk_error(-errno, "ctl: %s", path), LK_EXIT_FILE;
	}
	if (read_header(fd, pid, &h, &why) < 0) {
		lk_msg("ctl: %s: %s", path, why);
		close(fd);
		return LK_EXIT_FILE;
	}
	k = lock_within(fd, timeout_ns);
	if (k == 0)
		k = send_cmd(fd, (off_t)(le32toh(h.header_size) - LK_CTL_SIZE), cmd, name, timeout_ns,
			     &took);
	close(fd); /* and the lock with it */
	if (k == -ETIMEDOUT) {
		lk_msg("ctl: %s: %s %s not carried out within %s: process %" PRIu32 " looks for a "
		       "command when it allocates (with an RSS record, every LEEK_RSS_INTERVAL_MS); "
		       "it stays in place and is carried out at its next look", path, what,
		       name ? name : "", arg_timeout, le32toh(h.pid));
		return CTL_EXIT_PENDING;
	}
	if (k == -EBADMSG) {
		lk_msg("ctl: %s: its control block (offset %" PRIu32 ") is damaged or cut off", path,
		       le32toh(h.header_size) - LK_CTL_SIZE);
		return LK_EXIT_FILE;
	}
	if (k < 0)
		return lk_error(k, "ctl: %s", path), LK_EXIT_FILE;
	printf("%" PRIu32 ": %s%s%s, carried out in %.3f s\n", le32toh(h.pid), what,
	       name ? " " : "", name ? name : "", (double)took / 1e9);
	return LK_EXIT_OK;
}
