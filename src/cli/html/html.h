/* html.h: the HTML report, one self-contained page (out-html.c): the report's summary, a chart of
 * the heap and RSS over time, flame graphs (flame.h) and the sites' and growth tables, with the
 * page's code and its libraries (third_party/) inline, so it works offline and fetches nothing.
 *
 * `leek report --format html` calls it today; `leek export --format html` is meant to. The
 * report (report.h) must be finished (lk_report_finish) and the flame tree pruned
 * (lk_flame_finish), both over the same stacks: the flame tree fed by the report's hook.
 */
#ifndef LEEK_HTML_H
#define LEEK_HTML_H

#include <stdio.h>

#include "flame.h"
#include "report.h"

#define LK_HTML_TOP 200 /* sites in the page's table unless --top: a sortable table stays quick */

/* Writes the page to f. The caller checks f for write errors (ferror, fflush). */
void lk_html_write(FILE *f, const struct lk_report *r, const struct lk_flame *flame,
		   const struct lk_flame_opts *fo);

#endif /* LEEK_HTML_H */
