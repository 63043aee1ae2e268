/* html.c: `leek export --format html`: the HTML report's page (src/cli/html/html.h), the very page
 * of `leek report --format html`, made reachable from export as every format of issue 30 is.
 *
 * Its writer is a report (report.h): each profile loaded for the session is added to it as
 * `leek report --merge` adds them (one output, one page: a session of one file is one process),
 * with the view that --at names: live at the end (leaks), at the peak (peak) or at a time
 * (inuse --at); the sites' table holds the top LK_HTML_TOP. It takes no stack from
 * lk_export_stacks(): the report symbolizes and keeps the stacks itself. The page is made when the
 * output is written.
 *
 * Never: write anything but lk_html_report()'s page.
 */
#include <errno.h>
#include <stdlib.h>

#include "export-internal.h"
#include "html.h"

static void html_close(void *w)
{
	lk_report_free(w);
}

static int html_open(const struct lk_export_opts *o, void **ret)
{
	const struct lk_report_opts ro = {
		.view = o->at == LK_EXPORT_AT_PEAK   ? LK_VIEW_PEAK
			: o->at == LK_EXPORT_AT_TIME ? LK_VIEW_INUSE
						     : LK_VIEW_LEAKS,
		.at_ns = o->at_ns,
		.top = LK_HTML_TOP,
		.merge = true,
		.series = true, /* the flame graphs of moments */
		.filter = o->filter,
	};
	struct lk_report *r = NULL;
	int k = lk_report_new(&ro, &r);

	if (k < 0)
		return k;
	*ret = r;
	return 0;
}

static int html_process(void *w, const struct lk_export_process *p)
{
	if (p->base)
		return -EINVAL; /* no --base: export.c's table says so */
	return lk_report_add(w, p->sym, p->number, p->path, p->profile, NULL);
}

static int html_write(void *w, FILE *f)
{
	int k = lk_report_finish(w, NULL);

	return k < 0 ? k : lk_html_report(f, w);
}

const struct lk_export_format lk_export_html = {
	.name = "html",
	.suffix = ".html",
	.binary = false,
	.takes_base = false,
	.takes_value = false,
	.no_base = "a diff's page is `leek diff --format html BASE FILE`",
	.open = html_open,
	.process = html_process,
	.stack = NULL,
	.write = html_write,
	.close = html_close,
};
