/* test-json.c: the strict JSON reader that the report tests trust (json.h).
 *
 * It must accept every document RFC 8259 allows and refuse everything else with the right
 * offset, or a broken `leek report --format json` could pass the report tests. Runs in the unit
 * suite, so under ASan and UBSan as well.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "json.h"

static struct json *parse_ok(const char *s)
{
	char err[128];
	struct json *v = NULL;
	int r = json_parse(s, strlen(s), &v, err, sizeof(err));

	if (r < 0)
		FAIL("rejected '%s': %s", s, err);
	return v;
}

/* Must be refused with an error at this offset. */
static void parse_bad(const char *s, size_t len, size_t offset)
{
	char err[128], want[32];
	struct json *v = NULL;

	if (json_parse(s, len, &v, err, sizeof(err)) == 0) {
		json_free(v);
		FAIL("accepted '%.*s'", (int)len, s);
	}
	ASSERT_TRUE(v == NULL);
	snprintf(want, sizeof(want), "offset %zu: ", offset);
	if (strncmp(err, want, strlen(want)) != 0)
		FAIL("'%.*s': expected \"%s...\", got \"%s\"", (int)len, s, want, err);
}

#define BAD(s, off) parse_bad(s, sizeof(s) - 1, off)

TEST(values)
{
	struct json *v = parse_ok(" { \"a\" : [1, -2.5e3, true, false, null, \"x\", {}, []],\n"
				  "\t\"b\": {\"c\": {\"d\": 18446744073709551615}}, \"\": 0 }\r\n");
	uint64_t u = 0;

	ASSERT_EQ(v->type, JSON_OBJECT);
	ASSERT_EQ(v->len, 3);
	ASSERT_STREQ(v->keys[2], "");
	const struct json *a = json_get(v, "a");
	ASSERT_EQ(a->type, JSON_ARRAY);
	ASSERT_EQ(a->len, 8);
	ASSERT_TRUE(json_u64(json_at(a, 0), &u));
	ASSERT_EQ(u, 1);
	ASSERT_NEAR(json_at(a, 1)->num, -2500.0, 0);
	ASSERT_STREQ(json_at(a, 1)->text, "-2.5e3");
	ASSERT_TRUE(!json_u64(json_at(a, 1), &u));
	ASSERT_EQ(json_at(a, 2)->type, JSON_TRUE);
	ASSERT_EQ(json_at(a, 3)->type, JSON_FALSE);
	ASSERT_EQ(json_at(a, 4)->type, JSON_NULL);
	ASSERT_STREQ(json_str(json_at(a, 5)), "x");
	ASSERT_EQ(json_at(a, 6)->type, JSON_OBJECT);
	ASSERT_EQ(json_at(a, 6)->len, 0);
	ASSERT_EQ(json_at(a, 7)->len, 0);
	ASSERT_TRUE(json_at(a, 8) == NULL);
	ASSERT_TRUE(json_u64(json_path(v, "b.c.d"), &u));
	ASSERT_TRUE(u == UINT64_MAX);
	ASSERT_TRUE(json_path(v, "a.5") == json_at(a, 5));
	ASSERT_TRUE(json_path(v, "a.x") == NULL);
	ASSERT_TRUE(json_path(v, "a.-1") == NULL);
	ASSERT_TRUE(json_path(v, "b.c.d.e") == NULL);
	ASSERT_TRUE(json_get(a, "a") == NULL); /* not an object */
	ASSERT_TRUE(json_str(a) == NULL);
	json_free(v);

	/* Any value may stand alone, with white space around it. */
	v = parse_ok(" 0 ");
	ASSERT_TRUE(json_u64(v, &u));
	ASSERT_EQ(u, 0);
	json_free(v);
	v = parse_ok("-0");
	ASSERT_TRUE(!json_u64(v, &u));
	json_free(v);
	v = parse_ok("18446744073709551616"); /* 2^64: a number, but not a uint64_t */
	ASSERT_TRUE(!json_u64(v, &u));
	ASSERT_NEAR(v->num, 18446744073709551616.0, 0);
	json_free(v);
	v = parse_ok("1E+2");
	ASSERT_NEAR(v->num, 100, 0);
	json_free(v);
	v = parse_ok("0.125e-1");
	ASSERT_NEAR(v->num, 0.0125, 1e-18);
	json_free(v);
	json_free(NULL);
}

TEST(strings)
{
	struct json *v = parse_ok("[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\", \"\\u00e9\\u20AC\\ud83d\\ude00\","
				  " \"a\\u0000b\", \"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"]");

	ASSERT_STREQ(json_at(v, 0)->text, "\"\\/\b\f\n\r\t");
	ASSERT_STREQ(json_at(v, 1)->text, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
	ASSERT_EQ(json_at(v, 2)->len, 3);
	ASSERT_TRUE(memcmp(json_at(v, 2)->text, "a\0b", 4) == 0);
	ASSERT_STREQ(json_at(v, 3)->text, json_at(v, 1)->text);
	json_free(v);
}

TEST(refused)
{
	BAD("", 0);
	BAD("   ", 3);
	BAD("[1,]", 3);
	BAD("[1 2]", 3);
	BAD("{\"a\":1,}", 7);
	BAD("{\"a\" 1}", 5);
	BAD("{a:1}", 1);
	BAD("{\"a\":1,\"a\":2}", 7);
	BAD("01", 1);
	BAD("-", 1);
	BAD("1.", 2);
	BAD(".5", 0);
	BAD("1e", 2);
	BAD("+1", 0);
	BAD("NaN", 0);
	BAD("Infinity", 0);
	BAD("-Infinity", 1);
	BAD("nul", 0);
	BAD("truex", 4);
	BAD("1 2", 2);
	BAD("{} x", 3);
	BAD("\"abc", 4);
	BAD("\"a\tb\"", 2);
	BAD("\"\\x\"", 2);
	BAD("\"\\u12g4\"", 3);
	BAD("\"\\ud800\"", 7);
	BAD("\"\\ud800\\u0041\"", 13);
	BAD("\"\\udc00\"", 7);
	BAD("\"\xff\"", 1);
	BAD("\"\xc0\xaf\"", 1);     /* overlong '/' */
	BAD("\"\xed\xa0\x80\"", 1); /* an encoded surrogate */
	BAD("\"\xe2\x82\"", 1);     /* cut */
	BAD("// no\n1", 0);
	BAD("[1]\0", 3);            /* a NUL after the value is something after the value */
	BAD("{\"a\\u0000\":1}", 1);
}

TEST(depth)
{
	char deep[2 * (JSON_MAX_DEPTH + 2) + 1];
	struct json *v;
	int n;

	/* JSON_MAX_DEPTH + 1 nested arrays are fine (depth counts from 0)... */
	n = JSON_MAX_DEPTH + 1;
	memset(deep, '[', (size_t)n);
	memset(deep + n, ']', (size_t)n);
	deep[2 * n] = 0;
	v = parse_ok(deep);
	json_free(v);
	/* ...one more is refused where it starts, not by running out of stack. */
	n++;
	memset(deep, '[', (size_t)n);
	memset(deep + n, ']', (size_t)n);
	parse_bad(deep, 2 * (size_t)n, (size_t)n - 1);
}

TEST(not_nul_terminated)
{
	const char s[] = { '[', '1', '2', ']', '9' }; /* only the first 4 bytes are the document */
	struct json *v = NULL;
	char err[64];
	uint64_t u;

	ASSERT_EQ(json_parse(s, 4, &v, err, sizeof(err)), 0);
	ASSERT_TRUE(json_u64(json_at(v, 0), &u));
	ASSERT_EQ(u, 12);
	json_free(v);
	ASSERT_EQ(json_parse(s, 2, &v, err, sizeof(err)), -EINVAL);
	ASSERT_CONTAINS(err, "offset 2: ");
}
