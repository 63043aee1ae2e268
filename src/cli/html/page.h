/* page.h: what every HTML page of leek is made of (page.c), for the page writers: the report's
 * (out-html.c) and the diff's (src/cli/diff/diff-html.c). A page is one self-contained file: its
 * head, whose Content-Security-Policy allows exactly the page's own inline scripts by their
 * SHA-256, its style, its skeleton (page/), then its data as one JSON text in
 * <script type="application/json" id="leek-data">, then its scripts (the vendored libraries,
 * page/common.js and the page's own), which read the data and draw the page.
 *
 * Strings from profiles and debug files reach a page in its data only, written by lk_html_str()
 * (lk_json_write_string_in_html: '<', '>', '&', U+2028 and U+2029 as \u escapes, so that no name
 * can end the element or start another); the page's code then puts them into the document as
 * text, never as markup. The data's keys are the page's business, not a contract (docs/json.md
 * is the JSON for scripts); docs/design.md, "The HTML report", says what they hold. Numbers are
 * raw: bytes, objects, seconds; an estimate is [value, lo, hi, samples, too_few].
 *
 * Use: lk_html_begin(f, page); the data's members, each ending with ','; lk_html_end(f, page).
 * The caller checks f for write errors. Never: write a string from a profile outside the data,
 * or NaN or infinity (null instead).
 */
#ifndef LEEK_PAGE_H
#define LEEK_PAGE_H

#include <stdint.h>
#include <stdio.h>

#include "flame.h"
#include "report.h"

enum lk_html_page {
	LK_HTML_REPORT, /* page/report.html and report.js, with uPlot for the chart */
	LK_HTML_DIFF,   /* page/diff.html and diff.js */
};

/* The page up to its data, whose object is open: members follow, each ending with ','. */
void lk_html_begin(FILE *f, enum lk_html_page page);
/* Closes the data (after its "kind" member) and writes the scripts. */
void lk_html_end(FILE *f, enum lk_html_page page);

/* The data's values. */
void lk_html_str(FILE *f, const char *s);  /* NULL: null */
void lk_html_int(FILE *f, double v);       /* to the unit (an estimate is not better) */
void lk_html_real(FILE *f, double v);
void lk_html_est(FILE *f, const struct lk_estimate *e); /* [value, lo, hi, samples, too_few] */
void lk_html_seconds(FILE *f, uint64_t ns);
/* Members "function", "file", "line", "module" of a site's frame, "stacks" and "share": a site
 * of a table (each ending with ','). */
void lk_html_site(FILE *f, const struct lk_sym_frame *frame, size_t stacks, double share);
/* Members: "processes":[PROCESS...] and "totals":{...} of r (each ending with ','). */
void lk_html_processes(FILE *f, const struct lk_report *r);
void lk_html_totals(FILE *f, const struct lk_report *r);
/* Member "flame":{...} of the pruned tree, each node [parent, function, file, module, flags
 * (1 inlined, 2 other), dropped, ...] and then what node() writes for it (its own columns, each
 * after a ','); ending with ','. */
void lk_html_flame(FILE *f, const struct lk_flame *flame,
		   void (*node)(FILE *f, const struct lk_flame_node *x, void *ctx), void *ctx);

#endif /* LEEK_PAGE_H */
