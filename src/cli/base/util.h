/* util.h: small helpers every leek command uses: messages, cleanup attributes, parsing of
 * numbers and durations, and the escaping that keeps one record on one line.
 *
 * Messages go to stderr, prefixed "leek: ". Functions here never exit the program: commands
 * decide the exit status (LK_EXIT_*, documented in `leek help`).
 */
#ifndef LEEK_UTIL_H
#define LEEK_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

enum {
	LK_EXIT_OK = 0,
	LK_EXIT_USAGE = 1, /* bad command line */
	LK_EXIT_FILE = 2,  /* a profile unreadable, corrupt or foreign; a program leek cannot run */
};

#define _cleanup_(f) __attribute__((cleanup(f)))

/* CLOCK_MONOTONIC in nanoseconds: the commands' timeouts and intervals. */
static inline uint64_t lk_monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void freep(void *p)
{
	free(*(void **)p);
}

static inline void closep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
}

/* "leek: <msg>: strerror(-r)"; returns r (a negative errno). Both escape the message as
 * lk_print_escaped() does, so a path or a profile's string among the arguments prints as it is,
 * with no byte a terminal would act on. */
int lk_error(int r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "leek: <msg>". */
void lk_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "leek: PATH: WHY" for a failure r with the reader's or a loader's message why ("offset N:
 * ..."), or "leek: PATH: strerror(-r)" if why is NULL or empty; returns r. */
int lk_error_of(const char *path, int r, const char *why);

/* Opens path (relative to dirfd, or AT_FDCWD) for reading only if it is a regular file: with
 * O_NONBLOCK, so that a FIFO or a device named there never blocks the open, and without becoming
 * a controlling terminal. The descriptor (and *ret_st if not NULL), -EINVAL if it is not a
 * regular file, or the negative errno of open. */
struct stat;
int lk_open_regular(int dirfd, const char *path, struct stat *ret_st);

/* "123", "64K", "4M", "4MiB", "1G" (as libleek's LEEK_PERIOD); 0 or -EINVAL / -ERANGE. */
int lk_parse_size(const char *s, uint64_t *ret);
int lk_parse_u64(const char *s, uint64_t *ret); /* decimal only */
/* "1.5", "250ms", "2m", "90s", "1h" (also "us", "ns", "min"; a bare number is seconds): a
 * duration in ns. 0, -EINVAL or -ERANGE. */
int lk_parse_duration(const char *s, uint64_t *ret);
/* A command's duration option, OPTION ARG, of min_ns or more (0: any): 0 and *ret, or
 * LK_EXIT_USAGE after one line, the same for every command:
 *   "COMMAND: OPTION 'ARG': not a duration (e.g. 500ms, 30s, 10m)"
 *   "COMMAND: OPTION 'ARG': too short (at least MIN)"
 * A time since the start (--from, --at) is a moment, not a duration: input.h's lk_input_moment. */
int lk_duration_arg(const char *command, const char *option, const char *arg, uint64_t min_ns,
		    uint64_t *ret);

/* The length of the valid UTF-8 sequence at s (at most n bytes, n >= 1), or 0 if it is not one:
 * no overlong form, no surrogate, nothing above U+10FFFF. */
size_t lk_utf8_length(const char *s, size_t n);

/* Prints len bytes with every byte outside printable ASCII, and the backslash, as \xNN. */
void lk_print_escaped(FILE *f, const char *s, size_t len);
/* Prints NUL-separated arguments space-separated, quoting those a shell would split. */
void lk_print_cmdline(FILE *f, const char *s, size_t len);
/* "1.25 MiB", "512 B": into buf (at least 32 bytes); returns buf. */
const char *lk_format_bytes(char *buf, size_t size, double bytes);

#endif /* LEEK_UTIL_H */
