/* page.c: what every HTML page is made of (page.h): the page around its data, with the assets of
 * assets.h, and the data's values, processes, totals and flame graph.
 *
 * Never: write a string from a profile but through lk_html_str() (or
 * lk_json_write_string_in_html), or NaN or infinity (null instead).
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "assets.h"
#include "page.h"

struct asset {
	const unsigned char *data;
	const size_t *len;
	const char *sha256;
};

#define ASSET(name) { lk_asset_##name, &lk_asset_##name##_len, lk_asset_##name##_sha256 }

/* Each page's pieces: its styles, skeleton and scripts (the libraries first, then common.js,
 * then its own), and the name its data gives it. */
struct page {
	const char *kind, *title;
	struct asset styles[2], skeleton, scripts[5];
};

static const struct page pages[] = {
	[LK_HTML_REPORT] = { "report", "leek report", { ASSET(uplot_css), ASSET(page_css) },
			     ASSET(report_html),
			     { ASSET(d3_js), ASSET(flame_js), ASSET(uplot_js), ASSET(common_js),
			       ASSET(report_js) } },
	[LK_HTML_DIFF] = { "diff", "leek diff", { ASSET(page_css) }, ASSET(diff_html),
			   { ASSET(d3_js), ASSET(flame_js), ASSET(common_js), ASSET(diff_js) } },
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static void put_asset(FILE *f, const struct asset *a)
{
	fwrite(a->data, 1, *a->len, f);
}

void lk_html_begin(FILE *f, enum lk_html_page page)
{
	const struct page *p = &pages[page];

	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
	      "script-src",
	      f);
	for (size_t i = 0; i < NELEM(p->scripts) && p->scripts[i].data; i++)
		fprintf(f, " 'sha256-%s'", p->scripts[i].sha256);
	fprintf(f, "; style-src 'unsafe-inline'; img-src data:\">\n"
		   "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
		   "<title>%s</title>\n",
		p->title);
	for (size_t i = 0; i < NELEM(p->styles) && p->styles[i].data; i++) {
		fputs("<style>", f);
		put_asset(f, &p->styles[i]);
		fputs("</style>\n", f);
	}
	/* Every page's title bar and tooltip, around its own skeleton. */
	fprintf(f, "</head>\n<body>\n<header>\n<h1 id=\"title\">%s</h1>\n<p id=\"subtitle\"></p>\n"
		   "</header>\n",
		p->title);
	put_asset(f, &p->skeleton);
	fputs("<div id=\"tooltip\" hidden></div>\n", f);
	fputs("<script type=\"application/json\" id=\"leek-data\">{", f);
}

void lk_html_end(FILE *f, enum lk_html_page page)
{
	const struct page *p = &pages[page];

	fprintf(f, "\"kind\":\"%s\"}</script>\n", p->kind);
	for (size_t i = 0; i < NELEM(p->scripts) && p->scripts[i].data; i++) {
		fputs("<script>", f);
		put_asset(f, &p->scripts[i]);
		fputs("</script>\n", f);
	}
	fputs("</body>\n</html>\n", f);
}

void lk_html_str(FILE *f, const char *s)
{
	if (s)
		lk_json_write_string_in_html(f, s, strlen(s));
	else
		fputs("null", f);
}

void lk_html_int(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, "%.0f", v == 0 ? 0 : v); /* no "-0" */
	else
		fputs("null", f);
}

void lk_html_real(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, "%.6g", v);
	else
		fputs("null", f);
}

void lk_html_est(FILE *f, const struct lk_estimate *e)
{
	fputc('[', f);
	lk_html_int(f, e->value);
	fputc(',', f);
	lk_html_int(f, e->lo);
	fputc(',', f);
	lk_html_int(f, e->hi);
	fprintf(f, ",%" PRIu64 ",%d]", e->samples, e->too_few ? 1 : 0);
}

void lk_html_seconds(FILE *f, uint64_t ns)
{
	lk_html_real(f, (double)ns / 1e9);
}

void lk_html_site(FILE *f, const struct lk_sym_frame *frame, size_t stacks, double share)
{
	fputs("\"function\":", f);
	lk_html_str(f, frame->function);
	fputs(",\"file\":", f);
	lk_html_str(f, frame->file);
	fprintf(f, ",\"line\":%" PRIu32 ",\"module\":", frame->line);
	lk_html_str(f, frame->module);
	fprintf(f, ",\"stacks\":%zu,\"share\":", stacks);
	lk_html_real(f, share);
	fputc(',', f);
}

void lk_html_processes(FILE *f, const struct lk_report *r)
{
	fputs("\"processes\":[", f);
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct lk_report_process *q = &r->procs[i];
		fputs(i ? ",{\"path\":" : "{\"path\":", f);
		lk_html_str(f, q->path);
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

void lk_html_totals(FILE *f, const struct lk_report *r)
{
	const struct lk_profile_totals *t = &r->totals;
	bool first = true;

	fputs("\"totals\":{\"duration_s\":", f);
	lk_html_seconds(f, t->duration_ns);
	fprintf(f, ",\"period\":%" PRIu64 ",\"periods_differ\":%s,\"samples\":%" PRIu64
		   ",\"frees\":%" PRIu64 ",\"frees_unknown\":%" PRIu64 ",\"trailer\":%s,"
		   "\"max_rss\":%" PRIu64 ",\"alloc_bytes\":",
		t->period, r->periods_differ ? "true" : "false", t->samples, t->frees,
		t->frees_unknown, t->trailer ? "true" : "false", t->max_rss);
	lk_html_est(f, &t->alloc_bytes);
	fputs(",\"alloc_objects\":", f);
	lk_html_int(f, t->alloc_objects.value);
	fputs(",\"peak_bytes\":", f);
	lk_html_est(f, &t->peak_bytes);
	fputs(",\"peak_s\":", f);
	if (t->peak_ns != UINT64_MAX && t->peak_bytes.samples)
		lk_html_seconds(f, t->peak_ns);
	else
		fputs("null", f);
	fputs(",\"live_bytes\":", f);
	lk_html_est(f, &t->live_bytes_end);
	fputs(",\"live_objects\":", f);
	lk_html_int(f, t->live_objects_end.value);
	fputs(",\"losses\":[", f);
	for (unsigned i = 1; i <= LK_CNT_MAX; i++) {
		const char *name = lk_counter_name(i);
		if (!t->losses[i] || i == LK_CNT_SAMPLES || i == LK_CNT_FREES)
			continue;
		fputs(first ? "[" : ",[", f);
		lk_html_str(f, name ? name : "?");
		fprintf(f, ",%" PRIu64 "]", t->losses[i]);
		first = false;
	}
	fputs("]},", f);
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

void lk_html_flame(FILE *f, const struct lk_flame *flame,
		   void (*node)(FILE *f, const struct lk_flame_node *x, void *ctx), void *ctx)
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
	lk_html_real(f, fo->min_share);
	fputs(",\"strings\":[", f);
	for (size_t i = 0; i < t.n; i++) {
		if (i)
			fputc(',', f);
		lk_html_str(f, t.s[i]);
	}
	fputs("],\"nodes\":[", f);
	for (size_t i = 0; i < n; i++) {
		const struct lk_flame_node *x = &nodes[i];
		fprintf(f, "%s[%ld,%ld,%ld,%ld,%d,%zu", i ? ",\n" : "",
			x->parent == SIZE_MAX ? -1L : (long)x->parent, idx ? idx[i][0] : -1,
			idx ? idx[i][1] : -1, idx ? idx[i][2] : -1,
			(x->frame && x->frame->inlined ? 1 : 0) | (x->other ? 2 : 0), x->dropped);
		node(f, x, ctx);
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
			lk_html_int(f, nodes[i].series[b]);
		}
		fputc(']', f);
		first = false;
	}
	fputs("]},", f);
	free(idx);
	free(t.s);
	free(t.slots);
}
