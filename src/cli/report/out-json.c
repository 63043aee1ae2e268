/* out-json.c: `leek report --format json`, the document docs/json.md describes.
 *
 * The output is the contract with scripts: a key keeps its name, type and meaning, new keys may
 * be added, and the order of sites is the report's ranking (report-view.c), so two runs over the
 * same profile print the same bytes. Numbers are raw (bytes, objects, seconds), never human units.
 *
 * PROCESS (with its TOTALS), WRAPPER and FRAME are written here for `leek diff`'s document too
 * (diff-json.c).
 * Never: write JSON but through json-write.h, which escapes every string and writes null for
 * what is not a finite number.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json-write.h"
#include "report.h"

struct lk_json_doc {
	struct lk_json j;
	struct lk_report_opts opts;
	bool per_process;
};

void lk_json_frame_key(struct lk_json *j, const struct lk_sym_frame *f)
{
	lk_json_str(j, "function", f->function);
	lk_json_str(j, "file", f->file);
	lk_json_num(j, "line", f->line ? (double)f->line : NAN, 0);
	lk_json_str(j, "module", f->module);
}

/* kind: 0 a frame, 1 the site, 2 a wrapper the site skipped. */
static void frame(struct lk_json *j, const struct lk_sym_frame *f, int kind)
{
	lk_json_open(j, '{', true);
	lk_json_frame_key(j, f);
	lk_json_bool(j, "inlined", f->inlined);
	if (kind)
		lk_json_bool(j, kind == 1 ? "site" : "wrapper", true);
	lk_json_close(j, '}');
}

void lk_json_stack(struct lk_json *j, const struct lk_sym_frame *const *stack,
		   const uint32_t *funcs, size_t n, size_t site_frame)
{
	lk_json_stack_named(j, "stack", stack, funcs, n, site_frame);
}

void lk_json_stack_named(struct lk_json *j, const char *key, const struct lk_sym_frame *const *stack,
			 const uint32_t *funcs, size_t n, size_t site_frame)
{
	lk_json_key(j, key);
	lk_json_open(j, '[', false);
	for (size_t i = 0; i < n; i++)
		frame(j, stack[i],
		      i == site_frame                                          ? 1
		      : i < site_frame && funcs && !(funcs[i] & LK_FUNC_ALLOC) ? 2
									       : 0);
	lk_json_close(j, ']');
}

static void site(struct lk_json_doc *d, const struct lk_report_site *s, size_t rank)
{
	const struct lk_estimate *fig = lk_report_figure(s, d->opts.view);
	struct lk_json *j = &d->j;

	lk_json_open(j, '{', false);
	lk_json_u64(j, "rank", rank);
	lk_json_frame_key(j, s->stack[s->site_frame]);
	lk_json_u64(j, "samples", fig->samples);
	lk_json_bool(j, "too_few_samples", fig->too_few);
	lk_json_num(j, "share", s->share, 6);
	lk_json_estimate(j, "live_bytes", &s->live_bytes);
	lk_json_num(j, "live_objects", s->live_objects.value, 0);
	lk_json_u64(j, "live_samples", s->live_bytes.samples);
	lk_json_estimate(j, "alloc_bytes", &s->alloc_bytes);
	lk_json_num(j, "alloc_objects", s->alloc_objects.value, 0);
	lk_json_u64(j, "alloc_samples", s->alloc_bytes.samples);
	lk_json_estimate(j, "peak_bytes", &s->peak_bytes);
	lk_json_num(j, "peak_objects", s->peak_objects.value, 0);
	if (d->opts.view == LK_VIEW_OLD) {
		lk_json_estimate(j, "old_bytes", &s->old_bytes);
		lk_json_num(j, "old_objects", s->old_objects.value, 0);
		lk_json_num(j, "oldest_age_s",
			    s->oldest_age_ns < 0 ? NAN : (double)s->oldest_age_ns / 1e9, 6);
	}
	lk_json_str(j, "trend", lk_trend_name(s->growth.trend));
	lk_json_num(j, "trend_confidence", s->growth.confidence, 4);
	lk_json_num(j, "slope_bytes_per_s", s->growth.slope_bytes_s, 0);
	lk_json_u64(j, "stacks", s->nstacks);
	lk_json_stack(j, s->stack, s->funcs, s->nframes, s->site_frame);
	lk_json_close(j, '}');
}

static void losses(struct lk_json *j, const struct lk_profile_totals *t)
{
	lk_json_key(j, "losses");
	lk_json_open(j, '{', true);
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
		lk_json_u64(j, name, t->losses[i]);
	}
	lk_json_close(j, '}');
}

/* period_known: false for merged profiles of several periods. */
static void totals(struct lk_json *j, const struct lk_profile_totals *t, bool period_known)
{
	lk_json_key(j, "totals");
	lk_json_open(j, '{', false);
	lk_json_estimate(j, "alloc_bytes", &t->alloc_bytes);
	lk_json_num(j, "alloc_objects", t->alloc_objects.value, 0);
	lk_json_estimate(j, "peak_bytes", &t->peak_bytes);
	lk_json_seconds(j, "peak_time_s", t->peak_ns);
	lk_json_estimate(j, "live_bytes_end", &t->live_bytes_end);
	lk_json_num(j, "live_objects_end", t->live_objects_end.value, 0);
	lk_json_seconds(j, "duration_s", t->duration_ns);
	lk_json_num(j, "period", period_known ? (double)t->period : NAN, 0);
	lk_json_u64(j, "samples", t->samples);
	lk_json_u64(j, "frees", t->frees);
	lk_json_u64(j, "frees_unknown", t->frees_unknown);
	lk_json_u64(j, "max_rss_bytes", t->max_rss);
	lk_json_bool(j, "trailer", t->trailer);
	losses(j, t);
	lk_json_seconds(j, "off_s", t->off_ns);
	lk_json_u64(j, "off_periods", t->off_periods);
	lk_json_bool(j, "off_at_end", t->off_at_end);
	lk_json_u64(j, "marks_total", t->nmarks);
	lk_json_key(j, "marks");
	lk_json_open(j, '[', false);
	for (uint32_t i = 0; i < t->nmarks && i < LK_PROFILE_MARKS; i++) {
		lk_json_open(j, '{', true);
		lk_json_str(j, "name", t->marks[i].name);
		lk_json_seconds(j, "time_s", t->marks[i].t_ns);
		lk_json_close(j, '}');
	}
	lk_json_close(j, ']');
	lk_json_close(j, '}');
}

static void process(struct lk_json *j, const struct lk_report_process *q)
{
	size_t i = 0;

	lk_json_str(j, "file", q->path);
	lk_json_u64(j, "pid", q->pid);
	lk_json_u64(j, "ppid", q->ppid);
	lk_json_strn(j, "exe", q->exe, q->exe_len);
	lk_json_key(j, "cmdline");
	lk_json_open(j, '[', true);
	while (i < q->cmdline_len) {
		size_t n = strnlen(q->cmdline + i, q->cmdline_len - i);
		lk_json_strn(j, NULL, q->cmdline + i, n);
		i += n + 1;
	}
	lk_json_close(j, ']');
	lk_json_bool(j, "forked", q->flags & LK_HDR_FORKED);
	lk_json_bool(j, "continued", q->flags & LK_HDR_CONTINUED);
	lk_json_u64(j, "segment", q->segment);
	if (q->totals.chain.segments) { /* a rotated profile read as one (read-chain.c) */
		lk_json_u64(j, "segments", q->totals.chain.segments);
		lk_json_u64(j, "segments_missing", q->totals.chain.first);
		lk_json_u64(j, "chain_unmatched", q->totals.chain.unmatched);
		lk_json_u64(j, "chain_dropped", q->totals.chain.dropped);
	}
	lk_json_bool(j, "exact", q->flags & LK_HDR_EXACT || q->period == 1);
	lk_json_u64(j, "period", q->period);
	lk_json_num(j, "start_realtime_s", (double)q->start_realtime_ns / 1e9, 6);
	lk_json_bool(j, "trailer", q->totals.trailer);
	totals(j, &q->totals, true);
}

void lk_json_processes(struct lk_json *j, const struct lk_report *r)
{
	lk_json_key(j, "processes");
	lk_json_open(j, '[', false);
	for (size_t i = 0; i < r->nprocs; i++) {
		lk_json_open(j, '{', false);
		process(j, &r->procs[i]);
		lk_json_close(j, '}');
	}
	lk_json_close(j, ']');
}

void lk_json_wrappers(struct lk_json *j, const struct lk_report *r)
{
	lk_json_key(j, "wrappers_skipped");
	lk_json_open(j, '[', false);
	for (size_t i = 0; i < r->wrappers.n; i++) {
		const struct lk_wrapper *w = &r->wrappers.list[i];
		const struct lk_sym_frame *f = lk_funcs_frame(&r->funcs, w->func);
		lk_json_open(j, '{', true);
		lk_json_str(j, "function", f->function);
		lk_json_str(j, "file", f->file);
		lk_json_str(j, "module", f->module);
		lk_json_u64(j, "round", w->round);
		lk_json_u64(j, "depth", w->depth);
		lk_json_u64(j, "samples", w->samples);
		lk_json_num(j, "share", w->share, 6);
		lk_json_u64(j, "callers", w->callers);
		lk_json_num(j, "top_caller_share", w->top_share, 6);
		lk_json_close(j, '}');
	}
	lk_json_close(j, ']');
}

/* The tree view's: the call tree, and what --min-share left out of it. */
static void tree(struct lk_json *j, const struct lk_report *r)
{
	lk_json_u64(j, "stacks_filtered", r->stacks_filtered);
	lk_json_key(j, "tree");
	lk_json_open(j, '{', false);
	lk_json_u64(j, "nodes", lk_tree_nodes(r->tree));
	lk_json_u64(j, "pruned_nodes", r->tree_pruned.nodes);
	lk_json_num(j, "pruned_total", r->tree_pruned.total, 0);
	lk_json_value(j, "root");
	lk_json_tree(j->f, j->depth, r);
	lk_json_close(j, '}');
}

/* view_total, sites, timeline (or the tree): what a section holds besides its processes. */
static void body(struct lk_json_doc *d, const struct lk_report *r)
{
	struct lk_json *j = &d->j;

	lk_json_key(j, "view_total");
	lk_json_open(j, '{', true);
	lk_json_estimate(j, "bytes", &r->view_bytes);
	lk_json_num(j, "objects", r->view_objects.value, 0);
	lk_json_u64(j, "samples", r->view_bytes.samples);
	lk_json_close(j, '}');
	if (r->tree) {
		tree(j, r);
		return;
	}
	lk_json_u64(j, "sites_total", r->sites_total);
	lk_json_u64(j, "stacks_filtered", r->stacks_filtered);
	lk_json_wrappers(j, r);
	lk_json_key(j, "sites");
	lk_json_open(j, '[', false);
	for (size_t i = 0; i < r->nsites; i++)
		site(d, &r->sites[i], i + 1);
	lk_json_close(j, ']');
	lk_json_key(j, "timeline");
	lk_json_open(j, '[', false);
	for (size_t i = 0; i < r->ntimeline; i++) {
		const struct lk_timeline_point *p = &r->timeline[i];
		lk_json_open(j, '{', true);
		lk_json_seconds(j, "t_s", p->t_ns);
		lk_json_num(j, "heap_bytes", p->heap_bytes, 0);
		lk_json_num(j, "heap_max_bytes", p->heap_max, 0);
		lk_json_u64(j, "rss_bytes", p->rss_bytes);
		lk_json_close(j, '}');
	}
	lk_json_close(j, ']');
}

int lk_json_begin(FILE *f, const struct lk_report_opts *o, bool per_process,
		  struct lk_json_doc **ret)
{
	struct lk_json_doc *d = calloc(1, sizeof(*d));
	struct lk_json *j;

	if (!d)
		return -ENOMEM;
	*d = (struct lk_json_doc){ .opts = *o, .per_process = per_process };
	j = &d->j;
	lk_json_init(j, f);
	lk_json_open(j, '{', false);
	lk_json_str(j, "format", "leek-report");
	lk_json_u64(j, "version", 1);
	lk_json_str(j, "view", lk_report_view_name(o));
	lk_json_key(j, "options");
	lk_json_open(j, '{', true);
	lk_json_seconds(j, "at_s",
			(o->view == LK_VIEW_INUSE || o->window) && !o->at_mark ? o->at_ns : UINT64_MAX);
	lk_json_str(j, "at_mark", o->view == LK_VIEW_INUSE || o->window ? o->at_mark : NULL);
	if (o->window) {
		lk_json_seconds(j, "from_s", o->from_mark ? UINT64_MAX : o->from_ns);
		lk_json_str(j, "from_mark", o->from_mark);
	}
	lk_json_seconds(j, "age_s", o->view == LK_VIEW_OLD ? o->age_ns : UINT64_MAX);
	lk_json_u64(j, "top", o->top);
	lk_json_num(j, "min_share", o->min_share, 6);
	if (o->tree) {
		lk_json_str(j, "value", lk_view_name(o->view));
		lk_json_bool(j, "objects", o->objects);
		lk_json_bool(j, "inverted", o->inverted);
	} else
		lk_json_bool(j, "auto_wrappers", !o->no_auto_wrappers);
	lk_json_close(j, '}');
	lk_json_bool(j, "merged", o->merge);
	if (per_process) {
		lk_json_key(j, "processes");
		lk_json_open(j, '[', false);
	}
	*ret = d;
	return 0;
}

void lk_json_report(struct lk_json_doc *d, const struct lk_report *r)
{
	struct lk_json *j = &d->j;

	if (d->per_process) {
		lk_json_open(j, '{', false); /* one process, with its sites */
		process(j, &r->procs[0]);
		body(d, r);
		lk_json_close(j, '}');
		return;
	}
	lk_json_processes(j, r);
	totals(j, &r->totals, !r->periods_differ);
	body(d, r);
}

void lk_json_end(struct lk_json_doc *d)
{
	if (!d)
		return;
	if (d->per_process)
		lk_json_close(&d->j, ']');
	lk_json_close(&d->j, '}');
	fputc('\n', d->j.f);
	free(d);
}
