/* diff-util.c: `leek diff --format json` for the tests (see diff-util.h). */
#include <string.h>

#include "diff-util.h"
#include "harness.h"

#define MAX_ARGS 32

void leek_diff(struct proc *p, const char *dir, const char *const *args)
{
	const char *argv[MAX_ARGS] = { "diff" };
	size_t n = 1;

	for (size_t i = 0; args[i]; i++) {
		if (n + 1 >= MAX_ARGS)
			FAIL("too many arguments for leek diff");
		argv[n++] = args[i];
	}
	argv[n] = NULL;
	leek_exec(p, dir, NULL, argv, 60);
}

struct json *leek_diff_json(struct proc *p, const char *dir, const char *const *args)
{
	const char *argv[MAX_ARGS] = { "--format", "json" };
	struct json *doc = NULL;
	size_t n = 2;
	char err[256];

	for (size_t i = 0; args[i]; i++) {
		if (n + 1 >= MAX_ARGS)
			FAIL("too many arguments for leek diff");
		argv[n++] = args[i];
	}
	argv[n] = NULL;
	leek_diff(p, dir, argv);
	if (p->status != 0)
		FAIL("leek diff --format json exited %d; stderr:\n%s", p->status, p->err);
	if (json_parse(p->out, p->out_len, &doc, err, sizeof(err)) < 0)
		FAIL("leek diff --format json printed invalid JSON: %s (output in %s)", err,
		     p->out_path);
	if (strcmp(get_str(doc, "format"), "leek-diff") != 0 || get_u64(doc, "version") != 1)
		FAIL("not a leek-diff document, version 1 (output in %s)", p->out_path);
	return doc;
}

const struct json *diff_site(const struct json *doc, const char *function)
{
	const struct json *sites = json_get(doc, "sites"), *found = NULL;

	if (!sites || sites->type != JSON_ARRAY)
		FAIL("\"sites\" is missing or not an array");
	for (size_t i = 0; i < sites->len; i++) {
		const struct json *s = json_at(sites, i);
		if (strcmp(get_str(s, "function"), function) != 0)
			continue;
		if (found)
			FAIL("two sites %s", function);
		found = s;
	}
	return found;
}

const struct json *diff_change(const struct json *v, const char *figure)
{
	const struct json *c = json_get(v, figure);

	if (!c || c->type != JSON_OBJECT)
		FAIL("no \"%s\" change object", figure);
	return c;
}
