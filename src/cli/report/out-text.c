/* out-text.c: `leek report` for people: a header per section, then the ranked sites, in 100
 * columns (80 without --stacks), or the tree (out-tree.c), and the few lines `leek run` prints
 * when its program ends.
 *
 * Every estimate comes with its 95% interval and the samples behind it, and an estimate from too
 * few samples (lk_estimate.too_few) carries a '~', so that no number reads as more precise than
 * it is. Byte figures are the bytes the program asked for, in binary units (KiB, MiB).
 *
 * Never: print a string from a profile or a debug file unescaped (lk_print_escaped: a file name
 * could hold terminal escapes), or a number without its unit.
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "out-format.h"
#include "report.h"
#include "util.h"

static void print_cmdline(FILE *f, const struct lk_report_process *q)
{
	lk_print_cmdline(f, q->cmdline, q->cmdline_len);
	if (q->flags & LK_HDR_CMDLINE_CUT)
		fputs(" [cut]", f);
}

/* A rotated profile read as one timeline (read-chain.c). */
static void print_chain(FILE *f, const struct lk_chain_stats *c)
{
	uint32_t last = c->first + c->segments - 1;

	if (c->segments > 1)
		fprintf(f, "segments     %" PRIu32 "-%" PRIu32 " of a rotated profile, read as one",
			c->first, last);
	else
		fprintf(f, "segments     %" PRIu32 " of a rotated profile, the newest", c->first);
	if (c->first == 1)
		fputs("\nmissing      segment 0 (deleted: LEEK_KEEP): what was allocated and freed "
		      "before\n             segment 1 is not in the totals; blocks live then are "
		      "inherited", f);
	else if (c->first)
		fprintf(f, "\nmissing      segments 0-%" PRIu32 " (deleted: LEEK_KEEP): what was "
			"allocated and freed before\n             segment %" PRIu32 " is not in the "
			"totals; blocks live then are inherited", c->first - 1, c->first);
	if (c->unmatched || c->dropped)
		fprintf(f, "\nunjoined     %" PRIu64 " inherited blocks continue none before, %" PRIu64
			" live blocks were not inherited (a damaged chain)", c->unmatched, c->dropped);
	fputc('\n', f);
}

static void print_header(FILE *f, const struct lk_report *r)
{
	const struct lk_profile_totals *t = &r->totals;
	const struct lk_report_process *q = &r->procs[0];
	char a[32], b[32];
	bool any = false;

	if (r->nprocs == 1) {
		fputs("== ", f);
		lk_text_escaped(f, q->path);
		fputs(": ", f);
		lk_text_escaped(f, lk_site_basename(q->exe));
		fprintf(f, ", pid %" PRIu32 " (ppid %" PRIu32 ")%s%s ==\ncommand      ", q->pid,
			q->ppid, q->flags & LK_HDR_FORKED ? ", forked" : "",
			q->flags & LK_HDR_CONTINUED ? ", continued after its file was cut" : "");
		print_cmdline(f, q);
		fputc('\n', f);
		if (q->totals.chain.segments)
			print_chain(f, &q->totals.chain);
		else if (q->segment)
			fprintf(f, "segment      %" PRIu32 " of a rotated profile: the live view is "
				"whole (it began with the blocks\n             live then); allocated, "
				"freed and the timeline are its own, not segments 0-%" PRIu32 "'s\n",
				q->segment, q->segment - 1);
	} else {
		fprintf(f, "== merged: %zu processes ==\n", r->nprocs);
		for (size_t i = 0; i < r->nprocs; i++) {
			fprintf(f, "process      pid %-7" PRIu32 " ", r->procs[i].pid);
			lk_text_escaped(f, lk_site_basename(r->procs[i].exe));
			fputs("  ", f);
			lk_text_escaped(f, r->procs[i].path);
			fputc('\n', f);
		}
	}
	fprintf(f, "duration     %s, ", lk_fmt_time(a, sizeof(a), (double)t->duration_ns));
	if (r->periods_differ)
		fputs("several periods", f);
	else if (t->period <= 1)
		fputs("exact (period 1: every allocation)", f);
	else
		fprintf(f, "period %s", lk_fmt_bytes(b, sizeof(b), (double)t->period));
	fprintf(f, ", %" PRIu64 " samples, %" PRIu64 " frees\nallocated    ", t->samples, t->frees);
	lk_text_estimate(f, &t->alloc_bytes);
	fprintf(f, "; %s objects\n%s", lk_fmt_count(a, sizeof(a), t->alloc_objects.value),
		r->nprocs > 1 ? "peak (sum)   " : "peak         ");
	lk_text_estimate(f, &t->peak_bytes);
	if (t->peak_ns != UINT64_MAX && t->peak_bytes.samples)
		fprintf(f, "; at %s", lk_fmt_time(a, sizeof(a), (double)t->peak_ns));
	fputs("\nlive at end  ", f);
	lk_text_estimate(f, &t->live_bytes_end);
	fprintf(f, "; %s objects\nmax RSS      %s%s\nlosses      ",
		lk_fmt_count(a, sizeof(a), t->live_objects_end.value),
		lk_fmt_bytes(b, sizeof(b), (double)t->max_rss), r->nprocs > 1 ? " (sum)" : "");
	for (unsigned i = 1; i <= LK_CNT_MAX; i++) {
		const char *name = lk_counter_name(i);
		if (!t->losses[i] || i == LK_CNT_SAMPLES || i == LK_CNT_FREES)
			continue;
		fprintf(f, " %s=%" PRIu64, name ? name : "?", t->losses[i]);
		any = true;
	}
	fputs(any ? "\n" : " none\n", f);
	if (t->off_periods) {
		fprintf(f, "off          %s of the %s", lk_fmt_time(a, sizeof(a), (double)t->off_ns),
			lk_fmt_time(b, sizeof(b), (double)t->duration_ns));
		fprintf(f, ", %" PRIu32 " period%s%s: nothing allocated then is counted\n",
			t->off_periods, t->off_periods == 1 ? "" : "s",
			t->off_at_end ? " (off at the end)" : "");
	}
	if (t->nmarks) {
		fputs("marks       ", f);
		for (uint32_t i = 0; i < t->nmarks && i < LK_PROFILE_MARKS; i++) {
			fprintf(f, "%s %s at %s", i ? "," : "", t->marks[i].name,
				lk_fmt_time(a, sizeof(a), (double)t->marks[i].t_ns));
		}
		if (t->nmarks > LK_PROFILE_MARKS)
			fprintf(f, ", and %" PRIu32 " more (leek dump)", t->nmarks - LK_PROFILE_MARKS);
		fputc('\n', f);
	}
	if (t->frees_unknown)
		fprintf(f, "warning      %" PRIu64 " frees of blocks that were not live\n",
			t->frees_unknown);
	if (!t->trailer)
		fputs("warning      no trailer: the process crashed, was killed or exec'd; \"end\" "
		      "is its last\n             complete record\n", f);
}

/* The wrappers the sites skip because the stacks showed them to be (wrappers.h). */
static void print_wrappers(FILE *f, const struct lk_report *r)
{
	const struct lk_wrappers *w = &r->wrappers;

	if (!w->n)
		return;
	fputs("Skipped as wrappers, by what the stacks show (--no-auto-wrappers keeps them):\n", f);
	for (size_t i = 0; i < w->n; i++) {
		const struct lk_wrapper *x = &w->list[i];
		fputs("  ", f);
		lk_text_frame(f, lk_funcs_frame(&r->funcs, x->func), false);
		if (x->depth)
			fputs(": the only caller of the one above\n", f);
		else
			fprintf(f, ": the site of %.1f%% of the samples, under %zu callers\n",
				100 * x->share, x->callers);
	}
}

/* A moment of --from, --to or --at: "mark NAME", "the end", or "T after start". */
static void moment(FILE *f, uint64_t ns, const char *mark)
{
	char a[32];

	if (mark)
		fprintf(f, "mark %s", mark);
	else if (ns == UINT64_MAX)
		fputs("the end", f);
	else
		fprintf(f, "%s after start", lk_fmt_time(a, sizeof(a), (double)ns));
}

void lk_text_view_title(FILE *f, const struct lk_report *r)
{
	const struct lk_report_opts *o = &r->opts;
	char a[32];

	if (o->window && o->view == LK_VIEW_ALLOC) {
		fputs("allocated after ", f);
		moment(f, o->from_ns, o->from_mark);
		fputs(" up to ", f);
		moment(f, o->at_ns, o->at_mark);
		fputs(", freed or not", f);
		return;
	}
	if (o->window) {
		fputs("heap live at ", f);
		moment(f, o->at_ns, o->at_mark);
		fputs(" and allocated after ", f);
		moment(f, o->from_ns, o->from_mark);
		return;
	}
	switch (o->view) {
	case LK_VIEW_PEAK:
		if (r->totals.peak_ns != UINT64_MAX)
			fprintf(f, "heap live at its peak, %s after start",
				lk_fmt_time(a, sizeof(a), (double)r->totals.peak_ns));
		else
			fputs("heap live at each process's own peak", f);
		break;
	case LK_VIEW_INUSE:
		if (o->at_mark)
			fprintf(f, "heap live at mark %s", o->at_mark);
		else
			fprintf(f, "heap live %s after start",
				lk_fmt_time(a, sizeof(a), (double)o->at_ns));
		break;
	case LK_VIEW_ALLOC:
		fputs("allocated in all, freed or not", f);
		break;
	case LK_VIEW_OLD:
		fprintf(f, "live at the end, allocated more than %s before it",
			lk_fmt_time(a, sizeof(a), (double)o->age_ns));
		break;
	case LK_VIEW_GROWTH:
		fputs("live at the end, sites by trend", f);
		break;
	default:
		fputs("heap live at the end", f);
		break;
	}
}

/* The view's title line, with the total its shares are of. */
static void print_view(FILE *f, const struct lk_report *r)
{
	const struct lk_report_opts *o = &r->opts;

	fprintf(f, "\n%s: ", lk_view_name(o->view));
	lk_text_view_title(f, r);
	fputs(": ", f);
	lk_text_estimate(f, &r->view_bytes);
	fprintf(f, "\n%zu site%s", r->sites_total, r->sites_total == 1 ? "" : "s");
	if (r->nsites < r->sites_total)
		fprintf(f, ", the top %zu shown", r->nsites);
	if (r->stacks_filtered)
		fprintf(f, "; %zu stack%s left out by --focus/--ignore", r->stacks_filtered,
			r->stacks_filtered == 1 ? "" : "s");
	for (size_t i = 0; i < r->nsites; i++)
		if (lk_report_figure(&r->sites[i], o->view)->too_few) {
			fputs(". ~ marks estimates from too few samples: an order of magnitude only", f);
			break;
		}
	fputs(".\n", f);
	print_wrappers(f, r);
}

static void print_sites(FILE *f, const struct lk_report *r)
{
	static const char *const heads[_LK_VIEW_MAX] = {
		[LK_VIEW_LEAKS] = "live",  [LK_VIEW_PEAK] = "at peak", [LK_VIEW_INUSE] = "live",
		[LK_VIEW_ALLOC] = "alloc", [LK_VIEW_OLD] = "old",      [LK_VIEW_GROWTH] = "live",
	};
	enum lk_view v = r->opts.view;
	char a[32], b[48], c[32], d[32];

	if (r->nsites == 0) {
		fputs("\n  (no site to show)\n", f);
		return;
	}
	fprintf(f, "\n  # %11s  %-22s %6s %8s %8s", heads[v], "95% interval", "share", "objects",
		"samples");
	if (v == LK_VIEW_LEAKS)
		fputs("  trend", f);
	else if (v == LK_VIEW_GROWTH)
		fputs("  trend (confidence)   slope", f);
	else if (v == LK_VIEW_OLD)
		fputs("   oldest", f);
	fputc('\n', f);
	for (size_t i = 0; i < r->nsites; i++) {
		const struct lk_report_site *s = &r->sites[i];
		const struct lk_estimate *e = lk_report_figure(s, v);
		snprintf(c, sizeof(c), "%s%s", e->too_few ? "~" : "", lk_fmt_bytes(a, sizeof(a), e->value));
		fprintf(f, "%3zu %11s  %-22s %5.1f%% %8s %8" PRIu64, i + 1, c,
			lk_fmt_interval(b, sizeof(b), e), 100 * s->share,
			lk_fmt_count(d, sizeof(d), lk_report_figure_objects(s, v)->value), e->samples);
		if (v == LK_VIEW_LEAKS)
			fprintf(f, "  %s", lk_trend_name(s->growth.trend));
		else if (v == LK_VIEW_GROWTH) {
			snprintf(c, sizeof(c), "%s (%.0f%%)", lk_trend_name(s->growth.trend),
				 100 * s->growth.confidence);
			fprintf(f, "  %-19s %s%s/s", c, s->growth.slope_bytes_s < 0 ? "-" : "+",
				lk_fmt_bytes(a, sizeof(a), fabs(s->growth.slope_bytes_s)));
		} else if (v == LK_VIEW_OLD && s->oldest_age_ns >= 0)
			fprintf(f, "  %7s", lk_fmt_time(a, sizeof(a), (double)s->oldest_age_ns));
		fputs("\n      ", f);
		lk_text_frame(f, s->stack[s->site_frame], false);
		fputc('\n', f);
		if (r->opts.stacks)
			lk_text_stack(f, s->stack, s->funcs, s->nframes, s->site_frame, s->nstacks);
	}
}

void lk_text_report(FILE *f, const struct lk_report *r)
{
	char a[32], b[32];

	print_header(f, r);
	if (r->tree) {
		lk_text_tree(f, r);
		return;
	}
	if (r->opts.view != LK_VIEW_TIMELINE) {
		print_view(f, r);
		print_sites(f, r);
		return;
	}
	fputc('\n', f);
	lk_chart_timeline(f, r->timeline, r->ntimeline, r->opts.ascii);
	if (r->totals.peak_ns != UINT64_MAX)
		fprintf(f, "peak %s at %s; ", lk_fmt_bytes(a, sizeof(a), r->totals.peak_bytes.value),
			lk_fmt_time(b, sizeof(b), (double)r->totals.peak_ns));
	fprintf(f, "x: time since %s start\n", r->nprocs > 1 ? "the first process's" : "the");
}

void lk_text_run_summary(FILE *f, const struct lk_report *r)
{
	const struct lk_profile_totals *t = &r->totals;
	const struct lk_report_process *q = &r->procs[0];
	char a[32], b[32];

	fputs("leek: ", f);
	lk_text_escaped(f, q->path);
	fputs(": ", f);
	lk_text_escaped(f, lk_site_basename(q->exe));
	fprintf(f, ", pid %" PRIu32 ", %s, ", q->pid, lk_fmt_time(a, sizeof(a), (double)t->duration_ns));
	if (t->samples == 0 && t->period > 1)
		/* No sample: with 95% confidence it allocated less than 3 T (docs/sampling.md 5). */
		fprintf(f, "no sample (it allocated less than about %s)",
			lk_fmt_bytes(b, sizeof(b), 3.0 * (double)t->period));
	else
		fprintf(f, "%" PRIu64 " sample%s", t->samples, t->samples == 1 ? "" : "s");
	fputs(t->trailer ? "\n" : ", no trailer (crashed, killed or exec'd)\n", f);
	if (t->samples == 0)
		return;
	fputs("  allocated     ", f);
	lk_text_estimate(f, &t->alloc_bytes);
	fputs("\n  peak          ", f);
	lk_text_estimate(f, &t->peak_bytes);
	fprintf(f, "; at %s\n  live at end   ", lk_fmt_time(a, sizeof(a), (double)t->peak_ns));
	lk_text_estimate(f, &t->live_bytes_end);
	fputc('\n', f);
	for (size_t i = 0; i < r->nsites; i++) {
		const struct lk_report_site *s = &r->sites[i];
		snprintf(b, sizeof(b), "%s%s", s->live_bytes.too_few ? "~" : "",
			 lk_fmt_bytes(a, sizeof(a), s->live_bytes.value));
		fprintf(f, "  %-13s %9s %5.1f%%  ", i == 0 ? "top sites" : "", b, 100 * s->share);
		lk_text_frame(f, s->stack[s->site_frame], false);
		fputc('\n', f);
	}
	for (size_t i = 0; i < r->wrappers.n; i++) {
		fprintf(f, "  %-13s ", i == 0 ? "wrappers" : "");
		lk_text_frame(f, lk_funcs_frame(&r->funcs, r->wrappers.list[i].func), false);
		fputs(i == 0 ? " (skipped)\n" : "\n", f);
	}
}
