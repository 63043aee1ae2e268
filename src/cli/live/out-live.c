/* out-live.c: `leek watch`'s reports, as text for a person or as JSON lines for a script: one
 * object a report, on one line, so that a reader of the stream can take each line as it comes
 * (docs/json.md, "leek watch").
 *
 * Never: write anything but the report (messages go to stderr, from the command), or flush: the
 * command flushes after each report.
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "live.h"
#include "out-format.h"

static const char *title(enum lk_live_kind k)
{
	switch (k) {
	case LK_LIVE_OLD:
		return "old sites";
	case LK_LIVE_ALL:
		return "every live site";
	case LK_LIVE_HIGH_WATER:
		return "sites at the heap's high-water mark";
	default:
		return "recent frees of sampled blocks";
	}
}

static void text_frees(FILE *f, const struct lk_live_view *v)
{
	char a[32], b[32], c[32], d[32];

	if (!v->nfrees) {
		fputs("  (no sampled block freed yet)\n", f);
		return;
	}
	fprintf(f, "  %10s %10s %10s %10s  allocated at; freed at%s\n", "size", "allocated",
		"freed", "lifetime", v->nfrees && !v->frees[v->nfrees - 1].fstack
					     ? " (with LEEK_FREE_STACKS=1: leek run --free-stacks)"
					     : "");
	for (size_t i = v->nfrees; i-- > 0;) { /* the newest first */
		const struct lk_live_free *lf = &v->frees[i];
		const struct lk_free_event *e = &lf->e;
		fprintf(f, "  %10s %10s %10s %10s  ", lk_fmt_bytes(a, sizeof(a), (double)e->size),
			e->alloc_ns < 0 ? "before" : lk_fmt_time(b, sizeof(b), (double)e->alloc_ns),
			lk_fmt_time(c, sizeof(c), (double)e->free_ns),
			lk_fmt_time(d, sizeof(d), (double)e->free_ns - (double)e->alloc_ns));
		lk_text_frame(f, lf->stack[lf->site], false);
		if (lf->fstack && lf->fn) {
			fputs("; freed at ", f);
			lk_text_frame(f, lf->fstack[lf->fsite], false);
		}
		fputc('\n', f);
		if (v->opts.stacks)
			lk_text_stack(f, (const struct lk_sym_frame *const *)lf->stack, NULL, lf->n,
				      lf->site, 1);
		if (v->opts.stacks && lf->fstack && lf->fn) {
			fputs("    freed by:\n", f);
			lk_text_stack(f, (const struct lk_sym_frame *const *)lf->fstack, NULL, lf->fn,
				      lf->fsite, 1);
		}
	}
}

static void text_sites(FILE *f, const struct lk_live_view *v)
{
	const struct lk_report *r = v->r;
	enum lk_view view = r->opts.view;
	char a[32], b[48], c[32], d[32];

	if (r->nsites == 0) {
		fputs("  (no site to show)\n", f);
		return;
	}
	fprintf(f, "  # %11s  %-22s %8s %8s  %-8s %s\n", view == LK_VIEW_OLD ? "old" : "live",
		"95% interval", "objects", "samples", "trend", view == LK_VIEW_OLD ? "oldest" : "");
	for (size_t i = 0; i < r->nsites; i++) {
		const struct lk_report_site *s = &r->sites[i];
		const struct lk_estimate *e = lk_report_figure(s, view);
		snprintf(c, sizeof(c), "%s%s", e->too_few ? "~" : "",
			 lk_fmt_bytes(a, sizeof(a), e->value));
		fprintf(f, "%3zu %11s  %-22s %8s %8" PRIu64 "  %-8s", i + 1, c,
			lk_fmt_interval(b, sizeof(b), e),
			lk_fmt_count(d, sizeof(d), lk_report_figure_objects(s, view)->value),
			e->samples, lk_trend_name(s->growth.trend));
		if (view == LK_VIEW_OLD && s->oldest_age_ns >= 0)
			fprintf(f, " %s", lk_fmt_time(a, sizeof(a), (double)s->oldest_age_ns));
		fputs("\n      ", f);
		lk_text_frame(f, s->stack[s->site_frame], false);
		fputc('\n', f);
		if (r->opts.stacks)
			lk_text_stack(f, s->stack, s->funcs, s->nframes, s->site_frame, s->nstacks);
	}
	if (r->sites_total > r->nsites)
		fprintf(f, "  ... and %zu more site%s (--top)\n", r->sites_total - r->nsites,
			r->sites_total - r->nsites == 1 ? "" : "s");
}

void lk_live_text(FILE *f, const struct lk_live_view *v, const char *label)
{
	const struct lk_profile_totals *t = &v->r->totals;
	char a[32], b[48], c[32];

	fprintf(f, "leek watch: %s", title(v->opts.kind));
	if (v->opts.kind == LK_LIVE_OLD)
		fprintf(f, " (allocated %s or more before)", lk_fmt_time(a, sizeof(a),
									 (double)v->opts.age_ns));
	fprintf(f, ", at %s (%s), pid %" PRIu32 "%s\n", lk_fmt_time(c, sizeof(c), (double)v->end_ns),
		label, v->r->nprocs ? v->r->procs[0].pid : 0,
		!v->ended ? "" : v->trailer ? ", exited" : ", ended without a trailer (crash, kill)");
	fprintf(f, "  heap %s %s live, high-water %s, %" PRIu64 " sampled blocks freed\n",
		lk_fmt_bytes(a, sizeof(a), t->live_bytes_end.value),
		lk_fmt_interval(b, sizeof(b), &t->live_bytes_end),
		lk_fmt_bytes(c, sizeof(c), t->peak_bytes.value), t->frees);
	if (v->opts.known || v->opts.known_mark)
		fprintf(f, "  left out as known (%s): %s in %s live blocks\n",
			v->opts.known_mark && !v->opts.known ? "--from" : "SIGUSR1",
			lk_fmt_bytes(a, sizeof(a), t->known_bytes.value),
			lk_fmt_count(c, sizeof(c), t->known_objects.value));
	if (v->opts.kind == LK_LIVE_FREES)
		text_frees(f, v);
	else
		text_sites(f, v);
	fputc('\n', f);
}

static void json_frees(struct lk_json *j, const struct lk_live_view *v)
{
	lk_json_key(j, "frees");
	lk_json_open(j, '[', true);
	for (size_t i = v->nfrees; i-- > 0;) {
		const struct lk_live_free *lf = &v->frees[i];
		const struct lk_free_event *e = &lf->e;
		lk_json_open(j, '{', true);
		lk_json_u64(j, "size", e->size);
		lk_json_num(j, "weight", e->weight, 3);
		lk_json_num(j, "alloc_s", (double)e->alloc_ns / 1e9, 6);
		lk_json_num(j, "free_s", (double)e->free_ns / 1e9, 6);
		lk_json_num(j, "lifetime_s", ((double)e->free_ns - (double)e->alloc_ns) / 1e9, 6);
		lk_json_frame_key(j, lf->stack[lf->site]);
		lk_json_stack(j, (const struct lk_sym_frame *const *)lf->stack, NULL, lf->n,
			      lf->site);
		if (lf->fstack && lf->fn) {
			lk_json_stack_named(j, "free_stack",
					    (const struct lk_sym_frame *const *)lf->fstack, NULL,
					    lf->fn, lf->fsite);
		} else {
			lk_json_value(j, "free_stack"); /* not recorded: LEEK_FREE_STACKS */
			fputs("null", j->f);
		}
		lk_json_close(j, '}');
	}
	lk_json_close(j, ']');
}

static void json_sites(struct lk_json *j, const struct lk_live_view *v)
{
	const struct lk_report *r = v->r;
	enum lk_view view = r->opts.view;

	lk_json_u64(j, "sites_total", r->sites_total);
	lk_json_key(j, "sites");
	lk_json_open(j, '[', true);
	for (size_t i = 0; i < r->nsites; i++) {
		const struct lk_report_site *s = &r->sites[i];
		const struct lk_estimate *e = lk_report_figure(s, view);
		lk_json_open(j, '{', true);
		lk_json_u64(j, "rank", i + 1);
		lk_json_frame_key(j, s->stack[s->site_frame]);
		lk_json_estimate(j, "bytes", e);
		lk_json_num(j, "objects", lk_report_figure_objects(s, view)->value, 0);
		lk_json_u64(j, "samples", e->samples);
		lk_json_bool(j, "too_few_samples", e->too_few);
		lk_json_estimate(j, "live_bytes", &s->live_bytes);
		lk_json_str(j, "trend", lk_trend_name(s->growth.trend));
		lk_json_num(j, "trend_confidence", s->growth.confidence, 4);
		lk_json_num(j, "slope_bytes_per_s", s->growth.slope_bytes_s, 0);
		if (view == LK_VIEW_OLD)
			lk_json_num(j, "oldest_age_s",
				    s->oldest_age_ns < 0 ? NAN : (double)s->oldest_age_ns / 1e9, 6);
		lk_json_u64(j, "stacks", s->nstacks);
		lk_json_stack(j, s->stack, s->funcs, s->nframes, s->site_frame);
		lk_json_close(j, '}');
	}
	lk_json_close(j, ']');
}

void lk_live_json(FILE *f, const struct lk_live_view *v, const char *label)
{
	const struct lk_profile_totals *t = &v->r->totals;
	struct lk_json j;

	lk_json_init(&j, f);
	lk_json_open(&j, '{', true);
	lk_json_str(&j, "report", lk_live_kind_name(v->opts.kind));
	lk_json_str(&j, "reason", label);
	lk_json_u64(&j, "pid", v->r->nprocs ? v->r->procs[0].pid : 0);
	lk_json_str(&j, "file", v->r->nprocs ? v->r->procs[0].path : NULL);
	lk_json_num(&j, "t_s", (double)v->end_ns / 1e9, 6);
	lk_json_bool(&j, "ended", v->ended);
	lk_json_bool(&j, "trailer", v->trailer);
	lk_json_u64(&j, "period", t->period);
	if (v->opts.kind == LK_LIVE_OLD)
		lk_json_num(&j, "age_s", (double)v->opts.age_ns / 1e9, 6);
	lk_json_estimate(&j, "heap_bytes", &t->live_bytes_end);
	lk_json_num(&j, "high_water_bytes", t->peak_bytes.value, 0);
	lk_json_num(&j, "high_water_s", (double)t->peak_ns / 1e9, 6);
	lk_json_u64(&j, "frees_total", t->frees);
	if (v->opts.known || v->opts.known_mark) {
		lk_json_estimate(&j, "known_bytes", &t->known_bytes);
		lk_json_num(&j, "known_objects", t->known_objects.value, 0);
		lk_json_u64(&j, "known_samples", t->known_bytes.samples);
	}
	if (v->opts.kind == LK_LIVE_FREES)
		json_frees(&j, v);
	else
		json_sites(&j, v);
	lk_json_close(&j, '}');
	fputc('\n', f);
}
