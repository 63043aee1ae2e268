/* json.h: a small, strict JSON reader for the tests of leek's JSON (RFC 8259, nothing more).
 *
 * It parses a whole document into a tree and refuses anything RFC 8259 does not allow, because
 * the tests use it to check `leek report --format json` and a lenient reader would hide a broken
 * writer: trailing commas, leading zeros, NaN or Infinity, comments, control characters or
 * invalid UTF-8 in strings, lone surrogates, duplicate keys in one object, and anything after the
 * value. Nesting is limited to JSON_MAX_DEPTH. Numbers keep their text, so an integer can be
 * read exactly as a uint64_t (a double holds only 53 bits).
 *
 * Test-only code: it allocates as it likes and reports the first error as "offset N: what".
 */
#ifndef LEEK_TEST_JSON_H
#define LEEK_TEST_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JSON_MAX_DEPTH 64

enum json_type {
	JSON_NULL,
	JSON_FALSE,
	JSON_TRUE,
	JSON_NUMBER,
	JSON_STRING,
	JSON_ARRAY,
	JSON_OBJECT,
};

struct json {
	enum json_type type;
	double num;          /* JSON_NUMBER */
	char *text;          /* JSON_NUMBER: its text; JSON_STRING: decoded UTF-8, NUL-terminated */
	size_t len;          /* JSON_STRING: bytes (a \u0000 may sit inside); ARRAY/OBJECT: items */
	struct json *items;  /* ARRAY: elements; OBJECT: member values, in document order */
	char **keys;         /* OBJECT: member names, decoded, parallel to items */
};

/* Parses text[0..len). 0 and *ret, or -EINVAL and a message in err ("offset N: ..."). */
int json_parse(const char *text, size_t len, struct json **ret, char *err, size_t errsize);
void json_free(struct json *v); /* accepts NULL */

/* Lookups return NULL when v is NULL, of another type, or lacks the member or index. */
const struct json *json_get(const struct json *v, const char *key);
const struct json *json_at(const struct json *v, size_t i);
/* Follows "a.b.3.c": members by name, array elements by decimal index. */
const struct json *json_path(const struct json *v, const char *path);

const char *json_str(const struct json *v); /* NULL unless a string */
bool json_is_number(const struct json *v);
/* The number as an exact non-negative integer ("12", not "12.0" or "1e3"); false otherwise. */
bool json_u64(const struct json *v, uint64_t *ret);

#endif /* LEEK_TEST_JSON_H */
