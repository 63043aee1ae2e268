/* follow.c: the safe read limit of a profile being written, and the profile of a running process.
 *
 * The limit follows the rule of docs/format.md, "Reading a profile being written": once the size
 * is seen larger than a size S seen before, every byte below S - LK_READ_RECORD_MAX is written
 * for good; and every byte below the size now less LK_GROW_MAX and LK_READ_RECORD_MAX always is.
 *
 * Never: write to a profile, or signal a process; a process is only looked at through /proc.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "follow.h"
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

/* Whether the file at path is a profile that process pid writes, with inode ino. */
static bool is_profile_of(const char *path, pid_t pid, uint64_t ino)
{
	struct lk_file_header h;
	struct stat st;
	int fd = lk_open_regular(AT_FDCWD, path, &st);
	bool ok;

	if (fd < 0)
		return false;
	ok = st.st_ino == ino && st.st_uid == geteuid() &&
	     pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) &&
	     memcmp(h.magic, LK_FORMAT_MAGIC, 8) == 0 && le32toh(h.pid) == (uint32_t)pid;
	close(fd);
	return ok;
}

int lk_follow_find_pid(pid_t pid, char **ret)
{
	char name[64], *line = NULL, *found = NULL;
	size_t cap = 0;
	FILE *f;

	snprintf(name, sizeof(name), "/proc/%d/maps", (int)pid);
	f = fopen(name, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (!found && getline(&line, &cap, f) > 0) {
		uint64_t ino;
		int path_at = 0;
		/* start-end perms offset dev inode path */
		if (sscanf(line, "%*x-%*x %*s %*x %*x:%*x %" SCNu64 " %n", &ino, &path_at) < 1 ||
		    !path_at || ino == 0 || line[path_at] != '/')
			continue;
		line[strcspn(line, "\n")] = 0;
		if (strstr(line + path_at, " (deleted)"))
			continue;
		if (is_profile_of(line + path_at, pid, ino))
			found = strdup(line + path_at);
	}
	free(line);
	fclose(f);
	if (!found)
		return -ENOENT;
	*ret = found;
	return 0;
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
