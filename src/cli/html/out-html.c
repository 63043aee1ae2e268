/* out-html.c: the HTML report (html.h): the page's skeleton, styles and scripts from assets.h,
 * and between them the report's data as one JSON text in <script type="application/json">,
 * which page/page.js reads and draws.
 *
 * Strings from profiles and debug files reach the page in that JSON text only, written by
 * lk_json_write_string_in_html(): '<', '>', '&', U+2028 and U+2029 as \u escapes, so that no
 * name can end the element or start another; the page's code then puts them into the document
 * as text (textContent, d3's .text() and .attr()), never as markup. Everything else in the page is
 * leek's own. The page's Content-Security-Policy allows its own inline scripts by their SHA-256
 * and nothing else (no network, no script a name might smuggle in), as a second wall.
 *
 * The data's keys are the page's business, not a contract (docs/json.md is the JSON for
 * scripts); docs/design.md, "The HTML report", says what they hold. Numbers are raw: bytes,
 * objects, seconds; an estimate is [value, lo, hi, samples, too_few].
 *
 * Never: write a string from a profile outside the JSON text, or NaN or infinity (null instead).
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "assets.h"
#include "html.h"
#include "util.h"

static void put_asset(FILE *f, const unsigned char *a, size_t len)
{
	fwrite(a, 1, len, f);
}

static void put_str(FILE *f, const char *s)
{
	if (s)
		lk_json_write_string_in_html(f, s, strlen(s));
	else
		fputs("null", f);
}

/* A count or byte figure: to the unit (an estimate is not better than that). */
static void put_int(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, "%.0f", v == 0 ? 0 : v); /* no "-0" */
	else
		fputs("null", f);
}

static void put_real(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, "%.6g", v);
	else
		fputs("null", f);
}

static void put_est(FILE *f, const struct lk_estimate *e)
{
	fputc('[', f);
	put_int(f, e->value);
	fputc(',', f);
	put_int(f, e->lo);
	fputc(',', f);
	put_int(f, e->hi);
	fprintf(f, ",%" PRIu64 ",%d]", e->samples, e->too_few ? 1 : 0);
}

static void put_seconds(FILE *f, uint64_t ns)
{
	put_real(f, (double)ns / 1e9);
}

static void put_processes(FILE *f, const struct lk_report *r)
{
	fputs("\"processes\":[", f);
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct lk_report_process *q = &r->procs[i];
		fputs(i ? ",{\"path\":" : "{\"path\":", f);
		put_str(f, q->path);
		fputs(",\"exe\":", f);
		lk_json_write_string_in_html(f, q->exe, q->exe_len);
		fprintf(f, ",\"pid\":%" PRIu32 ",\"ppid\":%" PRIu32 ",\"forked\":%s,\"continued\":%s,"
			   "\"cmdline_cut\":%s,\"cmdline\":[",
			q->pid, q->ppid, q->flags & LK_HDR_FORKED ? "true" : "false",
			q->flags & LK_HDR_CONTINUED ? "true" : "false",
			q->flags & LK_HDR_CMDLINE_CUT ? "true" : "false");
		for (size_t at = 0; at < q->cmdline_len;) {
			const char *arg = q->cmdline + at, *nul = memchr(arg, 0, q->cmdline_len - at);
			size_t n = nul ? (size_t)(nul - arg) : q->cmdline_len - at;
			if (at)
				fputc(',', f);
			lk_json_write_string_in_html(f, arg, n);
			at += n + 1;
		}
		fputs("]}", f);
	}
	fputs("],", f);
}

static void put_totals(FILE *f, const struct lk_report *r)
{
	const struct lk_profile_totals *t = &r->totals;
	bool first = true;

	fputs("\"totals\":{\"duration_s\":", f);
	put_seconds(f, t->duration_ns);
	fprintf(f, ",\"period\":%" PRIu64 ",\"periods_differ\":%s,\"samples\":%" PRIu64
		   ",\"frees\":%" PRIu64 ",\"frees_unknown\":%" PRIu64 ",\"trailer\":%s,"
		   "\"max_rss\":%" PRIu64 ",\"alloc_bytes\":",
		t->period, r->periods_differ ? "true" : "false", t->samples, t->frees,
		t->frees_unknown, t->trailer ? "true" : "false", t->max_rss);
	put_est(f, &t->alloc_bytes);
	fputs(",\"alloc_objects\":", f);
	put_int(f, t->alloc_objects.value);
	fputs(",\"peak_bytes\":", f);
	put_est(f, &t->peak_bytes);
	fputs(",\"peak_s\":", f);
	if (t->peak_ns != UINT64_MAX && t->peak_bytes.samples)
		put_seconds(f, t->peak_ns);
	else
		fputs("null", f);
	fputs(",\"live_bytes\":", f);
	put_est(f, &t->live_bytes_end);
	fputs(",\"live_objects\":", f);
	put_int(f, t->live_objects_end.value);
	fputs(",\"losses\":[", f);
	for (unsigned i = 1; i <= LK_CNT_MAX; i++) {
		const char *name = lk_counter_name(i);
		if (!t->losses[i] || i == LK_CNT_SAMPLES || i == LK_CNT_FREES)
			continue;
		fputs(first ? "[" : ",[", f);
		put_str(f, name ? name : "?");
		fprintf(f, ",%" PRIu64 "]", t->losses[i]);
		first = false;
	}
	fputs("]},", f);
}

static void put_view(FILE *f, const struct lk_report *r)
{
	const struct lk_report_opts *o = &r->opts;

	fputs("\"view\":", f);
	put_str(f, lk_view_name(o->view));
	fputs(",\"at_s\":", f);
	if (o->view == LK_VIEW_INUSE)
		put_seconds(f, o->at_ns);
	else
		fputs("null", f);
	fputs(",\"age_s\":", f);
	if (o->view == LK_VIEW_OLD)
		put_seconds(f, o->age_ns);
	else
		fputs("null", f);
	fputs(",\"view_total\":", f);
	put_est(f, &r->view_bytes);
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
				put_seconds(f, p->t_ns);
			else
				put_int(f, k == 1 ? p->heap_bytes : k == 2 ? p->heap_max
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
		const struct lk_sym_frame *fr = s->stack[s->site_frame];
		fputs(i ? ",{\"function\":" : "{\"function\":", f);
		put_str(f, fr->function);
		fputs(",\"file\":", f);
		put_str(f, fr->file);
		fprintf(f, ",\"line\":%" PRIu32 ",\"module\":", fr->line);
		put_str(f, fr->module);
		fprintf(f, ",\"stacks\":%zu,\"share\":", s->nstacks);
		put_real(f, s->share);
		fputs(",\"live\":", f);
		put_est(f, &s->live_bytes);
		fputs(",\"peak\":", f);
		put_est(f, &s->peak_bytes);
		fputs(",\"alloc\":", f);
		put_est(f, &s->alloc_bytes);
		fputs(",\"old\":", f);
		put_est(f, &s->old_bytes);
		fputs(",\"live_objects\":", f);
		put_int(f, s->live_objects.value);
		fputs(",\"alloc_objects\":", f);
		put_int(f, s->alloc_objects.value);
		fputs(",\"trend\":", f);
		put_str(f, lk_trend_name(s->growth.trend));
		fputs(",\"confidence\":", f);
		put_real(f, s->growth.confidence);
		fputs(",\"slope\":", f);
		put_real(f, s->growth.slope_bytes_s);
		fputc('}', f);
	}
	fputs("],", f);
}

/* The flame tree's strings, each written once: an index per distinct string. Bounded by the
 * pruned nodes (three strings each), so not from the budget. */
struct strings {
	const char **s;
	size_t n, nslots;
	size_t *slots; /* index + 1 */
};

static uint64_t str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

/* The index of s, added if new; -1 for NULL or out of memory (then shown as unknown). */
static long string_index(struct strings *t, const char *s)
{
	size_t h;

	if (!s || !t->slots)
		return -1;
	h = str_hash(s) & (t->nslots - 1);
	for (; t->slots[h]; h = (h + 1) & (t->nslots - 1))
		if (strcmp(t->s[t->slots[h] - 1], s) == 0)
			return (long)t->slots[h] - 1;
	t->s[t->n] = s;
	t->slots[h] = ++t->n;
	return (long)t->n - 1;
}

/* What the report's flame graph sums (tree.h): these five figures of every stack, ... */
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

static void put_flame(FILE *f, const struct lk_flame *flame)
{
	const struct lk_flame_opts *fo = lk_flame_opts(flame);
	const struct lk_flame_node *nodes;
	size_t n = lk_flame_nodes(flame, &nodes), nslots = 16;
	unsigned nb = fo->buckets;
	struct strings t = { 0 };
	long (*idx)[3];
	bool first = true;

	while (nslots < 6 * n)
		nslots *= 2;
	t.s = calloc(3 * n + 1, sizeof(*t.s));
	t.slots = calloc(nslots, sizeof(*t.slots));
	idx = calloc(n + 1, sizeof(*idx));
	t.nslots = nslots;
	if (!t.s || !idx) {
		free(t.slots);
		t.slots = NULL;
	}
	for (size_t i = 0; i < n && idx; i++) {
		const struct lk_sym_frame *fr = nodes[i].frame;
		idx[i][0] = string_index(&t, fr ? fr->function : NULL);
		idx[i][1] = string_index(&t, fr ? fr->file : NULL);
		idx[i][2] = string_index(&t, fr ? fr->module : NULL);
	}
	fprintf(f, "\"flame\":{\"buckets\":%u,\"stacks\":%zu,\"nodes_before\":%zu,\"max_nodes\":%zu,"
		   "\"min_share\":",
		nb, lk_flame_stacks(flame), lk_flame_nodes_before(flame), fo->max_nodes);
	put_real(f, fo->min_share);
	fputs(",\"strings\":[", f);
	for (size_t i = 0; i < t.n; i++) {
		if (i)
			fputc(',', f);
		put_str(f, t.s[i]);
	}
	/* [parent, function, file, module, flags (1 inlined, 2 other), dropped, live, peak, alloc,
	 * live objects, alloc objects] */
	fputs("],\"nodes\":[", f);
	for (size_t i = 0; i < n; i++) {
		const struct lk_flame_node *x = &nodes[i];
		fprintf(f, "%s[%ld,%ld,%ld,%ld,%d,%zu,", i ? ",\n" : "",
			x->parent == SIZE_MAX ? -1L : (long)x->parent, idx ? idx[i][0] : -1,
			idx ? idx[i][1] : -1, idx ? idx[i][2] : -1,
			(x->frame && x->frame->inlined ? 1 : 0) | (x->other ? 2 : 0), x->dropped);
		put_est(f, &x->figure[LIVE]);
		fputc(',', f);
		put_est(f, &x->figure[PEAK]);
		fputc(',', f);
		put_est(f, &x->figure[ALLOC]);
		fputc(',', f);
		put_int(f, x->figure[LIVE_OBJECTS].value);
		fputc(',', f);
		put_int(f, x->figure[ALLOC_OBJECTS].value);
		fputc(']', f);
	}
	/* [node, live bytes at the end of bucket 0, 1, ...] for the nodes with any */
	fputs("],\"series\":[", f);
	for (size_t i = 0; i < n && nb; i++) {
		if (!nodes[i].series)
			continue;
		fprintf(f, "%s[%zu", first ? "" : ",\n", i);
		for (unsigned b = 0; b < nb; b++) {
			fputc(',', f);
			put_int(f, nodes[i].series[b]);
		}
		fputc(']', f);
		first = false;
	}
	fputs("]}", f);
	free(idx);
	free(t.s);
	free(t.slots);
}

static void put_data(FILE *f, const struct lk_report *r, const struct lk_flame *flame)
{
	fputs("<script type=\"application/json\" id=\"leek-data\">{", f);
	put_processes(f, r);
	put_totals(f, r);
	put_view(f, r);
	put_timeline(f, r);
	put_sites(f, r);
	put_flame(f, flame);
	fputs("}</script>\n", f);
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
	fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
		   "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
		   "script-src 'sha256-%s' 'sha256-%s' 'sha256-%s' 'sha256-%s'; "
		   "style-src 'unsafe-inline'; img-src data:\">\n"
		   "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
		   "<title>leek report</title>\n<style>",
		lk_asset_d3_js_sha256, lk_asset_flame_js_sha256, lk_asset_uplot_js_sha256,
		lk_asset_page_js_sha256);
	put_asset(f, lk_asset_uplot_css, lk_asset_uplot_css_len);
	fputs("</style>\n<style>", f);
	put_asset(f, lk_asset_page_css, lk_asset_page_css_len);
	fputs("</style>\n</head>\n<body>\n", f);
	put_asset(f, lk_asset_page_html, lk_asset_page_html_len);
	put_data(f, r, flame);
	fputs("<script>", f);
	put_asset(f, lk_asset_d3_js, lk_asset_d3_js_len);
	fputs("</script>\n<script>", f);
	put_asset(f, lk_asset_flame_js, lk_asset_flame_js_len);
	fputs("</script>\n<script>", f);
	put_asset(f, lk_asset_uplot_js, lk_asset_uplot_js_len);
	fputs("</script>\n<script>", f);
	put_asset(f, lk_asset_page_js, lk_asset_page_js_len);
	fputs("</script>\n</body>\n</html>\n", f);
	return 0;
}
