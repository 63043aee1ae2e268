/* diff-html.c: `leek diff --format html`, a page (src/cli/html/page.h) whose data page/diff.js
 * draws: each side's processes, totals and the wrappers it skipped, the whole's change, the
 * sites' changes in the diff's ranking, and the flame graph of the change.
 *
 * The flame graph is the call tree of both sides' stacks (flame.h: one tree, the functions of
 * both under one numbering, each stack cut at its site, and both sides skip the same wrappers),
 * each node with the live and allocated bytes of each side (two moments: live at each, the
 * blocks that left and came, what was allocated between), so that a node's change is tested as a
 * site's is (lk_diff_test; not adjusted for the number of nodes: an interval, not a verdict). It
 * is drawn by the gross change (flame.h), so that what shrank shows as much as what grew, and
 * pruned by that, by the allocated bytes' and by each side's live bytes.
 *
 * Never: write a string from a profile but through page.h, or a change without its interval.
 */
#include <inttypes.h>
#include <math.h>

#include "diff.h"
#include "page.h"

/* A change's base, new and [value, lo, hi], with ',' between. */
static void put_values(FILE *f, const struct lk_diff_change *c)
{
	lk_html_est(f, &c->base);
	fputc(',', f);
	lk_html_est(f, &c->new);
	fputs(",[", f);
	lk_html_int(f, c->change.value);
	fputc(',', f);
	lk_html_int(f, c->change.lo);
	fputc(',', f);
	lk_html_int(f, c->change.hi);
	fputc(']', f);
}

/* A change: {"values":[base, new, [value, lo, hi]],"p":..,"q":..,"significant":..,"tested":..}. */
static void put_change(FILE *f, const char *key, const struct lk_diff_change *c)
{
	fprintf(f, "\"%s\":{\"values\":[", key);
	put_values(f, c);
	fputs("],\"p\":", f);
	lk_html_real(f, c->tested ? c->change.p : NAN);
	fputs(",\"q\":", f);
	lk_html_real(f, c->tested ? c->q : NAN);
	fprintf(f, ",\"significant\":%s,\"tested\":%s}", c->significant ? "true" : "false",
		c->tested ? "true" : "false");
}

static void put_side(FILE *f, const struct lk_report *r, uint64_t period)
{
	fprintf(f, "{\"period\":%" PRIu64 ",", period);
	lk_html_processes(f, r);
	lk_html_totals(f, r);
	fputs("\"wrappers\":[", f);
	for (size_t i = 0; i < r->wrappers.n; i++) {
		if (i)
			fputc(',', f);
		lk_html_str(f, lk_funcs_frame(&r->funcs, r->wrappers.list[i].func)->function);
	}
	fputs("]}", f);
}

static void put_sites(FILE *f, const struct lk_diff *d)
{
	fputs("\"sites\":[", f);
	for (size_t i = 0; i < d->nsites; i++) {
		const struct lk_diff_site *s = &d->sites[i];
		fputs(i ? ",{" : "{", f);
		lk_html_site(f, s->stack[s->site_frame], s->nstacks, s->share);
		put_change(f, "live", &s->live);
		fputc(',', f);
		put_change(f, "alloc", &s->alloc);
		fputc('}', f);
	}
	fputs("],", f);
}

/* What each node of the flame graph sums: two profiles, ... */
enum { LIVE_BASE, LIVE_NEW, ALLOC_BASE, ALLOC_NEW, PROFILE_FIGURES };

static void profile_figures(void *ctx, size_t report, const struct lk_report_stack *st,
			    const struct lk_estimate **e)
{
	const struct lk_diff *d = ctx;

	e[report ? LIVE_NEW : LIVE_BASE] =
		d->opts.when == LK_DIFF_PEAK ? &st->peak_bytes : &st->live_bytes;
	e[report ? ALLOC_NEW : ALLOC_BASE] = &st->alloc_bytes;
}

/* ... or two moments of one. */
enum { FROM, LIVE, LEFT, CAME, ALLOC, MOMENT_FIGURES };

static void moment_figures(void *ctx, size_t report, const struct lk_report_stack *st,
			   const struct lk_estimate **e)
{
	(void)ctx;
	(void)report;
	if (!st->window)
		return;
	e[FROM] = &st->window->from_bytes;
	e[LIVE] = &st->live_bytes;
	e[LEFT] = &st->window->left_bytes;
	e[CAME] = &st->window->came_bytes;
	e[ALLOC] = &st->window->alloc_bytes;
}

/* Drawn by the gross change of live bytes and of bytes allocated (two moments: what was
 * allocated), or by either side's live bytes. */
static const struct lk_flame_width profile_widths[] = {
	{ LIVE_NEW, LIVE_BASE }, { ALLOC_NEW, ALLOC_BASE }, { LIVE_BASE, -1 }, { LIVE_NEW, -1 },
};
static const struct lk_flame_width moment_widths[] = {
	{ LIVE, FROM }, { ALLOC, -1 }, { FROM, -1 }, { LIVE, -1 },
};

/* A node's figure as base, new, [change, lo, hi], width (each after a ','). */
static void put_figure(FILE *f, const struct lk_diff_change *c, double width)
{
	fputc(',', f);
	put_values(f, c);
	fputc(',', f);
	lk_html_int(f, width);
}

/* A node's own columns: its live bytes' and its allocated bytes' figures. */
static void put_node(FILE *f, const struct lk_flame_node *x, void *ctx)
{
	const struct lk_diff *d = ctx;
	const struct lk_estimate *e = x->figure;
	struct lk_diff_change live, alloc;

	if (d->opts.mode == LK_DIFF_MOMENTS) {
		live = (struct lk_diff_change){ .base = e[FROM], .new = e[LIVE] };
		lk_diff_test(d, &live, &e[LEFT], &e[CAME]);
		lk_diff_allocated(&alloc, &e[ALLOC]);
	} else {
		live = (struct lk_diff_change){ .base = e[LIVE_BASE], .new = e[LIVE_NEW] };
		alloc = (struct lk_diff_change){ .base = e[ALLOC_BASE], .new = e[ALLOC_NEW] };
		lk_diff_test(d, &live, &live.base, &live.new);
		lk_diff_test(d, &alloc, &alloc.base, &alloc.new);
	}
	put_figure(f, &live, x->width[0]);
	put_figure(f, &alloc, x->width[1]);
}

int lk_diff_flame(const struct lk_diff *d, struct lk_flame **ret)
{
	bool moments = d->opts.mode == LK_DIFF_MOMENTS;
	const struct lk_flame_opts fo = {
		.figures = moments ? moment_figures : profile_figures,
		.ctx = (void *)d,
		.nfigures = moments ? MOMENT_FIGURES : PROFILE_FIGURES,
		.widths = moments ? moment_widths : profile_widths,
		.nwidths = 4,
		.min_share = LK_FLAME_MIN_SHARE,
		.max_nodes = LK_FLAME_MAX_NODES,
	};

	return lk_flame_build((const struct lk_report *const *)d->side, moments ? 1 : 2, &fo, ret);
}

void lk_diff_html(FILE *f, const struct lk_diff *d, const struct lk_flame *flame)
{
	const struct lk_diff_opts *o = &d->opts;
	bool moments = o->mode == LK_DIFF_MOMENTS;

	lk_html_begin(f, LK_HTML_DIFF);
	fprintf(f, "\"mode\":\"%s\",\"figure\":\"%s\",\"live_at\":", moments ? "moments" : "profiles",
		o->by == LK_DIFF_BY_ALLOC ? "alloc" : "live");
	lk_html_str(f, moments ? NULL
		       : o->when == LK_DIFF_PEAK ? "peak"
		       : o->when == LK_DIFF_AT	 ? "time"
						 : "end");
	fputs(",\"from_s\":", f);
	if (moments && !o->from_mark) /* a mark's time is each profile's own */
		lk_html_seconds(f, o->from_ns);
	else
		fputs("null", f);
	fputs(",\"at_s\":", f);
	if ((moments || o->when == LK_DIFF_AT) && o->at_ns != UINT64_MAX && !o->at_mark)
		lk_html_seconds(f, o->at_ns);
	else
		fputs("null", f);
	fputs(",\"fdr\":", f);
	lk_html_real(f, LK_CHANGE_FDR);
	fprintf(f, ",\"auto_wrappers\":%s,\"sides\":[", o->no_auto_wrappers ? "false" : "true");
	put_side(f, d->side[0], d->period[0]);
	if (!moments) {
		fputc(',', f);
		put_side(f, d->side[1], d->period[1]);
	}
	fputs("],", f);
	put_change(f, "live", &d->live);
	fputc(',', f);
	put_change(f, "alloc", &d->alloc);
	fprintf(f, ",\"sites_total\":%zu,\"sites_significant\":%zu,\"stacks_filtered\":%zu,",
		d->sites_total, d->significant, d->stacks_filtered);
	put_sites(f, d);
	lk_html_flame(f, flame, put_node, (void *)d);
	lk_html_end(f, LK_HTML_DIFF);
}
