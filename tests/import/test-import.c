/* test-import.c: `leek import` on traces, end to end: the shared samples (real glibc 2.36
 * mtrace traces with the mtrace script's own output; kdump text reconstructed from FreeBSD's
 * documented format), and traces generated here for what the samples lack: kdump's -H and
 * other records, malformed lines, every warning, failed allocations, detection, JSON, --convert
 * read back by `leek report`, and a random trace compared with glibc's mtrace script.
 *
 * No program runs under a preloaded library here (test-import-run.c does that), so this runs
 * under ASan too.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "files.h"
#include "harness.h"
#include "json-get.h"
#include "json.h"
#include "leek.h"

#define SAMPLES SOURCE_DIR "/samples"

/* `leek import ARGS...` in dir. */
static void import(struct proc *p, const char *dir, const char *const *args)
{
	const char *argv[32] = {"import"};
	size_t n = 1;

	while (*args)
		argv[n++] = *args++;
	argv[n] = NULL;
	leek_exec(p, dir, NULL, argv, 120);
}

static struct json *parse(const struct proc *p)
{
	struct json *j;
	char err[200];

	if (json_parse(p->out, p->out_len, &j, err, sizeof(err)) < 0)
		FAIL("not JSON: %s\n%s", err, p->out);
	return j;
}

/* A directory for a test's output files (left behind only if it fails). */
static const char *tmp(void)
{
	static char dir[256];

	if (!dir[0])
		tmp_dir(dir);
	return dir;
}

/* dir/name with the text, its path in path. */
static void trace(char *path, const char *dir, const char *name, const char *text)
{
	snprintf(path, 512, "%s/%s", dir, name);
	write_file(path, text, strlen(text));
}

/* The leaks the mtrace script printed in one section of mtrace-script-output.txt, as
 * "ADDR SIZE" lines (hex, as the script writes them). */
static char *script_section(const char *header)
{
	char *all = read_file(SAMPLES "/mtrace-script-output.txt", NULL);
	char *s = strstr(all, header), *out = calloc(1, 4096);
	unsigned long long a, z;
	size_t n = 0;

	ASSERT_TRUE(s && out);
	s = strstr(s, "Caller\n");
	ASSERT_TRUE(s);
	for (s += 7; sscanf(s, "%llx %llx", &a, &z) == 2; s = strchr(s, '\n') + 1)
		n += (size_t)snprintf(out + n, 4096 - n, "%llx %llx\n", a, z);
	free(all);
	return out;
}

/* The leaks of leek's JSON as the same "ADDR SIZE" lines, in its order (by address). */
static char *json_leaks(const struct json *j)
{
	const struct json *leaks = json_get(j, "leaks");
	char *out = calloc(1, 1 << 20);
	size_t n = 0;

	ASSERT_TRUE(leaks && out);
	for (size_t i = 0; i < leaks->len; i++) {
		const struct json *l = json_at(leaks, i);
		n += (size_t)snprintf(out + n, (1 << 20) - n, "%llx %llx\n",
		                      strtoull(get_str(l, "address"), NULL, 16),
		                      (unsigned long long)get_u64(l, "size"));
	}
	return out;
}

TEST(sample_pie_as_the_script)
{
	struct proc p = {0};

	import(&p, tmp(), (const char *[]){"-f", "json", SAMPLES "/mt-pie.trace", NULL});
	ASSERT_EQ(p.status, 1); /* leaks, as the script's [exit 1] */
	struct json *j = parse(&p);
	ASSERT_STREQ(json_leaks(j), script_section("$ mtrace mt_pie.trace"));
	ASSERT_EQ(get_u64(j, "leaked_objects"), 4);
	ASSERT_EQ(get_u64(j, "leaked_bytes"), 6 + 200 + 64 + 128);
	ASSERT_STREQ(get_str(j, "input_format"), "mtrace");
	const struct json *first = json_at(json_get(j, "leaks"), 0);
	ASSERT_STREQ(get_str(first, "caller"),
	             "/lib/x86_64-linux-gnu/libc.so.6:(__strdup+1a)[0x9e9aa]");
	ASSERT_EQ(get_u64(first, "line"), 9);
	ASSERT_EQ(get_u64(json_get(j, "counts"), "reallocs"), 1);
	ASSERT_EQ(get_u64(j, "warnings_total"), 0);
	proc_free(&p);
}

TEST(sample_nopie_as_the_script)
{
	struct proc p = {0};

	import(&p, tmp(), (const char *[]){"--format", "json", SAMPLES "/mt-nopie.trace", NULL});
	ASSERT_EQ(p.status, 1);
	ASSERT_STREQ(json_leaks(parse(&p)), script_section("$ mtrace ./mt mt.trace"));
	proc_free(&p);
}

TEST(sample_text)
{
	struct proc p = {0};

	import(&p, tmp(), (const char *[]){SAMPLES "/mt-pie.trace", NULL});
	ASSERT_EQ(p.status, 1);
	ASSERT_CONTAINS(p.out, "mtrace trace, 12 lines");
	ASSERT_CONTAINS(p.out, "Leaked: 4 objects, 398 bytes");
	ASSERT_CONTAINS(p.out, "0x000055fe324d1510          200          3  ./mt_pie:[0x11c1]");
	proc_free(&p);
}

TEST(sample_kdump)
{
	struct proc p = {0};

	import(
	    &p, tmp(),
	    (const char *[]){"-f", "json", SAMPLES "/kdump-tu-phkmalloc.RECONSTRUCTED.txt", NULL});
	ASSERT_EQ(p.status, 1);
	struct json *j = parse(&p);
	ASSERT_STREQ(get_str(j, "input_format"), "kdump");
	ASSERT_STREQ(json_leaks(j), "8101080 64\n"); /* malloc(100), line 2 */
	ASSERT_EQ(get_u64(json_at(json_get(j, "leaks"), 0), "line"), 2);
	proc_free(&p);

	import(&p, tmp(),
	       (const char *[]){"-f", "json", SAMPLES "/kdump-T-tu-phkmalloc.RECONSTRUCTED.txt",
	                        NULL});
	ASSERT_EQ(p.status, 0); /* the realloc moved it, and the new block was freed */
	j = parse(&p);
	ASSERT_EQ(get_u64(j, "leaked_objects"), 0);
	ASSERT_EQ(get_u64(json_get(j, "counts"), "reallocs"), 1);
	ASSERT_EQ(get_u64(json_get(j, "counts"), "frees"), 3);
	proc_free(&p);
}

/* -H's thread column, -T's times, and records that are not malloc's. */
TEST(kdump_threads_times_and_other_records)
{
	char dir[256], path[512];
	struct proc p = {0};

	tmp_dir(dir);
	trace(
	    path, dir, "k.txt",
	    "  4711 100123 prog     1224066908.000001 CALL  "
	    "mmap(0,0x1000,0x3,0x1002,0xffffffff,0)\n"
	    "  4711 100123 prog     1224066908.000002 RET   mmap 34365181952/0x800621000\n"
	    "  4711 100123 prog     1224066908.000003 USER  RTLD: loaded   0x800622000 @ 0x0\n"
	    "  4711 100123 prog     1224066908.000004 USER  12 00 00 00 00 00 00 00\n"
	    "       0x0000 7f45 4c46 0201 0100                     |.ELF....|\n"
	    "  4711 100123 prog     1224066908.000005 USER  malloc_init()\n"
	    "  4711 100123 prog     1224066908.000006 USER  0x8101080 = malloc(100)\n"
	    "  4711 100124 prog     1224066908.250000 USER  0x8103300 = malloc(600)\n"
	    "  4711 100123 prog     1224066908.500000 USER  0x0 = malloc(1099511627776)\n"
	    "  4711 100124 prog     1224066909.000000 USER  0x8105000 = realloc(0x8103300, 4096)\n"
	    "  4711 100124 prog     1224066909.100000 USER  0x0 = realloc(0x8101080, 99999999999)\n"
	    "  4711 100124 prog     1224066909.200000 USER  0x8106000 = realloc(0x0, 8)\n"
	    "  4711 100124 prog     1224066909.300000 USER  free(0x8106000)\n");
	import(&p, dir, (const char *[]){"-f", "json", path, NULL});
	ASSERT_EQ(p.status, 1);
	struct json *j = parse(&p);
	const struct json *c = json_get(j, "counts");
	ASSERT_EQ(get_u64(c, "lines"), 13);
	ASSERT_EQ(get_u64(c, "skipped"), 5); /* CALL, RET, RTLD, a USER dump and its line */
	ASSERT_EQ(get_u64(c, "malformed"), 0);
	ASSERT_EQ(get_u64(c, "failed"), 2);
	ASSERT_STREQ(json_leaks(j), "8101080 64\n8105000 1000\n");
	const struct json *l = json_at(json_get(j, "leaks"), 1);
	ASSERT_EQ(get_u64(l, "line"), 10);
	ASSERT_STREQ(json_get(l, "time_s")->text, "1224066909.000000");
	proc_free(&p);
	tmp_dir_remove(dir);
}

TEST(malformed_lines_are_reported_and_skipped)
{
	char dir[256], path[512], *long_line;
	struct proc p = {0};
	size_t n = 70000;

	tmp_dir(dir);
	long_line = malloc(n + 200);
	ASSERT_TRUE(long_line);
	strcpy(long_line, "= Start\n@ ./p:[0x1] + 0x1000 0x10\n+ 0x2000\n- zz\n");
	size_t k = strlen(long_line);
	memset(long_line + k, 'x', n);
	strcpy(long_line + k + n,
	       "\n+ 0x3000 0x20 0x5\n@\n? 0x1\n- 0x1000\n+ 0x4000 0x30\n= End\n");
	trace(path, dir, "m.trace", long_line);
	import(&p, dir, (const char *[]){"-f", "json", path, NULL});
	ASSERT_EQ(p.status, 1);
	struct json *j = parse(&p);
	ASSERT_EQ(get_u64(json_get(j, "counts"), "malformed"), 6);
	ASSERT_EQ(get_u64(json_get(j, "counts"), "lines"), 11);
	ASSERT_STREQ(json_leaks(j), "4000 30\n");
	ASSERT_CONTAINS(p.err, "m.trace:3: malformed line, skipped: an address and a size wanted");
	ASSERT_CONTAINS(p.err, "m.trace:4: malformed line, skipped: the address is not a hex");
	ASSERT_CONTAINS(p.err, "m.trace:5: malformed line, skipped: longer than 64 KiB");
	ASSERT_CONTAINS(p.err, "m.trace:6: malformed line, skipped: more fields");
	ASSERT_CONTAINS(p.err, "m.trace:8: malformed line, skipped: not an mtrace record");
	proc_free(&p);
	free(long_line);
	tmp_dir_remove(dir);
}

TEST(every_warning)
{
	char dir[256], path[512];
	struct proc p = {0};

	tmp_dir(dir);
	trace(path, dir, "w.trace",
	      "= Start\n"
	      "+ 0x1000 0x10\n"         /* 2 */
	      "- 0x1000\n"              /* 3 */
	      "@ ./p:[0x99] - 0x1000\n" /* 4: double free, first freed on 3 */
	      "- 0x5000\n"              /* 5: never allocated */
	      "< 0x6000\n"              /* 6: realloc of an address not allocated */
	      "> 0x7000 0x20\n"         /* 7 */
	      "+ 0x8000 0x8\n"          /* 8 */
	      "+ 0x8000 0x9\n"          /* 9: allocated at a live address (line 8) */
	      "= End\n");
	import(&p, dir, (const char *[]){"--format=json", path, NULL});
	ASSERT_EQ(p.status, 1);
	struct json *j = parse(&p);
	const struct json *c = json_get(j, "warning_counts");
	ASSERT_EQ(get_u64(c, "double_free"), 1);
	ASSERT_EQ(get_u64(c, "free_unknown"), 1);
	ASSERT_EQ(get_u64(c, "realloc_unknown"), 1);
	ASSERT_EQ(get_u64(c, "alloc_live"), 1);
	ASSERT_EQ(get_u64(j, "warnings_total"), 4);
	const struct json *w = json_at(json_get(j, "warnings"), 0);
	ASSERT_STREQ(get_str(w, "kind"), "double_free");
	ASSERT_STREQ(get_str(w, "address"), "0x1000");
	ASSERT_EQ(get_u64(w, "line"), 4);
	ASSERT_EQ(get_u64(w, "first_line"), 3);
	ASSERT_STREQ(get_str(w, "caller"), "./p:[0x99]");
	w = json_at(json_get(j, "warnings"), 3);
	ASSERT_STREQ(get_str(w, "kind"), "alloc_live");
	ASSERT_EQ(get_u64(w, "first_line"), 8);
	/* the new block replaces the old: 9 bytes, line 9 */
	ASSERT_STREQ(json_leaks(j), "7000 20\n8000 9\n");
	proc_free(&p);

	import(&p, dir, (const char *[]){"-v", path, NULL});
	ASSERT_EQ(p.status, 1);
	ASSERT_CONTAINS(p.out, "Warnings: 4 (double_free 1, free_unknown 1, realloc_unknown 1, "
	                       "alloc_live 1)");
	ASSERT_CONTAINS(p.out, "line 4: double_free 0x1000 (first freed on line 3) by ./p:[0x99]");
	ASSERT_CONTAINS(p.err, "line 3: 0x1000 freed, 16 bytes from line 2\n");
	ASSERT_CONTAINS(p.err, "line 4: warning: double free: 0x1000 (line 3)\n");
	ASSERT_TRUE(!strstr(p.err, "allocated, 16 bytes")); /* -vv only */
	proc_free(&p);

	import(&p, dir, (const char *[]){"-vv", path, NULL});
	ASSERT_CONTAINS(p.err, "line 2: 0x1000 allocated, 16 bytes\n");
	ASSERT_CONTAINS(p.err, "line 1: Start\n");
	proc_free(&p);
	tmp_dir_remove(dir);
}

TEST(failed_allocations_and_no_leaks)
{
	char dir[256], path[512];
	struct proc p = {0};

	tmp_dir(dir);
	trace(path, dir, "f.trace",
	      "= Start\n+ (nil) 0x100000000000\n+ 0x1000 0x10\n! 0x1000 0x7fffffffffff\n"
	      "- 0x1000\n- (nil)\n= End\n");
	import(&p, dir, (const char *[]){path, NULL});
	ASSERT_EQ(p.status, 0);
	ASSERT_CONTAINS(p.out, "No memory leaks.");
	ASSERT_CONTAINS(p.out, "2 failed");
	ASSERT_TRUE(!strstr(p.out, "Warnings"));
	proc_free(&p);
	tmp_dir_remove(dir);
}

TEST(detection_stdin_and_errors)
{
	char dir[256], path[512], cmd[1200];
	struct proc p = {0};

	tmp_dir(dir);
	trace(path, dir, "not-a-trace", "hello\nworld\nthis is no trace\n");
	import(&p, dir, (const char *[]){path, NULL});
	ASSERT_EQ(p.status, 2);
	ASSERT_CONTAINS(p.err, "neither an mtrace nor a kdump trace");
	proc_free(&p);

	/* --format says which: then every line is malformed, and nothing leaks */
	import(&p, dir, (const char *[]){"-f", "kdump", path, NULL});
	ASSERT_EQ(p.status, 0);
	ASSERT_CONTAINS(p.out, "3 malformed lines skipped");
	proc_free(&p);

	import(&p, dir, (const char *[]){"/nonexistent/trace", NULL});
	ASSERT_EQ(p.status, 2);
	ASSERT_CONTAINS(p.err, "cannot open '/nonexistent/trace'");
	proc_free(&p);

	import(&p, dir, (const char *[]){"--binary", path, SAMPLES "/mt-pie.trace", NULL});
	ASSERT_EQ(p.status, 2);
	ASSERT_CONTAINS(p.err, "is not a 64-bit ELF file");
	proc_free(&p);

	import(&p, dir, (const char *[]){"-f", "yaml", path, NULL});
	ASSERT_EQ(p.status, 1);
	import(&p, dir, (const char *[]){"--convert", path, NULL});
	ASSERT_EQ(p.status, 1);
	ASSERT_CONTAINS(p.err, "--convert needs -o FILE");
	proc_free(&p);

	/* An empty trace leaks nothing. */
	trace(path, dir, "empty", "");
	import(&p, dir, (const char *[]){path, NULL});
	ASSERT_EQ(p.status, 0);
	proc_free(&p);

	/* Standard input, through a shell. */
	snprintf(cmd, sizeof(cmd), "%s import - < %s/kdump-tu-phkmalloc.RECONSTRUCTED.txt",
	         leek_bin, SAMPLES);
	proc_run(&p, dir, (const char *[]){"/bin/sh", "-c", cmd, NULL}, NULL, 60);
	ASSERT_EQ(p.status, 1);
	ASSERT_CONTAINS(p.out, "-: kdump trace, 4 lines");
	proc_free(&p);
	tmp_dir_remove(dir);
}

/* --convert, read back: the report's live bytes are the leaks', its allocations the trace's. */
TEST(convert_then_report)
{
	char dir[256], out[512];
	struct proc p = {0};

	tmp_dir(dir);
	snprintf(out, sizeof(out), "%s/pie.lk", dir);
	import(&p, dir, (const char *[]){"--convert", "-o", out, SAMPLES "/mt-pie.trace", NULL});
	ASSERT_EQ(p.status, 1);
	ASSERT_CONTAINS(p.err, "-> ");
	proc_free(&p);
	leek_exec(&p, dir, NULL, (const char *[]){"report", "--format", "json", out, NULL}, 60);
	ASSERT_EQ(p.status, 0);
	struct json *j = parse(&p);
	const struct json *t = json_get(j, "totals");
	ASSERT_TRUE(t);
	ASSERT_EQ(get_u64(t, "live_bytes_end"), 398);
	ASSERT_EQ(get_u64(t, "alloc_bytes"), 100 + 200 + 64 + 1000 + 32 + 6 + 128);
	proc_free(&p);
	/* export and diff read it too: one folded stack a leaking caller, with its bytes */
	leek_exec(&p, dir, NULL, (const char *[]){"export", "--format", "folded", out, NULL}, 60);
	ASSERT_EQ(p.status, 0);
	ASSERT_CONTAINS(p.out, " 200\n");
	ASSERT_CONTAINS(p.out, " 128\n");
	proc_free(&p);
	leek_exec(&p, dir, NULL, (const char *[]){"diff", "--format", "json", out, out, NULL}, 60);
	ASSERT_EQ(p.status, 0);
	json_free(parse(&p));
	proc_free(&p);

	snprintf(out, sizeof(out), "%s/k.lk", dir);
	import(&p, dir,
	       (const char *[]){"--convert", "-o", out,
	                        SAMPLES "/kdump-T-tu-phkmalloc.RECONSTRUCTED.txt", NULL});
	ASSERT_EQ(p.status, 0);
	proc_free(&p);
	leek_exec(&p, dir, NULL, (const char *[]){"report", "peak", "--format", "json", out, NULL},
	          60);
	ASSERT_EQ(p.status, 0);
	j = parse(&p);
	ASSERT_EQ(get_u64(json_get(j, "totals"), "peak_bytes"), 4096);
	proc_free(&p);
	leek_exec(&p, dir, NULL, (const char *[]){"dump", out, NULL}, 60);
	ASSERT_EQ(p.status, 0);
	ASSERT_CONTAINS(p.out, "pid=12146");
	proc_free(&p);
	tmp_dir_remove(dir);
}

/* A random trace, generated from a fixed seed, against glibc's own mtrace script. */
TEST(random_trace_against_the_mtrace_script)
{
	char dir[256], path[512], cmd[1200];
	struct proc p = {0};
	uint64_t live[512] = {0}, next = 0x10000, rng = 42;
	FILE *f;

	if (access("/usr/bin/mtrace", X_OK) < 0 || access("/usr/bin/perl", X_OK) < 0)
		SKIP("glibc's mtrace script (libc-devtools) or perl is missing");
	tmp_dir(dir);
	snprintf(path, sizeof(path), "%s/r.trace", dir);
	f = fopen(path, "w");
	ASSERT_TRUE(f);
	fputs("= Start\n", f);
	for (int i = 0; i < 20000; i++) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		unsigned slot = (unsigned)(rng >> 40) % 512, op = (unsigned)(rng >> 20) % 4;
		if (!live[slot]) {
			live[slot] = next += 0x40;
			fprintf(f, "@ ./r:[0x%x] + %#" PRIx64 " %#x\n", slot, live[slot], slot + 1);
		} else if (op == 0) {
			fprintf(f, "@ ./r:[0x9] < %#" PRIx64 "\n", live[slot]);
			live[slot] = next += 0x40;
			fprintf(f, "@ ./r:[0x9] > %#" PRIx64 " %#x\n", live[slot], slot + 7);
		} else {
			fprintf(f, "- %#" PRIx64 "\n", live[slot]);
			live[slot] = 0;
		}
	}
	fputs("= End\n", f);
	fclose(f);
	import(&p, dir, (const char *[]){"-f", "json", path, NULL});
	ASSERT_EQ(p.status, 1);
	char *ours = json_leaks(parse(&p));
	proc_free(&p);
	snprintf(cmd, sizeof(cmd), "/usr/bin/mtrace %s | awk '/^0x/ { print $1, $2 }'", path);
	proc_run(&p, dir, (const char *[]){"/bin/sh", "-c", cmd, NULL}, NULL, 120);
	/* the script prints %#018x %#8x: normalize both to bare hex */
	char *theirs = calloc(1, 1 << 20), *s = p.out;
	unsigned long long a, z;
	size_t n = 0;
	ASSERT_TRUE(theirs);
	while (sscanf(s, "%llx %llx", &a, &z) == 2) {
		n += (size_t)snprintf(theirs + n, (1 << 20) - n, "%llx %llx\n", a, z);
		s = strchr(s, '\n') + 1;
	}
	ASSERT_TRUE(n > 0);
	ASSERT_STREQ(ours, theirs);
	proc_free(&p);
	tmp_dir_remove(dir);
}

/* Lines of either format damaged at random (bytes replaced, cut, repeated) and random bytes:
 * the import never crashes (ASan checks this binary's leek too), and ends with 0 or 1. */
TEST(damaged_traces_never_crash)
{
	static const char *const seeds[] = {
	    "@ ./mt_pie:[0x11da] + 0x55fe324d14a0 0x64\n",
	    "@ /lib/libc.so.6:(__strdup+1a)[0x9e9aa] + 0x55fe324d12a0 0x6\n",
	    "@ ./mt_pie:[0x1210] < 0x55fe324d14a0\n@ ./mt_pie:[0x1210] > 0x55fe324d1630 0x3e8\n",
	    "- 0x55fe324d1630\n! 0x10 0x20\n= Start\n",
	    " 12146 100 a.out    1224066908.225975 USER  0x8101080 = malloc(100)\n",
	    " 12146 a.out    USER  0x8105000 = realloc(0x8101080, 4096)\n",
	    " 12146 a.out    USER  free(0x8103300)\n 12146 a.out    USER  malloc_init()\n",
	};
	char dir[256], path[512];
	uint64_t rng = 7;

	tmp_dir(dir);
	for (int round = 0; round < 24; round++) {
		char *text = calloc(1, 1 << 16);
		size_t n = 0;
		ASSERT_TRUE(text);
		/* one format per file, so that detection has something to find half the time */
		unsigned base = round % 2 ? 4 : 0, span = round % 2 ? 3 : 4;
		while (n < (1 << 16) - 200) {
			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			const char *s = seeds[base + (rng >> 33) % span];
			size_t len = strlen(s);
			memcpy(text + n, s, len);
			for (int k = 0; k < 3; k++) {
				rng = rng * 6364136223846793005ull + 1442695040888963407ull;
				if ((rng >> 60) < 6)
					text[n + (rng >> 20) % len] = (char)(rng >> 8);
			}
			n += len;
		}
		trace(path, dir, "d.trace", text);
		struct proc p = {0};
		import(&p, dir, (const char *[]){path, NULL});
		ASSERT_TRUE(p.status <= 2);
		if (p.status == 2)
			ASSERT_CONTAINS(p.err, "neither an mtrace nor a kdump trace");
		proc_free(&p);
		import(&p, dir,
		       (const char *[]){"-f", round % 2 ? "kdump" : "mtrace", "-f", "json", "-vv",
		                        path, NULL});
		ASSERT_TRUE(p.status == 0 || p.status == 1);
		json_free(parse(&p));
		proc_free(&p);
		free(text);
	}
	tmp_dir_remove(dir);
}

/* A trace of a million allocations, each freed before the next, at addresses that never repeat:
 * memory follows the live set (one block) and the freed addresses remembered (import.h), not
 * the trace's 2 million lines. */
TEST(memory_follows_the_live_set)
{
	char dir[256], path[512];
	struct proc p = {0};
	FILE *f;

	if (!leek_library)
		SKIP("a sanitizer build: its shadow memory is not leek's");
	tmp_dir(dir);
	snprintf(path, sizeof(path), "%s/long.trace", dir);
	f = fopen(path, "w");
	ASSERT_TRUE(f);
	for (unsigned long long i = 0; i < 1000000; i++)
		fprintf(f, "@ ./p:[0x%llx] + %#llx 0x20\n- %#llx\n", i % 100, 0x10000 + i * 0x30,
		        0x10000 + i * 0x30);
	fputs("+ 0x5 0x1\n", f);
	fclose(f);
	import(&p, dir, (const char *[]){"-f", "json", path, NULL});
	ASSERT_EQ(p.status, 1);
	struct json *j = parse(&p);
	ASSERT_EQ(get_u64(j, "leaked_objects"), 1);
	ASSERT_EQ(get_u64(json_get(j, "counts"), "peak_objects"), 1);
	/* the freed map's 12 MiB at most, the binary and libdw: far below the ~64 MiB that a map
	 * of every address would take */
	if (p.max_rss_kb > 40 * 1024)
		FAIL("peak RSS %ld KiB for a live set of one block", p.max_rss_kb);
	proc_free(&p);
	tmp_dir_remove(dir);
}
