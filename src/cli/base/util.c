/* util.c: see util.h. Nothing here exits or keeps state. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>

#include "util.h"

/* A message's text, escaped: its arguments are paths and strings read from profiles and from
 * the file system (a module path, a reader's error, a symbolizer's warning), and a byte of those
 * must never reach the terminal as a control sequence or break the message across lines. */
static void print_message(const char *fmt, va_list ap)
{
	char buf[1024], *big = NULL;
	va_list copy;
	int n;

	va_copy(copy, ap);
	n = vsnprintf(buf, sizeof(buf), fmt, copy);
	va_end(copy);
	if (n >= (int)sizeof(buf) && vasprintf(&big, fmt, ap) < 0)
		big = NULL; /* out of memory: the message cut to buf */
	fputs("leek: ", stderr);
	if (n > 0)
		lk_print_escaped(stderr, big ? big : buf,
				 big ? (size_t)n : strnlen(buf, sizeof(buf)));
	free(big);
}

int lk_error(int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	print_message(fmt, ap);
	va_end(ap);
	fprintf(stderr, ": %s\n", strerror(r < 0 ? -r : r));
	return r;
}

void lk_msg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	print_message(fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int lk_error_of(const char *path, int r, const char *why)
{
	if (why && *why)
		lk_msg("%s: %s", path, why);
	else
		lk_error(r, "%s", path);
	return r;
}

int lk_open_regular(int dirfd, const char *path, struct stat *ret_st)
{
	struct stat st;
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	if (ret_st)
		*ret_st = st;
	return fd;
}

static int parse_digits(const char **s, uint64_t *ret)
{
	uint64_t v = 0;
	const char *p = *s;

	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	*s = p;
	*ret = v;
	return 0;
}

int lk_parse_u64(const char *s, uint64_t *ret)
{
	uint64_t v;
	int r = parse_digits(&s, &v);

	if (r < 0)
		return r;
	if (*s)
		return -EINVAL;
	*ret = v;
	return 0;
}

int lk_parse_size(const char *s, uint64_t *ret)
{
	unsigned shift = 0;
	uint64_t v;
	int r = parse_digits(&s, &v);

	if (r < 0)
		return r;
	switch (*s) {
	case 'k': case 'K': shift = 10; break;
	case 'm': case 'M': shift = 20; break;
	case 'g': case 'G': shift = 30; break;
	case 't': case 'T': shift = 40; break;
	}
	if (shift)
		s++;
	if (*s == 'i' && shift)
		s++;
	if (*s == 'B' || *s == 'b')
		s++;
	if (*s)
		return -EINVAL;
	if (shift && v > UINT64_MAX >> shift)
		return -ERANGE;
	*ret = v << shift;
	return 0;
}

int lk_parse_duration(const char *s, uint64_t *ret)
{
	static const struct {
		const char *suffix;
		double ns;
	} units[] = { { "", 1e9 },  { "s", 1e9 },   { "ms", 1e6 }, { "us", 1e3 },
		      { "ns", 1 },  { "m", 60e9 }, { "min", 60e9 }, { "h", 3600e9 } };
	char *end;
	double v;

	if (!s || !((*s >= '0' && *s <= '9') || *s == '.'))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !isfinite(v) || v < 0)
		return errno == ERANGE ? -ERANGE : -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].suffix) != 0)
			continue;
		v *= units[i].ns;
		if (v >= 0x1p63)
			return -ERANGE;
		*ret = (uint64_t)llround(v);
		return 0;
	}
	return -EINVAL;
}

/* ns (> 0) in its largest whole unit: "1s", "1500ms", "1ns". */
static void format_duration(char *buf, size_t size, uint64_t ns)
{
	static const struct {
		const char *suffix;
		uint64_t ns;
	} units[] = { { "h", 3600000000000ull }, { "m", 60000000000ull }, { "s", 1000000000ull },
		      { "ms", 1000000 },           { "us", 1000 },            { "ns", 1 } };
	size_t i = 0;

	while (ns && ns % units[i].ns)
		i++;
	snprintf(buf, size, "%" PRIu64 "%s", ns / units[i].ns, units[i].suffix);
}

int lk_duration_arg(const char *command, const char *option, const char *arg, uint64_t min_ns,
		    uint64_t *ret)
{
	char least[32];
	uint64_t v;

	if (lk_parse_duration(arg, &v) < 0) {
		lk_msg("%s: %s '%s': not a duration (e.g. 500ms, 30s, 10m)", command, option, arg);
		return LK_EXIT_USAGE;
	}
	if (v < min_ns) {
		format_duration(least, sizeof(least), min_ns);
		lk_msg("%s: %s '%s': too short (at least %s)", command, option, arg, least);
		return LK_EXIT_USAGE;
	}
	*ret = v;
	return 0;
}

size_t lk_utf8_length(const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t len;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		lo = c == 0xe0 ? 0xa0 : 0x80; /* no overlong forms */
		hi = c == 0xed ? 0x9f : 0xbf; /* no surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		lo = c == 0xf0 ? 0x90 : 0x80;
		hi = c == 0xf4 ? 0x8f : 0xbf; /* nothing above U+10FFFF */
	} else
		return 0;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

void lk_print_escaped(FILE *f, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c >= 0x7f || c == '\\')
			fprintf(f, "\\x%02x", c);
		else
			fputc(c, f);
	}
}

static bool shell_safe(const char *s, size_t len)
{
	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
			    "_-+=/.,:@%", s[i]) || !s[i])
			return false;
	return true;
}

void lk_print_cmdline(FILE *f, const char *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		const char *arg = s + i, *nul = memchr(arg, 0, len - i);
		size_t n = nul ? (size_t)(nul - arg) : len - i;

		if (i)
			fputc(' ', f);
		if (shell_safe(arg, n))
			fwrite(arg, 1, n, f);
		else {
			fputc('\'', f);
			for (size_t j = 0; j < n; j++) {
				if (arg[j] == '\'')
					fputs("'\\''", f);
				else
					lk_print_escaped(f, arg + j, 1);
			}
			fputc('\'', f);
		}
		i += n + 1;
	}
}

const char *lk_format_bytes(char *buf, size_t size, double bytes)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	unsigned u = 0;

	while (bytes >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		bytes /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, size, "%.0f B", bytes);
	else
		snprintf(buf, size, "%.2f %s", bytes, units[u]);
	return buf;
}
