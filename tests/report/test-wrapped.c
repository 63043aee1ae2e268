/* test-wrapped.c: allocation wrappers end to end (src/cli/symbols/wrappers.c, allocators.c, the
 * --alloc-fn MODULE+0xOFFSET location), on programs whose allocations all go through one.
 *
 * fx-wrapper, stripped of its symbol table, is a program with a static wrapper that has no name,
 * called from 12 functions (or from 3, where it must stay the site); Debian's sqlite3 is the real
 * one (its sqlite3MemMalloc has no symbol); the demo and fx-golden are normal programs, whose
 * sites must stay what they are. Every test works in its own temporary directory, removed only
 * when it passes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "files.h"
#include "harness.h"
#include "report-util.h"

#ifndef FX_WRAPPER
#error "meson passes FX_WRAPPER, fx-wrapper stripped of its symbols (or not, without objcopy)"
#endif

#define SQLITE3 "/usr/bin/sqlite3"

/* `leek run -o DIR/x.%p.lk ARGS... -- PROGRAM...`; the profile's path, and what leek printed in
 * *err (malloc'ed) if err is not NULL. */
static char *run_err(const char *dir, const char *const *args, char **err)
{
	const char *argv[24];
	char out[300];
	size_t n = 0;
	struct proc p;

	snprintf(out, sizeof(out), "%s/x.%%p.lk", dir);
	argv[n++] = "-o";
	argv[n++] = out;
	for (size_t i = 0; args[i] && n < 23; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	leek_run(&p, dir, argv, 120);
	if (p.status != 0)
		FAIL("leek run %s: exit %d; stderr:\n%s", args[0], p.status, p.err);
	if (err)
		*err = strdup(p.err);
	proc_free(&p);
	return run_profile(dir);
}

static char *run(const char *dir, const char *const *args)
{
	return run_err(dir, args, NULL);
}

static const char *base(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* The name the report gives the wrapper of fx-wrapper: "fx-wrapper-stripped+0x..." (no symbol),
 * or its own without objcopy. */
static bool is_fx_wrapper(const char *function)
{
	char prefix[64];

	snprintf(prefix, sizeof(prefix), "%s+0x", base(FX_WRAPPER));
	return strncmp(function, prefix, strlen(prefix)) == 0 ||
	       strcmp(function, "fixture_wrap") == 0;
}

TEST(static_wrapper_under_many_callers)
{
	char dir[256], *profile, name[32], want[256], *summary;
	struct proc rep;
	struct json *doc;
	const struct json *w, *sites;
	const char *wrapper;

	tmp_dir(dir);
	profile = run_err(dir, (const char *[]){ "--period", "1", "--", FX_WRAPPER, "many", NULL },
			  &summary);

	/* Without the rule: the wrapper is the one site, as sqlite3MemMalloc was. */
	doc = leek_report_json(&rep, dir, (const char *[]){ "--no-auto-wrappers", profile, NULL });
	sites = report_sites(doc);
	ASSERT_EQ(sites->len, 1);
	wrapper = strdup(get_str(json_at(sites, 0), "function"));
	if (!is_fx_wrapper(wrapper))
		FAIL("the one site is %s, not fx-wrapper's wrapper", wrapper);
	ASSERT_EQ(get_u64(json_at(sites, 0), "live_bytes"), 41600);
	ASSERT_EQ(report_wrappers(doc)->len, 0);
	ASSERT_EQ(json_path(doc, "options.auto_wrappers")->type, JSON_FALSE);
	json_free(doc);
	proc_free(&rep);

	/* By default: its 12 callers are the sites, each with what it allocated, and the report
	 * names the wrapper it skipped. */
	doc = leek_report_json(&rep, dir, (const char *[]){ profile, NULL });
	sites = report_sites(doc);
	ASSERT_EQ(sites->len, 12);
	for (unsigned k = 0; k < 12; k++) {
		const struct json *s = json_at(sites, 11 - k); /* the largest, K = 11, first */
		snprintf(name, sizeof(name), "fixture_wcall_%u", k);
		ASSERT_STREQ(get_str(s, "function"), name);
		ASSERT_EQ(get_u64(s, "live_bytes"), 64 * (k + 1) * (k + 1));
		ASSERT_EQ(get_u64(s, "live_objects"), k + 1);
		ASSERT_EQ(json_path(s, "stack.0.wrapper")->type, JSON_TRUE);
		ASSERT_STREQ(get_str(json_path(s, "stack.0"), "function"), wrapper);
		ASSERT_TRUE(site_frame(s) == json_path(s, "stack.1"));
	}
	w = report_wrappers(doc);
	ASSERT_EQ(w->len, 1);
	ASSERT_STREQ(get_str(json_at(w, 0), "function"), wrapper);
	ASSERT_EQ(get_u64(json_at(w, 0), "callers"), 12);
	ASSERT_EQ(get_u64(json_at(w, 0), "samples"), 78);
	ASSERT_EQ(get_u64(json_at(w, 0), "round"), 1);
	ASSERT_EQ(get_u64(json_at(w, 0), "depth"), 0);
	ASSERT_TRUE(get_num(json_at(w, 0), "share") == 1.0);
	ASSERT_NEAR(get_num(json_at(w, 0), "top_caller_share"), 12.0 / 78, 1e-6);
	ASSERT_STREQ(base(get_str(json_at(w, 0), "module")), base(FX_WRAPPER));
	json_free(doc);
	proc_free(&rep);

	/* The text says what it skipped. */
	leek_report(&rep, dir, (const char *[]){ profile, NULL });
	ASSERT_EQ(rep.status, 0);
	snprintf(want, sizeof(want), "Skipped as wrappers, by what the stacks show "
		 "(--no-auto-wrappers keeps them):\n  %s [%s]: the site of 100.0%% of the samples, "
		 "under 12 callers\n", wrapper, base(FX_WRAPPER));
	ASSERT_CONTAINS(rep.out, want);
	ASSERT_CONTAINS(rep.out, "      fixture_wcall_11 [");
	proc_free(&rep);
	/* So does `leek run`'s summary, under its top sites. */
	snprintf(want, sizeof(want), "  top sites      9.00 KiB  22.2%%  fixture_wcall_11 [");
	ASSERT_CONTAINS(summary, want);
	snprintf(want, sizeof(want), "  wrappers      %s [%s] (skipped)\n", wrapper, base(FX_WRAPPER));
	ASSERT_CONTAINS(summary, want);
	free(summary);

	/* --alloc-fn with the name the report gave it (a location, MODULE+0xOFFSET, when it has no
	 * symbol): the same sites, the wrapper now an allocator frame, nothing left to detect. */
	doc = leek_report_json(&rep, dir, (const char *[]){ "--no-auto-wrappers", "--alloc-fn",
							    wrapper, profile, NULL });
	sites = report_sites(doc);
	ASSERT_EQ(sites->len, 12);
	ASSERT_STREQ(get_str(json_at(sites, 0), "function"), "fixture_wcall_11");
	ASSERT_TRUE(json_path(json_at(sites, 0), "stack.0.wrapper") == NULL);
	ASSERT_EQ(report_wrappers(doc)->len, 0);
	json_free(doc);
	proc_free(&rep);

	free((char *)wrapper);
	free(profile);
	tmp_dir_remove(dir);
}

/* A program whose allocations all come from one function with 3 callers: that function is the
 * site, at 100%, whatever it looks like. */
TEST(wrapper_with_few_callers_is_the_site)
{
	char dir[256], *profile;
	struct proc rep;
	struct json *doc;
	const struct json *sites;

	tmp_dir(dir);
	profile = run(dir, (const char *[]){ "--period", "1", "--", FX_WRAPPER, "few", NULL });
	doc = leek_report_json(&rep, dir, (const char *[]){ profile, NULL });
	sites = report_sites(doc);
	ASSERT_EQ(sites->len, 1);
	ASSERT_TRUE(is_fx_wrapper(get_str(json_at(sites, 0), "function")));
	ASSERT_EQ(get_u64(json_at(sites, 0), "live_bytes"), 6000);
	ASSERT_EQ(get_u64(json_at(sites, 0), "live_objects"), 60);
	ASSERT_EQ(report_wrappers(doc)->len, 0);
	json_free(doc);
	proc_free(&rep);
	free(profile);
	tmp_dir_remove(dir);
}

/* Normal programs keep their sites: the demo (sampled, threads, a pool, a leak) and fx-golden
 * (exact, 8 sites of one caller each). */
TEST(normal_programs_keep_their_sites)
{
	static const char *const views[] = { "leaks", "alloc", "peak" };
	char dir[256], *profile;
	struct proc rep;
	struct json *doc;

	tmp_dir(dir);
	profile = run(dir, (const char *[]){ "--seed", "1", "--", LEEK_DEMO, NULL });
	for (size_t i = 0; i < sizeof(views) / sizeof(views[0]); i++) {
		doc = leek_report_json(&rep, dir, (const char *[]){ views[i], profile, NULL });
		if (report_wrappers(doc)->len)
			FAIL("%s: the demo's %s is taken for a wrapper", views[i],
			     get_str(json_at(report_wrappers(doc), 0), "function"));
		if (i == 0)
			ASSERT_STREQ(get_str(json_at(report_sites(doc), 0), "function"),
				     "session_cache_insert");
		json_free(doc);
		proc_free(&rep);
	}
	unlink(profile);
	free(profile);

	profile = run(dir, (const char *[]){ "--period", "1", "--", FX("fx-golden"), NULL });
	doc = leek_report_json(&rep, dir, (const char *[]){ "growth", profile, NULL });
	ASSERT_EQ(report_wrappers(doc)->len, 0);
	ASSERT_EQ(report_sites(doc)->len, 8); /* growth lists every site */
	json_free(doc);
	proc_free(&rep);
	free(profile);
	tmp_dir_remove(dir);
}

/* Debian's sqlite3: every allocation goes through sqlite3Malloc and the static sqlite3MemMalloc,
 * which has no symbol. Without the rule the top site is that frame, libsqlite3.so.0+0x...; with
 * it, the report names it as skipped and the heap spreads over sqlite's own functions. */
TEST(sqlite3)
{
	static const char sql[] =
		"CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT, c BLOB);"
		"WITH RECURSIVE x(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM x WHERE i < 20000) "
		"INSERT INTO t SELECT i, printf('row %d %s', i, hex(randomblob(20))), "
		"randomblob(100) FROM x;"
		"CREATE INDEX tb ON t(b);"
		"SELECT count(*), sum(length(c)) FROM t WHERE b LIKE 'row 1%';";
	char dir[256], *profile, *frame;
	struct proc rep;
	struct json *doc;
	const struct json *sites, *w;

	if (access(SQLITE3, X_OK) != 0)
		SKIP("no %s (Debian's sqlite3 package; scripts/setup installs it)", SQLITE3);
	tmp_dir(dir);
	profile = run(dir, (const char *[]){ "--period", "1", "--", SQLITE3, ":memory:", sql,
					      NULL });
	doc = leek_report_json(&rep, dir, (const char *[]){ "alloc", "--no-auto-wrappers", profile,
							    NULL });
	sites = report_sites(doc);
	frame = strdup(get_str(json_at(sites, 0), "function"));
	if (strncmp(frame, "libsqlite3.so.0+0x", 18) != 0 || get_num(json_at(sites, 0), "share") < 0.5)
		FAIL("without the rule the top site is %s at %.1f%%, not libsqlite3.so.0+0x... at the "
		     "most of the heap: the case this test is about is gone", frame,
		     100 * get_num(json_at(sites, 0), "share"));
	json_free(doc);
	proc_free(&rep);

	doc = leek_report_json(&rep, dir, (const char *[]){ "alloc", profile, NULL });
	sites = report_sites(doc);
	w = report_wrappers(doc);
	ASSERT_TRUE(w->len >= 1);
	ASSERT_STREQ(get_str(json_at(w, 0), "function"), frame);
	for (size_t i = 0; i < w->len; i++) {
		const char *f = get_str(json_at(w, i), "function");
		ASSERT_STREQ(base(get_str(json_at(w, i), "module")), "libsqlite3.so.0");
		ASSERT_TRUE(get_u64(json_at(w, i), "callers") >= 5);
		for (size_t j = 0; j < sites->len; j++)
			if (!strcmp(get_str(json_at(sites, j), "function"), f))
				FAIL("%s is skipped and a site", f);
	}
	ASSERT_TRUE(get_u64(report_section(doc), "sites_total") > 10);
	ASSERT_TRUE(get_num(json_at(sites, 0), "share") < 0.5);
	json_free(doc);
	proc_free(&rep);

	leek_report(&rep, dir, (const char *[]){ "alloc", profile, NULL });
	ASSERT_CONTAINS(rep.out, "Skipped as wrappers");
	ASSERT_CONTAINS(rep.out, frame);
	proc_free(&rep);
	free(frame);
	free(profile);
	tmp_dir_remove(dir);
}
