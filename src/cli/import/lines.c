/* lines.c: the trace, one line at a time, in a buffer of fixed size.
 *
 * A trace can be gigabytes long and come from a pipe, so it is never held whole: each line is
 * read into one buffer of LK_IMPORT_LINE_MAX bytes, and a longer line is cut there and the rest
 * read past (the caller reports it as malformed). The first non-empty lines can be read ahead for
 * the format's detection; they are kept and handed out again, in order, with their numbers.
 *
 * Never: allocate per line, or read past the end of the line it hands out.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"

int lk_lines_init(struct lk_lines *l, FILE *f)
{
	*l = (struct lk_lines){.f = f};
	l->buf = malloc(LK_IMPORT_LINE_MAX + 2);
	return l->buf ? 0 : -ENOMEM;
}

void lk_lines_done(struct lk_lines *l)
{
	for (size_t i = 0; i < l->nkept; i++)
		free(l->kept[i]);
	free(l->buf);
	*l = (struct lk_lines){0};
}

/* The next line from the file itself: 1, 0 at its end, or a negative errno. */
static int read_line(struct lk_lines *l, size_t *len)
{
	size_t n;

	if (!fgets(l->buf, LK_IMPORT_LINE_MAX + 2, l->f))
		return ferror(l->f) ? -EIO : 0;
	l->file_lineno++;
	l->lineno = l->file_lineno;
	n = strlen(l->buf); /* a NUL byte in the line cuts it there: the rest is not a record */
	l->too_long = false;
	if (n > 0 && l->buf[n - 1] == '\n') {
		l->buf[--n] = '\0';
	} else if (n > LK_IMPORT_LINE_MAX) {
		int c;
		l->too_long = true;
		while ((c = getc(l->f)) != EOF && c != '\n')
			;
		if (ferror(l->f))
			return -EIO;
	}
	if (n > 0 && l->buf[n - 1] == '\r') /* a trace copied through Windows */
		l->buf[--n] = '\0';
	*len = n;
	return 1;
}

int lk_lines_next(struct lk_lines *l, const char **line, size_t *len)
{
	if (l->next_kept < l->nkept) {
		size_t i = l->next_kept++;
		/* Kept lines are copies: the buffer is free for the next read. */
		*len = strlen(l->kept[i]);
		memcpy(l->buf, l->kept[i], *len + 1);
		l->lineno = l->kept_lineno[i];
		l->too_long = l->kept_long[i];
		*line = l->buf;
		return 1;
	}
	int r = read_line(l, len);
	if (r > 0)
		*line = l->buf;
	return r;
}

int lk_lines_peek(struct lk_lines *l, const char *const **ret)
{
	size_t len;
	int r;

	while (l->nkept < LK_IMPORT_DETECT_LINES) {
		r = read_line(l, &len);
		if (r < 0)
			return r;
		if (r == 0)
			break;
		if (len == 0) /* an empty line is no record: nothing to keep */
			continue;
		l->kept[l->nkept] = strdup(l->buf);
		if (!l->kept[l->nkept])
			return -ENOMEM;
		l->kept_lineno[l->nkept] = l->lineno;
		l->kept_long[l->nkept] = l->too_long;
		l->nkept++;
	}
	*ret = (const char *const *)l->kept;
	return (int)l->nkept;
}
