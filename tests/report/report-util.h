/* report-util.h: running fixtures under `leek run` and reading `leek report --format json`.
 *
 * Every test in test-report.c and test-report-stats.c goes through these, so the JSON schema
 * (docs/json.md) is known in one place: a report document holds sections, a section holds sites,
 * a site holds its estimates and its heaviest stack. Lookups that find nothing, or the wrong
 * type, fail the test with the key they wanted.
 */
#ifndef LEEK_TEST_REPORT_UTIL_H
#define LEEK_TEST_REPORT_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json-get.h"
#include "json.h"
#include "leek.h"

#ifndef FX_DIR
#error "meson passes FX_DIR, where the fixtures are built"
#endif
#define FX(name) FX_DIR "/" name

/* `leek run ARGS...` (args after "run", ending with NULL), in dir, as leek.h runs leek: with
 * LEEK_LIBRARY set to the libleek.so of this build. */
void leek_run(struct proc *p, const char *dir, const char *const *args, unsigned timeout);
void leek_run_start(struct proc *p, const char *dir, const char *const *args, unsigned timeout);

/* `leek report ARGS...`; *p keeps its status and output. */
void leek_report(struct proc *p, const char *dir, const char *const *args);
/* `leek report --format json ARGS...`: fails the test unless it exits 0 with a valid document.
 * Or in two steps, to run several at once: start, proc_wait(), then parse. */
struct json *leek_report_json(struct proc *p, const char *dir, const char *const *args);
void leek_report_json_start(struct proc *p, const char *dir, const char *const *args);
struct json *leek_report_json_parse(const struct proc *p);

/* The one profile that a `leek run -o DIR/x.%p.lk` wrote (a malloc'ed path). */
char *run_profile(const char *dir);

/* Schema access (docs/json.md). */
const struct json *report_section(const struct json *doc);        /* the only section */
const struct json *report_sites(const struct json *doc);          /* its sites, an array */
const struct json *report_totals(const struct json *doc);
const struct json *report_wrappers(const struct json *doc);       /* "wrappers_skipped" */
const struct json *report_tree(const struct json *doc);           /* the tree view's "tree" */
const struct json *site_stack(const struct json *site);           /* frames, innermost first */
const struct json *site_frame(const struct json *site);           /* the site's own frame */
const char *frame_function(const struct json *frame);
const char *frame_file(const struct json *frame);                 /* NULL if unknown */
const char *frame_module(const struct json *frame);
uint64_t frame_line(const struct json *frame);                    /* 0 if unknown */
bool frame_inlined(const struct json *frame);

/* The only site whose own frame is `function`; NULL if none, fails if several. */
const struct json *find_site(const struct json *doc, const char *function);

/* The normalized projection of a report used by the goldens: one line per site whose own
 * function starts with prefix, sorted, then a "totals" line. A malloc'ed string. */
char *report_projection(const struct json *doc, const char *prefix);

/* Compares text with the golden file EXPECTED_DIR/name; on a mismatch writes text to
 * dir/name.actual and fails with both. */
void expect_golden(const char *dir, const char *name, const char *text);

/* s with every occurrence of from replaced by to (malloc'ed). */
char *str_replace_all(const char *s, const char *from, const char *to);
/* The number after "word " in s (e.g. "helper_line 27"), or fails. */
unsigned long long out_value(const char *s, const char *word);

#endif /* LEEK_TEST_REPORT_UTIL_H */
