/* escape.c: strings from a profile as an export writes them (export-internal.h).
 *
 * A name, a path or a command line comes from the profile or from a file it names, so it is
 * untrusted bytes, and it reaches a terminal through the tools that read an export (`go tool
 * pprof -top`, a folded file on stdout). Every byte that is a control character (C0, DEL, and
 * C1 as UTF-8 spells it), the backslash, a byte that is not part of valid UTF-8, and any byte of
 * the caller's `also` becomes the four characters \xNN; valid UTF-8 otherwise stays as it is.
 * The result is valid UTF-8 (protobuf's strings must be) and reads back unambiguously.
 *
 * Never: allocate outside the memory budget (a buffer grows with the longest name it holds).
 */
#include <stdio.h>
#include <string.h>

#include "budget.h"
#include "export-internal.h"
#include "util.h"

int lk_strbuf_put(struct lk_strbuf *b, const void *p, size_t n)
{
	int r = lk_budget_grow((void **)&b->s, &b->cap, b->len + n + 1, 1);

	if (r < 0)
		return r;
	if (n)
		memcpy(b->s + b->len, p, n);
	b->len += n;
	b->s[b->len] = 0;
	return 0;
}

void lk_strbuf_done(struct lk_strbuf *b)
{
	lk_budget_free(b->s, b->cap);
	*b = (struct lk_strbuf){ 0 };
}

/* How many bytes at str (n >= 1 of them) stay as they are: one UTF-8 sequence, or 0 if the byte
 * at str is to be escaped. A C1 control's first byte (0xc2) is escaped here, and its second, no
 * longer part of a sequence, at the next call. */
static size_t kept(const char *str, size_t n, const char *also)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t m = lk_utf8_length(str, n);

	if (m == 0 || s[0] < 0x20 || s[0] == 0x7f || s[0] == '\\' ||
	    (m == 2 && s[0] == 0xc2 && s[1] < 0xa0) || (also && strchr(also, s[0])))
		return 0;
	return m;
}

int lk_export_escape(struct lk_strbuf *b, const char *str, size_t len, const char *also)
{
	char hex[5];
	size_t i = 0, run, m;
	int r = 0;

	while (i < len && r >= 0) {
		for (run = 0; i + run < len && (m = kept(str + i + run, len - i - run, also));)
			run += m;
		r = lk_strbuf_put(b, str + i, run);
		i += run;
		if (i < len && r >= 0) {
			snprintf(hex, sizeof(hex), "\\x%02x", (unsigned char)str[i++]);
			r = lk_strbuf_put(b, hex, 4);
		}
	}
	return r;
}
