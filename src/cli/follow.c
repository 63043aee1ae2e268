/* follow.c: the safe read limit of a profile being written, and finding the profiles of a run or
 * of a running process.
 *
 * The limit follows the rule of docs/format.md, "Reading a profile being written": once the size
 * is seen larger than a size S seen before, every byte below S - LK_READ_RECORD_MAX is written
 * for good; and every byte below the size now less LK_GROW_MAX and LK_READ_RECORD_MAX always is.
 * A SYNC's reply (ctl.h), libleek's own word for it, moves the limit up to the last record.
 *
 * A profile is found as `leek run` finds its run's (the output pattern, the session and the pid in
 * the header), and for a pid as libleek names it (lk_follow_find_pid).
 *
 * Never: write to a profile, or signal a process; a process is only looked at through /proc.
 */
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "follow.h"
#include "options.h"
#include "read.h"
#include "util.h"

uint64_t lk_follow_limit_update(struct lk_follow_limit *l, uint64_t size)
{
	uint64_t slack = LK_GROW_MAX + LK_READ_RECORD_MAX;

	if (size > l->seen) {
		if (l->seen > LK_READ_RECORD_MAX && l->seen - LK_READ_RECORD_MAX > l->limit)
			l->limit = l->seen - LK_READ_RECORD_MAX;
		l->seen = size;
	}
	if (size > slack && size - slack > l->limit)
		l->limit = size - slack;
	return l->limit;
}

uint64_t lk_follow_limit_synced(struct lk_follow_limit *l, uint64_t synced, uint64_t size)
{
	if (synced > size)
		return l->limit;
	if (synced > l->limit)
		l->limit = synced;
	if (synced > l->whole)
		l->whole = synced;
	return l->limit;
}

static int cmp_found(const void *a, const void *b)
{
	const struct lk_follow_profile *x = a, *y = b;

	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* Turns the output pattern's file name into an fnmatch(3) pattern: %p, %e -> '*'. */
static void name_pattern(const char *name, char *out, size_t size)
{
	size_t n = 0;

	for (const char *s = name; *s && n + 3 < size; s++) {
		if (*s == '%' && s[1] == '%')
			out[n++] = *++s;
		else if (*s == '%' && s[1]) {
			out[n++] = '*';
			s++;
		} else {
			if (strchr("*?[\\", *s))
				out[n++] = '\\';
			out[n++] = *s;
		}
	}
	out[n] = 0;
}

size_t lk_follow_find_profiles(const char *pattern, uint64_t session, uint64_t pid, bool quiet,
			    struct lk_follow_profile **ret)
{
	char dir[4096], glob[4096], glob_n[4096 + 8], glob_s[4096 + 16];
	const char *slash = strrchr(pattern, '/');
	struct lk_follow_profile *list = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d;

	*ret = NULL;
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - pattern), pattern);
	if (!*dir)
		strcpy(dir, "/");
	if (strchr(dir, '%')) {
		if (!quiet)
			lk_msg("not looking for the profiles: the output directory %s has a %% "
			       "pattern", dir);
		return 0;
	}
	name_pattern(slash + 1, glob, sizeof(glob));
	snprintf(glob_n, sizeof(glob_n), "%s.[0-9]*", glob); /* never overwritten: .1, .2... */
	snprintf(glob_s, sizeof(glob_s), "%s.seg[0-9]*", glob); /* rotated segments */
	d = opendir(dir);
	if (!d) {
		if (!quiet)
			lk_error(-errno, "cannot list %s to find the profiles", dir);
		return 0;
	}
	while ((de = readdir(d))) {
		struct lk_file_header h;
		struct stat st;
		if (fnmatch(glob, de->d_name, 0) != 0 && fnmatch(glob_n, de->d_name, 0) != 0 &&
		    fnmatch(glob_s, de->d_name, 0) != 0)
			continue;
		int fd = lk_open_regular(dirfd(d), de->d_name, &st);
		if (fd < 0)
			continue;
		ssize_t k = pread(fd, &h, sizeof(h), 0);
		struct lk_rot_block rot = { .segment = 0 };
		uint32_t flags = le32toh(h.flags), hsize = le32toh(h.header_size);
		if (k == (ssize_t)sizeof(h) && flags & LK_HDR_ROTATED && flags & LK_HDR_CTL &&
		    hsize >= LK_HEADER_FIXED_SIZE + LK_CTL_SIZE + LK_ROT_SIZE &&
		    (pread(fd, &rot, sizeof(rot), hsize - LK_CTL_SIZE - LK_ROT_SIZE) != sizeof(rot) ||
		     memcmp(rot.magic, LK_ROT_MAGIC, 4)))
			rot.segment = 0;
		close(fd);
		if (k != (ssize_t)sizeof(h) || memcmp(h.magic, LK_FORMAT_MAGIC, 8) != 0 ||
		    le64toh(h.session) != session || (pid && le32toh(h.pid) != pid))
			continue;
		/* The session is no secret (a profile's header is as readable as its directory
		 * lets it be): a file of another user's that carries it was planted, and its
		 * paths would be opened and its name printed as ours. */
		if (st.st_uid != geteuid()) {
			if (!quiet)
				lk_msg("warning: %s/%s carries this run's session but belongs to uid "
				       "%u: ignored", strcmp(dir, "/") ? dir : "", de->d_name,
				       (unsigned)st.st_uid);
			continue;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 8;
			struct lk_follow_profile *l = realloc(list, cap * sizeof(*l));
			if (!l)
				break;
			list = l;
		}
		if (asprintf(&list[n].path, "%s%s%s", dir, strcmp(dir, "/") ? "/" : "",
			     de->d_name) < 0)
			break;
		list[n].start_ns = le64toh(h.start_monotonic_ns);
		list[n].segment = le32toh(rot.segment);
		list[n].origin_ns = rot.segment ? le64toh(rot.origin_realtime_ns)
						: le64toh(h.start_realtime_ns);
		list[n++].pid = le32toh(h.pid);
	}
	closedir(d);
	if (n)
		qsort(list, n, sizeof(*list), cmp_found);
	*ret = list;
	return n;
}

/* The value of name in process pid's environment at exec, malloc'd, or NULL if it has none;
 * -ESRCH, -EACCES, -ENOMEM as lk_follow_find_pid. */
static int environ_of(pid_t pid, const char *name, char **ret)
{
	char path[64], *buf = NULL;
	size_t len = 0, cap = 0, nl = strlen(name);
	ssize_t n;
	int fd;

	*ret = NULL;
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	for (;;) { /* at most the kernel's ARG_MAX-bounded environment */
		if (len + 4096 > cap) {
			char *b = realloc(buf, cap = cap ? 2 * cap : 65536);
			if (!b) {
				free(buf);
				close(fd);
				return -ENOMEM;
			}
			buf = b;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (n < 0) {
		free(buf);
		return -EACCES;
	}
	buf[len] = 0;
	for (size_t i = 0; i < len; i += strlen(buf + i) + 1)
		if (strncmp(buf + i, name, nl) == 0 && buf[i + nl] == '=') {
			*ret = strdup(buf + i + nl + 1);
			free(buf);
			return *ret ? 0 : -ENOMEM;
		}
	free(buf);
	return 0;
}

/* LEEK_OUTPUT as libleek makes it absolute (writer-open.c, resolve_path): relative to the
 * process's directory, and with the default name inside a directory. */
static int output_pattern(pid_t pid, char **ret)
{
	char *out = NULL, cwd[4096] = "", link[64];
	struct stat st;
	ssize_t n;
	int r = environ_of(pid, "LEEK_OUTPUT", &out);

	if (r < 0)
		return r;
	if (!out || !*out) {
		free(out);
		out = strdup(LK_OUTPUT_DEFAULT);
		if (!out)
			return -ENOMEM;
	}
	if (out[0] != '/') {
		snprintf(link, sizeof(link), "/proc/%d/cwd", (int)pid);
		n = readlink(link, cwd, sizeof(cwd) - 1);
		if (n < 0) {
			free(out);
			return errno == ENOENT ? -ESRCH : -errno;
		}
		cwd[n] = 0;
	}
	r = asprintf(ret, "%s%s%s%s", cwd, *cwd && strcmp(cwd, "/") ? "/" : "", out,
		     out[strlen(out) - 1] == '/' ? LK_OUTPUT_DEFAULT : "");
	free(out);
	if (r < 0)
		return -ENOMEM;
	if (!strchr(*ret, '%') && stat(*ret, &st) == 0 && S_ISDIR(st.st_mode)) {
		char *d = *ret;
		r = asprintf(ret, "%s/%s", d, LK_OUTPUT_DEFAULT);
		free(d);
		if (r < 0)
			return -ENOMEM;
	}
	return 0;
}

int lk_follow_find_pid(pid_t pid, char **ret)
{
	_cleanup_(freep) char *pattern = NULL, *session_s = NULL;
	struct lk_follow_profile *list;
	uint64_t session = 0;
	struct stat st, best_st = { 0 };
	size_t n, best;
	int r;

	r = output_pattern(pid, &pattern);
	if (r >= 0)
		r = environ_of(pid, "LEEK_SESSION", &session_s);
	if (r < 0)
		return r;
	if (session_s && lk_parse_u64(session_s, &session) < 0)
		session = 0;
	n = lk_follow_find_profiles(pattern, session, (uint64_t)pid, true, &list);
	best = n;
	for (size_t i = 0; i < n; i++) /* the newest: an exec'd program's, not its shell's */
		if (stat(list[i].path, &st) == 0 &&
		    (best == n || st.st_mtim.tv_sec > best_st.st_mtim.tv_sec ||
		     (st.st_mtim.tv_sec == best_st.st_mtim.tv_sec &&
		      st.st_mtim.tv_nsec > best_st.st_mtim.tv_nsec))) {
			best = i;
			best_st = st;
		}
	if (best < n) {
		*ret = list[best].path;
		list[best].path = NULL;
	}
	for (size_t i = 0; i < n; i++)
		free(list[i].path);
	free(list);
	return best < n ? 0 : -ENOENT;
}

bool lk_follow_pid_alive(pid_t pid)
{
	char name[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(name, sizeof(name), "/proc/%d/stat", (int)pid);
	fd = open(name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	p = strrchr(buf, ')'); /* after the command's name, which may hold anything */
	return !(p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'));
}
