/* files.c: temporary directories and whole files for the tests (see files.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "files.h"
#include "harness.h"

void tmp_dir(char *dir)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(dir, 256, "%s/leek-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp",
		 program_invocation_short_name);
	if (!mkdtemp(dir))
		FAIL("mkdtemp %s: %s", dir, strerror(errno));
}

void tmp_dir_remove(const char *dir)
{
	char path[512];
	DIR *d = opendir(dir);
	struct dirent *de;

	while (d && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

/* NULL if path cannot be opened. */
static char *read_whole(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t n = 0, cap = 65536;
	char *buf;
	ssize_t k;

	if (fd < 0)
		return NULL;
	buf = malloc(cap);
	while (buf && (k = read(fd, buf + n, cap - n - 1)) > 0) {
		n += (size_t)k;
		if (cap - n < 2)
			buf = realloc(buf, cap *= 2);
	}
	close(fd);
	if (!buf)
		FAIL("out of memory");
	buf[n] = 0;
	if (len)
		*len = n;
	return buf;
}

char *read_file(const char *path, size_t *len)
{
	char *s = read_whole(path, len);

	if (!s)
		FAIL("%s: %s", path, strerror(errno));
	return s;
}

char *read_file_or_empty(const char *path, size_t *len)
{
	char *s = read_whole(path, len);

	if (s)
		return s;
	if (len)
		*len = 0;
	s = strdup("");
	if (!s)
		FAIL("out of memory");
	return s;
}

void write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0 || write(fd, data, len) != (ssize_t)len || close(fd) < 0)
		FAIL("cannot write %s: %s", path, strerror(errno));
}

static bool named(const char *name, const char *prefix, const char *suffix)
{
	size_t len = strlen(name), sl = strlen(suffix);

	return strcmp(name, ".") && strcmp(name, "..") &&
	       !strncmp(name, prefix, strlen(prefix)) && len >= sl &&
	       !strcmp(name + len - sl, suffix);
}

size_t count_files(const char *dir, const char *prefix, const char *suffix)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = 0;

	if (!d)
		FAIL("%s: %s", dir, strerror(errno));
	while ((de = readdir(d)))
		n += named(de->d_name, prefix, suffix);
	closedir(d);
	return n;
}

char *find_one(const char *dir, const char *prefix, const char *suffix)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char *found = NULL;

	if (!d)
		FAIL("%s: %s", dir, strerror(errno));
	while ((de = readdir(d))) {
		if (!named(de->d_name, prefix, suffix))
			continue;
		if (found)
			FAIL("%s: two files %s*%s: %s and %s", dir, prefix, suffix, found,
			     de->d_name);
		if (asprintf(&found, "%s/%s", dir, de->d_name) < 0)
			FAIL("out of memory");
	}
	closedir(d);
	if (!found)
		FAIL("no %s*%s in %s", prefix, suffix, dir);
	return found;
}
