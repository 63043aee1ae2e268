/* json-write.c: the JSON writer of json-write.h: separators, indentation, escapes.
 *
 * Never: print a string without escaping it (every string from a profile or a debug file is
 * untrusted bytes, and JSON must be valid UTF-8), or print NaN or infinity (they are not JSON:
 * null instead).
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "json-write.h"
#include "util.h"

void lk_json_init(struct lk_json *j, FILE *f)
{
	*j = (struct lk_json){ .f = f };
	j->first[0] = true;
}

void lk_json_strn(struct lk_json *j, const char *k, const char *s, size_t len)
{
	lk_json_value(j, k);
	lk_json_write_string(j->f, s, len);
}

static void write_string(FILE *f, const char *str, size_t len, bool in_html)
{
	const unsigned char *s = (const unsigned char *)str;

	fputc('"', f);
	for (size_t i = 0; i < len;) {
		unsigned char c = s[i];
		size_t n = lk_utf8_length(str + i, len - i);
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c == '\t')
			fputs("\\t", f);
		else if (c == '\r')
			fputs("\\r", f);
		else if (c < 0x20 || c == 0x7f || (in_html && (c == '<' || c == '>' || c == '&')))
			fprintf(f, "\\u%04x", c);
		else if (n == 0)
			fputs("\\ufffd", f); /* not UTF-8: one replacement character a byte */
		else if (in_html && n == 3 && c == 0xe2 && s[i + 1] == 0x80 &&
			 (s[i + 2] == 0xa8 || s[i + 2] == 0xa9))
			fprintf(f, "\\u%04x", 0x2000 + (s[i + 2] & 0x3f)); /* U+2028, U+2029 */
		else
			fwrite(s + i, 1, n, f);
		i += n ? n : 1;
	}
	fputc('"', f);
}

void lk_json_write_string(FILE *f, const char *str, size_t len)
{
	write_string(f, str, len, false);
}

void lk_json_write_string_in_html(FILE *f, const char *str, size_t len)
{
	write_string(f, str, len, true);
}

void lk_json_write_number(FILE *f, double v, int decimals)
{
	if (!isfinite(v))
		fputs("null", f);
	else if (decimals == 0)
		fprintf(f, "%.0f", round(v) + 0.0); /* + 0.0: never "-0" */
	else
		fprintf(f, "%.*f", decimals, v);
}

/* Before any value or key: the comma, and the line break outside one-line containers. */
static void sep(struct lk_json *j)
{
	if (j->after_key) {
		j->after_key = false;
		return;
	}
	if (!j->first[j->depth])
		fputc(',', j->f);
	if (j->depth && (!j->inline_depth || j->depth < j->inline_depth))
		fprintf(j->f, "\n%*s", 2 * (int)j->depth, "");
	else if (!j->first[j->depth])
		fputc(' ', j->f);
	j->first[j->depth] = false;
}

void lk_json_open(struct lk_json *j, char c, bool one_line)
{
	sep(j); /* after a key: only consumes it */
	fputc(c, j->f);
	if (j->depth < LK_JSON_MAX_DEPTH)
		j->depth++;
	j->first[j->depth] = true;
	if (one_line && !j->inline_depth)
		j->inline_depth = j->depth;
}

void lk_json_close(struct lk_json *j, char c)
{
	bool broken = !j->inline_depth || j->depth < j->inline_depth;

	if (broken && !j->first[j->depth])
		fprintf(j->f, "\n%*s", 2 * (int)(j->depth - 1), "");
	if (j->inline_depth == j->depth)
		j->inline_depth = 0;
	j->depth--;
	fputc(c, j->f);
}

void lk_json_key(struct lk_json *j, const char *k)
{
	sep(j);
	lk_json_write_string(j->f, k, strlen(k));
	fputs(": ", j->f);
	j->after_key = true;
}

void lk_json_value(struct lk_json *j, const char *k)
{
	if (k)
		lk_json_key(j, k);
	sep(j);
}

void lk_json_str(struct lk_json *j, const char *k, const char *s)
{
	lk_json_value(j, k);
	if (s)
		lk_json_write_string(j->f, s, strlen(s));
	else
		fputs("null", j->f);
}

void lk_json_u64(struct lk_json *j, const char *k, uint64_t v)
{
	lk_json_value(j, k);
	fprintf(j->f, "%" PRIu64, v);
}

void lk_json_bool(struct lk_json *j, const char *k, bool v)
{
	lk_json_value(j, k);
	fputs(v ? "true" : "false", j->f);
}

void lk_json_num(struct lk_json *j, const char *k, double v, int decimals)
{
	lk_json_value(j, k);
	lk_json_write_number(j->f, v, decimals);
}

void lk_json_seconds(struct lk_json *j, const char *k, uint64_t ns)
{
	lk_json_num(j, k, ns == UINT64_MAX ? NAN : (double)ns / 1e9, 6);
}

void lk_json_estimate(struct lk_json *j, const char *name, const struct lk_estimate *e)
{
	char k[64];

	lk_json_num(j, name, e->value, 0);
	snprintf(k, sizeof(k), "%s_ci95", name);
	lk_json_key(j, k);
	lk_json_open(j, '[', true);
	lk_json_num(j, NULL, e->lo, 0);
	lk_json_num(j, NULL, e->hi, 0);
	lk_json_close(j, ']');
}
