/* report-util.c: `leek run` and `leek report --format json` for the report tests (see
 * report-util.h). The JSON schema is docs/json.md's; this file is the only one that knows where
 * things sit in the document.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "files.h"
#include "harness.h"
#include "report-util.h"

#ifndef EXPECTED_DIR
#error "meson passes EXPECTED_DIR, where the golden files are"
#endif

#define MAX_ARGS 32

/* `leek COMMAND ARGS...` started in dir (leek.h: this build's library, the C locale). */
static void leek_command(struct proc *p, const char *dir, const char *command,
			 const char *const *args, unsigned timeout)
{
	const char *argv[MAX_ARGS] = { command };
	size_t n = 1;

	for (size_t i = 0; args[i]; i++) {
		if (n + 1 >= MAX_ARGS)
			FAIL("too many arguments for leek %s", command);
		argv[n++] = args[i];
	}
	argv[n] = NULL;
	leek_start(p, dir, NULL, argv, timeout);
}

void leek_run_start(struct proc *p, const char *dir, const char *const *args, unsigned timeout)
{
	leek_command(p, dir, "run", args, timeout);
}

void leek_run(struct proc *p, const char *dir, const char *const *args, unsigned timeout)
{
	leek_run_start(p, dir, args, timeout);
	proc_wait(p);
}

void leek_report(struct proc *p, const char *dir, const char *const *args)
{
	leek_command(p, dir, "report", args, 60);
	proc_wait(p);
}

void leek_report_json_start(struct proc *p, const char *dir, const char *const *args)
{
	const char *a[MAX_ARGS] = { "--format", "json" };
	size_t n = 2;

	for (size_t i = 0; args[i]; i++) {
		if (n + 1 >= MAX_ARGS)
			FAIL("too many arguments for leek report");
		a[n++] = args[i];
	}
	a[n] = NULL;
	leek_command(p, dir, "report", a, 60);
}

struct json *leek_report_json_parse(const struct proc *p)
{
	struct json *doc = NULL;
	char err[256];

	if (p->status != 0)
		FAIL("leek report --format json exited %d; stderr:\n%s", p->status, p->err);
	if (json_parse(p->out, p->out_len, &doc, err, sizeof(err)) < 0)
		FAIL("leek report --format json printed invalid JSON: %s (output in %s)", err,
		     p->out_path);
	if (!json_get(doc, "format") || strcmp(get_str(doc, "format"), "leek-report") != 0 ||
	    get_u64(doc, "version") != 1)
		FAIL("not a leek-report document, version 1 (output in %s)", p->out_path);
	return doc;
}

struct json *leek_report_json(struct proc *p, const char *dir, const char *const *args)
{
	leek_report_json_start(p, dir, args);
	proc_wait(p);
	return leek_report_json_parse(p);
}

char *run_profile(const char *dir)
{
	return find_one(dir, "x.", "");
}

/* ---- schema ---- */

const struct json *report_section(const struct json *doc)
{
	/* One file, or --merge: the document is the section. Several files: one section per
	 * process, in "processes". A section has "sites", or in the tree view a "tree". */
	if (json_get(doc, "sites") || json_get(doc, "tree"))
		return doc;
	const struct json *procs = json_get(doc, "processes"), *p = json_at(procs, 0);
	if (!procs || procs->type != JSON_ARRAY || procs->len != 1 ||
	    !(json_get(p, "sites") || json_get(p, "tree")))
		FAIL("the report has no single section with \"sites\" or \"tree\"");
	return p;
}

const struct json *report_tree(const struct json *doc)
{
	const struct json *t = json_get(report_section(doc), "tree");

	if (!t || t->type != JSON_OBJECT || !json_get(t, "root"))
		FAIL("\"tree\" is not an object with a \"root\"");
	return t;
}

const struct json *report_wrappers(const struct json *doc)
{
	const struct json *w = json_get(report_section(doc), "wrappers_skipped");

	if (!w || w->type != JSON_ARRAY)
		FAIL("\"wrappers_skipped\" is not an array");
	return w;
}

const struct json *report_sites(const struct json *doc)
{
	const struct json *s = json_get(report_section(doc), "sites");

	if (!s || s->type != JSON_ARRAY)
		FAIL("\"sites\" is not an array");
	return s;
}

const struct json *report_totals(const struct json *doc)
{
	const struct json *t = json_get(report_section(doc), "totals");

	if (!t || t->type != JSON_OBJECT)
		FAIL("the section has no \"totals\" object");
	return t;
}

const struct json *site_stack(const struct json *site)
{
	const struct json *s = json_get(site, "stack");

	if (!s || s->type != JSON_ARRAY || s->len == 0)
		FAIL("site %s has no \"stack\" frames", json_str(json_get(site, "function")));
	return s;
}

const struct json *site_frame(const struct json *site)
{
	const struct json *stack = site_stack(site), *found = NULL;

	for (size_t i = 0; i < stack->len; i++)
		if (json_get(json_at(stack, i), "site")) {
			if (found || json_get(json_at(stack, i), "site")->type != JSON_TRUE)
				FAIL("site %s: \"site\" must be true, on one frame only",
				     get_str(site, "function"));
			found = json_at(stack, i);
		}
	if (!found)
		FAIL("site %s: no frame of its stack has \"site\": true", get_str(site, "function"));
	return found;
}

const char *frame_function(const struct json *frame)
{
	return get_str(frame, "function");
}

/* A string, or null. */
static const char *get_str_or_null(const struct json *v, const char *key)
{
	const struct json *m = json_get(v, key);

	if (!m || (m->type != JSON_STRING && m->type != JSON_NULL))
		FAIL("\"%s\" is missing, or neither a string nor null", key);
	return json_str(m);
}

const char *frame_file(const struct json *frame)
{
	return get_str_or_null(frame, "file");
}

const char *frame_module(const struct json *frame)
{
	return get_str_or_null(frame, "module");
}

uint64_t frame_line(const struct json *frame)
{
	const struct json *m = json_get(frame, "line");
	uint64_t v;

	if (m && m->type == JSON_NULL)
		return 0;
	if (!json_u64(m, &v))
		FAIL("\"line\" is missing, or neither an integer nor null");
	return v;
}

bool frame_inlined(const struct json *frame)
{
	const struct json *m = json_get(frame, "inlined");

	if (!m || (m->type != JSON_TRUE && m->type != JSON_FALSE))
		FAIL("\"inlined\" is missing or not a boolean");
	return m->type == JSON_TRUE;
}

const struct json *find_site(const struct json *doc, const char *function)
{
	const struct json *sites = report_sites(doc), *found = NULL;

	for (size_t i = 0; i < sites->len; i++) {
		const struct json *s = json_at(sites, i);
		if (strcmp(get_str(s, "function"), function) != 0)
			continue;
		if (found)
			FAIL("two sites in %s (lines %llu and %llu)", function,
			     (unsigned long long)frame_line(found), (unsigned long long)frame_line(s));
		found = s;
	}
	return found;
}

/* ---- goldens ---- */

static const char *basename_of(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path ? path : "?";
}

struct buf {
	char *s;
	size_t len, cap;
};

static void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	char *line;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&line, fmt, ap);
	va_end(ap);
	if (n < 0)
		FAIL("out of memory");
	if (b->len + (size_t)n + 1 > b->cap) {
		b->cap = (b->len + (size_t)n + 1) * 2;
		b->s = realloc(b->s, b->cap);
		if (!b->s)
			FAIL("out of memory");
	}
	memcpy(b->s + b->len, line, (size_t)n + 1);
	b->len += (size_t)n;
	free(line);
}

/* "[lo, hi]" of an estimate, as exact integers. */
static void ci_text(const struct json *v, const char *key, char *out, size_t size)
{
	char k[64];
	const struct json *a;
	uint64_t lo, hi;

	snprintf(k, sizeof(k), "%s_ci95", key);
	a = json_get(v, k);
	if (!a || a->type != JSON_ARRAY || a->len != 2 || !json_u64(json_at(a, 0), &lo) ||
	    !json_u64(json_at(a, 1), &hi))
		FAIL("\"%s\" is not [lo, hi] of integers", k);
	snprintf(out, size, "[%llu,%llu]", (unsigned long long)lo, (unsigned long long)hi);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char *report_projection(const struct json *doc, const char *prefix)
{
	const struct json *sites = report_sites(doc), *t = report_totals(doc);
	struct buf out = { 0 };
	char **lines = calloc(sites->len + 1, sizeof(*lines));
	size_t n = 0;

	if (!lines)
		FAIL("out of memory");
	for (size_t i = 0; i < sites->len; i++) {
		const struct json *s = json_at(sites, i), *f = site_frame(s);
		struct buf line = { 0 };
		char live_ci[64], alloc_ci[64];
		if (strncmp(get_str(s, "function"), prefix, strlen(prefix)) != 0)
			continue;
		/* The site's own fields and its frame in the stack must agree. */
		if (strcmp(frame_function(f), get_str(s, "function")) != 0 ||
		    frame_line(f) != frame_line(s))
			FAIL("site %s: its fields and its \"site\" frame disagree", frame_function(f));
		ci_text(s, "live_bytes", live_ci, sizeof(live_ci));
		ci_text(s, "alloc_bytes", alloc_ci, sizeof(alloc_ci));
		buf_printf(&line,
			   "site %s %s:%llu [%s] live_bytes=%llu %s live_objects=%llu "
			   "live_samples=%llu alloc_bytes=%llu %s alloc_objects=%llu "
			   "alloc_samples=%llu peak_bytes=%llu peak_objects=%llu\n",
			   get_str(s, "function"), basename_of(frame_file(s)),
			   (unsigned long long)frame_line(s), basename_of(frame_module(s)),
			   (unsigned long long)get_u64(s, "live_bytes"), live_ci,
			   (unsigned long long)get_u64(s, "live_objects"),
			   (unsigned long long)get_u64(s, "live_samples"),
			   (unsigned long long)get_u64(s, "alloc_bytes"), alloc_ci,
			   (unsigned long long)get_u64(s, "alloc_objects"),
			   (unsigned long long)get_u64(s, "alloc_samples"),
			   (unsigned long long)get_u64(s, "peak_bytes"),
			   (unsigned long long)get_u64(s, "peak_objects"));
		lines[n++] = line.s;
	}
	qsort(lines, n, sizeof(*lines), cmp_str);
	for (size_t i = 0; i < n; i++) {
		buf_printf(&out, "%s", lines[i]);
		free(lines[i]);
	}
	free(lines);
	const struct json *trailer = json_get(t, "trailer");
	buf_printf(&out,
		   "totals alloc_bytes=%llu alloc_objects=%llu live_bytes_end=%llu "
		   "live_objects_end=%llu peak_bytes=%llu samples=%llu frees=%llu period=%llu "
		   "trailer=%s\n",
		   (unsigned long long)get_u64(t, "alloc_bytes"),
		   (unsigned long long)get_u64(t, "alloc_objects"),
		   (unsigned long long)get_u64(t, "live_bytes_end"),
		   (unsigned long long)get_u64(t, "live_objects_end"),
		   (unsigned long long)get_u64(t, "peak_bytes"),
		   (unsigned long long)get_u64(t, "samples"), (unsigned long long)get_u64(t, "frees"),
		   (unsigned long long)get_u64(t, "period"),
		   trailer && trailer->type == JSON_TRUE ? "true" : "false");
	return out.s;
}

void expect_golden(const char *dir, const char *name, const char *text)
{
	char path[512], actual[512];
	char *want;

	snprintf(path, sizeof(path), "%s/%s", EXPECTED_DIR, name);
	want = read_file(path, NULL);
	if (strcmp(want, text) != 0) {
		snprintf(actual, sizeof(actual), "%s/%s.actual", dir, name);
		write_file(actual, text, strlen(text));
		FAIL("the report differs from %s (diff -u %s %s)\n--- expected\n%s--- actual\n%s",
		     path, path, actual, want, text);
	}
	free(want);
}

char *str_replace_all(const char *s, const char *from, const char *to)
{
	struct buf out = { 0 };
	size_t n = strlen(from);
	const char *hit;

	buf_printf(&out, "%s", "");
	while (n && (hit = strstr(s, from))) {
		buf_printf(&out, "%.*s%s", (int)(hit - s), s, to);
		s = hit + n;
	}
	buf_printf(&out, "%s", s);
	return out.s;
}

unsigned long long out_value(const char *s, const char *word)
{
	size_t n = strlen(word);

	for (const char *line = s; line && *line; line = strchr(line, '\n'), line += !!line) {
		char *end;
		if (strncmp(line, word, n) != 0 || line[n] != ' ')
			continue;
		unsigned long long v = strtoull(line + n + 1, &end, 10);
		if (end != line + n + 1)
			return v;
	}
	FAIL("no \"%s N\" line in:\n%s", word, s);
}
