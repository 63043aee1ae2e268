/* test-html.c: `leek report --format html` in a real browser: each test writes a page, loads it
 * in headless Chromium through browse.py (a small Chrome DevTools Protocol client: console
 * errors, exceptions and dialogs captured, real mouse clicks and typing) and checks what the page
 * shows, as a person would see it. Every page must load with no console error and ask for no URL.
 * A screenshot of each page is kept in ARTIFACT_DIR (the build's meson-logs) and its path printed.
 *
 * Without Chromium (Debian: chromium) the tests skip. The fixture tests run programs under
 * libleek, so only where tests/report builds them (not under a sanitizer); the hostile profile is
 * built record by record (build-profile.h) and runs everywhere.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build-profile.h"
#include "files.h"
#include "harness.h"
#include "json.h"
#include "leek.h"

#ifdef FX_DIR
#include "diff-util.h"
#include "report-util.h"
#endif

#define TIMEOUT 120 /* seconds for a browse.py run: Chromium's start is most of it */

/* The page's result of the step, as browse.py printed it. */
struct browsed {
	struct proc p;
	struct json *doc;
	const struct json *results;
};

/* Loads page in Chromium and runs the steps (browse.py's, NULL-terminated), keeping a screenshot
 * of the end as ARTIFACT_DIR/html-NAME.png. Skips without Chromium; fails on a failed step, a
 * console error or any request the page makes. */
static void browse(struct browsed *b, const char *dir, const char *page, const char *name,
		   const char *const *steps)
{
	const char *argv[64] = { PYTHON3, BROWSE_PY, page };
	char shot[512], err[256];
	size_t n = 3;
	const struct json *errors, *requests;

	snprintf(shot, sizeof(shot), "shot=%s/html-%s.png", ARTIFACT_DIR, name);
	for (; *steps && n < 60; steps++)
		argv[n++] = *steps;
	argv[n++] = shot;
	argv[n] = NULL;
	*b = (struct browsed){ 0 };
	proc_run(&b->p, dir, argv, NULL, TIMEOUT);
	if (b->p.status == 77)
		SKIP("no Chromium: %s", b->p.err);
	if (json_parse(b->p.out, b->p.out_len, &b->doc, err, sizeof(err)) < 0)
		FAIL("browse.py (status %d) printed no JSON: %s\n%s\n%s", b->p.status, err, b->p.out,
		     b->p.err);
	if (b->p.status != 0)
		FAIL("browse.py failed: %s\n%s", json_str(json_get(b->doc, "failure")), b->p.out);
	errors = json_get(b->doc, "errors");
	requests = json_get(b->doc, "requests");
	ASSERT_TRUE(errors && requests);
	if (errors->len || requests->len)
		FAIL("the page had errors or made requests: %s", b->p.out);
	b->results = json_get(b->doc, "results");
	ASSERT_TRUE(b->results);
	printf("screenshot: %s/html-%s.png\n", ARTIFACT_DIR, name);
}

static void browsed_free(struct browsed *b)
{
	json_free(b->doc);
	proc_free(&b->p);
}

static const struct json *result(const struct browsed *b, size_t i)
{
	const struct json *r = json_at(b->results, i);

	if (!r)
		FAIL("no result %zu in %s", i, b->p.out);
	return r;
}

static double result_num(const struct browsed *b, size_t i, const char *key)
{
	const struct json *v = key ? json_get(result(b, i), key) : result(b, i);

	if (!json_is_number(v))
		FAIL("result %zu%s%s is not a number: %s", i, key ? "." : "", key ? key : "", b->p.out);
	return v->num;
}

static const char *result_str(const struct browsed *b, size_t i)
{
	const char *s = json_str(result(b, i));

	if (!s)
		FAIL("result %zu is not a string: %s", i, b->p.out);
	return s;
}

/* `leek report --format html -o DIR/NAME.html ARGS...`, which must succeed; the page's path. */
static char *write_page(const char *dir, const char *name, const char *profile)
{
	struct proc p;
	char *page;

	if (asprintf(&page, "%s/%s.html", dir, name) < 0)
		abort();
	leek_exec(&p, dir, NULL, (const char *const[]){ "report", "--format", "html", "-o", page,
							  profile, NULL }, 60);
	if (p.status != 0)
		FAIL("leek report --format html: status %d: %s", p.status, p.err);
	ASSERT_EQ(p.out_len, 0); /* all of it went to the file */
	proc_free(&p);
	return page;
}

/* Waits until the flame graph's transitions are over: every frame drawn at its width. */
#define SETTLED "wait=document.querySelectorAll('#flame-graph g.frame').length > 0 && " \
		"[...document.querySelectorAll('#flame-graph .d3-flame-graph-label')]" \
		".some(e => e.textContent)"
#define SLEEP "sleep=600" /* d3-flame-graph's transitions: 250 ms, then the labels */
/* The frames of the flame graph with that name, and how many of them the search highlights. */
#define FRAMES_NAMED(name) \
	"eval=[...document.querySelectorAll('#flame-graph g.frame')].filter(g => " \
	"g.getAttribute('name') === " name ").length"
#define HIGHLIGHTED \
	"eval=[...document.querySelectorAll('#flame-graph g.frame')].filter(g => " \
	"g.querySelector('rect').getAttribute('fill') === '#E600E6').map(g => g.getAttribute('name'))"

/* Hostile strings where a profile has them: the executable, the command line, and module paths,
 * whose base names become function names when no file backs them ("NAME+0x100"). */
#define EVIL_EXE "</script><script>alert(1)</script>"
#define EVIL_MODULE1 "/nonexistent/</script><script>alert(2)</script>"
/* No '/' after the directory, so the function name keeps it all: a comment opener, markup, a
 * line separator (U+2028), quotes and an ampersand entity. */
#define EVIL_MODULE2 "/nonexistent/<!--<img src=x onerror=alert(3)>\xe2\x80\xa8&amp;\"'.so"
#define EVIL_CMDLINE "prog\0</SCRIPT><script>alert(4)</script>\0<!--"

static void write_hostile_profile(const char *path)
{
	static const uint64_t frames1[] = { 0x10000100, 0x20000200 };
	static const uint64_t frames2[] = { 0x20000300 };
	static uint64_t trailer[LK_CNT_MAX + 1];
	const uint64_t mods[] = { 0x10000000, 0x20000000 };
	const char *paths[] = { EVIL_MODULE1, EVIL_MODULE2 };
	struct pbuf b = { 0 };

	trailer[LK_CNT_SAMPLES] = 2;
	pb_header(&b, &(struct pb_header){ .pid = 4242, .ppid = 1, .period = 1,
					   .start_realtime_ns = 1700000000000000000,
					   .start_monotonic_ns = 1000000000, .exe = EVIL_EXE,
					   .cmdline = EVIL_CMDLINE,
					   .cmdline_len = sizeof(EVIL_CMDLINE) - 1 });
	for (unsigned i = 0; i < 2; i++) {
		struct lk_module_info m = { .id = i + 1, .base = mods[i], .nseg = 1,
					    .seg = { { 0, 0x10000 } }, .path = paths[i],
					    .path_len = (uint32_t)strlen(paths[i]) };
		PB_REC(&b, lk_rec_module(rec, 0, &m));
	}
	PB_REC(&b, lk_rec_stack(rec, 1, frames1, 2));
	PB_REC(&b, lk_rec_stack(rec, 2, frames2, 1));
	pb_alloc(&b, 1000, 42, 0x5000, 4096, 1);
	pb_alloc(&b, 1000, 42, 0x9000, 8192, 2);
	PB_REC(&b, lk_rec_counters(rec, LK_REC_TRAILER, 1000, 1700000001000000000, trailer));
	write_file(path, b.p, b.len);
	free(b.p);
	free(b.map);
}

/* -o FILE is created only once the report is made: a profile that cannot be read leaves none
 * (exit 2), and two profiles without --merge are a usage error (one page shows one report). */
TEST(output_only_for_a_report)
{
	char dir[256], page[300], bad[300], good[300];
	struct proc p;

	tmp_dir(dir);
	snprintf(page, sizeof(page), "%s/out.html", dir);
	snprintf(bad, sizeof(bad), "%s/bad.lk", dir);
	snprintf(good, sizeof(good), "%s/good.lk", dir);
	write_file(bad, "not a profile", 13);
	write_hostile_profile(good);
	leek_exec(&p, dir, NULL, (const char *const[]){ "report", "--format", "html", "-o", page,
							  bad, NULL }, 60);
	ASSERT_EQ(p.status, 2);
	ASSERT_EQ(count_files(dir, "out", ".html"), 0);
	proc_free(&p);
	leek_exec(&p, dir, NULL, (const char *const[]){ "report", "--format", "html", "-o", page,
							  good, good, NULL }, 60);
	ASSERT_EQ(p.status, 1);
	ASSERT_CONTAINS(p.err, "--merge");
	ASSERT_EQ(count_files(dir, "out", ".html"), 0);
	proc_free(&p);
	leek_exec(&p, dir, NULL, (const char *const[]){ "report", "--format", "html", "--merge",
							  "-o", page, good, good, NULL }, 60);
	ASSERT_EQ(p.status, 0);
	ASSERT_EQ(count_files(dir, "out", ".html"), 1);
	proc_free(&p);
	tmp_dir_remove(dir);
}

/* Names from a profile stay text: the page holds exactly its own six scripts (the data, three
 * libraries, common.js and report.js), nothing runs (no dialog, no console error: the browse
 * fails on either), no element comes from a name, and the names show verbatim where they
 * belong. */
TEST(hostile_names_stay_text)
{
	char dir[256], profile[300], *page, *html;
	struct browsed b;

	tmp_dir(dir);
	snprintf(profile, sizeof(profile), "%s/evil.lk", dir);
	write_hostile_profile(profile);
	page = write_page(dir, "evil", profile);
	html = read_file(page, NULL);
	/* The data block is one element: its first "</script" is its own end. */
	ASSERT_TRUE(strstr(html, "alert(1)") && !strstr(html, "<script>alert"));
	browse(&b, dir, page, "hostile", (const char *const[]){
		SETTLED,
		"eval=document.scripts.length",
		"eval=document.querySelectorAll('img, iframe, object, embed').length",
		"eval=document.title",
		"eval=[...document.querySelectorAll('#flame-graph g.frame')].map(g => "
		"g.getAttribute('name'))",
		"eval=document.getElementById('sites-table').textContent",
		"eval=document.getElementById('summary-table').textContent",
		"eval=[...document.querySelectorAll('#sites-table td.site')].map(td => "
		"td.getAttribute('title')).join(' ')",
		NULL });
	ASSERT_EQ(result_num(&b, 0, NULL), 6);
	ASSERT_EQ(result_num(&b, 1, NULL), 0);
	ASSERT_STREQ(result_str(&b, 2), "leek: script>, pid 4242"); /* the exe's base name */
	/* The function of module 2's frames: its base name and the offset. */
	{
		const struct json *names = result(&b, 3);
		bool found = false;
		for (size_t i = 0; i < names->len; i++)
			found |= lk_test_contains(json_str(json_at(names, i)) ?: "",
						  "<!--<img src=x onerror=alert(3)>\xe2\x80\xa8&amp;\"'.so+0x");
		if (!found)
			FAIL("no frame named after module 2: %s", b.p.out);
	}
	ASSERT_CONTAINS(result_str(&b, 4), "<img src=x onerror=alert(3)>");
	ASSERT_CONTAINS(result_str(&b, 5), "</SCRIPT><script>alert(4)</script> <!--");
	ASSERT_CONTAINS(result_str(&b, 5), EVIL_EXE);
	ASSERT_CONTAINS(result_str(&b, 6), EVIL_MODULE1);
	browsed_free(&b);
	free(html);
	free(page);
	tmp_dir_remove(dir);
}

#ifdef FX_DIR
/* `leek run --period PERIOD` of a fixture into dir; the profile's path. */
static char *run_fixture_period(const char *dir, const char *fixture, const char *period)
{
	struct proc p;
	char out[300];

	snprintf(out, sizeof(out), "%s/x.%%p.lk", dir);
	leek_run(&p, dir, (const char *const[]){ "--period", period, "-o", out, "--", fixture, NULL },
		 60);
	ASSERT_EQ(p.status, 0);
	proc_free(&p);
	return run_profile(dir);
}

/* In exact mode: every allocation. */
static char *run_fixture(const char *dir, const char *fixture)
{
	return run_fixture_period(dir, fixture, "1");
}

/* The page of fx-golden loads cleanly; its top site (as the JSON report ranks it) is a frame of
 * the flame graph with its name written on it, and the first row of the sites' table. */
TEST(page_shows_the_top_site)
{
	char dir[256], *profile, *page;
	struct proc p;
	struct json *doc;
	const char *top;
	struct browsed b;

	tmp_dir(dir);
	profile = run_fixture(dir, FX("fx-golden"));
	doc = leek_report_json(&p, dir, (const char *const[]){ profile, NULL });
	top = frame_function(site_frame(json_at(report_sites(doc), 0)));
	ASSERT_STREQ(top, "fixture_leak_large");
	page = write_page(dir, "golden", profile);
	browse(&b, dir, page, "golden", (const char *const[]){
		SETTLED, SLEEP,
		FRAMES_NAMED("'fixture_leak_large'"),
		"eval=[...document.querySelectorAll('#flame-graph g.frame')].filter(g => "
		"g.getAttribute('name') === 'fixture_leak_large').map(g => "
		"g.querySelector('.d3-flame-graph-label').textContent)[0]",
		"eval=document.querySelector('#sites-table tbody tr td.site span').textContent",
		"eval=leek.state()",
		NULL });
	ASSERT_EQ(result_num(&b, 0, NULL), 1);
	ASSERT_STREQ(result_str(&b, 1), "fixture_leak_large");
	ASSERT_STREQ(result_str(&b, 2), "fixture_leak_large");
	/* The flame graph's root: everything live at the end, 312576 bytes (golden.proj). */
	ASSERT_EQ(result_num(&b, 3, "value"), 300000 + 480 + 4096 + 5000 + 3000);
	browsed_free(&b);
	json_free(doc);
	proc_free(&p);
	free(page);
	free(profile);
	tmp_dir_remove(dir);
}

/* The interval that `leek report` prints for the site whose line names function ("[48.7, 69.4]
 * MiB"), from its text report (the rank line comes right before the site's). */
static char *text_interval(const char *report, const char *function)
{
	const char *at = strstr(report, function), *line, *open, *close;

	ASSERT_TRUE(at);
	while (at > report && at[-1] != '\n')
		at--;
	line = at - 1;
	while (line > report && line[-1] != '\n')
		line--;
	open = memchr(line, '[', (size_t)(at - line));
	close = open ? memchr(open, ']', (size_t)(at - open)) : NULL;
	if (!open || !close)
		FAIL("no interval before %s in:\n%s", function, report);
	return strndup(open, (size_t)(close - open) + 5); /* "] MiB" */
}

/* Hovering a frame shows its value with the 95% interval, as the text report prints it for that
 * site (one stack: the frame's and the site's estimate are the same), in a sampled profile where
 * the interval is no point. */
TEST(tooltip_shows_the_interval)
{
	char dir[256], *profile, *page, *interval;
	struct proc p;
	struct browsed b;

	tmp_dir(dir);
	profile = run_fixture_period(dir, FX("fx-growth"), "512K");
	leek_report(&p, dir, (const char *const[]){ profile, NULL });
	ASSERT_EQ(p.status, 0);
	interval = text_interval(p.out, "fixture_grow_leak");
	page = write_page(dir, "sampled", profile);
	browse(&b, dir, page, "tooltip", (const char *const[]){
		SETTLED, SLEEP,
		"hover=#flame-graph g.frame[name=fixture_grow_leak] rect@0.5,0.5",
		"eval=document.getElementById('tooltip').hidden",
		"eval=document.getElementById('tooltip').textContent",
		NULL });
	ASSERT_TRUE(result(&b, 0)->type == JSON_FALSE);
	ASSERT_CONTAINS(result_str(&b, 1), "fixture_grow_leak");
	ASSERT_CONTAINS(result_str(&b, 1), "bytes live at the end: ");
	ASSERT_CONTAINS(result_str(&b, 1), interval);
	ASSERT_CONTAINS(result_str(&b, 1), " samples");
	browsed_free(&b);
	free(interval);
	proc_free(&p);
	free(page);
	free(profile);
	tmp_dir_remove(dir);
}

/* Typing in the search box highlights the frames whose name contains the text, and only them. */
TEST(search_highlights_frames)
{
	char dir[256], *profile, *page;
	struct browsed b;

	tmp_dir(dir);
	profile = run_fixture(dir, FX("fx-golden"));
	page = write_page(dir, "golden", profile);
	browse(&b, dir, page, "search", (const char *const[]){
		SETTLED,
		HIGHLIGHTED,
		"type=#search@LEAK_sm",
		SLEEP,
		HIGHLIGHTED,
		"eval=document.getElementById('flame-details').textContent",
		NULL });
	ASSERT_EQ(result(&b, 0)->len, 0);
	ASSERT_EQ(result(&b, 1)->len, 1);
	ASSERT_STREQ(json_str(json_at(result(&b, 1), 0)), "fixture_leak_small");
	ASSERT_CONTAINS(result_str(&b, 2), "1 frame match: 480 B");
	browsed_free(&b);
	free(page);
	free(profile);
	tmp_dir_remove(dir);
}

/* A click on the chart, a fifth of the way in, shows the heap of that moment: the flame graph's
 * root holds the timeline's heap estimate at that bucket (the page's data, which out-html.c
 * wrote from the report's timeline), less than at the end, where fx-growth's leak has grown. */
TEST(clicking_the_chart_shows_that_moment)
{
	char dir[256], *profile, *page;
	struct browsed b;
	double moment, heap, root_end, root_then;

	tmp_dir(dir);
	profile = run_fixture(dir, FX("fx-growth"));
	page = write_page(dir, "growth", profile);
	browse(&b, dir, page, "moment", (const char *const[]){
		SETTLED,
		"eval=leek.state()",
		"click=#chart .u-over@0.2,0.5",
		SLEEP,
		"eval=leek.state()",
		"eval=JSON.parse(document.getElementById('leek-data').textContent).timeline.heap",
		"eval=document.getElementById('flame-caption').textContent",
		"eval=d3.select('#flame-graph g.frame').datum().value",
		NULL });
	root_end = result_num(&b, 0, "value");
	ASSERT_TRUE(json_get(result(&b, 0), "moment")->type == JSON_NULL);
	moment = result_num(&b, 1, "moment");
	ASSERT_TRUE(moment >= 8 && moment <= 16); /* a fifth of 64 buckets */
	heap = json_at(result(&b, 2), (size_t)moment)->num;
	root_then = result_num(&b, 1, "value");
	ASSERT_NEAR(root_then, heap, 2); /* integers, rounded per node */
	ASSERT_NEAR(result_num(&b, 4, NULL), root_then, 0);
	ASSERT_TRUE(root_then > 0 && root_then < root_end);
	ASSERT_CONTAINS(result_str(&b, 3), "after the start");
	browsed_free(&b);
	free(page);
	free(profile);
	tmp_dir_remove(dir);
}

/* The flame graph's leaves are the report's sites: every allocation of fx-wrapper goes through its
 * static wrapper, which the report skips (src/cli/symbols/wrappers.h), so each of its twelve
 * callers is a leaf of the graph, holding what the report's site of it holds, and the wrapper is
 * no frame of it (nor is malloc). */
TEST(a_skipped_wrapper_is_no_frame)
{
	char dir[256], out[300], *profile, *page, name[32];
	struct proc p;
	struct json *doc;
	const struct json *frames;
	const char *wrapper;
	struct browsed b;

	tmp_dir(dir);
	snprintf(out, sizeof(out), "%s/x.%%p.lk", dir);
	leek_run(&p, dir, (const char *const[]){ "--period", "1", "-o", out, "--", FX_WRAPPER,
						 "many", NULL }, 60);
	ASSERT_EQ(p.status, 0);
	proc_free(&p);
	profile = run_profile(dir);
	doc = leek_report_json(&p, dir, (const char *const[]){ profile, NULL });
	ASSERT_EQ(report_wrappers(doc)->len, 1);
	wrapper = get_str(json_at(report_wrappers(doc), 0), "function");
	page = write_page(dir, "wrapper", profile);
	browse(&b, dir, page, "wrapper", (const char *const[]){
		SETTLED, SLEEP,
		"eval=[...document.querySelectorAll('#flame-graph g.frame')].map(g => {"
		" const d = d3.select(g).datum();"
		" return [d.data.name, d.children ? d.children.length : 0, d.value]; })",
		NULL });
	frames = result(&b, 0);
	for (unsigned k = 0; k < 12; k++) {
		bool found = false;
		snprintf(name, sizeof(name), "fixture_wcall_%u", k);
		for (size_t i = 0; i < frames->len; i++) {
			const struct json *f = json_at(frames, i);
			const char *fn = json_str(json_at(f, 0));
			if (!fn || strcmp(fn, name) != 0)
				continue;
			found = true;
			ASSERT_EQ(json_at(f, 1)->num, 0); /* a leaf */
			/* what the report's site holds: 64 (K + 1)^2 bytes live */
			ASSERT_EQ(json_at(f, 2)->num,
				  get_num(find_site(doc, name), "live_bytes"));
			ASSERT_EQ(json_at(f, 2)->num, 64 * (k + 1) * (k + 1));
		}
		if (!found)
			FAIL("no frame %s in the flame graph: %s", name, b.p.out);
	}
	for (size_t i = 0; i < frames->len; i++) {
		const char *fn = json_str(json_at(json_at(frames, i), 0));
		if (fn && (strcmp(fn, wrapper) == 0 || strcmp(fn, "malloc") == 0))
			FAIL("the flame graph has a frame %s: %s", fn, b.p.out);
	}
	browsed_free(&b);
	json_free(doc);
	proc_free(&p);
	free(page);
	free(profile);
	tmp_dir_remove(dir);
}

/* `leek run --period 1 -o DIR/NAME.%p.lk -- fx-diff ARGS...`: the profile. */
static char *run_fx_diff(const char *dir, const char *name, const char *const *args)
{
	const char *argv[16] = { "--period", "1", "-o" };
	char out[300], prefix[64];
	size_t n = 3;
	struct proc p;

	snprintf(out, sizeof(out), "%s/%s.%%p.lk", dir, name);
	argv[n++] = out;
	argv[n++] = "--";
	argv[n++] = FX("fx-diff");
	for (size_t i = 0; args[i] && n < 15; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	leek_run(&p, dir, argv, 60);
	ASSERT_EQ(p.status, 0);
	proc_free(&p);
	snprintf(prefix, sizeof(prefix), "%s.", name);
	return find_one(dir, prefix, "");
}

/* `leek diff --format html -o DIR/NAME.html ARGS...`, which must succeed; the page's path. */
static char *write_diff_page(const char *dir, const char *name, const char *const *args)
{
	const char *argv[16] = { "diff", "--format", "html", "-o" };
	struct proc p;
	size_t n = 5;
	char *page;

	if (asprintf(&page, "%s/%s.html", dir, name) < 0)
		abort();
	argv[4] = page;
	for (size_t i = 0; args[i] && n < 15; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	leek_exec(&p, dir, NULL, argv, 60);
	if (p.status != 0)
		FAIL("leek diff --format html: status %d: %s", p.status, p.err);
	ASSERT_EQ(p.out_len, 0); /* all of it went to the file */
	proc_free(&p);
	return page;
}

/* The frames of the flame graph as [name, value drawn, fill], and the sites' table's rows as
 * [function, live change as shown, its class]. */
#define DIFF_FRAMES \
	"eval=[...document.querySelectorAll('#flame-graph g.frame')].map(g => [" \
	"g.getAttribute('name'), d3.select(g).datum().value, " \
	"g.querySelector('rect').getAttribute('fill')])"
#define DIFF_ROWS \
	"eval=[...document.querySelectorAll('#sites-table tbody tr')].map(tr => [" \
	"tr.querySelector('td.site span').textContent, tr.children[4].textContent, " \
	"tr.children[4].className])"

/* The result's row whose first element is name; fails if none. */
static const struct json *row_named(const struct browsed *b, size_t i, const char *name)
{
	const struct json *rows = result(b, i);

	for (size_t j = 0; j < rows->len; j++)
		if (strcmp(json_str(json_at(json_at(rows, j), 0)) ?: "", name) == 0)
			return json_at(rows, j);
	FAIL("no %s in result %zu: %s", name, i, b->p.out);
}

/* "rgb(R, G, B)": the red and the blue. */
static void rgb(const char *fill, int *r, int *b)
{
	int g;

	if (sscanf(fill, "rgb(%d, %d, %d)", r, &g, b) != 3)
		FAIL("not a colour: %s", fill);
}

/* The diff's page of fx-diff run twice in exact mode (every change a fact): it loads with no
 * console error; its table lists the sites in the diff's ranking (the JSON's, which is the
 * text's), the grown site marked significant and red, the vanished one blue; its flame graph
 * shows the grown site's frame as wide as its change, red, the vanished one's blue, and a root
 * as wide as every change added; the tooltip gives a frame's change; a screenshot is kept. */
TEST(diff_page_shows_the_change)
{
	char dir[256], *a, *b, *page;
	const struct json *sites, *f;
	struct json *doc;
	struct proc p;
	struct browsed br;
	double gross = 0, grow;
	int red, blue;

	tmp_dir(dir);
	/* grow 100 -> 400 blocks of 64 KiB, gone 300 -> 0, new 0 -> 300; churn never live */
	a = run_fx_diff(dir, "a", (const char *[]){ "100", "300", "0", "2000", NULL });
	b = run_fx_diff(dir, "b", (const char *[]){ "400", "0", "300", "8000", NULL });
	doc = leek_diff_json(&p, dir, (const char *[]){ a, b, NULL });
	sites = json_get(doc, "sites");
	for (size_t i = 0; i < sites->len; i++)
		gross += fabs(get_num(diff_change(json_at(sites, i), "live"), "change_bytes"));
	grow = get_num(diff_change(diff_site(doc, "fixture_diff_grow"), "live"), "change_bytes");
	ASSERT_EQ(grow, 300 * 65536);
	page = write_diff_page(dir, "diff", (const char *[]){ a, b, NULL });
	browse(&br, dir, page, "diff", (const char *const[]){
		SETTLED, SLEEP,
		DIFF_ROWS,
		DIFF_FRAMES,
		"eval=leek.state()",
		"hover=#flame-graph g.frame[name=fixture_diff_grow] rect@0.5,0.5",
		"eval=document.getElementById('tooltip').textContent",
		"eval=document.getElementById('change-table').textContent",
		NULL });
	/* The table: every site of the diff, in its order. */
	ASSERT_EQ(result(&br, 0)->len, sites->len);
	for (size_t i = 0; i < sites->len; i++)
		ASSERT_STREQ(json_str(json_at(json_at(result(&br, 0), i), 0)),
			     get_str(json_at(sites, i), "function"));
	f = row_named(&br, 0, "fixture_diff_grow");
	ASSERT_STREQ(json_str(json_at(f, 1)), "* +18.8 MiB");
	ASSERT_CONTAINS(json_str(json_at(f, 2)), "grew significant");
	ASSERT_CONTAINS(json_str(json_at(row_named(&br, 0, "fixture_diff_gone"), 2)), "shrank");
	/* The flame graph: the grown site as wide as its change, red; the vanished one blue. */
	f = row_named(&br, 1, "fixture_diff_grow");
	ASSERT_EQ(json_at(f, 1)->num, grow);
	rgb(json_str(json_at(f, 2)), &red, &blue);
	ASSERT_TRUE(red > blue + 100);
	rgb(json_str(json_at(row_named(&br, 1, "fixture_diff_gone"), 2)), &red, &blue);
	ASSERT_TRUE(blue > red + 100);
	ASSERT_STREQ(get_str(result(&br, 2), "metric"), "live");
	ASSERT_EQ(result_num(&br, 2, "value"), gross);
	ASSERT_CONTAINS(result_str(&br, 3), "fixture_diff_grow");
	ASSERT_CONTAINS(result_str(&br, 3), "change +18.8 MiB exact");
	ASSERT_CONTAINS(result_str(&br, 4), "significant");
	browsed_free(&br);
	json_free(doc);
	proc_free(&p);
	free(page);
	free(a);
	free(b);
	tmp_dir_remove(dir);
}

/* Two moments of one profile (fx-diff phases: fixture_phase_late's 120 blocks come, 50 of
 * fixture_phase_early's go): the page shows the late site grown, the early one shrunk, in the
 * table and in the flame graph; a profile that cannot be read leaves no page (exit 2). */
TEST(diff_page_of_two_moments)
{
	char dir[256], bad[300], out[300], *prof, *page;
	struct proc p;
	struct browsed br;
	const struct json *f;
	int red, blue;

	tmp_dir(dir);
	prof = run_fx_diff(dir, "m", (const char *[]){ "phases", NULL });
	page = write_diff_page(dir, "moments",
			       (const char *[]){ "--from", "0.2", "--to", "0.6", prof, NULL });
	browse(&br, dir, page, "diff-moments", (const char *const[]){
		SETTLED, SLEEP,
		DIFF_ROWS,
		DIFF_FRAMES,
		NULL });
	ASSERT_STREQ(json_str(json_at(json_at(result(&br, 0), 0), 0)), "fixture_phase_late");
	ASSERT_STREQ(json_str(json_at(row_named(&br, 0, "fixture_phase_late"), 1)), "* +7.50 MiB");
	ASSERT_STREQ(json_str(json_at(row_named(&br, 0, "fixture_phase_early"), 1)), "* -3.13 MiB");
	f = row_named(&br, 1, "fixture_phase_late");
	ASSERT_EQ(json_at(f, 1)->num, 120 * 65536);
	rgb(json_str(json_at(f, 2)), &red, &blue);
	ASSERT_TRUE(red > blue + 100);
	f = row_named(&br, 1, "fixture_phase_early");
	ASSERT_EQ(json_at(f, 1)->num, 50 * 65536);
	rgb(json_str(json_at(f, 2)), &red, &blue);
	ASSERT_TRUE(blue > red + 100);
	browsed_free(&br);

	snprintf(bad, sizeof(bad), "%s/bad.lk", dir);
	snprintf(out, sizeof(out), "%s/out.html", dir);
	write_file(bad, "not a profile", 13);
	leek_exec(&p, dir, NULL, (const char *const[]){ "diff", "--format", "html", "-o", out,
							  prof, bad, NULL }, 60);
	ASSERT_EQ(p.status, 2);
	ASSERT_EQ(count_files(dir, "out", ".html"), 0);
	proc_free(&p);
	free(page);
	free(prof);
	tmp_dir_remove(dir);
}
#endif
