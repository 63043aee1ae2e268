/* html.h: the HTML report, one self-contained page (out-html.c): the report's summary, a chart of
 * the heap and RSS over time, flame graphs (flame.h) and the sites' and growth tables, with the
 * page's code and its libraries (third_party/) inline, so it works offline and fetches nothing.
 *
 * `leek report --format html` and `leek export --format html` write it.
 */
#ifndef LEEK_HTML_H
#define LEEK_HTML_H

#include <stdio.h>

#include "flame.h"
#include "report.h"

#define LK_HTML_TOP 200 /* sites in the page's table unless --top: a sortable table stays quick */

/* Writes the page of r (finished: lk_report_finish; with opts.series for the flame graphs of
 * moments) to f, its flame graphs made of r's stacks. 0, or -ENOMEM or -E2BIG (the budget) with
 * nothing written. The caller checks f for write errors (ferror, fflush). */
int lk_html_report(FILE *f, const struct lk_report *r);

#endif /* LEEK_HTML_H */
