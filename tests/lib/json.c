/* json.c: the strict JSON reader of json.h (RFC 8259).
 *
 * A recursive-descent parser over a byte range; recursion is bounded by JSON_MAX_DEPTH, so a
 * hostile document cannot exhaust the stack. It never reads past text + len and needs no NUL.
 * The grammar, from RFC 8259 sections 2 to 8:
 *
 *   value  = ws ( object | array | string | number | "true" | "false" | "null" ) ws
 *   number = [ "-" ] ( "0" | [1-9] [0-9]* ) [ "." [0-9]+ ] [ ( "e" | "E" ) [ "+" | "-" ] [0-9]+ ]
 *   ws     = *( " " | "\t" | "\n" | "\r" )
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

struct parser {
	const char *s;
	size_t len, pos;
	char *err;
	size_t errsize;
	bool failed;
};

static bool fail(struct parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static bool fail(struct parser *p, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (p->failed)
		return false;
	p->failed = true;
	if (!p->errsize)
		return false;
	n = snprintf(p->err, p->errsize, "offset %zu: ", p->pos);
	if (n >= 0 && (size_t)n < p->errsize) {
		va_start(ap, fmt);
		vsnprintf(p->err + n, p->errsize - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return false;
}

static void *xrealloc(void *ptr, size_t n, size_t size)
{
	ptr = reallocarray(ptr, n ? n : 1, size);
	if (!ptr)
		abort(); /* test-only code */
	return ptr;
}

static int peek(const struct parser *p)
{
	return p->pos < p->len ? (unsigned char)p->s[p->pos] : -1;
}

static void skip_ws(struct parser *p)
{
	while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' ||
				   p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
		p->pos++;
}

static bool literal(struct parser *p, const char *word)
{
	size_t n = strlen(word);

	if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0)
		return fail(p, "unexpected character '%c'", p->s[p->pos]);
	p->pos += n;
	return true;
}

static bool is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static bool parse_number(struct parser *p, struct json *v)
{
	size_t start = p->pos;

	if (peek(p) == '-')
		p->pos++;
	if (peek(p) == '0') {
		p->pos++;
		if (is_digit(peek(p)))
			return fail(p, "leading zero in a number");
	} else if (is_digit(peek(p))) {
		while (is_digit(peek(p)))
			p->pos++;
	} else
		return fail(p, "a number needs a digit here");
	if (peek(p) == '.') {
		p->pos++;
		if (!is_digit(peek(p)))
			return fail(p, "a fraction needs a digit after '.'");
		while (is_digit(peek(p)))
			p->pos++;
	}
	if (peek(p) == 'e' || peek(p) == 'E') {
		p->pos++;
		if (peek(p) == '+' || peek(p) == '-')
			p->pos++;
		if (!is_digit(peek(p)))
			return fail(p, "an exponent needs a digit");
		while (is_digit(peek(p)))
			p->pos++;
	}
	v->type = JSON_NUMBER;
	v->text = strndup(p->s + start, p->pos - start);
	if (!v->text)
		abort();
	v->num = strtod(v->text, NULL); /* the C locale: tests never call setlocale */
	return true;
}

static int hex4(struct parser *p)
{
	int v = 0;

	if (p->len - p->pos < 4)
		return -1;
	for (int i = 0; i < 4; i++) {
		char c = p->s[p->pos + (size_t)i];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return -1;
	}
	p->pos += 4;
	return v;
}

static size_t put_utf8(char *out, unsigned cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | cp >> 18);
	out[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	out[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* Length of the well-formed UTF-8 sequence at s[0..n) (Unicode 15, table 3-7), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len;
	unsigned char lo = 0x80, hi = 0xbf;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f; /* no encoded surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
	} else
		return 0;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

/* At the opening quote. Decodes into a fresh buffer: *out and *outlen. */
static bool parse_string(struct parser *p, char **out, size_t *outlen)
{
	size_t n = 0, cap = 16;
	char *buf = xrealloc(NULL, cap, 1);

	p->pos++; /* '"' */
	for (;;) {
		if (p->pos >= p->len) {
			free(buf);
			return fail(p, "string not closed");
		}
		if (cap - n < 8)
			buf = xrealloc(buf, cap *= 2, 1);
		unsigned char c = (unsigned char)p->s[p->pos];
		if (c == '"') {
			p->pos++;
			break;
		}
		if (c < 0x20) {
			free(buf);
			return fail(p, "control character 0x%02x in a string", c);
		}
		if (c != '\\') {
			size_t k = utf8_len((const unsigned char *)p->s + p->pos, p->len - p->pos);
			if (!k) {
				free(buf);
				return fail(p, "invalid UTF-8 in a string");
			}
			memcpy(buf + n, p->s + p->pos, k);
			n += k;
			p->pos += k;
			continue;
		}
		p->pos++;
		int e = peek(p);
		const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
		const char *hit = e > 0 ? strchr(from, e) : NULL;
		if (hit) {
			buf[n++] = to[hit - from];
			p->pos++;
			continue;
		}
		if (e != 'u') {
			free(buf);
			return fail(p, "invalid escape");
		}
		p->pos++;
		int cp = hex4(p);
		if (cp < 0) {
			free(buf);
			return fail(p, "\\u needs four hex digits");
		}
		if (cp >= 0xdc00 && cp <= 0xdfff) {
			free(buf);
			return fail(p, "lone low surrogate");
		}
		if (cp >= 0xd800 && cp <= 0xdbff) {
			int lo = -1;
			if (p->len - p->pos >= 2 && p->s[p->pos] == '\\' && p->s[p->pos + 1] == 'u') {
				p->pos += 2;
				lo = hex4(p);
			}
			if (lo < 0xdc00 || lo > 0xdfff) {
				free(buf);
				return fail(p, "high surrogate without its low surrogate");
			}
			cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
		}
		n += put_utf8(buf + n, (unsigned)cp);
	}
	buf[n] = 0;
	*out = buf;
	*outlen = n;
	return true;
}

static bool parse_value(struct parser *p, struct json *v, unsigned depth);

static bool parse_array(struct parser *p, struct json *v, unsigned depth)
{
	v->type = JSON_ARRAY;
	p->pos++; /* '[' */
	skip_ws(p);
	if (peek(p) == ']') {
		p->pos++;
		return true;
	}
	for (;;) {
		v->items = xrealloc(v->items, v->len + 1, sizeof(*v->items));
		memset(&v->items[v->len], 0, sizeof(v->items[0]));
		if (!parse_value(p, &v->items[v->len++], depth + 1))
			return false;
		if (peek(p) == ',') {
			p->pos++;
			continue;
		}
		if (peek(p) == ']') {
			p->pos++;
			return true;
		}
		return fail(p, "expected ',' or ']' in an array");
	}
}

static bool parse_object(struct parser *p, struct json *v, unsigned depth)
{
	v->type = JSON_OBJECT;
	p->pos++; /* '{' */
	skip_ws(p);
	if (peek(p) == '}') {
		p->pos++;
		return true;
	}
	for (;;) {
		char *key;
		size_t klen, at;

		skip_ws(p);
		at = p->pos;
		if (peek(p) != '"')
			return fail(p, "expected a member name in quotes");
		if (!parse_string(p, &key, &klen))
			return false;
		if (strlen(key) != klen) {
			free(key);
			p->pos = at;
			return fail(p, "a member name with \\u0000 in it");
		}
		for (size_t i = 0; i < v->len; i++)
			if (strcmp(v->keys[i], key) == 0) {
				p->pos = at;
				fail(p, "duplicate member \"%s\"", key);
				free(key);
				return false;
			}
		v->keys = xrealloc(v->keys, v->len + 1, sizeof(*v->keys));
		v->items = xrealloc(v->items, v->len + 1, sizeof(*v->items));
		v->keys[v->len] = key;
		memset(&v->items[v->len], 0, sizeof(v->items[0]));
		v->len++;
		skip_ws(p);
		if (peek(p) != ':')
			return fail(p, "expected ':' after a member name");
		p->pos++;
		if (!parse_value(p, &v->items[v->len - 1], depth + 1))
			return false;
		if (peek(p) == ',') {
			p->pos++;
			continue;
		}
		if (peek(p) == '}') {
			p->pos++;
			return true;
		}
		return fail(p, "expected ',' or '}' in an object");
	}
}

static bool parse_value(struct parser *p, struct json *v, unsigned depth)
{
	bool ok;

	if (depth > JSON_MAX_DEPTH)
		return fail(p, "nested deeper than %d", JSON_MAX_DEPTH);
	skip_ws(p);
	switch (peek(p)) {
	case '{':
		ok = parse_object(p, v, depth);
		break;
	case '[':
		ok = parse_array(p, v, depth);
		break;
	case '"':
		v->type = JSON_STRING;
		ok = parse_string(p, &v->text, &v->len);
		break;
	case 't':
		v->type = JSON_TRUE;
		ok = literal(p, "true");
		break;
	case 'f':
		v->type = JSON_FALSE;
		ok = literal(p, "false");
		break;
	case 'n':
		v->type = JSON_NULL;
		ok = literal(p, "null");
		break;
	case -1:
		return fail(p, "unexpected end of the document");
	default:
		if (peek(p) == '-' || is_digit(peek(p)))
			ok = parse_number(p, v);
		else
			ok = fail(p, "unexpected character '%c'", p->s[p->pos]);
	}
	if (ok)
		skip_ws(p);
	return ok;
}

static void free_inner(struct json *v)
{
	if (v->type == JSON_ARRAY || v->type == JSON_OBJECT)
		for (size_t i = 0; i < v->len; i++) {
			free_inner(&v->items[i]);
			if (v->keys)
				free(v->keys[i]);
		}
	free(v->items);
	free(v->keys);
	free(v->text);
}

void json_free(struct json *v)
{
	if (!v)
		return;
	free_inner(v);
	free(v);
}

int json_parse(const char *text, size_t len, struct json **ret, char *err, size_t errsize)
{
	struct parser p = { .s = text, .len = len, .err = err, .errsize = errsize };
	struct json *v = calloc(1, sizeof(*v));

	if (!v)
		abort();
	if (errsize)
		err[0] = 0;
	if (parse_value(&p, v, 0) && p.pos != p.len)
		fail(&p, "something after the value");
	if (p.failed) {
		json_free(v);
		return -EINVAL;
	}
	*ret = v;
	return 0;
}

const struct json *json_get(const struct json *v, const char *key)
{
	if (!v || v->type != JSON_OBJECT)
		return NULL;
	for (size_t i = 0; i < v->len; i++)
		if (strcmp(v->keys[i], key) == 0)
			return &v->items[i];
	return NULL;
}

const struct json *json_at(const struct json *v, size_t i)
{
	if (!v || v->type != JSON_ARRAY || i >= v->len)
		return NULL;
	return &v->items[i];
}

const struct json *json_path(const struct json *v, const char *path)
{
	char name[256];

	while (v && *path) {
		size_t n = strcspn(path, ".");
		if (n >= sizeof(name))
			return NULL;
		memcpy(name, path, n);
		name[n] = 0;
		path += n + (path[n] == '.');
		if (v->type == JSON_ARRAY) {
			char *end;
			unsigned long long i = strtoull(name, &end, 10);
			v = *name && !*end && is_digit(*name) ? json_at(v, (size_t)i) : NULL;
		} else
			v = json_get(v, name);
	}
	return v;
}

const char *json_str(const struct json *v)
{
	return v && v->type == JSON_STRING ? v->text : NULL;
}

bool json_is_number(const struct json *v)
{
	return v && v->type == JSON_NUMBER;
}

bool json_u64(const struct json *v, uint64_t *ret)
{
	uint64_t x = 0;

	if (!json_is_number(v) || !v->text[0])
		return false;
	for (const char *c = v->text; *c; c++) {
		if (!is_digit(*c))
			return false; /* '-', '.', 'e' */
		unsigned d = (unsigned)(*c - '0');
		if (x > (UINT64_MAX - d) / 10)
			return false;
		x = x * 10 + d;
	}
	*ret = x;
	return true;
}
