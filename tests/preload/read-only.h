/* read-only.h: a directory made read-only and writable again, for rotate.c and test-rotate.c.
 *
 * root writes into a mode 0555 directory anyway, so as root the directory is made immutable
 * (FS_IMMUTABLE_FL, chattr +i): no entry can be made in it, while its files stay writable. A file
 * system without the flag (tmpfs before Linux 6.0) cannot: false.
 */
#ifndef LEEK_TEST_READ_ONLY_H
#define LEEK_TEST_READ_ONLY_H

#include <linux/fs.h>
#include <stdbool.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

static inline bool dir_read_only(int dfd, bool on)
{
	if (geteuid() != 0)
		return fchmod(dfd, on ? 0555 : 0755) == 0;
	int flags;
	if (ioctl(dfd, FS_IOC_GETFLAGS, &flags) < 0)
		return false;
	flags = on ? flags | FS_IMMUTABLE_FL : flags & ~FS_IMMUTABLE_FL;
	return ioctl(dfd, FS_IOC_SETFLAGS, &flags) == 0;
}

#endif /* LEEK_TEST_READ_ONLY_H */
