/* pagein.c: how many page faults a MiB of profile costs the program, against what the kernel
 * makes of a file's pages put into the page cache or not.
 *
 * The writer puts each range it allocates to the file into the page cache as zeros, 64 KiB a write
 * (writer-window.c, page_in), so that the window's stores find their pages there: on a kernel
 * whose page cache has large folios, a fault then maps 64 KiB where a page of a range only
 * fallocated faults in 4 KiB at a time through the file system. This program (in exact mode: the driver sets
 * LEEK_PERIOD=1) measures in minor faults a MiB, next to its profile (its name in LEEK_OUTPUT):
 *
 *   fallocated  a scratch file grown by fallocate, each page then stored through a shared mapping
 *   paged       the same, with the range written as zeros 64 KiB at a time first
 *   leek        its own profile, while it grows by 2 MiB of malloc and free pairs
 *
 * and prints "fallocated F paged P leek L". The driver expects L near P whenever P is well below F;
 * where it is not (a kernel without large folios in its page cache), there is nothing to tell.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "prog.h"

#define MIB (1 << 20)
#define PIECE (64 << 10)

/* LEEK_OUTPUT with its %p made this process's pid; *dir_len: the length of its directory part. */
static void profile_path(char *out, size_t size, size_t *dir_len)
{
	const char *pattern = getenv("LEEK_OUTPUT");
	size_t n = 0;

	CHECK(pattern && *pattern, "LEEK_OUTPUT is not set");
	for (const char *s = pattern; *s && n + 16 < size; s++) {
		if (s[0] == '%' && s[1] == 'p') {
			n += (size_t)snprintf(out + n, size - n, "%d", (int)getpid());
			s++;
		} else {
			out[n++] = *s;
		}
	}
	out[n] = 0;
	char *slash = strrchr(out, '/');
	*dir_len = slash ? (size_t)(slash - out) + 1 : 0;
}

static off_t file_size(const char *path)
{
	struct stat st;

	CHECK(stat(path, &st) == 0, "stat %s", path);
	return st.st_size;
}

/* Faults a MiB of storing into a scratch file of 4 MiB, grown a MiB at a time as the writer
 * grows a profile, with each MiB written as zeros first or not. */
static long scratch_faults(const char *path, bool paged)
{
	static char zeros[PIECE];
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	long faults = 0;

	CHECK(fd >= 0, "open %s", path);
	for (off_t at = 0; at < 4 * MIB; at += MIB) {
		CHECK(posix_fallocate(fd, at, MIB) == 0, "fallocate %s", path);
		for (off_t z = 0; paged && z < MIB; z += PIECE)
			CHECK(pwrite(fd, zeros, PIECE, at + z) == PIECE, "pwrite %s", path);
		char *m = mmap(NULL, MIB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, at);
		CHECK(m != MAP_FAILED, "mmap %s", path);
		long before = prog_minor_faults();
		for (size_t i = 0; i < MIB; i += 64) /* a record's worth at a time, as the writer */
			m[i] = 1;
		faults += prog_minor_faults() - before;
		munmap(m, MIB);
	}
	close(fd);
	unlink(path);
	return faults / 4;
}

/* Grows the profile by malloc and free pairs until its size has changed `grows` times; the
 * faults that took. About 7 bytes of profile a pair in exact mode: a MiB is 150 000 pairs. */
static long grow_profile(const char *path, int grows)
{
	off_t last = file_size(path);
	long before = prog_minor_faults();

	for (unsigned i = 0; grows > 0; i++) {
		for (unsigned k = 0; k < 1000; k++) {
			char *p = malloc(24 + (k + i) % 200);
			CHECK(p, "malloc");
			p[0] = (char)k;
			free(p);
		}
		off_t now = file_size(path);
		if (now != last)
			grows--;
		last = now;
		CHECK(i < 100000, "the profile %s does not grow", path);
	}
	return prog_minor_faults() - before;
}

int main(void)
{
	char path[4096], scratch[4096 + 32];
	size_t dir;

	profile_path(path, sizeof(path), &dir);
	snprintf(scratch, sizeof(scratch), "%.*spagein.%d.scratch", (int)dir, path, (int)getpid());
	long fallocated = scratch_faults(scratch, false), paged = scratch_faults(scratch, true);
	/* Past the steps of 64 KiB (writer-window.c, lk_window_grow) and the arena's first pages:
	 * from one grow of a MiB to the second after it. */
	while (file_size(path) < 2 * MIB)
		grow_profile(path, 1);
	grow_profile(path, 1);
	long leek = grow_profile(path, 2) / 2;
	printf("fallocated %ld paged %ld leek %ld\n", fallocated, paged, leek);
	return 0;
}
