/* test-import-run.c: `leek import` of a real trace: mtrace-prog, a PIE and a non-PIE build, runs
 * under glibc's libc_malloc_debug.so.0 and prints the blocks it leaked; leek must find exactly
 * those in the trace, and with --binary name the function that allocated each one, directly and
 * through --convert and `leek report`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "files.h"
#include "harness.h"
#include "json-get.h"
#include "json.h"
#include "leek.h"

static struct json *parse(const struct proc *p)
{
	struct json *j;
	char err[200];

	if (json_parse(p->out, p->out_len, &j, err, sizeof(err)) < 0)
		FAIL("not JSON: %s\n%s", err, p->out);
	return j;
}

/* Runs prog under libc_malloc_debug into dir/t.trace; its "LEAK" lines in *leaks. */
static void run_traced(const char *dir, const char *prog, char *trace, char **leaks)
{
	char env_trace[600], env_preload[600];
	struct proc p = {0};

	if (access(MALLOC_DEBUG, R_OK) < 0)
		SKIP("%s is missing (glibc before 2.34?)", MALLOC_DEBUG);
	snprintf(trace, 512, "%s/t.trace", dir);
	snprintf(env_trace, sizeof(env_trace), "MALLOC_TRACE=%s", trace);
	snprintf(env_preload, sizeof(env_preload), "LD_PRELOAD=%s", MALLOC_DEBUG);
	proc_run(&p, dir, (const char *[]){prog, NULL},
	         (const char *[]){env_trace, env_preload, NULL}, 60);
	ASSERT_EQ(p.status, 0);
	ASSERT_TRUE(strstr(p.out, "LEAK "));
	*leaks = strdup(p.out);
	proc_free(&p);
}

/* Every "LEAK ADDR SIZE FUNCTION" line must be a leak of the JSON, with that function if
 * symbolized, and the JSON must have no other. */
static void compare(const struct json *j, const char *leaks, bool symbolized)
{
	const struct json *list = json_get(j, "leaks");
	size_t n = 0;

	for (const char *s = leaks; (s = strstr(s, "LEAK ")); s++) {
		unsigned long long addr, size;
		char fn[64];
		bool found = false;
		ASSERT_EQ(sscanf(s, "LEAK %llx %llu %63s", &addr, &size, fn), 3);
		for (size_t i = 0; i < list->len && !found; i++) {
			const struct json *l = json_at(list, i);
			if (strtoull(get_str(l, "address"), NULL, 16) != addr)
				continue;
			found = true;
			ASSERT_EQ(get_u64(l, "size"), size);
			if (symbolized) {
				ASSERT_STREQ(get_str(l, "function"), fn);
				ASSERT_CONTAINS(get_str(l, "file"), "mtrace-prog.c");
			} else {
				ASSERT_TRUE(json_get(l, "function")->type == JSON_NULL);
			}
		}
		if (!found)
			FAIL("leak %#llx of %llu bytes (%s) not found", addr, size, fn);
		n++;
	}
	ASSERT_EQ(list->len, n);
	ASSERT_EQ(get_u64(j, "warnings_total"), 0);
}

static void check(const char *prog)
{
	char dir[256], trace[512], out[600], *leaks;
	struct proc p = {0};

	tmp_dir(dir);
	run_traced(dir, prog, trace, &leaks);

	leek_exec(&p, dir, NULL, (const char *[]){"import", "-f", "json", trace, NULL}, 60);
	ASSERT_EQ(p.status, 1);
	compare(parse(&p), leaks, false);
	proc_free(&p);

	leek_exec(&p, dir, NULL,
	          (const char *[]){"import", "-f", "json", "--binary", prog, trace, NULL}, 60);
	ASSERT_EQ(p.status, 1);
	compare(parse(&p), leaks, true);
	proc_free(&p);

	/* --convert, then `leek report`: the same functions are the sites. */
	snprintf(out, sizeof(out), "%s/t.lk", dir);
	leek_exec(&p, dir, NULL,
	          (const char *[]){"import", "--convert", "-o", out, "--binary", prog, trace, NULL},
	          60);
	ASSERT_EQ(p.status, 1);
	proc_free(&p);
	leek_exec(&p, dir, NULL, (const char *[]){"report", out, NULL}, 60);
	ASSERT_EQ(p.status, 0);
	if (strstr(leaks, "leak_small"))
		ASSERT_CONTAINS(p.out, "leak_small (mtrace-prog.c:");
	if (strstr(leaks, "grow"))
		ASSERT_CONTAINS(p.out, "grow (mtrace-prog.c:");
	proc_free(&p);
	free(leaks);
	tmp_dir_remove(dir);
}

TEST(pie)
{
	check(PROG_PIE);
}

TEST(non_pie)
{
	check(PROG_NOPIE);
}
