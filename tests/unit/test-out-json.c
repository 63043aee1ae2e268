/* test-out-json.c: `leek report --format json` (src/cli/report/out-json.c) without a profile.
 *
 * Strings go through the escaper byte by byte, including what no valid JSON may hold (control
 * characters, bytes that are not UTF-8); whole documents are built from hand-made reports and
 * must pass tests/report's strict reader (RFC 8259: no NaN, no trailing comma, no duplicate key)
 * with the keys docs/json.md promises.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "json.h"
#include "json-write.h"
#include "report.h"

/* The escaper's output for len bytes of s, in a static buffer. */
static const char *escaped(const char *s, size_t len)
{
	static char out[1024];
	FILE *f = fmemopen(out, sizeof(out), "w");

	ASSERT_TRUE(f != NULL);
	lk_json_write_string(f, s, len);
	fclose(f);
	return out;
}

#define ESCAPED(lit) escaped(lit, sizeof(lit) - 1)

TEST(escaping)
{
	ASSERT_STREQ(ESCAPED(""), "\"\"");
	ASSERT_STREQ(ESCAPED("plain text"), "\"plain text\"");
	ASSERT_STREQ(ESCAPED("a\"b\\c/d"), "\"a\\\"b\\\\c/d\"");
	ASSERT_STREQ(ESCAPED("\n\t\r\x01\x1f\x7f"), "\"\\n\\t\\r\\u0001\\u001f\\u007f\"");
	ASSERT_STREQ(ESCAPED("nul\0inside"), "\"nul\\u0000inside\"");
	/* Valid UTF-8 passes as it is: 2, 3 and 4 bytes. */
	ASSERT_STREQ(ESCAPED("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\x9f"),
		     "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\x9f\"");
	/* Anything else: one U+FFFD per byte, never a broken document. */
	ASSERT_STREQ(ESCAPED("\xff"), "\"\\ufffd\"");
	ASSERT_STREQ(ESCAPED("\xc0\x80"), "\"\\ufffd\\ufffd\"");             /* overlong NUL */
	ASSERT_STREQ(ESCAPED("\xe0\x80\xaf"), "\"\\ufffd\\ufffd\\ufffd\"");   /* overlong '/' */
	ASSERT_STREQ(ESCAPED("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");   /* a surrogate */
	ASSERT_STREQ(ESCAPED("\xf4\x90\x80\x80"), "\"\\ufffd\\ufffd\\ufffd\\ufffd\""); /* > 10FFFF */
	ASSERT_STREQ(ESCAPED("a\xe2\x82"), "\"a\\ufffd\\ufffd\"");            /* cut short */
	ASSERT_STREQ(ESCAPED("\x80z"), "\"\\ufffdz\"");                       /* lone continuation */
	ASSERT_STREQ(ESCAPED("\xc3\xa9\xc3"), "\"\xc3\xa9\\ufffd\"");
}

/* Every byte value in a string: the strict reader must accept it and give back each valid byte. */
TEST(escaping_every_byte)
{
	char in[256], *out = NULL, err[128];
	size_t size = 0;
	struct json *v = NULL;
	FILE *f = open_memstream(&out, &size);

	for (int i = 0; i < 256; i++)
		in[i] = (char)i;
	lk_json_write_string(f, in, sizeof(in));
	fclose(f);
	if (json_parse(out, size, &v, err, sizeof(err)) < 0)
		FAIL("%s in %s", err, out);
	ASSERT_EQ(v->type, JSON_STRING);
	ASSERT_EQ(v->len, 128 + 128 * 3); /* ASCII, then U+FFFD (3 bytes) for each high byte */
	ASSERT_TRUE(memcmp(v->text, in, 128) == 0);
	json_free(v);
	free(out);
}

static const struct lk_sym_frame frames[] = {
	{ .function = "operator new(unsigned long)", .module = "/usr/lib/libstdc++.so.6" },
	{ .function = "cache_put", .file = "/src/ca\"che.c", .line = 42, .module = "/usr/bin/srv",
	  .inlined = true },
	{ .function = "handle\x01\xff", .file = NULL, .line = 0, .module = "/usr/bin/srv" },
};
static const struct lk_sym_frame *const stack[] = { &frames[0], &frames[1], &frames[2] };
/* Function ids: frames[0] an allocator frame; in the second stack frames[2] came after a
 * wrapper, frames[3], which the report lists as skipped. */
static const uint32_t funcs[] = { 0 | LK_FUNC_ALLOC, 1, 2 };
static const struct lk_sym_frame wrapper = { .function = "libsqlite3.so.0+0xa7503",
					     .module = "/usr/lib/libsqlite3.so.0" };
static const struct lk_sym_frame *const wrapped[] = { &wrapper, &frames[2] };
static const uint32_t wrapped_funcs[] = { 3, 2 };
static const struct lk_sym_frame *firsts[] = { &frames[0], &frames[1], &frames[2], &wrapper };
static struct lk_wrapper skipped[] = {
	{ .func = 3, .round = 1, .samples = 40, .share = 0.8, .callers = 12, .top_share = 0.25 },
};

static struct lk_estimate est(double value, double var, uint64_t samples)
{
	return (struct lk_estimate){ .value = value, .var = var, .lo = value - 2 * sqrt(var),
				     .hi = value + 2 * sqrt(var), .samples = samples,
				     .k_eff = var > 0 ? value * value / var : INFINITY };
}

/* A report of one process with two sites; the second has no file and odd numbers. */
static void fill(struct lk_report *r, struct lk_report_process *q, struct lk_report_site s[2],
		 struct lk_timeline_point tl[2], const char *path)
{
	static char cmdline[] = "srv\0--port\0" "80\xff";

	*q = (struct lk_report_process){
		.path = (char *)path, .exe = "/usr/bin/srv", .exe_len = 12, .cmdline = cmdline,
		.cmdline_len = sizeof(cmdline) - 1, .pid = 42, .ppid = 1, .period = 524288,
		.totals = { .duration_ns = 1500000000, .period = 524288, .samples = 10,
			    .alloc_bytes = est(1e6, 1e10, 10), .peak_bytes = est(5e5, 1e10, 4),
			    .peak_ns = 750000000, .live_bytes_end = est(4e5, 1e10, 3),
			    .trailer = true },
	};
	q->totals.losses[LK_CNT_ARENA_FULL] = 3;
	q->totals.losses[LK_CNT_SAMPLES] = 10;
	s[0] = (struct lk_report_site){
		.stack = (const struct lk_sym_frame **)stack, .funcs = funcs, .nframes = 3,
		.site_frame = 1, .nstacks = 2, .live_bytes = est(3e5, 1e9, 25), .alloc_bytes = est(6e5, 1e9, 30),
		.growth = { LK_TREND_GROWING, 0.99, 1024.5 }, .share = 0.75, .oldest_age_ns = -1,
	};
	s[1] = (struct lk_report_site){
		.stack = (const struct lk_sym_frame **)wrapped, .funcs = wrapped_funcs, .nframes = 2,
		.site_frame = 1, .nstacks = 1, .live_bytes = est(1e5, 1e10, 1),
		.growth = { LK_TREND_UNKNOWN, NAN, -0.0 }, .share = 0.25, .oldest_age_ns = -1,
	};
	s[1].live_bytes.too_few = true;
	tl[0] = (struct lk_timeline_point){ 750000000, 2e5, 5e5, 1 << 20 };
	tl[1] = (struct lk_timeline_point){ 1500000000, 4e5, 4e5, 2 << 20 };
	*r = (struct lk_report){
		.opts = { .view = LK_VIEW_LEAKS }, .procs = q, .nprocs = 1, .totals = q->totals,
		.view_bytes = est(4e5, 1e10, 3), .sites = s, .nsites = 2, .sites_total = 5,
		.timeline = tl, .ntimeline = 2,
		.funcs = { .first = firsts, .n = 4 },
		.wrappers = { .list = skipped, .n = 1 },
	};
}

static struct json *parse(const char *out, size_t size)
{
	char err[128];
	struct json *v = NULL;

	if (json_parse(out, size, &v, err, sizeof(err)) < 0)
		FAIL("%s in:\n%s", err, out);
	return v;
}

static void check_site(const struct json *s)
{
	static const char *const keys[] = {
		"function", "file", "line", "module", "stack", "samples", "live_bytes",
		"live_bytes_ci95", "live_objects", "alloc_bytes", "alloc_objects", "peak_bytes",
		"trend",
	};

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!json_get(s, keys[i]))
			FAIL("a site has no \"%s\"", keys[i]);
	ASSERT_EQ(json_get(s, "live_bytes_ci95")->len, 2);
}

TEST(document_one_process)
{
	struct lk_report r;
	struct lk_report_process q;
	struct lk_report_site s[2];
	struct lk_timeline_point tl[2];
	struct lk_json_doc *d = NULL;
	char *out = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&out, &size);
	struct json *v;
	uint64_t n;

	fill(&r, &q, s, tl, "/tmp/p.lk");
	ASSERT_OK(lk_json_begin(f, &r.opts, false, &d));
	lk_json_report(d, &r);
	lk_json_end(d);
	fclose(f);
	v = parse(out, size);

	ASSERT_STREQ(json_str(json_get(v, "view")), "leaks");
	ASSERT_STREQ(json_str(json_path(v, "processes.0.file")), "/tmp/p.lk");
	ASSERT_STREQ(json_str(json_path(v, "processes.0.cmdline.1")), "--port");
	ASSERT_STREQ(json_str(json_path(v, "processes.0.cmdline.2")), "80\xef\xbf\xbd");
	ASSERT_TRUE(json_u64(json_path(v, "totals.alloc_bytes"), &n) && n == 1000000);
	ASSERT_TRUE(json_u64(json_path(v, "totals.live_bytes_end"), &n) && n == 400000);
	ASSERT_TRUE(json_u64(json_path(v, "totals.losses.arena_full"), &n) && n == 3);
	ASSERT_TRUE(json_path(v, "totals.losses.samples") == NULL); /* an event, not a loss */
	ASSERT_TRUE(json_is_number(json_path(v, "totals.peak_time_s")));
	ASSERT_TRUE(json_is_number(json_path(v, "totals.duration_s")));
	ASSERT_TRUE(json_u64(json_path(v, "totals.period"), &n) && n == 524288);
	ASSERT_TRUE(json_u64(json_path(v, "totals.samples"), &n) && n == 10);

	ASSERT_EQ(json_get(v, "sites")->len, 2);
	check_site(json_path(v, "sites.0"));
	check_site(json_path(v, "sites.1"));
	ASSERT_STREQ(json_str(json_path(v, "sites.0.function")), "cache_put");
	ASSERT_STREQ(json_str(json_path(v, "sites.0.file")), "/src/ca\"che.c");
	ASSERT_TRUE(json_u64(json_path(v, "sites.0.line"), &n) && n == 42);
	ASSERT_STREQ(json_str(json_path(v, "sites.0.trend")), "growing");
	ASSERT_EQ(json_path(v, "sites.0.too_few_samples")->type, JSON_FALSE);
	ASSERT_TRUE(json_u64(json_path(v, "sites.0.live_bytes"), &n) && n == 300000);
	ASSERT_TRUE(json_u64(json_path(v, "sites.0.samples"), &n) && n == 25);
	ASSERT_EQ(json_path(v, "sites.0.stack")->len, 3);
	ASSERT_STREQ(json_str(json_path(v, "sites.0.stack.0.function")),
		     "operator new(unsigned long)");
	ASSERT_EQ(json_path(v, "sites.0.stack.0.file")->type, JSON_NULL);
	ASSERT_EQ(json_path(v, "sites.0.stack.1.site")->type, JSON_TRUE);
	ASSERT_EQ(json_path(v, "sites.0.stack.1.inlined")->type, JSON_TRUE);
	/* The second site: no file, no line, a name with a control byte and a non-UTF-8 byte,
	 * a NaN confidence and a negative zero slope. */
	ASSERT_STREQ(json_str(json_path(v, "sites.1.function")), "handle\x01\xef\xbf\xbd");
	ASSERT_EQ(json_path(v, "sites.1.file")->type, JSON_NULL);
	ASSERT_EQ(json_path(v, "sites.1.line")->type, JSON_NULL);
	ASSERT_EQ(json_path(v, "sites.1.too_few_samples")->type, JSON_TRUE);
	ASSERT_STREQ(json_str(json_path(v, "sites.1.trend")), "unknown");
	ASSERT_EQ(json_path(v, "sites.1.trend_confidence")->type, JSON_NULL);
	ASSERT_TRUE(json_u64(json_path(v, "sites.1.slope_bytes_per_s"), &n) && n == 0);
	ASSERT_EQ(json_path(v, "sites.1.stack.0.wrapper")->type, JSON_TRUE);
	ASSERT_EQ(json_path(v, "sites.1.stack.1.site")->type, JSON_TRUE);
	ASSERT_TRUE(json_path(v, "sites.0.stack.0.wrapper") == NULL); /* an allocator frame */
	ASSERT_TRUE(json_u64(json_get(v, "sites_total"), &n) && n == 5);
	ASSERT_EQ(json_path(v, "options.auto_wrappers")->type, JSON_TRUE);
	ASSERT_EQ(json_get(v, "wrappers_skipped")->len, 1);
	ASSERT_STREQ(json_str(json_path(v, "wrappers_skipped.0.function")),
		     "libsqlite3.so.0+0xa7503");
	ASSERT_STREQ(json_str(json_path(v, "wrappers_skipped.0.module")), "/usr/lib/libsqlite3.so.0");
	ASSERT_EQ(json_path(v, "wrappers_skipped.0.file")->type, JSON_NULL);
	ASSERT_TRUE(json_u64(json_path(v, "wrappers_skipped.0.callers"), &n) && n == 12);
	ASSERT_TRUE(json_u64(json_path(v, "wrappers_skipped.0.samples"), &n) && n == 40);
	ASSERT_TRUE(json_u64(json_path(v, "wrappers_skipped.0.round"), &n) && n == 1);
	ASSERT_TRUE(json_path(v, "wrappers_skipped.0.share")->num == 0.8);
	ASSERT_EQ(json_get(v, "timeline")->len, 2);
	ASSERT_TRUE(json_u64(json_path(v, "timeline.1.rss_bytes"), &n) && n == 2 << 20);
	json_free(v);
	free(out);
}

TEST(document_per_process)
{
	struct lk_report r[2];
	struct lk_report_process q[2];
	struct lk_report_site s[2][2];
	struct lk_timeline_point tl[2][2];
	struct lk_json_doc *d = NULL;
	char *out = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&out, &size);
	struct json *v;

	fill(&r[0], &q[0], s[0], tl[0], "/tmp/a.lk");
	fill(&r[1], &q[1], s[1], tl[1], "/tmp/b.lk");
	r[1].nsites = 0;
	ASSERT_OK(lk_json_begin(f, &r[0].opts, true, &d));
	lk_json_report(d, &r[0]);
	lk_json_report(d, &r[1]);
	lk_json_end(d);
	fclose(f);
	v = parse(out, size);

	ASSERT_TRUE(json_get(v, "totals") == NULL); /* only per process */
	ASSERT_TRUE(json_get(v, "sites") == NULL);
	ASSERT_EQ(json_get(v, "processes")->len, 2);
	ASSERT_STREQ(json_str(json_path(v, "processes.1.file")), "/tmp/b.lk");
	ASSERT_EQ(json_path(v, "processes.0.sites")->len, 2);
	ASSERT_EQ(json_path(v, "processes.1.sites")->len, 0);
	check_site(json_path(v, "processes.0.sites.0"));
	ASSERT_TRUE(json_is_number(json_path(v, "processes.1.totals.alloc_bytes")));
	ASSERT_EQ(json_path(v, "processes.1.timeline")->len, 2);
	json_free(v);
	free(out);
}

TEST(document_merged)
{
	struct lk_report r;
	struct lk_report_process q[2];
	struct lk_report_site s[2], s2[2];
	struct lk_timeline_point tl[2], tl2[2];
	struct lk_report r2;
	struct lk_json_doc *d = NULL;
	char *out = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&out, &size);
	struct json *v;

	fill(&r, &q[0], s, tl, "/tmp/a.lk");
	fill(&r2, &q[1], s2, tl2, "/tmp/b.lk");
	r.opts.merge = true;
	r.nprocs = 2;
	r.periods_differ = true;
	r.totals.peak_ns = UINT64_MAX; /* a merged peak has no single time */
	ASSERT_OK(lk_json_begin(f, &r.opts, false, &d));
	lk_json_report(d, &r);
	lk_json_end(d);
	fclose(f);
	v = parse(out, size);

	ASSERT_EQ(json_get(v, "merged")->type, JSON_TRUE);
	ASSERT_EQ(json_get(v, "processes")->len, 2);
	ASSERT_TRUE(json_path(v, "processes.0.sites") == NULL);
	ASSERT_EQ(json_path(v, "totals.period")->type, JSON_NULL);
	ASSERT_EQ(json_path(v, "totals.peak_time_s")->type, JSON_NULL);
	ASSERT_EQ(json_get(v, "sites")->len, 2);
	json_free(v);
	free(out);
}
