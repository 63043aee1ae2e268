/* out-json.c: `leek report --format json`, the document docs/json.md describes.
 *
 * The output is the contract with scripts: a key keeps its name, type and meaning, new keys may
 * be added, and the order of sites is the report's ranking (report-view.c), so two runs over the
 * same profile print the same bytes. Numbers are raw (bytes, objects, seconds), never human units.
 *
 * Never: print a string without escaping it (every string from a profile or a debug file is
 * untrusted bytes, and JSON must be valid UTF-8), or print NaN or infinity (they are not JSON:
 * null instead).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "util.h"

#define MAX_DEPTH 16

struct lk_json_doc {
	FILE *f;
	struct lk_report_opts opts;
	bool per_process;
	unsigned depth, inline_depth; /* inside a container opened at inline_depth: one line */
	bool first[MAX_DEPTH + 1];    /* nothing written yet at this depth */
	bool after_key;
};

static void write_string(FILE *f, const char *str, size_t len, bool in_html)
{
	const unsigned char *s = (const unsigned char *)str;

	fputc('"', f);
	for (size_t i = 0; i < len;) {
		unsigned char c = s[i];
		size_t n = lk_utf8_length(str + i, len - i);
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c == '\t')
			fputs("\\t", f);
		else if (c == '\r')
			fputs("\\r", f);
		else if (c < 0x20 || c == 0x7f || (in_html && (c == '<' || c == '>' || c == '&')))
			fprintf(f, "\\u%04x", c);
		else if (n == 0)
			fputs("\\ufffd", f); /* not UTF-8: one replacement character a byte */
		else if (in_html && n == 3 && c == 0xe2 && s[i + 1] == 0x80 &&
			 (s[i + 2] == 0xa8 || s[i + 2] == 0xa9))
			fprintf(f, "\\u%04x", 0x2000 + (s[i + 2] & 0x3f)); /* U+2028, U+2029 */
		else
			fwrite(s + i, 1, n, f);
		i += n ? n : 1;
	}
	fputc('"', f);
}

void lk_json_write_string(FILE *f, const char *str, size_t len)
{
	write_string(f, str, len, false);
}

void lk_json_write_string_in_html(FILE *f, const char *str, size_t len)
{
	write_string(f, str, len, true);
}

/* Before any value or key: the comma, and the line break outside one-line containers. */
static void sep(struct lk_json_doc *d)
{
	if (d->after_key) {
		d->after_key = false;
		return;
	}
	if (!d->first[d->depth])
		fputc(',', d->f);
	if (d->depth && (!d->inline_depth || d->depth < d->inline_depth))
		fprintf(d->f, "\n%*s", 2 * (int)d->depth, "");
	else if (!d->first[d->depth])
		fputc(' ', d->f);
	d->first[d->depth] = false;
}

static void open_c(struct lk_json_doc *d, char c, bool one_line)
{
	sep(d); /* after a key: only consumes it */
	fputc(c, d->f);
	if (d->depth < MAX_DEPTH)
		d->depth++;
	d->first[d->depth] = true;
	if (one_line && !d->inline_depth)
		d->inline_depth = d->depth;
}

static void close_c(struct lk_json_doc *d, char c)
{
	bool broken = !d->inline_depth || d->depth < d->inline_depth;

	if (broken && !d->first[d->depth])
		fprintf(d->f, "\n%*s", 2 * (int)(d->depth - 1), "");
	if (d->inline_depth == d->depth)
		d->inline_depth = 0;
	d->depth--;
	fputc(c, d->f);
}

static void key(struct lk_json_doc *d, const char *k)
{
	sep(d);
	lk_json_write_string(d->f, k, strlen(k));
	fputs(": ", d->f);
	d->after_key = true;
}

/* Where a value starts: after its key (k) in an object, or after a comma (k NULL) in an array. */
static void value(struct lk_json_doc *d, const char *k)
{
	if (k)
		key(d, k);
	sep(d);
}

static void str(struct lk_json_doc *d, const char *k, const char *s)
{
	value(d, k);
	if (s)
		lk_json_write_string(d->f, s, strlen(s));
	else
		fputs("null", d->f);
}

static void u64(struct lk_json_doc *d, const char *k, uint64_t v)
{
	value(d, k);
	fprintf(d->f, "%" PRIu64, v);
}

static void boolean(struct lk_json_doc *d, const char *k, bool v)
{
	value(d, k);
	fputs(v ? "true" : "false", d->f);
}

/* A number with that many decimals (0: rounded to an integer), or null. k may be NULL inside
 * an array. */
void lk_json_write_number(FILE *f, double v, int decimals)
{
	if (!isfinite(v))
		fputs("null", f);
	else if (decimals == 0)
		fprintf(f, "%.0f", round(v) + 0.0); /* + 0.0: never "-0" */
	else
		fprintf(f, "%.*f", decimals, v);
}

static void num(struct lk_json_doc *d, const char *k, double v, int decimals)
{
	value(d, k);
	lk_json_write_number(d->f, v, decimals);
}

static void seconds(struct lk_json_doc *d, const char *k, uint64_t ns)
{
	num(d, k, ns == UINT64_MAX ? NAN : (double)ns / 1e9, 6);
}

/* "name": value, "name_ci95": [lo, hi] */
static void estimate(struct lk_json_doc *d, const char *name, const struct lk_estimate *e)
{
	char k[64];

	num(d, name, e->value, 0);
	snprintf(k, sizeof(k), "%s_ci95", name);
	key(d, k);
	open_c(d, '[', true);
	num(d, NULL, e->lo, 0);
	num(d, NULL, e->hi, 0);
	close_c(d, ']');
}

/* kind: 0 a frame, 1 the site, 2 a wrapper the site skipped. */
static void frame(struct lk_json_doc *d, const struct lk_sym_frame *f, int kind)
{
	open_c(d, '{', true);
	str(d, "function", f->function);
	str(d, "file", f->file);
	value(d, "line");
	if (f->line)
		fprintf(d->f, "%" PRIu32, f->line);
	else
		fputs("null", d->f);
	str(d, "module", f->module);
	boolean(d, "inlined", f->inlined);
	if (kind)
		boolean(d, kind == 1 ? "site" : "wrapper", true);
	close_c(d, '}');
}

static void site(struct lk_json_doc *d, const struct lk_report_site *s, size_t rank)
{
	const struct lk_estimate *fig = lk_report_figure(s, d->opts.view);

	open_c(d, '{', false);
	u64(d, "rank", rank);
	str(d, "function", s->stack[s->site_frame]->function);
	str(d, "file", s->stack[s->site_frame]->file);
	value(d, "line");
	if (s->stack[s->site_frame]->line)
		fprintf(d->f, "%" PRIu32, s->stack[s->site_frame]->line);
	else
		fputs("null", d->f);
	str(d, "module", s->stack[s->site_frame]->module);
	u64(d, "samples", fig->samples);
	boolean(d, "too_few_samples", fig->too_few);
	num(d, "share", s->share, 6);
	estimate(d, "live_bytes", &s->live_bytes);
	num(d, "live_objects", s->live_objects.value, 0);
	u64(d, "live_samples", s->live_bytes.samples);
	estimate(d, "alloc_bytes", &s->alloc_bytes);
	num(d, "alloc_objects", s->alloc_objects.value, 0);
	u64(d, "alloc_samples", s->alloc_bytes.samples);
	estimate(d, "peak_bytes", &s->peak_bytes);
	num(d, "peak_objects", s->peak_objects.value, 0);
	if (d->opts.view == LK_VIEW_OLD) {
		estimate(d, "old_bytes", &s->old_bytes);
		num(d, "old_objects", s->old_objects.value, 0);
		num(d, "oldest_age_s", s->oldest_age_ns < 0 ? NAN : (double)s->oldest_age_ns / 1e9,
		    6);
	}
	str(d, "trend", lk_trend_name(s->growth.trend));
	num(d, "trend_confidence", s->growth.confidence, 4);
	num(d, "slope_bytes_per_s", s->growth.slope_bytes_s, 0);
	u64(d, "stacks", s->nstacks);
	key(d, "stack");
	open_c(d, '[', false);
	for (size_t i = 0; i < s->nframes; i++)
		frame(d, s->stack[i],
		      i == s->site_frame                                      ? 1
		      : i < s->site_frame && !(s->funcs[i] & LK_FUNC_ALLOC) ? 2
									    : 0);
	close_c(d, ']');
	close_c(d, '}');
}

static void losses(struct lk_json_doc *d, const struct lk_profile_totals *t)
{
	key(d, "losses");
	open_c(d, '{', true);
	for (unsigned i = 1; i <= LK_CNT_MAX; i++) {
		char k[32];
		const char *name = lk_counter_name(i);
		/* samples and frees count events, not losses */
		if (!t->losses[i] || i == LK_CNT_SAMPLES || i == LK_CNT_FREES)
			continue;
		if (!name) {
			snprintf(k, sizeof(k), "counter_%u", i);
			name = k;
		}
		u64(d, name, t->losses[i]);
	}
	close_c(d, '}');
}

/* period_known: false for merged profiles of several periods. */
static void totals(struct lk_json_doc *d, const struct lk_profile_totals *t, bool period_known)
{
	key(d, "totals");
	open_c(d, '{', false);
	estimate(d, "alloc_bytes", &t->alloc_bytes);
	num(d, "alloc_objects", t->alloc_objects.value, 0);
	estimate(d, "peak_bytes", &t->peak_bytes);
	seconds(d, "peak_time_s", t->peak_ns);
	estimate(d, "live_bytes_end", &t->live_bytes_end);
	num(d, "live_objects_end", t->live_objects_end.value, 0);
	seconds(d, "duration_s", t->duration_ns);
	num(d, "period", period_known ? (double)t->period : NAN, 0);
	u64(d, "samples", t->samples);
	u64(d, "frees", t->frees);
	u64(d, "frees_unknown", t->frees_unknown);
	u64(d, "max_rss_bytes", t->max_rss);
	boolean(d, "trailer", t->trailer);
	losses(d, t);
	close_c(d, '}');
}

static void process(struct lk_json_doc *d, const struct lk_report_process *q)
{
	size_t i = 0;

	str(d, "file", q->path);
	u64(d, "pid", q->pid);
	u64(d, "ppid", q->ppid);
	value(d, "exe");
	lk_json_write_string(d->f, q->exe, q->exe_len);
	key(d, "cmdline");
	open_c(d, '[', true);
	while (i < q->cmdline_len) {
		size_t n = strnlen(q->cmdline + i, q->cmdline_len - i);
		value(d, NULL);
		lk_json_write_string(d->f, q->cmdline + i, n);
		i += n + 1;
	}
	close_c(d, ']');
	boolean(d, "forked", q->flags & LK_HDR_FORKED);
	boolean(d, "continued", q->flags & LK_HDR_CONTINUED);
	boolean(d, "exact", q->flags & LK_HDR_EXACT || q->period == 1);
	u64(d, "period", q->period);
	num(d, "start_realtime_s", (double)q->start_realtime_ns / 1e9, 6);
	boolean(d, "trailer", q->totals.trailer);
	totals(d, &q->totals, true);
}

static void wrappers(struct lk_json_doc *d, const struct lk_report *r)
{
	key(d, "wrappers_skipped");
	open_c(d, '[', false);
	for (size_t i = 0; i < r->wrappers.n; i++) {
		const struct lk_wrapper *w = &r->wrappers.list[i];
		const struct lk_sym_frame *f = lk_funcs_frame(&r->funcs, w->func);
		open_c(d, '{', true);
		str(d, "function", f->function);
		str(d, "file", f->file);
		str(d, "module", f->module);
		u64(d, "round", w->round);
		u64(d, "depth", w->depth);
		u64(d, "samples", w->samples);
		num(d, "share", w->share, 6);
		u64(d, "callers", w->callers);
		num(d, "top_caller_share", w->top_share, 6);
		close_c(d, '}');
	}
	close_c(d, ']');
}

/* The tree view's: the call tree, and what --min-share left out of it. */
static void tree(struct lk_json_doc *d, const struct lk_report *r)
{
	u64(d, "stacks_filtered", r->stacks_filtered);
	key(d, "tree");
	open_c(d, '{', false);
	u64(d, "nodes", lk_tree_nodes(r->tree));
	u64(d, "pruned_nodes", r->tree_pruned.nodes);
	num(d, "pruned_total", r->tree_pruned.total, 0);
	value(d, "root");
	lk_json_tree(d->f, d->depth, r);
	close_c(d, '}');
}

/* view_total, sites, timeline (or the tree): what a section holds besides its processes. */
static void body(struct lk_json_doc *d, const struct lk_report *r)
{
	key(d, "view_total");
	open_c(d, '{', true);
	estimate(d, "bytes", &r->view_bytes);
	num(d, "objects", r->view_objects.value, 0);
	u64(d, "samples", r->view_bytes.samples);
	close_c(d, '}');
	if (r->tree) {
		tree(d, r);
		return;
	}
	u64(d, "sites_total", r->sites_total);
	u64(d, "stacks_filtered", r->stacks_filtered);
	wrappers(d, r);
	key(d, "sites");
	open_c(d, '[', false);
	for (size_t i = 0; i < r->nsites; i++)
		site(d, &r->sites[i], i + 1);
	close_c(d, ']');
	key(d, "timeline");
	open_c(d, '[', false);
	for (size_t i = 0; i < r->ntimeline; i++) {
		const struct lk_timeline_point *p = &r->timeline[i];
		open_c(d, '{', true);
		seconds(d, "t_s", p->t_ns);
		num(d, "heap_bytes", p->heap_bytes, 0);
		num(d, "heap_max_bytes", p->heap_max, 0);
		u64(d, "rss_bytes", p->rss_bytes);
		close_c(d, '}');
	}
	close_c(d, ']');
}

int lk_json_begin(FILE *f, const struct lk_report_opts *o, bool per_process,
		  struct lk_json_doc **ret)
{
	struct lk_json_doc *d = calloc(1, sizeof(*d));

	if (!d)
		return -ENOMEM;
	*d = (struct lk_json_doc){ .f = f, .opts = *o, .per_process = per_process };
	d->first[0] = true;
	open_c(d, '{', false);
	str(d, "format", "leek-report");
	u64(d, "version", 1);
	str(d, "view", lk_report_view_name(o));
	key(d, "options");
	open_c(d, '{', true);
	seconds(d, "at_s", o->view == LK_VIEW_INUSE ? o->at_ns : UINT64_MAX);
	seconds(d, "age_s", o->view == LK_VIEW_OLD ? o->age_ns : UINT64_MAX);
	u64(d, "top", o->top);
	num(d, "min_share", o->min_share, 6);
	if (o->tree) {
		str(d, "value", lk_view_name(o->view));
		boolean(d, "objects", o->objects);
		boolean(d, "inverted", o->inverted);
	} else
		boolean(d, "auto_wrappers", !o->no_auto_wrappers);
	close_c(d, '}');
	boolean(d, "merged", o->merge);
	if (per_process) {
		key(d, "processes");
		open_c(d, '[', false);
	}
	*ret = d;
	return 0;
}

void lk_json_report(struct lk_json_doc *d, const struct lk_report *r)
{
	if (d->per_process) {
		open_c(d, '{', false); /* one process, with its sites */
		process(d, &r->procs[0]);
		body(d, r);
		close_c(d, '}');
		return;
	}
	key(d, "processes");
	open_c(d, '[', false);
	for (size_t i = 0; i < r->nprocs; i++) {
		open_c(d, '{', false);
		process(d, &r->procs[i]);
		close_c(d, '}');
	}
	close_c(d, ']');
	totals(d, &r->totals, !r->periods_differ);
	body(d, r);
}

void lk_json_end(struct lk_json_doc *d)
{
	if (!d)
		return;
	if (d->per_process)
		close_c(d, ']');
	close_c(d, '}');
	fputc('\n', d->f);
	free(d);
}
