/* source.c: the profile that `leek watch` and `leek top` follow: which file, how much of it is
 * written for good, whether its process still runs, and its heap estimate record by record.
 *
 * With a pid, the file is the one its process maps (follow.c); with a file, its process is the
 * header's pid. The process has gone when /proc says it is gone or a zombie; a pid reused by
 * another process after the exit is not told from the first one (a FILE whose process died long
 * ago and whose pid runs something else is followed until that ends). The heap follower reads each record once (lk_profile_follow),
 * so following costs what the process writes, never more; the views read the file again.
 * `leek push` reads nothing else: its intervals are the follower's snapshots, so the follower
 * reads below a SYNC's reply too, to the file's end once the process has gone, and keeps the
 * message of its failure for push to report.
 *
 * A rotated profile (LEEK_MAX_SIZE, LEEK_MAX_AGE) goes on in FILE.seg1, FILE.seg2...: once the
 * next segment of the one followed is there, with the same pid and origin, it is followed
 * instead, from its start. It begins with the blocks live then, so the live views lose nothing;
 * what was allocated before it is in the segments before.
 *
 * With --max-lag (lk_live_sync) a look also posts a SYNC into the profile's control block now and
 * then (ctl.h) and reads libleek's reply, which moves the limit up to the last record: the one
 * write to the file, four bytes of command and four of seq, and what it costs the process is one
 * look at its RSS interval with two pwrites more.
 *
 * Never: write to the profile but through ctl.c, signal the process, or print.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "live.h"
#include "util.h"

#define FIND_POLL_NS 50000000ull  /* how often a pid's maps are read while its profile is looked
				   * for: 20 times a second, a cheap read of /proc */
#define SYNC_POLL_NS 2000000ull  /* how often lk_live_sync_now looks for the reply */
#define FOLLOW_STEP (1u << 20)    /* records read at a time by the heap follower (as run-follow) */

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/* Opens the file and checks that it is a raw profile: the magic, and the pid in its header. */
static int open_file(struct lk_live_source *s)
{
	struct lk_file_header h;
	ssize_t n;

	s->fd = lk_open_regular(AT_FDCWD, s->path, &s->st);
	if (s->fd < 0)
		return s->fd;
	n = pread(s->fd, &h, sizeof(h), 0);
	if (n < 0)
		return -errno;
	if (n != (ssize_t)sizeof(h) || memcmp(h.magic, LK_FORMAT_MAGIC, 8) != 0)
		return -EMEDIUMTYPE; /* compressed profiles are read whole: `leek report` */
	if (!s->pid)
		s->pid = (pid_t)le32toh(h.pid);
	if (le32toh(h.pid) != (uint32_t)s->pid)
		return -ESRCH;
	s->header_size = le32toh(h.header_size);
	s->segment = 0;
	s->origin_ns = le64toh(h.start_realtime_ns);
	struct lk_rot_block rot;
	if (le32toh(h.flags) & LK_HDR_ROTATED && s->header_size >= LK_CTL_SIZE + LK_ROT_SIZE &&
	    pread(s->fd, &rot, sizeof(rot), (off_t)(s->header_size - LK_CTL_SIZE - LK_ROT_SIZE)) ==
		    (ssize_t)sizeof(rot) &&
	    !memcmp(rot.magic, LK_ROT_MAGIC, 4)) {
		s->segment = le32toh(rot.segment);
		s->origin_ns = le64toh(rot.origin_realtime_ns);
	}
	return 0;
}

/* The rotated profile's next segment, if it is there: followed from now on (the header
 * comment). Its name is the first segment's with .seg and the number. */
static void next_segment(struct lk_live_source *s)
{
	struct lk_live_source next = *s;
	char *path;
	size_t base = strlen(s->path);
	const char *dot = strrchr(s->path, '.');

	if (s->segment && dot && !strncmp(dot, ".seg", 4) && all_digits(dot + 4))
		base = (size_t)(dot - s->path);
	if (asprintf(&path, "%.*s.seg%" PRIu32, (int)base, s->path, s->segment + 1) < 0)
		return;
	next.path = path;
	if (access(path, F_OK) < 0 || open_file(&next) < 0 || next.segment != s->segment + 1 ||
	    next.origin_ns != s->origin_ns) {
		if (next.fd >= 0 && next.fd != s->fd)
			close(next.fd);
		free(path);
		return;
	}
	lk_profile_follow_free(s->f);
	close(s->fd);
	free(s->path);
	lk_ctl_close(&s->ctl); /* the old segment's control block: libleek reads the new one's */
	next.ctl = (struct lk_ctl){ .fd = -1 };
	*s = next;
	s->f = NULL;
	s->follow_failed = false;
	free(s->follow_msg); /* the old segment's failure, if any: the new one is read afresh */
	s->follow_msg = NULL;
	s->follow_err = 0;
	s->lim = (struct lk_follow_limit){ 0 };
	s->synced_ns = 0;
	if (s->max_lag_ns)
		lk_live_sync(s, s->max_lag_ns, NULL);
}

int lk_live_open(const char *arg, uint64_t wait_ns, struct lk_symbolizer *sym,
		 struct lk_live_source **ret)
{
	struct lk_live_source *s = calloc(1, sizeof(*s));
	uint64_t until = lk_monotonic_ns() + wait_ns;
	int r;

	if (!s)
		return -ENOMEM;
	s->fd = -1;
	s->ctl.fd = -1;
	s->sym = sym;
	if (all_digits(arg)) {
		long pid = strtol(arg, NULL, 10);
		if (pid <= 0 || pid > 0x3fffffff) {
			free(s);
			return -ESRCH;
		}
		s->pid = (pid_t)pid;
		while ((r = lk_follow_find_pid(s->pid, &s->path)) == -ENOENT && lk_monotonic_ns() < until)
			nanosleep(&(struct timespec){ 0, FIND_POLL_NS }, NULL);
	} else {
		s->path = strdup(arg);
		r = s->path ? 0 : -ENOMEM;
	}
	if (r >= 0)
		r = open_file(s);
	if (r < 0) {
		lk_live_close(s);
		return r;
	}
	*ret = s;
	return 0;
}

/* The heap follower stops for good: the views read the file themselves, and say what is wrong
 * with it; `leek push`, which reads only the follower, says it from follow_err and follow_msg. */
static void follow_fail(struct lk_live_source *s, int r, char *msg)
{
	s->f = lk_profile_follow_free(s->f);
	s->follow_failed = true; /* no second try */
	s->follow_err = r;
	free(s->follow_msg);
	s->follow_msg = msg;
}

/* The heap follower's reading up to the limit (to the end once the process has gone: `end`). */
static void follow_heap(struct lk_live_source *s, bool end)
{
	uint64_t limit = end ? UINT64_MAX : s->lim.limit;
	char *msg = NULL;
	int r;

	if (!s->f) {
		struct lk_file_header h;
		if (limit < LK_HEADER_FIXED_SIZE ||
		    pread(s->fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
		    le32toh(h.header_size) > limit - LK_HEADER_FIXED_SIZE)
			return; /* its header is not all below the limit yet */
		r = lk_profile_follow_open(s->path, limit,
					   &(struct lk_profile_opts){ .at_ns = UINT64_MAX,
								      .no_live_list = true },
					   &s->f, &msg);
		if (r < 0) {
			follow_fail(s, r, msg);
			return;
		}
	}
	/* A SYNC's reply: the records before it are read up to it, not only those a whole
	 * record's room below the limit (an interval of push holds what was written up to it). */
	lk_profile_follow_whole(s->f, s->lim.whole);
	for (;;) {
		uint64_t from = lk_profile_follow_offset(s->f), at = from + FOLLOW_STEP;
		if (at > limit || end) /* at the end, the rest at once: nothing waits on it */
			at = limit;
		r = lk_profile_follow_step(s->f, at, &msg);
		if (r < 0) {
			follow_fail(s, r, msg);
			return;
		}
		if (at == limit || lk_profile_follow_offset(s->f) == from)
			return;
	}
}

int lk_live_sync(struct lk_live_source *s, uint64_t max_lag_ns, const char **why)
{
	const char *w = NULL;
	int r = 0;

	lk_ctl_close(&s->ctl);
	s->max_lag_ns = max_lag_ns;
	if (max_lag_ns)
		r = lk_ctl_open(&s->ctl, (uint32_t)s->pid, s->path, &w);
	if (r < 0)
		s->max_lag_ns = 0;
	if (why)
		*why = w;
	return r;
}

/* The SYNC: its reply if it came, and a new one once the last is max_lag_ns old. A command that
 * another `leek ctl` left waiting is never replaced: the SYNC waits for the next look. */
static void sync_step(struct lk_live_source *s, uint64_t size)
{
	uint64_t synced, now;

	if (s->ctl.seq) {
		int r = lk_ctl_check(&s->ctl, &synced);
		struct stat st;
		if (r > 0) {
			if (synced > size && fstat(s->fd, &st) == 0) /* it grew since the look */
				size = (uint64_t)st.st_size;
			lk_follow_limit_synced(&s->lim, synced, size);
			s->syncs++;
		}
		if (r >= 0)
			return; /* the next one at a later look */
	}
	now = lk_monotonic_ns();
	if (now - s->synced_ns >= s->max_lag_ns &&
	    lk_ctl_post(&s->ctl, LK_CTL_SYNC, NULL, 0, false, NULL) == 0)
		s->synced_ns = now;
}

void lk_live_sync_now(struct lk_live_source *s, uint64_t wait_ns)
{
	uint64_t until = lk_monotonic_ns() + wait_ns;
	struct stat st;

	if (!s->max_lag_ns || s->ended || fstat(s->fd, &st) < 0)
		return;
	sync_step(s, (uint64_t)st.st_size); /* the reply to one posted before, if it came */
	s->synced_ns = 0;
	sync_step(s, (uint64_t)st.st_size); /* one now, unless one is still waiting */
	while (s->ctl.seq && lk_monotonic_ns() < until) {
		nanosleep(&(struct timespec){ 0, SYNC_POLL_NS }, NULL);
		if (fstat(s->fd, &st) < 0)
			return;
		lk_follow_limit_update(&s->lim, (uint64_t)st.st_size);
		sync_step(s, (uint64_t)st.st_size);
	}
}

int lk_live_poll(struct lk_live_source *s)
{
	struct stat st;
	bool alive;

	if (fstat(s->fd, &st) < 0)
		return -errno;
	alive = !s->ended && lk_follow_pid_alive(s->pid);
	uint32_t seg = s->segment;
	next_segment(s);
	if (s->segment != seg && fstat(s->fd, &st) < 0)
		return -errno;
	lk_follow_limit_update(&s->lim, (uint64_t)st.st_size);
	if (s->max_lag_ns && alive)
		sync_step(s, (uint64_t)st.st_size);
	if (!alive)
		s->ended = true;
	if (!s->follow_failed)
		follow_heap(s, s->ended);
	return alive ? 1 : 0;
}

void lk_live_heap(const struct lk_live_source *s, double *now, double *peak, uint64_t *t_ns)
{
	*now = *peak = 0;
	*t_ns = 0;
	if (s->f)
		lk_profile_follow_heap(s->f, now, peak, t_ns);
}

void lk_live_close(struct lk_live_source *s)
{
	if (!s)
		return;
	lk_profile_follow_free(s->f);
	free(s->follow_msg);
	lk_ctl_close(&s->ctl);
	if (s->fd >= 0)
		close(s->fd);
	free(s->path);
	free(s);
}
