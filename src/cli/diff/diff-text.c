/* diff-text.c: `leek diff` for people: what was compared, the whole's change, then the sites
 * ranked by the size of their change, in 100 columns.
 *
 * Every change comes with its 95% interval, and a '*' marks the significant ones
 * (docs/sampling.md section 12): a change without it is within the sampling noise of the two
 * estimates, once the number of sites compared is taken into account. Each side's estimate
 * carries a '~' when it stands on too few samples, as in `leek report`.
 *
 * Never: print a string from a profile or a debug file unescaped (out-format.h), or a number
 * without its unit.
 */
#include <inttypes.h>
#include <math.h>

#include "diff.h"
#include "out-format.h"

/* What the two sides are called in this diff, as table heads and in the header. */
struct names {
	char base[32], new[32], figure[24], other[24];
};

static void names_of(const struct lk_diff *d, struct names *n)
{
	char a[32];
	bool moments = d->opts.mode == LK_DIFF_MOMENTS;

	if (moments) {
		if (d->opts.from_mark)
			snprintf(n->base, sizeof(n->base), "at %.28s", d->opts.from_mark);
		else
			snprintf(n->base, sizeof(n->base), "at %s",
				 lk_fmt_time(a, sizeof(a), (double)d->opts.from_ns));
		if (d->opts.at_mark)
			snprintf(n->new, sizeof(n->new), "at %.28s", d->opts.at_mark);
		else if (d->opts.at_ns == UINT64_MAX)
			snprintf(n->new, sizeof(n->new), "at the end");
		else
			snprintf(n->new, sizeof(n->new), "at %s",
				 lk_fmt_time(a, sizeof(a), (double)d->opts.at_ns));
	} else {
		snprintf(n->base, sizeof(n->base), "base");
		snprintf(n->new, sizeof(n->new), "new");
	}
	snprintf(n->figure, sizeof(n->figure), "%s",
		 d->opts.by == LK_DIFF_BY_ALLOC ? "allocated" : "live");
	snprintf(n->other, sizeof(n->other), "%s",
		 d->opts.by == LK_DIFF_BY_ALLOC ? "live change"
		 : moments			 ? "allocated"
						 : "alloc change");
}

static void print_processes(FILE *f, const char *label, const struct lk_report *r)
{
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct lk_report_process *q = &r->procs[i];
		fprintf(f, "%-12s ", i == 0 ? label : "");
		lk_text_escaped(f, q->path);
		fputs(": ", f);
		lk_text_escaped(f, lk_site_basename(q->exe));
		fprintf(f, ", pid %" PRIu32 "%s\n", q->pid,
			q->totals.trailer ? "" : ", no trailer (crashed, killed or exec'd)");
	}
}

static void print_period(FILE *f, uint64_t period)
{
	char a[32];

	if (period <= 1)
		fputs("exact", f);
	else
		fprintf(f, "%s", lk_fmt_bytes(a, sizeof(a), (double)period));
}

/* A figure of the whole: each side's estimate and the change, with its test. */
static void print_whole(FILE *f, const char *label, const struct lk_diff_change *c,
			const struct names *n, bool moments_alloc)
{
	char a[32], b[48];

	if (moments_alloc) {
		fprintf(f, "%-12s between: ", label);
		lk_text_estimate(f, &c->new);
		fputc('\n', f);
		return;
	}
	fprintf(f, "%-12s %s: ", label, n->base);
	lk_text_estimate(f, &c->base);
	fprintf(f, "\n%-12s %s: ", "", n->new);
	lk_text_estimate(f, &c->new);
	fprintf(f, "\n%-12s change %s %s", "", lk_fmt_change(a, sizeof(a), c->change.value),
		lk_fmt_change_interval(b, sizeof(b), c->change.lo, c->change.hi));
	if (c->tested && c->change.p < 1e-4)
		fprintf(f, ", %ssignificant (p < 0.0001)", c->significant ? "" : "not ");
	else if (c->tested)
		fprintf(f, ", %ssignificant (p %.2g)", c->significant ? "" : "not ", c->change.p);
	fputc('\n', f);
}

/* Whether r's wrapper w is in the list of the other side o (the same function). */
static bool listed(const struct lk_report *o, const struct lk_report *r, const struct lk_wrapper *w)
{
	for (size_t i = 0; i < o->wrappers.n; i++)
		if (lk_site_func_compare(lk_funcs_frame(&o->funcs, o->wrappers.list[i].func),
					 lk_funcs_frame(&r->funcs, w->func)) == 0)
			return true;
	return false;
}

/* The wrappers the sites skip: found over the stacks of both sides together (report.h,
 * lk_report_share_wrappers), each side listing those it has; the new side's, then the base's
 * that the new side does not have. */
static void print_wrappers(FILE *f, const struct lk_diff *d)
{
	const struct lk_report *side[2] = { d->side[1], d->side[0] };
	bool any = false;

	for (size_t k = 0; k < (side[0] == side[1] ? 1 : 2); k++)
		for (size_t i = 0; i < side[k]->wrappers.n; i++) {
			const struct lk_wrapper *w = &side[k]->wrappers.list[i];
			if (k == 1 && listed(side[0], side[1], w))
				continue;
			if (!any)
				fputs("wrappers     skipped, by what the stacks of both sides show "
				      "(--no-auto-wrappers keeps them):\n", f);
			fputs("             ", f);
			lk_text_frame(f, lk_funcs_frame(&side[k]->funcs, w->func), false);
			fputc('\n', f);
			any = true;
		}
}

static void print_header(FILE *f, const struct lk_diff *d, const struct names *n)
{
	bool moments = d->opts.mode == LK_DIFF_MOMENTS;
	char a[32];

	if (moments)
		fprintf(f, "== diff: live bytes %s and %s ==\n", n->base, n->new);
	else if (d->opts.when == LK_DIFF_PEAK)
		fputs("== diff: live bytes at each profile's peak ==\n", f);
	else if (d->opts.when == LK_DIFF_AT)
		fprintf(f, "== diff: live bytes %s after each profile's start ==\n",
			lk_fmt_time(a, sizeof(a), (double)d->opts.at_ns));
	else
		fputs("== diff: live bytes at the end ==\n", f);
	if (moments) {
		print_processes(f, "profile", d->side[0]);
		fputs("period       ", f);
		print_period(f, d->period[0]);
	} else {
		print_processes(f, "base", d->side[0]);
		print_processes(f, "new", d->side[1]);
		fputs("periods      base ", f);
		print_period(f, d->period[0]);
		fputs(", new ", f);
		print_period(f, d->period[1]);
	}
	fputc('\n', f);
	print_whole(f, "live", &d->live, n, false);
	print_whole(f, "allocated", &d->alloc, n, moments);
	fprintf(f, "sites        %zu compared, %zu with a significant change of %s bytes (at a "
		"false\n             discovery rate of %.0f%%: docs/sampling.md section 12)",
		d->sites_total, d->significant, n->figure, 100 * LK_CHANGE_FDR);
	if (d->nsites < d->sites_total)
		fprintf(f, "; the top %zu shown", d->nsites);
	if (d->stacks_filtered)
		fprintf(f, "; %zu stack%s left out by --focus/--ignore", d->stacks_filtered,
			d->stacks_filtered == 1 ? "" : "s");
	fputs(".\n", f);
	print_wrappers(f, d);
}

/* An estimate in a column: "~1.20 MiB", or "-" without a sample. */
static const char *cell(char *buf, size_t size, const struct lk_estimate *e)
{
	char a[32];

	if (!e->samples)
		return snprintf(buf, size, "-"), buf;
	snprintf(buf, size, "%s%s", e->too_few ? "~" : "", lk_fmt_bytes(a, sizeof(a), e->value));
	return buf;
}

static const char *marked(char *buf, size_t size, const struct lk_diff_change *c)
{
	char a[32];

	snprintf(buf, size, "%s %s", c->significant ? "*" : " ",
		 lk_fmt_change(a, sizeof(a), c->change.value));
	return buf;
}


static void print_sites(FILE *f, const struct lk_diff *d, const struct names *n)
{
	enum lk_diff_by by = d->opts.by;
	bool moments = d->opts.mode == LK_DIFF_MOMENTS;
	char a[32], b[32], c[40], e[48], g[40];

	if (d->nsites == 0) {
		fputs("\n  (no site to show)\n", f);
		return;
	}
	fprintf(f, "\n  # %11s  %11s  %12s  %-28s %12s\n", n->base, n->new, "change",
		"95% interval of the change", n->other);
	for (size_t i = 0; i < d->nsites; i++) {
		const struct lk_diff_site *s = &d->sites[i];
		const struct lk_diff_change *x = lk_diff_figure(s, by);
		enum lk_diff_by other = by == LK_DIFF_BY_LIVE ? LK_DIFF_BY_ALLOC : LK_DIFF_BY_LIVE;
		const struct lk_diff_change *o = lk_diff_figure(s, other);
		if (moments && by == LK_DIFF_BY_LIVE)
			cell(g, sizeof(g), &o->new);
		else
			marked(g, sizeof(g), o);
		fprintf(f, "%3zu %11s  %11s  %12s  %-28s %12s\n      ", i + 1,
			cell(a, sizeof(a), &x->base), cell(b, sizeof(b), &x->new),
			marked(c, sizeof(c), x),
			lk_fmt_change_interval(e, sizeof(e), x->change.lo, x->change.hi), g);
		lk_text_frame(f, s->stack[s->site_frame], false);
		fputc('\n', f);
		if (d->opts.stacks)
			lk_text_stack(f, s->stack, s->funcs, s->nframes, s->site_frame, s->nstacks);
	}
	fputs("\n  * a significant change; ~ an estimate from too few samples to be more than an "
	      "order\n    of magnitude\n", f);
}

void lk_diff_text(FILE *f, const struct lk_diff *d)
{
	struct names n;

	names_of(d, &n);
	print_header(f, d, &n);
	print_sites(f, d, &n);
}
