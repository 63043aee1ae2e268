/* diff.c: the two sides of a diff, each a report of its files merged (diff.h).
 *
 * Each side is a struct lk_report (report.h) with --merge's sums, every site kept (all_sites),
 * and no --top: the ranking is the diff's own (diff-rank.c). The profiles are loaded with the
 * moments the options ask for: live at the end, at the peak or at a time; for two moments of one
 * profile, the window between them (profile.h, struct lk_window), so that a site's change is
 * tested on the blocks that came and left rather than on two snapshots sharing their blocks.
 *
 * Never: read a profile's records (profile.c does), keep a profile after its file is added, or
 * print.
 */
#include <errno.h>
#include <stdlib.h>

#include "budget.h"
#include "diff.h"

/* The view a side's report ranks its stacks by: the one whose heaviest stack the diff shows. */
static enum lk_view side_view(const struct lk_diff_opts *o)
{
	if (o->by == LK_DIFF_BY_ALLOC)
		return LK_VIEW_ALLOC;
	if (o->mode == LK_DIFF_MOMENTS)
		return o->at_ns == UINT64_MAX ? LK_VIEW_LEAKS : LK_VIEW_INUSE;
	return o->when == LK_DIFF_PEAK ? LK_VIEW_PEAK
	       : o->when == LK_DIFF_AT ? LK_VIEW_INUSE
				       : LK_VIEW_LEAKS;
}

int lk_diff_new(const struct lk_diff_opts *o, struct lk_diff **ret)
{
	struct lk_report_opts ro = {
		.view = side_view(o),
		.at_ns = o->at_ns,
		.merge = true,
		.stacks = o->stacks,
		.no_auto_wrappers = o->no_auto_wrappers,
		.all_sites = true,
		.filter = o->filter,
	};
	struct lk_diff *d = calloc(1, sizeof(*d));
	int k;

	if (!d)
		return -ENOMEM;
	d->opts = *o;
	d->period[0] = d->period[1] = 1;
	k = lk_report_new(&ro, &d->side[0]);
	if (k >= 0 && o->mode == LK_DIFF_PROFILES)
		k = lk_report_new(&ro, &d->side[1]);
	else
		d->side[1] = d->side[0];
	if (k < 0) {
		lk_diff_free(d);
		return k;
	}
	*ret = d;
	return 0;
}

int lk_diff_add_file(struct lk_diff *d, unsigned side, struct lk_symbolizer *sym,
		     uint32_t profile, const char *path, char **err)
{
	const struct lk_diff_opts *o = &d->opts;
	struct lk_profile_opts po = {
		.at_ns = UINT64_MAX,
		.buckets = 1,        /* no growth verdicts, no timeline: a cheaper second pass */
		.no_live_list = true, /* no block is looked at alone */
		.segment_only = o->segment_only,
	};
	struct lk_report *r;
	int k;

	if (side > 1 || (side == 1 && o->mode == LK_DIFF_MOMENTS))
		return -EINVAL;
	if (o->mode == LK_DIFF_MOMENTS) {
		po.window = true;
		po.from_ns = o->from_ns;
		po.at_ns = o->at_ns;
		po.from_mark = o->from_mark;
		po.at_mark = o->at_mark;
	} else if (o->when == LK_DIFF_AT) {
		po.at_ns = o->at_ns;
	}
	r = d->side[side];
	k = lk_report_add_file(r, sym, profile, path, &po, err);
	if (k < 0)
		return k;
	if (r->procs[r->nprocs - 1].totals.period > d->period[side])
		d->period[side] = r->procs[r->nprocs - 1].totals.period;
	if (o->mode == LK_DIFF_MOMENTS)
		d->period[1] = d->period[0];
	return 0;
}

struct lk_diff *lk_diff_free(struct lk_diff *d)
{
	if (!d)
		return NULL;
	lk_budget_free(d->sites, d->sites_cap * sizeof(*d->sites));
	if (d->side[1] != d->side[0])
		lk_report_free(d->side[1]);
	lk_report_free(d->side[0]);
	free(d);
	return NULL;
}
