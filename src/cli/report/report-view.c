/* report-view.c: what each view ranks by, and the ranking that ends a report (report.h).
 *
 * lk_report_rank() makes the sites (report-sites.c), finishes every sum (lk_estimate_finish:
 * the interval of a sum, never a sum of intervals), sums the processes' timelines on one
 * real-time axis when merged, ranks the sites by the view's figure and keeps the top ones; or,
 * in the tree view, makes and prunes the tree (tree.c) instead of the sites. The order is total and stable (ties go by the
 * site key), so text and JSON list the same sites in the same order on every run.
 *
 * Never: symbolize, read a profile, or print.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "report.h"

static const char *const view_names[_LK_VIEW_MAX] = {
	[LK_VIEW_LEAKS] = "leaks", [LK_VIEW_PEAK] = "peak",     [LK_VIEW_INUSE] = "inuse",
	[LK_VIEW_ALLOC] = "alloc", [LK_VIEW_OLD] = "old",       [LK_VIEW_GROWTH] = "growth",
	[LK_VIEW_TIMELINE] = "timeline",
};

const char *lk_view_name(enum lk_view v)
{
	return (unsigned)v < _LK_VIEW_MAX ? view_names[v] : "?";
}

const char *lk_report_view_name(const struct lk_report_opts *o)
{
	return o->tree ? "tree" : lk_view_name(o->view);
}

int lk_view_from_name(const char *name)
{
	for (unsigned v = 0; v < _LK_VIEW_MAX; v++)
		if (strcmp(view_names[v], name) == 0)
			return (int)v;
	return -EINVAL;
}

const char *lk_trend_name(enum lk_trend t)
{
	switch (t) {
	case LK_TREND_FLAT:
		return "flat";
	case LK_TREND_GROWING:
		return "growing";
	case LK_TREND_PLATEAU:
		return "plateau";
	default:
		return "unknown";
	}
}

bool lk_mark_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > LK_CTL_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
			return false;
	return true;
}

const struct lk_estimate *lk_report_figure(const struct lk_report_site *s, enum lk_view v)
{
	return LK_VIEW_FIGURE(s, v, bytes);
}

const struct lk_estimate *lk_report_figure_objects(const struct lk_report_site *s,
						   enum lk_view v)
{
	return LK_VIEW_FIGURE(s, v, objects);
}

static void finish_site(struct lk_report_site *s)
{
	struct lk_estimate *e[] = { &s->alloc_bytes, &s->alloc_objects, &s->live_bytes,
				    &s->live_objects, &s->peak_bytes, &s->peak_objects,
				    &s->old_bytes, &s->old_objects };

	for (size_t i = 0; i < sizeof(e) / sizeof(e[0]); i++)
		lk_estimate_finish(e[i]);
}

/* growth ranks growing sites first, then plateaus, flat and unknown ones. */
static int trend_rank(enum lk_trend t)
{
	switch (t) {
	case LK_TREND_GROWING:
		return 0;
	case LK_TREND_PLATEAU:
		return 1;
	case LK_TREND_FLAT:
		return 2;
	default:
		return 3;
	}
}

static enum lk_view sort_view; /* qsort has no context argument */

static int cmp_sites(const void *a, const void *b)
{
	const struct lk_report_site *x = a, *y = b;
	double fx = lk_report_figure(x, sort_view)->value, fy = lk_report_figure(y, sort_view)->value;

	if (sort_view == LK_VIEW_GROWTH && trend_rank(x->growth.trend) != trend_rank(y->growth.trend))
		return trend_rank(x->growth.trend) - trend_rank(y->growth.trend);
	if (fx != fy)
		return fx > fy ? -1 : 1;
	return lk_site_key_compare(x->stack[x->site_frame], y->stack[y->site_frame]);
}

/* Where a process stands at [a, b] (ns since its start): the highest heap estimate of the buckets
 * that overlap it, and its heap and RSS at b if it still runs then. */
static void process_at(const struct lk_report_process *q, int64_t a, int64_t b,
		       struct lk_timeline_point *out)
{
	int64_t lo = 0;
	double max = 0;

	for (size_t j = 0; j < q->ntimeline && lo < b; j++) {
		const struct lk_timeline_point *t = &q->timeline[j];
		int64_t hi = (int64_t)t->t_ns;
		if (hi >= a) {
			max = t->heap_max > max ? t->heap_max : max;
			if (hi >= b) {
				out->heap_bytes += t->heap_bytes;
				out->rss_bytes += t->rss_bytes;
			}
		}
		lo = hi;
	}
	out->heap_max += max;
}

/* merged: the processes' timelines summed on one real-time axis, LK_TIMELINE_BUCKETS points. */
static int merge_timelines(struct lk_report *r)
{
	uint64_t t0 = UINT64_MAX, t1 = 0;
	size_t n = LK_TIMELINE_BUCKETS;

	for (size_t i = 0; i < r->nprocs; i++) {
		const struct lk_report_process *q = &r->procs[i];
		t0 = q->start_realtime_ns < t0 ? q->start_realtime_ns : t0;
		if (q->start_realtime_ns + q->totals.duration_ns > t1)
			t1 = q->start_realtime_ns + q->totals.duration_ns;
	}
	r->span_ns = t1 > t0 ? t1 - t0 : 0;
	r->totals.duration_ns = r->span_ns;
	r->timeline = calloc(n, sizeof(*r->timeline));
	if (!r->timeline)
		return -ENOMEM;
	r->ntimeline = n;
	for (size_t c = 0; c < n; c++) {
		struct lk_timeline_point *pt = &r->timeline[c];
		uint64_t a = t0 + r->span_ns * c / n, b = t0 + r->span_ns * (c + 1) / n;
		pt->t_ns = b - t0;
		for (size_t i = 0; i < r->nprocs; i++) {
			const struct lk_report_process *q = &r->procs[i];
			process_at(q, (int64_t)(a - q->start_realtime_ns),
				   (int64_t)(b - q->start_realtime_ns), pt);
		}
	}
	return 0;
}

/* The tree view's one figure: the view's, in bytes or objects. */
static void view_figure(void *ctx, size_t report, const struct lk_report_stack *st,
			const struct lk_estimate **e)
{
	const struct lk_report_opts *o = ctx;

	(void)report;
	e[0] = o->objects ? LK_VIEW_FIGURE(st, o->view, objects) : LK_VIEW_FIGURE(st, o->view, bytes);
}

/* The tree view: the call tree of the view's figure, pruned by --min-share of its total. */
static int make_tree(struct lk_report *r)
{
	const struct lk_tree_opts o = { .figures = view_figure, .ctx = &r->opts, .nfigures = 1,
					.self = true, .inverted = r->opts.inverted };
	const struct lk_estimate *total = r->opts.objects ? &r->view_objects : &r->view_bytes;
	int k = lk_tree_build((const struct lk_report *const[]){ r }, 1, &o, &r->tree);

	if (k < 0)
		return k;
	if (r->opts.min_share > 0)
		lk_tree_prune(r->tree, r->opts.min_share * total->value, &r->tree_pruned);
	return 0;
}

int lk_report_rank(struct lk_report *r)
{
	size_t keep = 0;
	int k;

	lk_estimate_finish(&r->view_bytes);
	lk_estimate_finish(&r->view_objects);
	if (r->nprocs > 1) {
		/* A sum of each process's own peak: when they peak together, at most that. */
		lk_estimate_finish(&r->totals.alloc_bytes);
		lk_estimate_finish(&r->totals.alloc_objects);
		lk_estimate_finish(&r->totals.live_bytes_end);
		lk_estimate_finish(&r->totals.live_objects_end);
		lk_estimate_finish(&r->totals.peak_bytes);
		r->totals.peak_ns = UINT64_MAX;
		k = merge_timelines(r);
		if (k < 0)
			return k;
	} else if (r->nprocs == 1) {
		r->timeline = r->procs[0].timeline; /* the report's own from here on */
		r->ntimeline = r->procs[0].ntimeline;
		r->procs[0].timeline = NULL;
	}
	if (r->opts.tree)
		return make_tree(r);
	k = lk_report_sites(r);
	if (k < 0)
		return k;
	for (size_t i = 0; i < r->nsites; i++) {
		struct lk_report_site *s = &r->sites[i];
		finish_site(s);
		s->share = r->view_bytes.value > 0
				   ? lk_report_figure(s, r->opts.view)->value / r->view_bytes.value
				   : 0;
	}
	sort_view = r->opts.view;
	if (r->nsites) /* sites is NULL then */
		qsort(r->sites, r->nsites, sizeof(*r->sites), cmp_sites);

	/* Sites with nothing to show in this view go; growth shows every site, and so does a
	 * report made for a diff (all_sites). */
	for (size_t i = 0; i < r->nsites; i++) {
		struct lk_report_site *s = &r->sites[i];
		bool empty = r->opts.view != LK_VIEW_GROWTH && !r->opts.all_sites &&
			     !(lk_report_figure(s, r->opts.view)->value > 0);
		if (!empty)
			r->sites_total++;
		if (empty || s->share < r->opts.min_share || (r->opts.top && keep >= r->opts.top))
			continue;
		r->sites[keep++] = *s;
	}
	r->nsites = keep;
	return 0;
}
