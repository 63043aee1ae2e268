/* test-export.c: `leek export` end to end, on the fixtures' profiles (`leek run`), read back by
 * `go tool pprof` (pprof-util.h) and against `leek report --format json` of the same files.
 *
 *   - pprof, exact mode (fx-golden): every total `go tool pprof` computes, -raw's sums and -top's
 *     total for each sample index, is the report's (alloc view, leaks view), exactly; a site's
 *     sample holds the numbers fx-golden.c's comments give; the header: default sample type,
 *     period, period type, time, duration and the comments;
 *   - pprof's mappings against the profile's MODULE records (`leek dump`), and the locations of
 *     fx-inline's inlined helper and dlopen'ed library against the lines the fixture prints;
 *   - sampled (fx-growth at the default period): totals within rounding (half a unit a sample),
 *     and the in-use values at the end, at the peak and at a time, against the leaks, peak and
 *     inuse views;
 *   - folded: each --value's total is the report's, and fx-inline's known stack is one line;
 *   - --base: the diff's totals are NEW - BASE, and what `go tool pprof -diff_base` makes of the
 *     two exports;
 *   - several files: --merge against `report --merge`, one output each without it.
 * Tests that need go skip without it. Each works in its own temporary directory, removed only
 * when it passes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "files.h"
#include "harness.h"
#include "pprof-util.h"
#include "report-util.h"

#ifndef FX_DLIB
#error "meson passes FX_DLIB, the fixture library that fx-inline dlopens"
#endif

static const char *const value_names[PPROF_VALUES] = { "alloc_objects", "alloc_space",
						       "inuse_objects", "inuse_space" };

/* `leek run [--period 1] --seed SEED -o DIR/NAME.%p.lk -- FIXTURE [ARG]`: the profile. */
static char *run_fixture(const char *dir, const char *name, const char *fixture, const char *arg,
			 bool exact, const char *seed)
{
	const char *args[16] = { "--seed", seed, "-o" };
	size_t n = 3;
	char out[300], prefix[64];
	struct proc p;

	snprintf(out, sizeof(out), "%s/%s.%%p.lk", dir, name);
	args[n++] = out;
	if (exact) {
		args[n++] = "--period";
		args[n++] = "1";
	}
	args[n++] = "--";
	args[n++] = fixture;
	args[n] = arg;
	leek_run(&p, dir, args, 60);
	if (p.status != 0)
		FAIL("leek run %s: exit %d; stderr:\n%s", fixture, p.status, p.err);
	proc_free(&p);
	snprintf(prefix, sizeof(prefix), "%s.", name);
	return find_one(dir, prefix, ".zst");
}

/* `leek export ARGS...`: fails unless it exits 0; *p keeps its output. */
static void leek_export(struct proc *p, const char *dir, const char *const *args)
{
	const char *argv[24] = { "export" };
	size_t n = 1;

	for (size_t i = 0; args[i]; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	leek_exec(p, dir, NULL, argv, 60);
	if (p->status != 0)
		FAIL("leek export: exit %d; stderr:\n%s", p->status, p->err);
}

/* The report's totals for the four values of files (ending with NULL; "--merge" may be among
 * them): the alloc view's objects and bytes, then inuse_view's (leaks, peak, or inuse at `at`)
 * for the in-use pair. */
static void report_totals4(const char *dir, const char *inuse_view, const char *at,
			   const char *const *files, int64_t want[PPROF_VALUES])
{
	const char *args[16];
	struct proc p;
	struct json *doc;
	size_t n;

	for (int k = 0; k < 2; k++) {
		n = 0;
		args[n++] = k ? inuse_view : "alloc";
		if (k && at) {
			args[n++] = "--at";
			args[n++] = at;
		}
		for (size_t i = 0; files[i]; i++)
			args[n++] = files[i];
		args[n] = NULL;
		doc = leek_report_json(&p, dir, args);
		const struct json *vt = json_get(doc, "view_total");
		if (!vt)
			FAIL("no view_total at the top of the report");
		want[2 * k] = (int64_t)get_u64(vt, "objects");
		want[2 * k + 1] = (int64_t)get_u64(vt, "bytes");
		json_free(doc);
		proc_free(&p);
	}
}

/* Every total of an export against want, within tolerance: -raw's column sums and -top's. */
static void expect_totals(const char *dir, const char *file, const int64_t want[PPROF_VALUES],
			  double tolerance)
{
	struct pprof_raw r;

	pprof_raw(dir, file, NULL, &r);
	for (int i = 0; i < PPROF_VALUES; i++) {
		int64_t sum = pprof_raw_sum(&r, i);
		if (fabs((double)(sum - want[i])) > tolerance)
			FAIL("%s: %s sums to %lld, the report says %lld (tolerance %g)", file,
			     value_names[i], (long long)sum, (long long)want[i], tolerance);
		/* pprof's own total: the sum of the absolute values (no base here). */
		ASSERT_EQ(pprof_top_total(dir, file, value_names[i]), sum);
	}
	pprof_raw_free(&r);
}

/* The sample whose leaf location's first line is function; fails unless there is one. */
static const struct pprof_sample *sample_of(const struct pprof_raw *r, const char *function)
{
	const struct pprof_sample *found = NULL;

	for (size_t i = 0; i < r->nsamples; i++) {
		const struct pprof_location *l = pprof_location(r, r->samples[i].locs[0]);
		if (l->nlines && !strcmp(l->lines[0].function, function)) {
			if (found)
				FAIL("two samples with leaf %s", function);
			found = &r->samples[i];
		}
	}
	if (!found)
		FAIL("no sample with leaf %s:\n%s", function, r->text);
	return found;
}

TEST(pprof_exact_totals_and_header)
{
	char dir[256], out[320], pid[32];
	struct proc p;
	struct json *doc;
	struct pprof_raw r;
	struct pprof_header h;
	int64_t want[PPROF_VALUES];

	need_go();
	tmp_dir(dir);
	char *prof = run_fixture(dir, "g", FX("fx-golden"), NULL, true, "1");
	leek_export(&p, dir, (const char *const[]){ prof, NULL });
	{ /* g.PID.lk.zst -> g.PID.lk.pb.gz */
		char *base = strndup(prof, strlen(prof) - 4);
		snprintf(out, sizeof(out), "%s.pb.gz", base);
		free(base);
	}
	ASSERT_CONTAINS(p.out, out);
	proc_free(&p);

	report_totals4(dir, "leaks", NULL, (const char *const[]){ prof, NULL }, want);
	ASSERT_EQ(want[1], 480 + 300000 + 80000 + 8192 + 100 + 5000 + 0 + 3000); /* fx-golden.c */
	expect_totals(dir, out, want, 0);

	/* At the peak, in exact mode: the peak view's totals, exactly. */
	{
		char peak[340];
		int64_t want_peak[PPROF_VALUES];
		snprintf(peak, sizeof(peak), "%s.peak.pb.gz", out);
		leek_export(&p, dir, (const char *const[]){ "--at", "peak", "-o", peak, prof, NULL });
		proc_free(&p);
		report_totals4(dir, "peak", NULL, (const char *const[]){ prof, NULL }, want_peak);
		expect_totals(dir, peak, want_peak, 0);
	}

	pprof_raw(dir, out, NULL, &r);
	/* fixture_leak_small: 10 x 48 bytes, leaked; fixture_free_all: 20 x 4000, all freed. */
	const struct pprof_sample *s = sample_of(&r, "fixture_leak_small");
	ASSERT_EQ(s->v[0], 10);
	ASSERT_EQ(s->v[1], 480);
	ASSERT_EQ(s->v[2], 10);
	ASSERT_EQ(s->v[3], 480);
	s = sample_of(&r, "fixture_free_all");
	ASSERT_EQ(s->v[0], 20);
	ASSERT_EQ(s->v[1], 80000);
	ASSERT_EQ(s->v[2], 0);
	ASSERT_EQ(s->v[3], 0);
	ASSERT_EQ(r.dflt, 3);
	for (int i = 0; i < PPROF_VALUES; i++)
		ASSERT_CONTAINS(r.types[i], value_names[i]);
	ASSERT_STREQ(r.types[1], "alloc_space/bytes");
	ASSERT_STREQ(r.types[2], "inuse_objects/count");
	ASSERT_STREQ(r.period_type, "space bytes");
	ASSERT_EQ(r.period, 1);
	ASSERT_EQ(r.ncomments, 2);
	ASSERT_STREQ(r.comments[0], "inuse: live at the end of each profile");

	doc = leek_report_json(&p, dir, (const char *const[]){ prof, NULL });
	const struct json *proc0 = json_at(json_get(doc, "processes"), 0);
	snprintf(pid, sizeof(pid), "pid %llu: ", (unsigned long long)get_u64(proc0, "pid"));
	ASSERT_TRUE(!strncmp(r.comments[1], pid, strlen(pid)));
	ASSERT_CONTAINS(r.comments[1], FX("fx-golden"));
	ASSERT_TRUE(r.time != NULL);

	pprof_decode_header(out, &h);
	ASSERT_TRUE(h.strings_valid);
	ASSERT_TRUE(h.canonical);
	ASSERT_STREQ(h.default_sample_type, "inuse_space");
	ASSERT_STREQ(h.period_type, "space");
	ASSERT_STREQ(h.period_unit, "bytes");
	ASSERT_EQ(h.period, 1);
	/* The start to the nanosecond, as `leek dump` prints the header; the duration within
	 * JSON's microsecond. */
	struct proc dump;
	unsigned long long sec, nsec;
	leek_exec(&dump, dir, NULL, (const char *const[]){ "dump", prof, NULL }, 60);
	ASSERT_EQ(dump.status, 0);
	ASSERT_TRUE(strstr(dump.out, " start_realtime=") &&
		    sscanf(strstr(dump.out, " start_realtime=") + 16, "%llu.%9llu", &sec, &nsec) == 2);
	ASSERT_EQ(h.time_nanos, (int64_t)(sec * 1000000000 + nsec));
	proc_free(&dump);
	ASSERT_NEAR((double)h.time_nanos / 1e9, get_num(proc0, "start_realtime_s"), 1e-6);
	ASSERT_NEAR((double)h.duration_nanos / 1e9, get_num(report_totals(doc), "duration_s"),
		    1e-6);
	{ /* -raw's time, to the nanosecond: "2026-12-03 23:00:46.537129407 +0000 UTC". Go drops
	   * the fraction's trailing zeros (".10599692" is 105 996 920 ns), and the fraction for 0. */
		struct tm tm = { 0 };
		const char *frac = strchr(r.time, '.');
		long ns = 0;
		int digits = 0;
		ASSERT_TRUE(strptime(r.time, "%Y-%m-%d %H:%M:%S", &tm) != NULL);
		if (frac)
			ASSERT_TRUE(sscanf(frac + 1, "%ld%n", &ns, &digits) == 1 && digits >= 1 &&
				    digits <= 9);
		for (int i = digits; frac && i < 9; i++)
			ns *= 10;
		ASSERT_EQ((int64_t)timegm(&tm) * 1000000000 + ns, h.time_nanos);
	}
	json_free(doc);
	proc_free(&p);
	pprof_raw_free(&r);
	free(prof);
	tmp_dir_remove(dir);
}

/* The MODULE records of a profile as `leek dump` prints them. */
static void expect_mappings(const char *dir, const char *prof, const struct pprof_raw *r)
{
	struct proc p;
	size_t matched = 0;

	leek_exec(&p, dir, NULL, (const char *const[]){ "dump", prof, NULL }, 60);
	ASSERT_EQ(p.status, 0);
	for (const char *line = strstr(p.out, " MODULE "); line;
	     line = strstr(line + 1, " MODULE ")) {
		unsigned long long base, start = UINT64_MAX, limit = 0, s, l;
		const char *seg = strstr(line, "segments="), *id = strstr(line, "build-id=");
		const char *path = strstr(line, "path="), *eol = strchr(line, '\n');
		char build_id[160] = "", file[512];
		ASSERT_TRUE(sscanf(strstr(line, "base=") + 5, "%llx", &base) == 1);
		for (const char *x = seg + 9; sscanf(x, "%llx+%llx", &s, &l) == 2;
		     x = strchr(x, ',') ? strchr(x, ',') + 1 : "") {
			start = base + s < start ? base + s : start;
			limit = base + s + l > limit ? base + s + l : limit;
			if (!strchr(x, ',') || strchr(x, ',') > eol)
				break;
		}
		if (id && id < eol)
			sscanf(id + 9, "%159s", build_id);
		snprintf(file, sizeof(file), "%.*s", (int)(eol - path - 5), path + 5);
		for (size_t i = 0; i < r->nmaps; i++) {
			const struct pprof_mapping *m = &r->maps[i];
			if (strcmp(m->file, file) != 0 || m->start != start)
				continue;
			ASSERT_EQ(m->limit, limit);
			ASSERT_EQ(m->offset, 0);
			ASSERT_STREQ(m->build_id, build_id);
			ASSERT_STREQ(m->flags, "[FN][FL][LN][IN]");
			matched++;
		}
	}
	ASSERT_EQ(matched, r->nmaps); /* every mapping is a MODULE record's */
	ASSERT_TRUE(matched >= 3);    /* the program, libc, the dlopen'ed library at least */
	proc_free(&p);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return s && n >= k && !strcmp(s + n - k, suffix);
}

TEST(pprof_inline_and_mappings)
{
	char dir[256], out[320];
	struct proc p;
	struct pprof_raw r;

	need_go();
	tmp_dir(dir);
	char *prof = run_fixture(dir, "i", FX("fx-inline"), FX_DLIB, true, "1");
	snprintf(out, sizeof(out), "%s/i.pb.gz", dir);
	leek_export(&p, dir, (const char *const[]){ "-o", out, prof, NULL });
	proc_free(&p);
	/* The lines fx-inline prints, from its own run: run it again as leek ran it. */
	struct proc fx;
	proc_run(&fx, dir, (const char *const[]){ FX("fx-inline"), FX_DLIB, NULL }, NULL, 30);
	ASSERT_EQ(fx.status, 0);
	unsigned long long helper = out_value(fx.out, "helper_line");
	unsigned long long outer = out_value(fx.out, "outer_line");
	unsigned long long dlib = out_value(fx.out, "dlib_line");

	pprof_raw(dir, out, NULL, &r);
	/* The inlined helper: one location, its lines innermost first, as pprof wants them. */
	const struct pprof_sample *s = sample_of(&r, "fixture_inl_helper");
	const struct pprof_location *l = pprof_location(&r, s->locs[0]);
	ASSERT_EQ(s->v[1], 12345);
	ASSERT_EQ(l->nlines, 2);
	ASSERT_STREQ(l->lines[0].function, "fixture_inl_helper");
	ASSERT_EQ(l->lines[0].line, (long)helper);
	ASSERT_STREQ(l->lines[1].function, "fixture_inl_outer");
	ASSERT_EQ(l->lines[1].line, (long)outer);
	ASSERT_TRUE(ends_with(l->lines[0].file, "/fx-inline.c"));
	ASSERT_TRUE(l->lines[0].system_name == NULL); /* C: the system name is the name */
	ASSERT_TRUE(ends_with(pprof_mapping(&r, l->mapping)->file, "/fx-inline"));
	ASSERT_STREQ(pprof_location(&r, s->locs[1])->lines[0].function, "main");
	/* The library's site, in the library's mapping, closed before the exit. */
	s = sample_of(&r, "fixture_dlib_alloc");
	l = pprof_location(&r, s->locs[0]);
	ASSERT_EQ(s->v[3], 54321);
	ASSERT_EQ(l->lines[0].line, (long)dlib);
	ASSERT_TRUE(ends_with(pprof_mapping(&r, l->mapping)->file, "libfxdlib.so"));
	const struct pprof_mapping *m = pprof_mapping(&r, l->mapping);
	ASSERT_TRUE(l->address >= m->start && l->address < m->limit);
	expect_mappings(dir, prof, &r);

	pprof_raw_free(&r);
	proc_free(&fx);
	free(prof);
	tmp_dir_remove(dir);
}

/* fx-growth at the default period: estimates, not counts. Each sample's values are rounded,
 * so a sum is the report's within half a unit a sample. */
TEST(pprof_sampled_end_peak_and_time)
{
	static const struct {
		const char *at, *view, *extra;
	} cases[] = {
		{ NULL, "leaks", NULL },
		{ "peak", "peak", NULL },
		{ "0.5", "inuse", "0.5" },
		{ "300ms", "inuse", "0.3" },
	};
	char dir[256], out[320];
	struct proc p;
	int64_t want[PPROF_VALUES];
	struct pprof_raw r;

	need_go();
	tmp_dir(dir);
	char *prof = run_fixture(dir, "s", FX("fx-growth"), NULL, false, "3");
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		const char *args[8] = { "-o", out };
		size_t n = 2;
		snprintf(out, sizeof(out), "%s/s%zu.pb.gz", dir, c);
		if (cases[c].at) {
			args[n++] = "--at";
			args[n++] = cases[c].at;
		}
		args[n++] = prof;
		args[n] = NULL;
		leek_export(&p, dir, args);
		proc_free(&p);
		report_totals4(dir, cases[c].view, cases[c].extra,
			       (const char *const[]){ prof, NULL }, want);
		ASSERT_TRUE(want[3] > 0 || c > 0);
		pprof_raw(dir, out, NULL, &r);
		expect_totals(dir, out, want, 0.5 * (double)r.nsamples + 1);
		ASSERT_EQ(r.period, 524288);
		if (c == 0) { /* about a second: the duration to JSON's microsecond */
			struct pprof_header h;
			struct json *doc = leek_report_json(&p, dir, (const char *const[]){ prof, NULL });
			pprof_decode_header(out, &h);
			ASSERT_TRUE(h.duration_nanos > 500000000);
			ASSERT_NEAR((double)h.duration_nanos / 1e9,
				    get_num(report_totals(doc), "duration_s"), 1e-6);
			json_free(doc);
			proc_free(&p);
		}
		if (cases[c].at && !strcmp(cases[c].at, "peak"))
			ASSERT_STREQ(r.comments[0], "inuse: live at the peak of each profile's heap");
		else if (cases[c].at)
			ASSERT_CONTAINS(r.comments[0], "inuse: live at 0.");
		pprof_raw_free(&r);
	}
	free(prof);
	tmp_dir_remove(dir);
}

/* The lines of a folded output: each "STACK VALUE", the value positive, the lines sorted by
 * their stacks; the values summed. */
static int64_t folded_sum(const char *text, size_t *nlines)
{
	const char *prev = NULL;
	size_t prev_len = 0, n = 0;
	int64_t sum = 0;

	for (const char *line = text; *line;) {
		const char *eol = strchr(line, '\n'), *sp;
		char *end;
		if (!eol)
			FAIL("a folded line without its newline: \"%s\"", line);
		for (sp = eol; sp > line && *sp != ' '; sp--)
			;
		long long v = strtoll(sp + 1, &end, 10);
		if (sp == line || end != eol || v <= 0)
			FAIL("not \"STACK VALUE\" with a positive value: \"%.*s\"", (int)(eol - line),
			     line);
		size_t len = (size_t)(sp - line), k = len < prev_len ? len : prev_len;
		int c = prev ? memcmp(prev, line, k) : -1;
		if (c > 0 || (c == 0 && prev_len >= len))
			FAIL("folded lines out of order, or twice: \"%.*s\" then \"%.*s\"",
			     (int)prev_len, prev, (int)len, line);
		prev = line;
		prev_len = len;
		sum += v;
		n++;
		line = eol + 1;
	}
	*nlines = n;
	return sum;
}

TEST(folded_values)
{
	char dir[256], want_line[256];
	struct proc p;
	int64_t want[PPROF_VALUES];
	size_t n;

	tmp_dir(dir);
	char *prof = run_fixture(dir, "g", FX("fx-golden"), NULL, true, "1");
	report_totals4(dir, "leaks", NULL, (const char *const[]){ prof, NULL }, want);
	for (int i = 0; i < PPROF_VALUES; i++) {
		leek_export(&p, dir, (const char *const[]){ "--format", "folded", "--value",
							    value_names[i], prof, NULL });
		ASSERT_EQ(folded_sum(p.out, &n), want[i]);
		ASSERT_TRUE(n > 0);
		proc_free(&p);
	}
	/* The default value is inuse_space. */
	leek_export(&p, dir, (const char *const[]){ "--format", "folded", prof, NULL });
	ASSERT_EQ(folded_sum(p.out, &n), want[3]);
	proc_free(&p);

	/* fx-inline: the inlined helper is a frame of its own, under its outer function. */
	char *inl = run_fixture(dir, "i", FX("fx-inline"), FX_DLIB, true, "1");
	leek_export(&p, dir, (const char *const[]){ "--format", "folded", inl, NULL });
	snprintf(want_line, sizeof(want_line), ";main;fixture_inl_outer;fixture_inl_helper 12345\n");
	ASSERT_CONTAINS(p.out, want_line);
	ASSERT_CONTAINS(p.out, ";main;fixture_dlib_alloc 54321\n");
	proc_free(&p);

	/* Sampled: within half a unit a line, against the report's. */
	char *s = run_fixture(dir, "s", FX("fx-growth"), NULL, false, "4");
	report_totals4(dir, "leaks", NULL, (const char *const[]){ s, NULL }, want);
	for (int i = 0; i < PPROF_VALUES; i++) {
		leek_export(&p, dir, (const char *const[]){ "--format", "folded", "--value",
							    value_names[i], s, NULL });
		int64_t sum = folded_sum(p.out, &n);
		ASSERT_NEAR(sum, want[i], 0.5 * (double)n + 1);
		proc_free(&p);
	}
	free(s);
	free(inl);
	free(prof);
	tmp_dir_remove(dir);
}

TEST(pprof_diff_base)
{
	char dir[256], diff[320], newf[320], basef[320];
	struct proc p;
	struct pprof_raw d, n, b, g;

	need_go();
	tmp_dir(dir);
	char *new = run_fixture(dir, "n", FX("fx-growth"), NULL, false, "5");
	char *base = run_fixture(dir, "b", FX("fx-golden"), NULL, true, "1");
	snprintf(diff, sizeof(diff), "%s/diff.pb.gz", dir);
	snprintf(newf, sizeof(newf), "%s/new.pb.gz", dir);
	snprintf(basef, sizeof(basef), "%s/base.pb.gz", dir);
	leek_export(&p, dir, (const char *const[]){ "--base", base, "-o", diff, new, NULL });
	proc_free(&p);
	leek_export(&p, dir, (const char *const[]){ "-o", newf, new, NULL });
	proc_free(&p);
	leek_export(&p, dir, (const char *const[]){ "-o", basef, base, NULL });
	proc_free(&p);

	pprof_raw(dir, diff, NULL, &d);
	pprof_raw(dir, newf, NULL, &n);
	pprof_raw(dir, basef, NULL, &b);
	/* pprof's own diff of the two exports: its base samples negated and labelled. */
	pprof_raw(dir, newf, (const char *const[]){ "-diff_base", basef, NULL }, &g);
	size_t nbase = 0;
	for (size_t i = 0; i < d.nsamples; i++)
		nbase += d.samples[i].base;
	ASSERT_EQ(nbase, b.nsamples);
	ASSERT_EQ(d.nsamples, n.nsamples + b.nsamples);
	for (int i = 0; i < PPROF_VALUES; i++) {
		int64_t want = pprof_raw_sum(&n, i) - pprof_raw_sum(&b, i);
		ASSERT_EQ(pprof_raw_sum(&d, i), want);
		ASSERT_EQ(pprof_raw_sum(&g, i), want);
		/* -diff_base's percentages are of the base: -top's total is the base's. */
		ASSERT_EQ(pprof_top_total(dir, diff, value_names[i]), pprof_raw_sum(&b, i));
	}
	for (size_t i = 0; i < d.nsamples; i++)
		for (int k = 0; k < PPROF_VALUES; k++)
			ASSERT_TRUE(d.samples[i].base ? d.samples[i].v[k] <= 0
						      : d.samples[i].v[k] >= 0);
	ASSERT_CONTAINS(d.text, "Comment: base pid ");
	/* ... and the report's totals of NEW minus BASE's, within rounding. */
	int64_t rn[PPROF_VALUES], rb[PPROF_VALUES];
	report_totals4(dir, "leaks", NULL, (const char *const[]){ new, NULL }, rn);
	report_totals4(dir, "leaks", NULL, (const char *const[]){ base, NULL }, rb);
	for (int i = 0; i < PPROF_VALUES; i++)
		ASSERT_NEAR(pprof_raw_sum(&d, i), rn[i] - rb[i], 0.5 * (double)d.nsamples + 1);
	pprof_raw_free(&d);
	pprof_raw_free(&n);
	pprof_raw_free(&b);
	pprof_raw_free(&g);
	free(new);
	free(base);
	tmp_dir_remove(dir);
}

TEST(several_files)
{
	char dir[256], merged[320];
	struct proc p;
	int64_t want[PPROF_VALUES];

	need_go();
	tmp_dir(dir);
	char *a = run_fixture(dir, "a", FX("fx-golden"), NULL, true, "1");
	char *b = run_fixture(dir, "b", FX("fx-inline"), FX_DLIB, true, "1");
	snprintf(merged, sizeof(merged), "%s/m.pb.gz", dir);
	leek_export(&p, dir, (const char *const[]){ "--merge", "-o", merged, a, b, NULL });
	proc_free(&p);
	report_totals4(dir, "leaks", NULL, (const char *const[]){ "--merge", a, b, NULL }, want);
	expect_totals(dir, merged, want, 0);

	/* Without --merge: one output each, named after its input. */
	leek_export(&p, dir, (const char *const[]){ a, b, NULL });
	ASSERT_EQ(count_files(dir, "a.", ".lk.pb.gz"), 1);
	ASSERT_EQ(count_files(dir, "b.", ".lk.pb.gz"), 1);
	proc_free(&p);
	char *oa = find_one(dir, "a.", ".lk.pb.gz");
	report_totals4(dir, "leaks", NULL, (const char *const[]){ a, NULL }, want);
	expect_totals(dir, oa, want, 0);

	/* folded, merged: one output on stdout, summed over both. */
	leek_export(&p, dir, (const char *const[]){ "--format", "folded", "--merge", a, b, NULL });
	report_totals4(dir, "leaks", NULL, (const char *const[]){ "--merge", a, b, NULL }, want);
	size_t n;
	ASSERT_EQ(folded_sum(p.out, &n), want[3]);
	proc_free(&p);
	free(oa);
	free(a);
	free(b);
	tmp_dir_remove(dir);
}
