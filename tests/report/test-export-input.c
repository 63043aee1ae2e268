/* test-export-input.c: `leek export` on profiles built record by record (build-profile.h): no
 * program runs under libleek here, so this suite also runs under ASan and UBSan.
 *
 *   - damaged and foreign input: the same "leek: FILE: offset N: ..." line and exit status as
 *     `leek report`, nothing written;
 *   - a many-threaded exact profile (pb_threads) exported as pprof and read back by `go tool
 *     pprof`: its totals are the report's, exactly;
 *   - hostile names (a module path with ';', a newline, an escape, a backslash, a byte outside
 *     UTF-8): escaped in both formats, so a folded line stays one line of `stack value` and
 *     pprof's strings stay valid UTF-8;
 *   - the command line's rules (which outputs, which options with which format), and --base,
 *     which export shares with diff (input.c): repeated, every file read;
 *   - --format html: the very page of `leek report --format html`, byte for byte.
 * Tests that need go skip without it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "build-profile.h"
#include "files.h"
#include "harness.h"
#include "json.h"
#include "leek.h"
#include "pprof-util.h"

static struct proc res;

static void leek(const char *dir, const char *const *args)
{
	proc_free(&res);
	leek_exec(&res, dir, NULL, args, 60);
}

static bool exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/* pb_threads' profile of `events` events, 2 threads, drawn from seed, written to dir/name; its
 * path in path (300 bytes). */
static void threads_profile(const char *dir, const char *name, uint64_t seed, size_t events,
			    bool crash, char *path)
{
	struct pbuf b = { 0 };

	pb_threads(&b, seed, events, 2, 4096, crash, NULL);
	snprintf(path, 300, "%s/%s", dir, name);
	write_file(path, b.p, b.len);
	free(b.p);
}

/* The sample profile cut inside each record, and a file that is no profile: export's stderr and
 * status are report's, word for word, and no output appears. */
TEST(damaged_input_as_report)
{
	char dir[256], path[300], out[320];
	struct pb_sample s;
	char *report_err;
	int report_status;

	tmp_dir(dir);
	pb_build_sample(&s);
	snprintf(path, sizeof(path), "%s/cut.lk", dir);
	snprintf(out, sizeof(out), "%s/cut.lk.pb.gz", dir);
	for (size_t i = 0; i <= s.nrec; i++) {
		if (i < s.nrec) {
			size_t len = s.off[i + 1] - s.off[i];
			write_file(path, s.b.p, s.off[i] + (len > 2 ? len / 2 : 1));
		} else
			write_file(path, "not a leek profile at all\n", 26);
		leek(dir, (const char *const[]){ "report", path, NULL });
		report_status = res.status;
		report_err = strdup(res.err);
		ASSERT_EQ(report_status, 2);
		leek(dir, (const char *const[]){ "export", path, NULL });
		if (res.status != report_status || strcmp(res.err, report_err) != 0)
			FAIL("record %zu: export: exit %d, stderr:\n%s\nreport: exit %d, stderr:\n%s",
			     i, res.status, res.err, report_status, report_err);
		ASSERT_TRUE(!exists(out));
		ASSERT_EQ(res.out_len, 0);
		leek(dir, (const char *const[]){ "export", "--format", "folded", path, NULL });
		ASSERT_EQ(res.status, report_status);
		ASSERT_STREQ(res.err, report_err);
		ASSERT_EQ(res.out_len, 0); /* no stack of the readable part */
		free(report_err);
	}
	free(s.b.p);
	tmp_dir_remove(dir);
}

/* The intact sample: every record type, a size of 2^64 - 1 (clamped to int64_t's largest in
 * pprof), stack 0 ("(no stack)"), a module without segments. pprof reads it. */
TEST(intact_sample)
{
	char dir[256], path[300], out[320];
	struct pb_sample s;
	struct pprof_raw r;

	tmp_dir(dir);
	pb_build_sample(&s);
	snprintf(path, sizeof(path), "%s/sample.lk", dir);
	write_file(path, s.b.p, s.b.len);
	leek(dir, (const char *const[]){ "export", "--format", "folded", "--value", "alloc_space",
					 path, NULL });
	ASSERT_EQ(res.status, 0);
	ASSERT_CONTAINS(res.out, "(no stack) 9223372036854775807\n");
	if (go_path()) {
		leek(dir, (const char *const[]){ "export", path, NULL });
		ASSERT_EQ(res.status, 0);
		snprintf(out, sizeof(out), "%s.pb.gz", path);
		pprof_raw(dir, out, NULL, &r);
		ASSERT_CONTAINS(r.text, "9223372036854775807");
		ASSERT_CONTAINS(r.text, "(no stack)");
		ASSERT_CONTAINS(r.text, "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3"); /* m1's build-id */
		pprof_raw_free(&r);
	}
	free(s.b.p);
	tmp_dir_remove(dir);
}

/* A new dir with a good profile (dir/good.lk, 2 threads) and the sample cut inside its fourth
 * record (dir/bad.lk); their paths in good and bad (300 bytes). */
static void good_and_bad(char *dir, char *good, char *bad)
{
	struct pb_sample s;

	tmp_dir(dir);
	threads_profile(dir, "good.lk", 1, 2000, false, good);
	pb_build_sample(&s);
	snprintf(bad, 300, "%s/bad.lk", dir);
	write_file(bad, s.b.p, s.off[3] + 1);
	free(s.b.p);
}

/* A damaged file among good ones: the others are still exported, status 2; with --merge the
 * merged output holds the good ones, as `leek report --merge` does. */
TEST(damaged_among_good)
{
	char dir[256], good[300], bad[300], out[320];

	good_and_bad(dir, good, bad);
	leek(dir, (const char *const[]){ "export", bad, good, NULL });
	ASSERT_EQ(res.status, 2);
	snprintf(out, sizeof(out), "%s.pb.gz", good);
	ASSERT_TRUE(exists(out));
	snprintf(out, sizeof(out), "%s.pb.gz", bad);
	ASSERT_TRUE(!exists(out));
	snprintf(out, sizeof(out), "%s/merged.pb.gz", dir);
	leek(dir, (const char *const[]){ "export", "--merge", "-o", out, bad, good, NULL });
	ASSERT_EQ(res.status, 2);
	ASSERT_TRUE(exists(out));
	tmp_dir_remove(dir);
}

/* --base (input.c, shared by export and diff) takes any number of files, and every one is read:
 * a damaged first base fails both commands, naming it, and no export is written. */
TEST(base_repeated_every_file_read)
{
	char dir[256], good[300], bad[300], out[320];

	good_and_bad(dir, good, bad);
	snprintf(out, sizeof(out), "%s/d.pb.gz", dir);
	leek(dir, (const char *const[]){ "export", "--base", bad, "--base", good, "-o", out, good,
					 NULL });
	ASSERT_EQ(res.status, 2);
	ASSERT_CONTAINS(res.err, "bad.lk");
	ASSERT_TRUE(!exists(out));
	leek(dir, (const char *const[]){ "diff", "--base", bad, "--base", good, good, NULL });
	ASSERT_EQ(res.status, 2);
	ASSERT_CONTAINS(res.err, "bad.lk");
	ASSERT_EQ(res.out_len, 0);
	leek(dir, (const char *const[]){ "diff", "--base", good, "--base", good, good, NULL });
	ASSERT_EQ(res.status, 0);
	tmp_dir_remove(dir);
}

/* Two bases in a pprof diff: both negated, so the sums are NEW minus twice the base (here the
 * same profile: minus it once; with one base they would be 0). */
TEST(base_repeated_pprof)
{
	char dir[256], path[300], one[320], diff[320];
	struct pprof_raw r1, rd;

	need_go();
	tmp_dir(dir);
	threads_profile(dir, "p.lk", 2, 2000, false, path);
	snprintf(one, sizeof(one), "%s/one.pb.gz", dir);
	snprintf(diff, sizeof(diff), "%s/diff.pb.gz", dir);
	leek(dir, (const char *const[]){ "export", "-o", one, path, NULL });
	ASSERT_EQ(res.status, 0);
	leek(dir, (const char *const[]){ "export", "--base", path, "--base", path, "-o", diff, path,
					 NULL });
	ASSERT_EQ(res.status, 0);
	pprof_raw(dir, one, NULL, &r1);
	pprof_raw(dir, diff, NULL, &rd);
	for (int i = 0; i < PPROF_VALUES; i++)
		ASSERT_EQ(pprof_raw_sum(&rd, i), -pprof_raw_sum(&r1, i));
	pprof_raw_free(&r1);
	pprof_raw_free(&rd);
	tmp_dir_remove(dir);
}

/* The view's total of `leek report --format json VIEW path`: bytes or objects. */
static uint64_t report_total(const char *dir, const char *view, const char *path, bool bytes)
{
	struct json *doc;
	char err[256];
	uint64_t v;

	leek(dir, (const char *const[]){ "report", "--format", "json", view, path, NULL });
	if (res.status != 0 || json_parse(res.out, res.out_len, &doc, err, sizeof(err)) < 0)
		FAIL("leek report %s: exit %d, stderr:\n%s", view, res.status, res.err);
	if (!json_u64(json_path(doc, bytes ? "view_total.bytes" : "view_total.objects"), &v))
		FAIL("no view_total in the report");
	json_free(doc);
	return v;
}

/* pb_threads: stacks of made-up frames in no module, an exact profile. Every total that `go
 * tool pprof` computes is the report's, exactly. */
TEST(threads_profile_totals)
{
	char dir[256], path[300], out[320];
	struct pprof_raw r;
	struct pprof_header h;

	need_go();
	tmp_dir(dir);
	threads_profile(dir, "t.lk", 7, 20000, true, path);
	leek(dir, (const char *const[]){ "export", path, NULL });
	if (res.status != 0)
		FAIL("export: exit %d, stderr:\n%s", res.status, res.err);
	ASSERT_CONTAINS(res.err, "no trailer"); /* a crash: the report's warning */
	snprintf(out, sizeof(out), "%s.pb.gz", path);
	ASSERT_TRUE(exists(out));
	pprof_raw(dir, out, NULL, &r);
	ASSERT_EQ(pprof_raw_sum(&r, 0), report_total(dir, "alloc", path, false));
	ASSERT_EQ(pprof_raw_sum(&r, 1), report_total(dir, "alloc", path, true));
	ASSERT_EQ(pprof_raw_sum(&r, 2), report_total(dir, "leaks", path, false));
	ASSERT_EQ(pprof_raw_sum(&r, 3), report_total(dir, "leaks", path, true));
	ASSERT_EQ(r.period, 1);
	/* No MODULE record: locations without a mapping, where pprof puts one of its own, with no
	 * file (which it then does not try to symbolize). */
	for (size_t i = 0; i < r.nmaps; i++)
		ASSERT_STREQ(r.maps[i].file, "");
	for (size_t i = 0; i < r.nlocs; i++) {
		ASSERT_EQ(r.locs[i].nlines, 1);
		ASSERT_TRUE(!strncmp(r.locs[i].lines[0].function, "0x", 2));
	}
	pprof_decode_header(out, &h);
	ASSERT_TRUE(h.strings_valid);
	ASSERT_TRUE(h.canonical);
	ASSERT_STREQ(h.default_sample_type, "inuse_space");
	pprof_raw_free(&r);
	tmp_dir_remove(dir);
}

/* A module whose path (and so its frames' names, "label+0x...") holds a ';', a newline, an ESC,
 * a backslash and a byte that is not UTF-8. */
static void hostile_profile(const char *path)
{
	static const char mod[] = "/nonexistent/a;b\nc\x1b[31m\\d\xff.so";
	static const uint64_t frames[] = { 0x7f0000001234, 0x7f0000005678 };
	struct lk_module_info m = { .id = 1, .base = 0x7f0000000000, .nseg = 1,
				    .seg = { { 0, 0x10000 } }, .path = mod,
				    .path_len = sizeof(mod) - 1 };
	struct pbuf b = { 0 };

	pb_header(&b, &(struct pb_header){ .pid = 5, .period = 1, .exe = "/x",
					   .cmdline = "x\0\x1b]0;t\a", .cmdline_len = 8 });
	PB_REC(&b, lk_rec_module(rec, 0, &m));
	PB_REC(&b, lk_rec_stack(rec, 1, frames, 2));
	pb_alloc(&b, 0, 1, 0x1000, 100, 1);
	write_file(path, b.p, b.len);
	free(b.p);
}

TEST(hostile_names_escaped)
{
	char dir[256], path[300], out[320];
	struct pprof_raw r;
	struct pprof_header h;

	tmp_dir(dir);
	snprintf(path, sizeof(path), "%s/h.lk", dir);
	hostile_profile(path);
	leek(dir, (const char *const[]){ "export", "--format", "folded", path, NULL });
	ASSERT_EQ(res.status, 0);
	/* One line: outer frame first, each name escaped, then the value. */
	ASSERT_STREQ(res.out, "a\\x3bb\\x0ac\\x1b[31m\\x5cd\\xff.so+0x5677;"
			      "a\\x3bb\\x0ac\\x1b[31m\\x5cd\\xff.so+0x1233 100\n");
	if (go_path()) {
		leek(dir, (const char *const[]){ "export", path, NULL });
		ASSERT_EQ(res.status, 0);
		snprintf(out, sizeof(out), "%s.pb.gz", path);
		pprof_raw(dir, out, NULL, &r);
		ASSERT_EQ(r.nlocs, 2);
		/* pprof's names keep ';': only folded needs it escaped. */
		ASSERT_STREQ(r.locs[0].lines[0].function, "a;b\\x0ac\\x1b[31m\\x5cd\\xff.so+0x1233");
		ASSERT_TRUE(strstr(r.text, "/nonexistent/a;b\\x0ac\\x1b[31m\\x5cd\\xff.so"));
		/* The command line's control bytes as lk_print_cmdline quotes them. */
		ASSERT_STREQ(r.comments[1], "pid 5: x '\\x1b]0;t\\x07'");
		ASSERT_TRUE(!strchr(r.text, '\x1b'));
		pprof_decode_header(out, &h);
		ASSERT_TRUE(h.strings_valid);
	ASSERT_TRUE(h.canonical);
		pprof_raw_free(&r);
	}
	tmp_dir_remove(dir);
}

TEST(usage_errors)
{
	static const struct {
		const char *args[8];
		const char *says;
	} cases[] = {
		{ { "export", "--format", "svg", "P", NULL }, "is not one of pprof, folded" },
		{ { "export", "--value", "inuse_space", "P", NULL }, "--value belongs to" },
		{ { "export", "--format", "folded", "--value", "x", "P", NULL }, "is not one of" },
		{ { "export", "--format", "folded", "--base", "P", "P", NULL }, "--base belongs to" },
		{ { "export", "--at", "later", "P", NULL }, "neither peak nor a time" },
		{ { "export", "--base", "P", "P", "P", NULL }, "--base makes one diff" },
		{ { "export", "--format", "folded", "P", "P", NULL }, "-o DIR one each" },
		{ { "export", "--merge", "P", "P", NULL }, "name it with -o FILE" },
		{ { "export", "-o", "P", "P", "P", NULL }, "-o names a directory" },
		{ { "export", "--alloc-fn", "x", "P", NULL }, "usage: leek export" },
		{ { "export", NULL }, "no profile given" },
	};
	char dir[256], path[300];

	tmp_dir(dir);
	threads_profile(dir, "p.lk", 3, 100, false, path);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *args[8];
		for (size_t k = 0; k < 8; k++)
			args[k] = cases[i].args[k] && !strcmp(cases[i].args[k], "P") ? path
											: cases[i].args[k];
		leek(dir, args);
		if (res.status != 1 || !strstr(res.err, cases[i].says))
			FAIL("case %zu: exit %d, expected 1 and \"%s\"; stderr:\n%s", i, res.status,
			     cases[i].says, res.err);
	}
	ASSERT_EQ(count_files(dir, "p.lk.", ""), 0); /* nothing written */
	leek(dir, (const char *const[]){ "help", "export", NULL });
	ASSERT_EQ(res.status, 0);
	for (const char *o = "--format\0--output\0--at\0--value\0--base\0--merge\0--focus\0"
			     "--ignore\0--debug-dir\0--debuginfod\0--max-memory\0";
	     *o; o += strlen(o) + 1)
		ASSERT_CONTAINS(res.out, o);
	tmp_dir_remove(dir);
}

/* Outputs named after their inputs: .zst and .gz dropped, beside the input or in -o DIR; -o -
 * is stdout; an existing output is replaced, and the file is 0600. */
TEST(output_names)
{
	char dir[256], sub[300], path[300], out[340];
	struct stat st;

	tmp_dir(dir);
	threads_profile(dir, "p.lk.gz", 5, 500, false, path); /* raw bytes under a .gz name */
	leek(dir, (const char *const[]){ "export", path, NULL });
	ASSERT_EQ(res.status, 0);
	snprintf(out, sizeof(out), "%s/p.lk.pb.gz", dir);
	ASSERT_TRUE(stat(out, &st) == 0);
	ASSERT_EQ(st.st_mode & 0777, 0600);
	ASSERT_CONTAINS(res.out, " -> ");
	leek(dir, (const char *const[]){ "export", path, NULL }); /* again: replaced */
	ASSERT_EQ(res.status, 0);
	ASSERT_EQ(count_files(dir, "p.lk.pb.gz", ""), 1);
	snprintf(sub, sizeof(sub), "%s/d", dir);
	ASSERT_TRUE(mkdir(sub, 0700) == 0);
	leek(dir, (const char *const[]){ "export", "--format", "folded", "-o", sub, path, path,
					 NULL });
	ASSERT_EQ(res.status, 0);
	snprintf(out, sizeof(out), "%s/p.lk.folded", sub);
	ASSERT_TRUE(exists(out));
	unlink(out);
	rmdir(sub);
	leek(dir, (const char *const[]){ "export", "-o", "-", path, NULL });
	ASSERT_EQ(res.status, 0);
	ASSERT_TRUE(res.out_len > 2 && (uint8_t)res.out[0] == 0x1f && (uint8_t)res.out[1] == 0x8b);
	tmp_dir_remove(dir);
}

/* `leek ARGS...` in dir, which must succeed; what it printed on stdout (malloc'ed). */
static char *output_of(const char *dir, const char *const *args)
{
	leek(dir, args);
	if (res.status != 0)
		FAIL("leek %s %s: exit %d, stderr:\n%s", args[0], args[1], res.status, res.err);
	return strndup(res.out, res.out_len);
}

/* --format html is the report's page: the bytes of `leek report --format html` of the same
 * profile and moment (the end; --at peak, the peak view; --at TIME, inuse --at TIME), and with
 * --merge of `report --merge`; on stdout by default, one page each in -o DIR; --base is refused
 * with the way to a diff's page. */
TEST(html_is_the_report_page)
{
	static const char *const views[][2][4] = {
		{ { NULL }, { NULL } },
		{ { "--at", "peak", NULL }, { "peak", NULL } },
		{ { "--at", "1ms", NULL }, { "inuse", "--at", "1ms", NULL } },
	};
	char dir[256], a[300], b[300], sub[300], out[340], *exp, *rep, *page;

	tmp_dir(dir);
	threads_profile(dir, "a.lk", 7, 2000, false, a);
	threads_profile(dir, "b.lk", 8, 2000, false, b);
	for (size_t v = 0; v < 3; v++) {
		const char *ea[8] = { "export", "--format", "html" }, *ra[8] = { "report", "--format",
										  "html" };
		size_t ne = 3, nr = 3;
		for (size_t k = 0; views[v][0][k]; k++)
			ea[ne++] = views[v][0][k];
		for (size_t k = 0; views[v][1][k]; k++)
			ra[nr++] = views[v][1][k];
		ea[ne] = ra[nr] = a;
		exp = output_of(dir, ea);
		rep = output_of(dir, ra);
		ASSERT_CONTAINS(exp, "<!DOCTYPE html>");
		if (strcmp(exp, rep) != 0)
			FAIL("export --format html %s is not report --format html %s", ea[3] ?: "",
			     ra[3] ?: "");
		free(exp);
		free(rep);
	}
	exp = output_of(dir, (const char *const[]){ "export", "--format", "html", "--merge", a, b,
						    NULL });
	rep = output_of(dir, (const char *const[]){ "report", "--format", "html", "--merge", a, b,
						    NULL });
	ASSERT_STREQ(exp, rep);
	free(exp);
	free(rep);
	snprintf(sub, sizeof(sub), "%s/d", dir);
	ASSERT_TRUE(mkdir(sub, 0700) == 0);
	leek(dir, (const char *const[]){ "export", "--format", "html", "-o", sub, a, b, NULL });
	ASSERT_EQ(res.status, 0);
	for (const char *p = a; p; p = p == a ? b : NULL) {
		snprintf(out, sizeof(out), "%s/%s.html", sub, strrchr(p, '/') + 1);
		page = read_file(out, NULL);
		rep = output_of(dir, (const char *const[]){ "report", "--format", "html", p, NULL });
		ASSERT_STREQ(page, rep);
		free(page);
		free(rep);
		unlink(out);
	}
	rmdir(sub);
	leek(dir, (const char *const[]){ "export", "--format", "html", "--base", a, b, NULL });
	ASSERT_EQ(res.status, 1);
	ASSERT_CONTAINS(res.err, "leek diff --format html");
	tmp_dir_remove(dir);
}
