/* outfile.c: an output file that appears whole or not at all (outfile.h).
 *
 * The temporary file is FILE.XXXXXX (mkostemp), in FILE's directory so that rename(2) can replace
 * FILE in one step: a reader of FILE sees the old file or the new one, never a part.
 *
 * Never: write to FILE itself while it is a regular file, leave a temporary file behind on a
 * failure it returns, or close stdout.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outfile.h"

/* What to rename the temporary file over: path, or the file it links to (a link stays one, as it
 * does when open(2) writes through it); NULL and errno on failure. */
static char *target_of(const char *path)
{
	struct stat st;

	if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode) && stat(path, &st) == 0)
		return realpath(path, NULL);
	return strdup(path); /* a dangling link is replaced: it names no file to keep */
}

int lk_outfile_open(struct lk_outfile *o, const char *path, mode_t mode)
{
	struct stat st;
	mode_t mask;
	int fd, k;

	*o = (struct lk_outfile){ 0 };
	if (!path || strcmp(path, "-") == 0) {
		o->f = stdout;
		return 0;
	}
	if (stat(path, &st) < 0)
		st.st_mode = S_IFREG; /* none yet (or none reachable: mkostemp says why) */
	if (S_ISDIR(st.st_mode))
		return -EISDIR; /* now, rather than at the rename, after all the work */
	if (!S_ISREG(st.st_mode)) {
		fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		o->f = fdopen(fd, "w");
		if (!o->f) {
			k = -errno;
			close(fd);
			return k;
		}
		return 0;
	}
	o->target = target_of(path);
	if (!o->target || asprintf(&o->tmp, "%s.XXXXXX", o->target) < 0) {
		o->tmp = NULL;
		k = o->target ? -ENOMEM : -errno;
		lk_outfile_discard(o);
		return k;
	}
	fd = mkostemp(o->tmp, O_CLOEXEC); /* 0600 */
	if (fd < 0) {
		k = -errno;
		free(o->tmp);
		o->tmp = NULL; /* not made: nothing to remove */
		lk_outfile_discard(o);
		return k;
	}
	mask = umask(0);
	umask(mask);
	if (fchmod(fd, mode & ~mask) < 0 || !(o->f = fdopen(fd, "w"))) {
		k = -errno;
		close(fd);
		lk_outfile_discard(o);
		return k;
	}
	return 0;
}

int lk_outfile_commit(struct lk_outfile *o)
{
	int k = 0;

	if (!o->f)
		return 0;
	if (fflush(o->f) != 0)
		k = -errno;
	else if (ferror(o->f))
		k = -EIO; /* an earlier write failed, and its errno is gone */
	if (k == 0 && o->tmp && fsync(fileno(o->f)) < 0)
		k = -errno;
	if (o->f != stdout && fclose(o->f) != 0 && k == 0)
		k = -errno;
	o->f = NULL;
	if (k == 0 && o->tmp) {
		if (rename(o->tmp, o->target) < 0)
			k = -errno;
		else {
			free(o->tmp);
			o->tmp = NULL; /* it is the target now */
		}
	}
	lk_outfile_discard(o);
	return k;
}

void lk_outfile_discard(struct lk_outfile *o)
{
	if (o->f && o->f != stdout)
		fclose(o->f);
	if (o->tmp)
		unlink(o->tmp);
	free(o->tmp);
	free(o->target);
	*o = (struct lk_outfile){ 0 };
}
