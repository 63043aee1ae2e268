/* out-html.c: the HTML report (html.h), a page (page.h) whose data is the report's summary, view,
 * timeline, sites, and its flame graph: the report's stacks as a call tree, each node with five
 * figures (flame.h), which page/report.js draws.
 *
 * Never: write a string from a profile but through page.h, or NaN or infinity (null instead).
 */
#include <inttypes.h>

#include "html.h"
#include "page.h"
#include "util.h"

static void put_view(FILE *f, const struct lk_report *r)
{
	const struct lk_report_opts *o = &r->opts;

	fputs("\"view\":", f);
	lk_html_str(f, lk_view_name(o->view));
	fputs(",\"at_s\":", f);
	if (o->view == LK_VIEW_INUSE)
		lk_html_seconds(f, o->at_ns);
	else
		fputs("null", f);
	fputs(",\"age_s\":", f);
	if (o->view == LK_VIEW_OLD)
		lk_html_seconds(f, o->age_ns);
	else
		fputs("null", f);
	fputs(",\"view_total\":", f);
	lk_html_est(f, &r->view_bytes);
	fprintf(f, ",\"sites_total\":%zu,\"stacks_filtered\":%zu,\"merged\":%s,", r->sites_total,
		r->stacks_filtered, r->nprocs > 1 ? "true" : "false");
}

static void put_timeline(FILE *f, const struct lk_report *r)
{
	static const char *const keys[] = { "t", "heap", "heap_max", "rss" };

	fputs("\"timeline\":{", f);
	for (unsigned k = 0; k < 4; k++) {
		fprintf(f, "%s\"%s\":[", k ? "," : "", keys[k]);
		for (size_t i = 0; i < r->ntimeline; i++) {
			const struct lk_timeline_point *p = &r->timeline[i];
			if (i)
				fputc(',', f);
			if (k == 0)
				lk_html_seconds(f, p->t_ns);
			else
				lk_html_int(f, k == 1   ? p->heap_bytes
					       : k == 2 ? p->heap_max
							: (double)p->rss_bytes);
		}
		fputc(']', f);
	}
	fputs("},", f);
}

static void put_sites(FILE *f, const struct lk_report *r)
{
	fputs("\"sites\":[", f);
	for (size_t i = 0; i < r->nsites; i++) {
		const struct lk_report_site *s = &r->sites[i];
		fputs(i ? ",{" : "{", f);
		lk_html_site(f, s->stack[s->site_frame], s->nstacks, s->share);
		fputs("\"live\":", f);
		lk_html_est(f, &s->live_bytes);
		fputs(",\"peak\":", f);
		lk_html_est(f, &s->peak_bytes);
		fputs(",\"alloc\":", f);
		lk_html_est(f, &s->alloc_bytes);
		fputs(",\"old\":", f);
		lk_html_est(f, &s->old_bytes);
		fputs(",\"live_objects\":", f);
		lk_html_int(f, s->live_objects.value);
		fputs(",\"alloc_objects\":", f);
		lk_html_int(f, s->alloc_objects.value);
		fputs(",\"trend\":", f);
		lk_html_str(f, lk_trend_name(s->growth.trend));
		fputs(",\"confidence\":", f);
		lk_html_real(f, s->growth.confidence);
		fputs(",\"slope\":", f);
		lk_html_real(f, s->growth.slope_bytes_s);
		fputc('}', f);
	}
	fputs("],", f);
}

/* What the report's flame graph sums (tree.h): five figures of every stack, ... */
enum { LIVE, PEAK, ALLOC, LIVE_OBJECTS, ALLOC_OBJECTS, NFIGURES };

static void report_figures(void *ctx, size_t report, const struct lk_report_stack *st,
			   const struct lk_estimate **e)
{
	(void)ctx;
	(void)report;
	e[LIVE] = &st->live_bytes;
	e[PEAK] = &st->peak_bytes;
	e[ALLOC] = &st->alloc_bytes;
	e[LIVE_OBJECTS] = &st->live_objects;
	e[ALLOC_OBJECTS] = &st->alloc_objects;
}

/* ... and pruning keeps what is large in live, peak or allocated bytes. */
static const struct lk_flame_width report_widths[] = { { LIVE, -1 }, { PEAK, -1 }, { ALLOC, -1 } };

/* A node's own columns: live, peak, alloc (estimates), live objects, alloc objects. */
static void put_node(FILE *f, const struct lk_flame_node *x, void *ctx)
{
	(void)ctx;
	for (unsigned k = LIVE; k <= ALLOC; k++) {
		fputc(',', f);
		lk_html_est(f, &x->figure[k]);
	}
	fputc(',', f);
	lk_html_int(f, x->figure[LIVE_OBJECTS].value);
	fputc(',', f);
	lk_html_int(f, x->figure[ALLOC_OBJECTS].value);
}

int lk_html_report(FILE *f, const struct lk_report *r)
{
	const struct lk_flame_opts fo = {
		.figures = report_figures,
		.nfigures = NFIGURES,
		.widths = report_widths,
		.nwidths = sizeof(report_widths) / sizeof(report_widths[0]),
		/* Merged processes have no common moments. */
		.buckets = r->nprocs == 1 && r->opts.series ? (unsigned)r->ntimeline : 0,
		.min_share = LK_FLAME_MIN_SHARE,
		.max_nodes = LK_FLAME_MAX_NODES,
	};
	_cleanup_(lk_flame_freep) struct lk_flame *flame = NULL;
	int k = lk_flame_build((const struct lk_report *const[]){ r }, 1, &fo, &flame);

	if (k < 0)
		return k;
	lk_html_begin(f, LK_HTML_REPORT);
	lk_html_processes(f, r);
	lk_html_totals(f, r);
	put_view(f, r);
	put_timeline(f, r);
	put_sites(f, r);
	lk_html_flame(f, flame, put_node, NULL);
	lk_html_end(f, LK_HTML_REPORT);
	return 0;
}
