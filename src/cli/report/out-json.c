/* out-json.c: `leek report --format json`, the document docs/json.md describes.
 *
 * The output is the contract with scripts: a key keeps its name, type and meaning, new keys may
 * be added, and the order of sites is the report's ranking (report-view.c), so two runs over the
 * same profile print the same bytes. Numbers are raw (bytes, objects, seconds), never human units.
 *
 * PROCESS, TOTALS and FRAME are written here for `leek diff`'s document too (diff-json.c).
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

static void frame(struct lk_json *j, const struct lk_sym_frame *f, bool site)
{
	lk_json_open(j, '{', true);
	lk_json_frame_key(j, f);
	lk_json_bool(j, "inlined", f->inlined);
	if (site)
		lk_json_bool(j, "site", true);
	lk_json_close(j, '}');
}

static void site(struct lk_json_doc *d, const struct lk_report_site *s, size_t rank)
{
	const struct lk_estimate *fig = lk_report_figure(s, d->opts.view);

	lk_json_open(&d->j, '{', false);
	lk_json_u64(&d->j, "rank", rank);
	lk_json_frame_key(&d->j, s->stack[s->site_frame]);
	lk_json_u64(&d->j, "samples", fig->samples);
	lk_json_bool(&d->j, "too_few_samples", fig->too_few);
	lk_json_num(&d->j, "share", s->share, 6);
	lk_json_estimate(&d->j, "live_bytes", &s->live_bytes);
	lk_json_num(&d->j, "live_objects", s->live_objects.value, 0);
	lk_json_u64(&d->j, "live_samples", s->live_bytes.samples);
	lk_json_estimate(&d->j, "alloc_bytes", &s->alloc_bytes);
	lk_json_num(&d->j, "alloc_objects", s->alloc_objects.value, 0);
	lk_json_u64(&d->j, "alloc_samples", s->alloc_bytes.samples);
	lk_json_estimate(&d->j, "peak_bytes", &s->peak_bytes);
	lk_json_num(&d->j, "peak_objects", s->peak_objects.value, 0);
	if (d->opts.view == LK_VIEW_OLD) {
		lk_json_estimate(&d->j, "old_bytes", &s->old_bytes);
		lk_json_num(&d->j, "old_objects", s->old_objects.value, 0);
		lk_json_num(&d->j, "oldest_age_s",
			    s->oldest_age_ns < 0 ? NAN : (double)s->oldest_age_ns / 1e9, 6);
	}
	lk_json_str(&d->j, "trend", lk_trend_name(s->growth.trend));
	lk_json_num(&d->j, "trend_confidence", s->growth.confidence, 4);
	lk_json_num(&d->j, "slope_bytes_per_s", s->growth.slope_bytes_s, 0);
	lk_json_u64(&d->j, "stacks", s->nstacks);
	lk_json_stack(&d->j, s->stack, s->nframes, s->site_frame);
	lk_json_close(&d->j, '}');
}

void lk_json_stack(struct lk_json *j, const struct lk_sym_frame *const *stack, size_t n,
		   size_t site_frame)
{
	lk_json_key(j, "stack");
	lk_json_open(j, '[', false);
	for (size_t i = 0; i < n; i++)
		frame(j, stack[i], i == site_frame);
	lk_json_close(j, ']');
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

void lk_json_totals(struct lk_json *j, const struct lk_profile_totals *t, bool period_known)
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
	lk_json_close(j, '}');
}

void lk_json_process(struct lk_json *j, const struct lk_report_process *q)
{
	size_t i = 0;

	lk_json_str(j, "file", q->path);
	lk_json_u64(j, "pid", q->pid);
	lk_json_u64(j, "ppid", q->ppid);
	lk_json_value(j, "exe");
	lk_json_write_string(j->f, q->exe, q->exe_len);
	lk_json_key(j, "cmdline");
	lk_json_open(j, '[', true);
	while (i < q->cmdline_len) {
		size_t n = strnlen(q->cmdline + i, q->cmdline_len - i);
		lk_json_value(j, NULL);
		lk_json_write_string(j->f, q->cmdline + i, n);
		i += n + 1;
	}
	lk_json_close(j, ']');
	lk_json_bool(j, "forked", q->flags & LK_HDR_FORKED);
	lk_json_bool(j, "continued", q->flags & LK_HDR_CONTINUED);
	lk_json_bool(j, "exact", q->flags & LK_HDR_EXACT || q->period == 1);
	lk_json_u64(j, "period", q->period);
	lk_json_num(j, "start_realtime_s", (double)q->start_realtime_ns / 1e9, 6);
	lk_json_bool(j, "trailer", q->totals.trailer);
	lk_json_totals(j, &q->totals, true);
}

/* view_total, sites, timeline: what a section holds besides its processes. */
static void body(struct lk_json_doc *d, const struct lk_report *r)
{
	lk_json_key(&d->j, "view_total");
	lk_json_open(&d->j, '{', true);
	lk_json_estimate(&d->j, "bytes", &r->view_bytes);
	lk_json_num(&d->j, "objects", r->view_objects.value, 0);
	lk_json_u64(&d->j, "samples", r->view_bytes.samples);
	lk_json_close(&d->j, '}');
	lk_json_u64(&d->j, "sites_total", r->sites_total);
	lk_json_u64(&d->j, "stacks_filtered", r->stacks_filtered);
	lk_json_key(&d->j, "sites");
	lk_json_open(&d->j, '[', false);
	for (size_t i = 0; i < r->nsites; i++)
		site(d, &r->sites[i], i + 1);
	lk_json_close(&d->j, ']');
	lk_json_key(&d->j, "timeline");
	lk_json_open(&d->j, '[', false);
	for (size_t i = 0; i < r->ntimeline; i++) {
		const struct lk_timeline_point *p = &r->timeline[i];
		lk_json_open(&d->j, '{', true);
		lk_json_seconds(&d->j, "t_s", p->t_ns);
		lk_json_num(&d->j, "heap_bytes", p->heap_bytes, 0);
		lk_json_num(&d->j, "heap_max_bytes", p->heap_max, 0);
		lk_json_u64(&d->j, "rss_bytes", p->rss_bytes);
		lk_json_close(&d->j, '}');
	}
	lk_json_close(&d->j, ']');
}

int lk_json_begin(FILE *f, const struct lk_report_opts *o, bool per_process,
		  struct lk_json_doc **ret)
{
	struct lk_json_doc *d = calloc(1, sizeof(*d));

	if (!d)
		return -ENOMEM;
	*d = (struct lk_json_doc){ .opts = *o, .per_process = per_process };
	lk_json_init(&d->j, f);
	lk_json_open(&d->j, '{', false);
	lk_json_str(&d->j, "format", "leek-report");
	lk_json_u64(&d->j, "version", 1);
	lk_json_str(&d->j, "view", lk_view_name(o->view));
	lk_json_key(&d->j, "options");
	lk_json_open(&d->j, '{', true);
	lk_json_seconds(&d->j, "at_s", o->view == LK_VIEW_INUSE ? o->at_ns : UINT64_MAX);
	lk_json_seconds(&d->j, "age_s", o->view == LK_VIEW_OLD ? o->age_ns : UINT64_MAX);
	lk_json_u64(&d->j, "top", o->top);
	lk_json_num(&d->j, "min_share", o->min_share, 6);
	lk_json_close(&d->j, '}');
	lk_json_bool(&d->j, "merged", o->merge);
	if (per_process) {
		lk_json_key(&d->j, "processes");
		lk_json_open(&d->j, '[', false);
	}
	*ret = d;
	return 0;
}

void lk_json_report(struct lk_json_doc *d, const struct lk_report *r)
{
	if (d->per_process) {
		lk_json_open(&d->j, '{', false); /* one process, with its sites */
		lk_json_process(&d->j, &r->procs[0]);
		body(d, r);
		lk_json_close(&d->j, '}');
		return;
	}
	lk_json_key(&d->j, "processes");
	lk_json_open(&d->j, '[', false);
	for (size_t i = 0; i < r->nprocs; i++) {
		lk_json_open(&d->j, '{', false);
		lk_json_process(&d->j, &r->procs[i]);
		lk_json_close(&d->j, '}');
	}
	lk_json_close(&d->j, ']');
	lk_json_totals(&d->j, &r->totals, !r->periods_differ);
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
