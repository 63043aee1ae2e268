/* test-report.c: `leek run` and `leek report` end to end, on the fixtures in fixtures/.
 *
 * In exact mode (--period 1) every number in a report is a fact about the fixture, so these
 * tests compare exactly: goldens (expected/) for the JSON and the text report of fx-golden, the
 * symbolized frames of an inlined helper and of a dlopen'ed library against the lines the fixture
 * prints, and the live bytes that a crashed program left. They also check what `leek run` passes
 * back (exit codes, deaths by signal, signals forwarded to the program) and how `leek report`
 * treats a real profile cut short. Statistical tests at the default period are in
 * test-report-stats.c.
 *
 * Every test works in its own temporary directory, removed only when the test passes.
 */
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "read.h"
#include "files.h"
#include "report-util.h"

#ifndef FX_DLIB
#error "meson passes FX_DLIB, the fixture library that fx-inline dlopens"
#endif

static const char *base(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path;
}

/* `leek run --period 1 --seed 1 -o DIR/x.%p.lk -- FIXTURE ARG`: the profile's path (x.PID.lk.zst:
 * the goldens read compressed profiles; --no-compress for the tests that cut raw bytes). */
static char *run_exact_with(const char *dir, struct proc *p, const char *fixture, const char *arg,
			    int want_status, bool raw)
{
	const char *args[12] = { "--period", "1", "--seed", "1", "-o" };
	size_t n = 5;
	char out[300];

	snprintf(out, sizeof(out), "%s/x.%%p.lk", dir);
	args[n++] = out;
	if (raw)
		args[n++] = "--no-compress";
	args[n++] = "--";
	args[n++] = fixture;
	args[n] = arg; /* NULL or the last */
	leek_run(p, dir, args, 60);
	if (p->status != want_status)
		FAIL("leek run %s: exit %d, expected %d; stderr:\n%s", fixture, p->status,
		     want_status, p->err);
	ASSERT_CONTAINS(p->err, "1 profile written");
	return run_profile(dir);
}

static char *run_exact(const char *dir, struct proc *p, const char *fixture, const char *arg,
		       int want_status)
{
	return run_exact_with(dir, p, fixture, arg, want_status, false);
}

/* ---- goldens ---- */

/* The parts of a text report that differ from run to run, each replaced by a word. Each pattern
 * matches one field of one kind of line, so everything else is compared exactly. */
static const struct {
	const char *re, *by;
} text_volatile[] = {
	{ "pid [0-9]+ \\(ppid [0-9]+\\)", "pid PID (ppid PPID)" },
	{ "^duration +[0-9.]+ [a-z]+,", "duration     TIME," },  /* the run's length */
	{ "; at [0-9.]+ [a-z]+$", "; at TIME" },                 /* when the peak was */
	{ "^max RSS .*$", "max RSS      RSS" },
	/* A site's trend: its series has 64 buckets of a 4 ms run, so which bucket a sample
	 * falls in, and the verdict, depend on timing (test-report-stats.c tests trends). */
	{ "  (growing|plateau|flat|unknown)$", "  TREND" },
};

static char *normalize_text(const char *text, const char *profile)
{
	char *t = str_replace_all(text, profile, "PROFILE"), *s = str_replace_all(t, FX_DIR, "FX_DIR");
	char *out = calloc(1, strlen(s) * 2 + 64);
	size_t n = 0;
	regex_t re[sizeof(text_volatile) / sizeof(text_volatile[0])];

	ASSERT_TRUE(out != NULL);
	for (size_t i = 0; i < sizeof(re) / sizeof(re[0]); i++)
		ASSERT_EQ(regcomp(&re[i], text_volatile[i].re, REG_EXTENDED | REG_NEWLINE), 0);
	for (char *line = s, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		char cur[1024];
		snprintf(cur, sizeof(cur), "%s", line);
		for (size_t i = 0; i < sizeof(re) / sizeof(re[0]); i++) {
			regmatch_t m;
			char tmp[1024];
			if (regexec(&re[i], cur, 1, &m, 0) != 0)
				continue;
			snprintf(tmp, sizeof(tmp), "%.*s%s%s", (int)m.rm_so, cur, text_volatile[i].by,
				 cur + m.rm_eo);
			memcpy(cur, tmp, sizeof(cur));
		}
		n += (size_t)sprintf(out + n, "%s\n", cur);
	}
	for (size_t i = 0; i < sizeof(re) / sizeof(re[0]); i++)
		regfree(&re[i]);
	free(s);
	free(t);
	return out;
}

/* Every site of fx-golden, in the growth view (the one view that lists sites with nothing live
 * and sites of zero bytes), reduced to the fields that exact mode makes exact. The expected
 * numbers are worked out in fixtures/fx-golden.c, one comment per site. */
TEST(golden_json)
{
	char dir[256], *profile, *proj;
	struct proc run, rep, again;
	struct json *doc;

	tmp_dir(dir);
	profile = run_exact(dir, &run, FX("fx-golden"), NULL, 0);
	doc = leek_report_json(&rep, dir, (const char *[]){ "--view", "growth", profile, NULL });
	proj = report_projection(doc, "fixture_");
	expect_golden(dir, "golden.proj", proj);

	/* Exact mode: the golden's intervals are points. */
	ASSERT_EQ(json_path(doc, "processes.0.exact")->type, JSON_TRUE);
	/* Nothing but the fixture allocated (it uses no stdio): its 8 sites are all the sites,
	 * so the golden's totals line is their sum. */
	ASSERT_EQ(report_sites(doc)->len, 8);

	/* Two reports of one profile are the same bytes (out-json.c's promise). */
	leek_report(&again, dir, (const char *[]){ "--format", "json", "--view", "growth", profile,
						   NULL });
	ASSERT_EQ(again.status, 0);
	ASSERT_TRUE(again.out_len == rep.out_len && memcmp(again.out, rep.out, rep.out_len) == 0);
	proc_free(&again);
	json_free(doc);
	free(proj);

	/* The default view (leaks): the sites with live bytes, ranked by them. */
	static const char *const leaks_order[] = { "fixture_leak_large", "fixture_realloc",
						   "fixture_free_half", "fixture_aligned",
						   "fixture_leak_small" };
	proc_free(&rep);
	doc = leek_report_json(&rep, dir, (const char *[]){ profile, NULL });
	ASSERT_STREQ(get_str(doc, "view"), "leaks");
	ASSERT_EQ(report_sites(doc)->len, 5);
	for (size_t i = 0; i < 5; i++) {
		const struct json *s = json_at(report_sites(doc), i);
		ASSERT_STREQ(get_str(s, "function"), leaks_order[i]);
		ASSERT_EQ(get_u64(s, "rank"), i + 1);
	}
	ASSERT_EQ(get_u64(json_get(doc, "view_total"), "bytes"), 312576);
	json_free(doc);
	proc_free(&rep);
	proc_free(&run);
	free(profile);
	tmp_dir_remove(dir);
}

/* The text report of the same profile, in the default view and the C locale. */
TEST(golden_text)
{
	char dir[256], *profile, *text;
	struct proc run, rep;

	tmp_dir(dir);
	profile = run_exact(dir, &run, FX("fx-golden"), NULL, 0);
	leek_report(&rep, dir, (const char *[]){ profile, NULL });
	ASSERT_EQ(rep.status, 0);
	ASSERT_STREQ(rep.err, "");
	text = normalize_text(rep.out, profile);
	expect_golden(dir, "golden.txt", text);
	free(text);
	proc_free(&rep);
	proc_free(&run);
	free(profile);
	tmp_dir_remove(dir);
}

/* ---- symbolization ---- */

TEST(symbolize_inline_and_dlopen)
{
	char dir[256], *profile;
	struct proc run, rep;
	struct json *doc;

	tmp_dir(dir);
	profile = run_exact(dir, &run, FX("fx-inline"), FX_DLIB, 0);
	uint64_t helper_line = out_value(run.out, "helper_line");
	uint64_t outer_line = out_value(run.out, "outer_line");
	uint64_t dlib_line = out_value(run.out, "dlib_line");
	doc = leek_report_json(&rep, dir, (const char *[]){ "--focus", "^fixture_", profile, NULL });

	/* The inlined helper is the site: its own frame, marked inlined, at the malloc line,
	 * then the function it was inlined into, at the line that calls the helper. */
	const struct json *s = find_site(doc, "fixture_inl_helper");
	ASSERT_TRUE(s != NULL);
	ASSERT_EQ(get_u64(s, "live_bytes"), 12345);
	ASSERT_EQ(frame_line(s), helper_line);
	const struct json *stack = site_stack(s), *f0 = json_at(stack, 0), *f1 = json_at(stack, 1);
	ASSERT_TRUE(f1 != NULL);
	ASSERT_TRUE(site_frame(s) == f0);
	ASSERT_STREQ(frame_function(f0), "fixture_inl_helper");
	ASSERT_TRUE(frame_inlined(f0));
	ASSERT_STREQ(base(frame_file(f0)), "fx-inline.c");
	ASSERT_EQ(frame_line(f0), helper_line);
	ASSERT_STREQ(frame_function(f1), "fixture_inl_outer");
	ASSERT_TRUE(!frame_inlined(f1));
	ASSERT_STREQ(base(frame_file(f1)), "fx-inline.c");
	ASSERT_EQ(frame_line(f1), outer_line);
	/* Both frames are from one return address in the executable. */
	ASSERT_STREQ(frame_module(f0), FX("fx-inline"));
	ASSERT_STREQ(frame_module(f1), FX("fx-inline"));
	ASSERT_STREQ(frame_function(json_at(stack, 2)), "main");

	/* The library was dlclose'd before the end: its site still has its module and name. */
	s = find_site(doc, "fixture_dlib_alloc");
	ASSERT_TRUE(s != NULL);
	ASSERT_EQ(get_u64(s, "live_bytes"), 54321);
	ASSERT_STREQ(frame_module(s), FX_DLIB);
	ASSERT_STREQ(base(frame_file(s)), "fx-dlib.c");
	ASSERT_EQ(frame_line(s), dlib_line);
	f0 = json_at(site_stack(s), 0);
	ASSERT_TRUE(site_frame(s) == f0);
	ASSERT_STREQ(frame_module(f0), FX_DLIB);
	ASSERT_TRUE(!frame_inlined(f0));
	ASSERT_STREQ(frame_function(json_at(site_stack(s), 1)), "main");
	ASSERT_STREQ(frame_module(json_at(site_stack(s), 1)), FX("fx-inline"));
	ASSERT_EQ(report_sites(doc)->len, 2); /* --focus kept these two only */

	json_free(doc);
	proc_free(&rep);
	proc_free(&run);
	free(profile);
	tmp_dir_remove(dir);
}

/* ---- crashed programs ---- */

/* fx-crash leaves 7 x 1000 + 2 x 70000 = 147000 B live in 9 objects, and 5 x 3000 B freed. */
static void crashed(const char *how, int sig)
{
	char dir[256], *profile;
	struct proc run, rep;
	struct json *doc;
	const struct json *t, *s;

	tmp_dir(dir);
	profile = run_exact(dir, &run, FX("fx-crash"), how, 128 + sig);
	char want[64];
	snprintf(want, sizeof(want), "program killed by signal SIG%s", sigabbrev_np(sig));
	ASSERT_CONTAINS(run.err, want);

	doc = leek_report_json(&rep, dir, (const char *[]){ "--view", "growth", profile, NULL });
	ASSERT_CONTAINS(rep.err, "no trailer");
	t = report_totals(doc);
	ASSERT_EQ(json_get(t, "trailer")->type, JSON_FALSE);
	ASSERT_EQ(get_u64(t, "live_bytes_end"), 147000);
	ASSERT_EQ(get_u64(t, "live_objects_end"), 9);
	ASSERT_EQ(get_u64(t, "alloc_bytes"), 147000 + 15000);
	ASSERT_EQ(get_u64(t, "alloc_objects"), 14);
	ASSERT_EQ(get_u64(t, "frees"), 5);
	s = find_site(doc, "fixture_crash_keep");
	ASSERT_TRUE(s != NULL);
	ASSERT_EQ(get_u64(s, "live_bytes"), 7000);
	ASSERT_EQ(get_u64(s, "live_objects"), 7);
	s = find_site(doc, "fixture_crash_big");
	ASSERT_TRUE(s != NULL);
	ASSERT_EQ(get_u64(s, "live_bytes"), 140000);
	ASSERT_EQ(get_u64(s, "live_objects"), 2);
	s = find_site(doc, "fixture_crash_gone");
	ASSERT_TRUE(s != NULL);
	ASSERT_EQ(get_u64(s, "live_bytes"), 0);
	ASSERT_EQ(get_u64(s, "alloc_bytes"), 15000);
	json_free(doc);
	proc_free(&rep);

	/* The text report says so too, and still exits 0. */
	leek_report(&rep, dir, (const char *[]){ profile, NULL });
	ASSERT_EQ(rep.status, 0);
	ASSERT_CONTAINS(rep.err, "no trailer");
	ASSERT_CONTAINS(rep.out, "fixture_crash_big");
	proc_free(&rep);
	proc_free(&run);
	free(profile);
	tmp_dir_remove(dir);
}

TEST(crash_segv)
{
	crashed("segv", SIGSEGV);
}

TEST(crash_kill)
{
	crashed("kill", SIGKILL);
}

/* A real profile cut inside a record is corrupt (exit 2, the record's offset); cut at a record
 * boundary it reads like a crashed one (exit 0, a warning). test-report-input.c does the same on
 * every record of a built profile. */
TEST(truncated_real_profile)
{
	char dir[256], *profile, cut_path[300];
	struct proc run, rep;
	struct lk_reader *rd = lk_reader_new();
	struct lk_record rec;
	uint64_t offsets[64];
	size_t n = 0, len;
	char *data;

	tmp_dir(dir);
	profile = run_exact_with(dir, &run, FX("fx-golden"), NULL, 0, true);
	ASSERT_TRUE(rd != NULL);
	ASSERT_OK(lk_reader_open(rd, profile));
	while (n < 64 && lk_reader_next(rd, &rec) > 0)
		offsets[n++] = rec.offset;
	lk_reader_free(rd);
	ASSERT_TRUE(n == 64);
	data = read_file(profile, &len);
	snprintf(cut_path, sizeof(cut_path), "%s/cut.lk", dir);

	/* Record 40, one of the ALLOC and FREE records in the middle of the program, cut in
	 * half (every record is at least 2 bytes: a tag and a varint). */
	uint64_t a = offsets[40], b = offsets[41];
	ASSERT_TRUE(b - a >= 2);
	write_file(cut_path, data, (size_t)(a + (b - a) / 2));
	leek_report(&rep, dir, (const char *[]){ "--format", "json", cut_path, NULL });
	ASSERT_EQ(rep.status, 2);
	char want[64];
	snprintf(want, sizeof(want), "offset %llu:", (unsigned long long)a);
	ASSERT_CONTAINS(rep.err, want);
	ASSERT_EQ(rep.out_len, 0);
	proc_free(&rep);

	write_file(cut_path, data, (size_t)b);
	struct json *doc = leek_report_json(&rep, dir, (const char *[]){ cut_path, NULL });
	ASSERT_CONTAINS(rep.err, "no trailer");
	ASSERT_EQ(json_get(report_totals(doc), "trailer")->type, JSON_FALSE);
	json_free(doc);
	proc_free(&rep);
	free(data);
	proc_free(&run);
	free(profile);
	tmp_dir_remove(dir);
}

/* ---- leek run: exit status and signals (tests/unit/test-cli.c covers exit 7, a program killed
 * by SIGTERM from within, and what leek refuses to run) ---- */

TEST(run_exit_status)
{
	static const char *const codes[] = { "0", "3", "42", "255" };
	static const int sigs[] = { SIGSEGV, SIGABRT, SIGKILL };
	char dir[256], out[300], num[16], want[64];
	struct proc run;

	tmp_dir(dir);
	snprintf(out, sizeof(out), "%s/p.%%p.lk", dir);
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		leek_run(&run, dir, (const char *[]){ "-o", out, "--", FX("fx-exit"), "exit", codes[i],
						      NULL },
			 30);
		ASSERT_EQ(run.status, atoi(codes[i]));
		ASSERT_CONTAINS(run.err, "1 profile written");
		proc_free(&run);
	}
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		snprintf(num, sizeof(num), "%d", sigs[i]);
		leek_run(&run, dir, (const char *[]){ "-o", out, "--", FX("fx-exit"), "signal", num,
						      NULL },
			 30);
		ASSERT_EQ(run.status, 128 + sigs[i]);
		snprintf(want, sizeof(want), "leek: program killed by signal SIG%s",
			 sigabbrev_np(sigs[i]));
		ASSERT_CONTAINS(run.err, want);
		ASSERT_CONTAINS(run.err, "1 profile written");
		proc_free(&run);
	}
	tmp_dir_remove(dir);
}

/* `leek run`'s summary reads the profile with the same memory budget as `leek report`, whether its
 * follower read the profile as it grew or the summary reads it after the exit: a program that
 * leaves 300 000 blocks live in exact mode needs more than 1 MiB, so the summary says so with the
 * offset, and the run still exits with the program's status and compresses its profile. Under the
 * default the same run is summarized. */
TEST(run_max_memory)
{
	char dir[256], out[300];
	struct proc run;

	tmp_dir(dir);
	snprintf(out, sizeof(out), "%s/p.%%p.lk", dir);
	const char *const followed[] = { "--period", "1", "--max-memory", "1M", "-o", out, "--",
					 FX("fx-exit"), "leak", "300000", NULL };
	const char *const after_exit[] = { "--no-follow", "--period", "1", "--max-memory", "1M",
					   "-o", out, "--", FX("fx-exit"), "leak", "300000", NULL };
	const char *const *const runs[] = { followed, after_exit };

	for (size_t i = 0; i < 2; i++) {
		leek_run(&run, dir, runs[i], 60);
		ASSERT_EQ(run.status, 0);
		ASSERT_CONTAINS(run.err, ": offset ");
		ASSERT_CONTAINS(run.err, ": the profile needs more than 1 MiB of memory to read "
					 "(--max-memory; ");
		ASSERT_CONTAINS(run.err, "1 profile written");
		proc_free(&run);
	}
	leek_run(&run, dir, (const char *[]){ "--period", "1", "-o", out, "--", FX("fx-exit"), "leak",
					      "300000", NULL },
		 60);
	ASSERT_EQ(run.status, 0);
	if (strstr(run.err, "--max-memory"))
		FAIL("the default refused the profile:\n%s", run.err);
	ASSERT_CONTAINS(run.err, "fixture_exit_leak");
	proc_free(&run);
	tmp_dir_remove(dir);
}

/* Starts `leek run -- fx-exit MODE` and waits until the program says it is ready. */
static void start_ready(struct proc *run, const char *dir, const char *mode)
{
	char out[300];
	struct timespec nap = { 0, 5 * 1000 * 1000 };

	snprintf(out, sizeof(out), "%s/p.%%p.lk", dir);
	/* 10 s: a signal that is never forwarded fails the test without waiting for the
	 * harness's alarm (fx-exit would wait 60 s). */
	leek_run_start(run, dir, (const char *[]){ "-o", out, "--", FX("fx-exit"), mode, NULL }, 10);
	for (int i = 0; i < 2000; i++) {
		if (access(run->out_path, F_OK) == 0) { /* the child creates it */
			char *s = read_file(run->out_path, NULL);
			bool ready = strstr(s, "ready 1\n") != NULL;
			free(s);
			if (ready)
				return;
		}
		nanosleep(&nap, NULL);
	}
	kill(-run->pid, SIGKILL);
	FAIL("fx-exit %s never said it was ready", mode);
}

/* A signal sent to `leek run` (not to its process group) reaches the program: one that handles
 * it exits with its own status, one that does not dies of it, and leek reports that. */
TEST(run_forwards_signals)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGUSR1 };
	char dir[256], want[64];
	struct proc run;

	tmp_dir(dir);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		start_ready(&run, dir, "catch");
		ASSERT_EQ(kill(run.pid, sigs[i]), 0);
		proc_wait(&run);
		snprintf(want, sizeof(want), "caught %d\n", sigs[i]);
		ASSERT_CONTAINS(run.out, want);
		ASSERT_EQ(run.status, 64 + sigs[i]);
		ASSERT_CONTAINS(run.err, "1 profile written");
		proc_free(&run);
	}

	start_ready(&run, dir, "wait");
	ASSERT_EQ(kill(run.pid, SIGTERM), 0);
	proc_wait(&run);
	ASSERT_EQ(run.status, 128 + SIGTERM);
	snprintf(want, sizeof(want), "leek: program killed by signal SIGTERM");
	ASSERT_CONTAINS(run.err, want);
	ASSERT_CONTAINS(run.err, "1 profile written");
	proc_free(&run);
	tmp_dir_remove(dir);
}
