/* proc.c: what libleek reads from /proc/self: small files whole, statm's page counts, the
 * executable's path.
 *
 * The writer reads the command line for the header and the resident set for RSS records, the
 * arena the mapped size under an address-space limit (arena-space.c), the writer and modules.c
 * the executable's path. One open, reads and close each time: no descriptor is kept, and nothing
 * is cached, since the answers change (statm) or a forked child may exec (the path).
 *
 * Never: allocate, call stdio, keep a descriptor open, or read more than the caller's buffer.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "preload.h"

int lk_proc_read(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n, total = 0;

	if (fd < 0)
		return -errno;
	while ((size_t)total < size && (n = read(fd, buf + total, size - (size_t)total)) > 0)
		total += n;
	close(fd);
	return (int)total;
}

bool lk_proc_statm(unsigned field, uint64_t *pages)
{
	char buf[128];
	int n = lk_proc_read("/proc/self/statm", buf, sizeof(buf));
	int i = 0;
	uint64_t v = 0;

	for (unsigned f = 0; f < field; f++) { /* fields are separated by one space */
		while (i < n && buf[i] != ' ')
			i++;
		i++;
	}
	if (i >= n || buf[i] < '0' || buf[i] > '9')
		return false;
	for (; i < n && buf[i] >= '0' && buf[i] <= '9'; i++)
		v = v * 10 + (uint64_t)(buf[i] - '0');
	*pages = v;
	return true;
}

void lk_proc_exe(char *buf, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", buf, size - 1);

	buf[n > 0 ? n : 0] = 0;
}
