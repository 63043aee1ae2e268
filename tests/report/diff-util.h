/* diff-util.h: `leek diff --format json` for the tests of `leek diff` (test-diff.c and
 * test-diff-run.c): the document of docs/json.md ("leek diff"), read with a strict reader. Lookups that find
 * nothing, or the wrong type, fail the test with what they wanted.
 */
#ifndef LEEK_TEST_DIFF_UTIL_H
#define LEEK_TEST_DIFF_UTIL_H

#include "json-get.h"
#include "json.h"
#include "leek.h"

/* `leek diff --format json ARGS...` (ending with NULL) in dir: fails the test unless it exits 0
 * with a valid "leek-diff" document of version 1. *p keeps its output. */
struct json *leek_diff_json(struct proc *p, const char *dir, const char *const *args);
/* `leek diff ARGS...`, whatever its status. */
void leek_diff(struct proc *p, const char *dir, const char *const *args);

/* The only site whose function is `function`; NULL if none, fails if several. */
const struct json *diff_site(const struct json *doc, const char *function);
/* A CHANGE object of a site or of the document: "live" or "alloc". */
const struct json *diff_change(const struct json *v, const char *figure);

#endif /* LEEK_TEST_DIFF_UTIL_H */
