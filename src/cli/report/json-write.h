/* json-write.h: a JSON writer for leek's documents (docs/json.md): `leek report`'s (out-json.c)
 * and `leek diff`'s (src/cli/diff/diff-json.c), laid out alike: two spaces a level, and
 * containers opened "one line" kept on one line; and the string and number writers that the
 * tree (out-tree.c) and the HTML page (src/cli/html) use for their own layouts.
 *
 * The writer only writes: the caller opens and closes what it opened. Strings are escaped, with
 * U+FFFD for each byte that is not part of valid UTF-8; numbers that are not finite are null.
 * Never prints anything but JSON, and never allocates.
 */
#ifndef LEEK_JSON_WRITE_H
#define LEEK_JSON_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profile.h"

#define LK_JSON_MAX_DEPTH 16

struct lk_json {
	FILE *f;
	unsigned depth, inline_depth;      /* inside a container opened at inline_depth: one line */
	bool first[LK_JSON_MAX_DEPTH + 1]; /* nothing written yet at this depth */
	bool after_key;
};

void lk_json_init(struct lk_json *j, FILE *f);
/* '{' or '[' after a key (or in an array), and the matching close. */
void lk_json_open(struct lk_json *j, char c, bool one_line);
void lk_json_close(struct lk_json *j, char c);
void lk_json_key(struct lk_json *j, const char *k);
/* Where a value starts: after its key k in an object, or after a comma (k NULL) in an array;
 * the value itself is then written to j->f by the caller. */
void lk_json_value(struct lk_json *j, const char *k);
/* Each value with its key (NULL inside an array). */
void lk_json_str(struct lk_json *j, const char *k, const char *s); /* NULL: null */
void lk_json_strn(struct lk_json *j, const char *k, const char *s, size_t len);
void lk_json_u64(struct lk_json *j, const char *k, uint64_t v);
void lk_json_bool(struct lk_json *j, const char *k, bool v);
/* A number with that many decimals (0: rounded to an integer, never "-0"), or null. */
void lk_json_num(struct lk_json *j, const char *k, double v, int decimals);
void lk_json_seconds(struct lk_json *j, const char *k, uint64_t ns); /* UINT64_MAX: null */
/* "name": value, "name_ci95": [lo, hi] */
void lk_json_estimate(struct lk_json *j, const char *name, const struct lk_estimate *e);

/* A JSON string: quotes, escapes, and U+FFFD for each byte that is not part of valid UTF-8. */
void lk_json_write_string(FILE *f, const char *s, size_t len);
/* The same, for a JSON text inside an HTML <script> element: '<', '>' and '&' as \u escapes too
 * (so no "</script" or "<!--" can end or disturb the element), and U+2028 and U+2029, which
 * older JavaScript parsers take for line ends inside a string. */
void lk_json_write_string_in_html(FILE *f, const char *s, size_t len);
/* A JSON number with that many decimals (0: rounded to an integer, never "-0"), or null for one
 * that is not finite. */
void lk_json_write_number(FILE *f, double v, int decimals);

#endif /* LEEK_JSON_WRITE_H */
