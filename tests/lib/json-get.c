/* json-get.c: members that must be there, for the tests that read leek's JSON (json-get.h). */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "json-get.h"

double get_num(const struct json *v, const char *key)
{
	const struct json *m = json_get(v, key);

	if (!json_is_number(m))
		FAIL("\"%s\" is missing or not a number", key);
	return m->num;
}

uint64_t get_u64(const struct json *v, const char *key)
{
	uint64_t x;

	if (!json_u64(json_get(v, key), &x))
		FAIL("\"%s\" is missing or not a non-negative integer", key);
	return x;
}

const char *get_str(const struct json *v, const char *key)
{
	const char *s = json_str(json_get(v, key));

	if (!s)
		FAIL("\"%s\" is missing or not a string", key);
	return s;
}

void get_ci95(const struct json *v, const char *key, double *lo, double *hi)
{
	char k[64];
	const struct json *a;

	snprintf(k, sizeof(k), "%s_ci95", key);
	a = json_get(v, k);
	if (!a || a->type != JSON_ARRAY || a->len != 2 || !json_is_number(json_at(a, 0)) ||
	    !json_is_number(json_at(a, 1)))
		FAIL("\"%s\" is not [lo, hi]", k);
	*lo = json_at(a, 0)->num;
	*hi = json_at(a, 1)->num;
	if (!(*lo <= *hi))
		FAIL("\"%s\" is [%g, %g]: lo > hi", k, *lo, *hi);
}

bool get_bool(const struct json *v, const char *key)
{
	const struct json *m = json_get(v, key);

	if (!m || (m->type != JSON_TRUE && m->type != JSON_FALSE))
		FAIL("\"%s\" is missing or not a boolean", key);
	return m->type == JSON_TRUE;
}
