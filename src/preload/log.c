/* log.c: the lines libleek prints on stderr, built without stdio.
 *
 * libleek says something only when it cannot do what it was asked (no profile, a smaller arena, a
 * value of LEEK_* it cannot use), once per cause, in one write(2) of one line that starts with
 * "leek: ". A line is put together in a struct lk_line on the caller's stack: strings, numbers, and
 * values that came from the environment, which are cut and shown with their control bytes
 * escaped, so that a hostile value cannot drive the terminal.
 *
 * Never: allocate, call stdio, print more than one line a call, print under LEEK_QUIET=1, or
 * change errno.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "preload.h"

void lk_line_str(struct lk_line *l, const char *s)
{
	size_t n = strlen(s), room = sizeof(l->buf) - 1 - l->n;

	if (n > room)
		n = room;
	memcpy(l->buf + l->n, s, n);
	l->n += n;
}

char *lk_fmt_u64(char *buf, uint64_t v)
{
	char *p = buf + LK_U64_CHARS - 1;

	*p = 0;
	do
		*--p = (char)('0' + v % 10);
	while (v /= 10);
	return p;
}

void lk_line_u64(struct lk_line *l, uint64_t v)
{
	char num[LK_U64_CHARS];

	lk_line_str(l, lk_fmt_u64(num, v));
}

/* At most max bytes of s, quoted, every byte outside printable ASCII as \xHH. */
static void quoted(struct lk_line *l, const char *s, size_t max)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = 0;

	lk_line_str(l, "'");
	for (; *s && n < max; s++, n++) {
		unsigned char c = (unsigned char)*s;
		char esc[5] = { (char)c, 0 };
		if (c < 0x20 || c >= 0x7f || c == '\\' || c == '\'') {
			esc[0] = '\\';
			esc[1] = 'x';
			esc[2] = hex[c >> 4];
			esc[3] = hex[c & 15];
		}
		lk_line_str(l, esc);
	}
	lk_line_str(l, *s ? "'..." : "'");
}

void lk_line_value(struct lk_line *l, const char *s)
{
	quoted(l, s, 64);
}

void lk_line_path(struct lk_line *l, const char *s)
{
	quoted(l, s, 256);
}

void lk_line_print(struct lk_line *l)
{
	int saved = errno;
	size_t off = 0;

	if (lk_cfg.quiet)
		return;
	l->buf[l->n++] = '\n'; /* lk_line_str leaves a byte for it */
	while (off < l->n) {
		ssize_t k = write(STDERR_FILENO, l->buf + off, l->n - off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		off += (size_t)k;
	}
	errno = saved;
}

void lk_log(const char *msg)
{
	struct lk_line l = LK_LINE_INIT;

	lk_line_str(&l, msg);
	lk_line_print(&l);
}
