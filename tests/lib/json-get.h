/* json-get.h: members of a JSON document that must be there (json.h's tree), for the tests of
 * `leek report` and `leek diff`: a lookup that finds nothing, or the wrong type, fails the test
 * with the key it wanted.
 */
#ifndef LEEK_TEST_JSON_GET_H
#define LEEK_TEST_JSON_GET_H

#include <stdint.h>

#include "json.h"

/* A number (as a double), an exact non-negative integer, a string. */
double get_num(const struct json *v, const char *key);
uint64_t get_u64(const struct json *v, const char *key);
const char *get_str(const struct json *v, const char *key);
/* An estimate's 95% interval, "<key>_ci95": [lo, hi]. */
void get_ci95(const struct json *v, const char *key, double *lo, double *hi);
/* A boolean. */
bool get_bool(const struct json *v, const char *key);

#endif /* LEEK_TEST_JSON_GET_H */
