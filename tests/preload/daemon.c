/* daemon.c: a daemon that closes every descriptor at start, or that dup2s over leek's.
 *
 * Daemons close what they did not open (close_range, or a loop to sysconf(_SC_OPEN_MAX)), and some
 * dup2 a file of their own onto a descriptor number they believe free. leek holds no descriptor
 * between two uses of its file (writer-window.c, lk_window_fd), so there is none of leek's to
 * close or to dup2 over; if there were one, it would be one of those. Either way the program must
 * behave as it does without leek, leek must find its file by path and record what the program allocates
 * afterwards, and it must never write into, map, grow or cut a file of the program's that holds a
 * number leek's descriptors used to have (200 and up).
 *
 * Steps: blocks of 6661 bytes before; then the descriptors go (close: close_range(3, ~0U) or a loop;
 * dup2: the program's data file, DIR/daemon.expect beside the profile, is dup2'ed over the
 * descriptor whose /proc/self/fd link ends in ".lk", or over descriptor 200 when there is none, as
 * without leek); then blocks of 4111 bytes and enough churn that leek's file grows past several
 * of its 1 MiB windows in exact mode, while the program appends known bytes to its data file
 * through that descriptor. The data file must read back exactly (here, and in the driver after
 * exit, which also catches a write or truncation at exit). Prints "leek fd found" on stderr when
 * there was a .lk descriptor to dup2 over (under leek there must be none), and tally lines
 * (tally.h).
 *
 * Usage: daemon close|close-loop|dup2 [--chdir] (--chdir: chdir("/") first, as daemon(3) does).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <regex.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>
#include <wordexp.h>

#include "prog.h"
#include "tally.h"

#define BEFORE 10
#define AFTER 3000
#define DATA_CHUNK 65536
#define DATA_CHUNKS 64 /* 4 MiB of the program's own bytes, larger than any leek window */
#define INPUT 4096

static uint8_t data_byte(size_t off)
{
	return (uint8_t)(off * 131 + (off >> 12) + 7);
}

/* The descriptor of leek's profile: a link to a file whose name ends in ".lk", or -1. */
static int leek_fd(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int found = -1;

	CHECK(d, "opendir /proc/self/fd: %s", strerror(errno));
	while ((de = readdir(d))) {
		char link[64], target[PATH_MAX];
		if (de->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "/proc/self/fd/%s", de->d_name);
		ssize_t n = readlink(link, target, sizeof(target) - 1);
		if (n > 3 && !memcmp(target + n - 3, ".lk", 3))
			found = atoi(de->d_name);
	}
	closedir(d);
	return found;
}

static void write_data(int fd, size_t chunk)
{
	uint8_t buf[DATA_CHUNK];

	for (size_t i = 0; i < DATA_CHUNK; i++)
		buf[i] = data_byte(chunk * DATA_CHUNK + i);
	CHECK(write(fd, buf, DATA_CHUNK) == DATA_CHUNK, "write to the data file: %s", strerror(errno));
}

static void check_data(int fd, size_t chunks)
{
	uint8_t buf[DATA_CHUNK];
	struct stat st;

	CHECK(fstat(fd, &st) == 0, "fstat: %s", strerror(errno));
	CHECK((size_t)st.st_size == chunks * DATA_CHUNK, "the data file has %lld bytes, not %zu",
	      (long long)st.st_size, chunks * DATA_CHUNK);
	for (size_t c = 0; c < chunks; c++) {
		CHECK(pread(fd, buf, DATA_CHUNK, (off_t)(c * DATA_CHUNK)) == DATA_CHUNK, "pread: %s",
		      strerror(errno));
		for (size_t i = 0; i < DATA_CHUNK; i++)
			CHECK(buf[i] == data_byte(c * DATA_CHUNK + i),
			      "the data file is damaged at byte %zu", c * DATA_CHUNK + i);
	}
}

/* Where the data file goes: beside the profile (the driver sets LEEK_OUTPUT even without leek),
 * as an absolute path, since the program may chdir. */
static void data_path(char *path, size_t size)
{
	const char *out = getenv("LEEK_OUTPUT");
	const char *slash = out ? strrchr(out, '/') : NULL;
	char cwd[PATH_MAX];

	CHECK(out, "LEEK_OUTPUT is not set");
	if (out[0] == '/') {
		snprintf(path, size, "%.*s/daemon.expect", (int)(slash - out), out);
		return;
	}
	CHECK(getcwd(cwd, sizeof(cwd)), "getcwd: %s", strerror(errno));
	snprintf(path, size, "%s/%.*s%sdaemon.expect", cwd, slash ? (int)(slash - out) : 0, out,
		 slash ? "/" : "");
}

int main(int argc, char **argv)
{
	char *before[BEFORE], *after[AFTER], path[PATH_MAX];
	const char *how = argc > 1 ? argv[1] : "";
	bool dup = !strcmp(how, "dup2");
	int data = -1;
	uint64_t rng = 5;

	CHECK(dup || !strcmp(how, "close") || !strcmp(how, "close-loop"),
	      "usage: daemon close|close-loop|dup2 [--chdir]");
	/* The program's first descriptor is what it would be without leek. */
	int first = open("/dev/null", O_RDONLY | O_CLOEXEC);
	CHECK(first >= 0, "open /dev/null: %s", strerror(errno));
	printf("first descriptor %d\n", first);
	close(first);
	data_path(path, sizeof(path));
	for (int i = 0; i < BEFORE; i++) {
		before[i] = malloc(6661);
		CHECK(before[i], "malloc failed");
		pattern_fill(before[i], 6661, (uint64_t)i);
	}
	/* At the default period leek opens its file at the first sample: 16 MiB make one certain
	 * (the chance of none is e^-32). */
	for (int i = 0; i < 16; i++)
		free(malloc(1u << 20));
	if (argc > 2 && !strcmp(argv[2], "--chdir"))
		CHECK(chdir("/") == 0, "chdir: %s", strerror(errno));
	fflush(stdout);

	size_t chunks = 0;
	if (dup) {
		int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
		while (chunks < DATA_CHUNKS * 3 / 4)
			write_data(fd, chunks++);
		int target = leek_fd();
		if (target >= 0) {
			/* Let the profile grow past its first window first: leek's file is then
			 * allocated a MiB ahead, and its next window moves without growing it. */
			struct stat st;
			for (int i = 0; i < 2000 && fstat(target, &st) == 0 && st.st_size < (2 << 20);
			     i++)
				for (int k = 0; k < 256; k++)
					free(malloc(16 + prog_rand(&rng) % 2000));
			fprintf(stderr, "leek fd found\n");
		} else {
			target = 200;
		}
		CHECK(dup2(fd, target) == target, "dup2: %s", strerror(errno));
		close(fd);
		data = target;
	} else if (!strcmp(how, "close")) {
		CHECK(close_range(3, ~0u, 0) == 0, "close_range: %s", strerror(errno));
	} else {
		long max = sysconf(_SC_OPEN_MAX);
		for (long fd = 3; fd < max; fd++)
			close((int)fd);
	}
	if (!dup) {
		for (int fd = 3; fd < 4096; fd++)
			CHECK(fcntl(fd, F_GETFD) < 0, "descriptor %d is still open", fd);
		data = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		CHECK(data == 3, "open %s gave descriptor %d: %s", path, data, strerror(errno));
	}
	/* The program's input, on the next descriptor (4 after a close): written, rewound, and read
	 * back at the end, so that a byte read or written by anyone else shows. */
	FILE *in = tmpfile();
	CHECK(in, "tmpfile: %s", strerror(errno));
	int input = fileno(in);
	for (size_t i = 0; i < INPUT; i++)
		CHECK(fputc(data_byte(i + 12345), in) != EOF, "fputc");
	CHECK(fflush(in) == 0 && lseek(input, 0, SEEK_SET) == 0, "rewind the input");
	/* Allocations from code that nothing has unwound yet: libc's regex, glob and wordexp. */
	regex_t re;
	CHECK(regcomp(&re, "^(ab|cd)+[[:alpha:]]*x{2,5}$", REG_EXTENDED) == 0, "regcomp");
	CHECK(regexec(&re, "abcdabzzxxx", 0, NULL, 0) == 0, "regexec");
	regfree(&re);
	glob_t g;
	CHECK(glob("/usr/lib/*", 0, NULL, &g) == 0 && g.gl_pathc > 0, "glob");
	globfree(&g);
	wordexp_t w;
	CHECK(wordexp("one two three", &w, WRDE_NOCMD) == 0 && w.we_wordc == 3, "wordexp");
	wordfree(&w);

	/* After: blocks of our own, and churn that writes megabytes of records in exact mode. */
	for (int i = 0; i < AFTER; i++) {
		after[i] = malloc(4111);
		CHECK(after[i], "malloc failed");
		pattern_fill(after[i], 4111, 100000 + (uint64_t)i);
		for (int k = 0; k < 160; k++) {
			void *p = malloc(16 + prog_rand(&rng) % 2000);
			CHECK(p, "malloc failed");
			free(p);
		}
		if (i % (AFTER / DATA_CHUNKS) == 0 && chunks < DATA_CHUNKS)
			write_data(data, chunks++);
	}
	while (chunks < DATA_CHUNKS)
		write_data(data, chunks++);
	for (int i = 0; i < AFTER; i += 2)
		free(after[i]);
	for (int i = 0; i < BEFORE; i += 2)
		free(before[i]);
	check_data(data, chunks);
	uint8_t buf[INPUT];
	CHECK(read(input, buf, INPUT) == INPUT, "read the input: %s", strerror(errno));
	for (size_t i = 0; i < INPUT; i++)
		CHECK(buf[i] == data_byte(i + 12345), "the input differs at byte %zu", i);
	struct stat st;
	CHECK(fstat(input, &st) == 0 && st.st_size == INPUT, "the input has %lld bytes, not %d",
	      (long long)st.st_size, INPUT);
	fclose(in);
	for (int i = 1; i < AFTER; i += 2)
		CHECK(pattern_check(after[i], 4111, 100000 + (uint64_t)i) == 4111, "block %d damaged", i);
	for (int i = 1; i < BEFORE; i += 2)
		CHECK(pattern_check(before[i], 6661, (uint64_t)i) == 6661, "block %d damaged", i);
	printf("data %zu bytes\n", chunks * DATA_CHUNK);
	tally(6661, BEFORE, 0, BEFORE / 2);
	tally(4111, AFTER, 0, AFTER / 2);
	return 0;
}
