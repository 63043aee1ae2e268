/* diff-rank.c: the end of a diff (diff.h): the sites of the two sides matched by key, each change
 * tested, the p-values adjusted for the number of sites, the sites ranked and the top kept.
 *
 * A change is tested on two independent estimates (lk_change_test, docs/sampling.md section 12):
 * the two sides' figures for two profiles; for two moments of one profile, the blocks that left
 * and the blocks that came between them, whose difference is the change, since the blocks live
 * at both moments cancel. Over the sites compared, the q-values of Benjamini and Hochberg keep
 * the expected share of false changes among those flagged at LK_CHANGE_FDR, and the chance of
 * flagging any site when nothing changed at the same 5%. The order is total and stable: by the
 * size of the figure's change, then of the other figure's, then by site key.
 *
 * Never: symbolize, read a profile, or print.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "budget.h"
#include "diff.h"

static const struct lk_sym_frame *key_of(const struct lk_report_site *s)
{
	return s->stack[s->site_frame];
}

static int cmp_by_key(const void *a, const void *b)
{
	return lk_site_key_compare(key_of(*(const struct lk_report_site *const *)a),
				   key_of(*(const struct lk_report_site *const *)b));
}

/* Pointers to the side's sites, sorted by key (from the budget, at least one). NULL and errno. */
static const struct lk_report_site **by_key(const struct lk_report *r)
{
	size_t n = r->nsites ? r->nsites : 1;
	const struct lk_report_site **v = lk_budget_malloc(n * sizeof(*v));

	if (!v)
		return NULL;
	for (size_t i = 0; i < r->nsites; i++)
		v[i] = &r->sites[i];
	qsort(v, r->nsites, sizeof(*v), cmp_by_key);
	return v;
}

static const struct lk_estimate *live_of(const struct lk_diff *d, const struct lk_report_site *s)
{
	return d->opts.when == LK_DIFF_PEAK ? &s->peak_bytes : &s->live_bytes;
}

/* The change shown is new - base exactly, with the test's interval around it. */
void lk_diff_test(const struct lk_diff *d, struct lk_diff_change *c, const struct lk_estimate *x1,
		  const struct lk_estimate *x2)
{
	double shift;

	lk_estimate_finish(&c->base);
	lk_estimate_finish(&c->new);
	lk_change_test(x1, d->period[0], x2, d->period[1], &c->change);
	shift = c->new.value - c->base.value - c->change.value; /* rounding: 0 for profiles */
	c->change.value += shift;
	c->change.lo += shift;
	c->change.hi += shift;
	c->q = c->change.p;
	c->tested = x1->samples + x2->samples > 0; /* else there is nothing to test: p = 1 */
}

void lk_diff_allocated(struct lk_diff_change *c, const struct lk_estimate *e)
{
	*c = (struct lk_diff_change){ .new = *e };
	lk_estimate_finish(&c->base);
	c->change = (struct lk_change){ .value = e->value, .lo = e->lo, .hi = e->hi, .p = NAN };
}

/* Site s of the diff from base's site b and new's site n (either may be NULL): its figures and
 * tests. False if it has nothing to compare. */
static bool compare_site(struct lk_diff *d, struct lk_diff_site *s, const struct lk_report_site *b,
			 const struct lk_report_site *n)
{
	const struct lk_report_site *shown = n ? n : b;

	*s = (struct lk_diff_site){ .stack = shown->stack, .funcs = shown->funcs,
				    .nframes = shown->nframes,
				    .site_frame = shown->site_frame, .nstacks = shown->nstacks };
	if (d->opts.mode == LK_DIFF_MOMENTS) {
		const struct lk_window *w = &n->window;
		s->live.base = w->from_bytes;
		s->live.new = n->live_bytes;
		lk_diff_test(d, &s->live, &w->left_bytes, &w->came_bytes);
		lk_diff_allocated(&s->alloc, &w->alloc_bytes);
		return s->live.base.samples + s->live.new.samples + s->alloc.new.samples > 0;
	}
	if (b) {
		s->live.base = *live_of(d, b);
		s->alloc.base = b->alloc_bytes;
	}
	if (n) {
		s->live.new = *live_of(d, n);
		s->alloc.new = n->alloc_bytes;
	}
	lk_diff_test(d, &s->live, &s->live.base, &s->live.new);
	lk_diff_test(d, &s->alloc, &s->alloc.base, &s->alloc.new);
	return s->live.base.samples + s->live.new.samples + s->alloc.base.samples +
		       s->alloc.new.samples > 0;
}

static int make_sites(struct lk_diff *d, size_t n)
{
	d->sites = lk_budget_calloc(n ? n : 1, sizeof(*d->sites));
	if (!d->sites)
		return -errno;
	d->sites_cap = n ? n : 1;
	return 0;
}

/* Every site of either side, matched by key. */
static int join(struct lk_diff *d)
{
	const struct lk_report *rb = d->side[0], *rn = d->side[1];
	const struct lk_report_site **b, **n;
	size_t i = 0, j = 0;
	int k;

	if (rb == rn) { /* moments: one report */
		k = make_sites(d, rn->nsites);
		for (size_t x = 0; k >= 0 && x < rn->nsites; x++)
			d->nsites += compare_site(d, &d->sites[d->nsites], NULL, &rn->sites[x]);
		return k;
	}
	k = make_sites(d, rb->nsites + rn->nsites);
	if (k < 0)
		return k;
	b = by_key(rb);
	n = b ? by_key(rn) : NULL;
	if (!n) {
		k = -errno;
		lk_budget_free(b, (rb->nsites ? rb->nsites : 1) * sizeof(*b));
		return k;
	}
	while (i < rb->nsites || j < rn->nsites) {
		int c = i == rb->nsites   ? 1
			: j == rn->nsites ? -1
					  : lk_site_key_compare(key_of(b[i]), key_of(n[j]));
		d->nsites += compare_site(d, &d->sites[d->nsites], c <= 0 ? b[i] : NULL,
					  c >= 0 ? n[j] : NULL);
		i += c <= 0;
		j += c >= 0;
	}
	lk_budget_free(b, (rb->nsites ? rb->nsites : 1) * sizeof(*b));
	lk_budget_free(n, (rn->nsites ? rn->nsites : 1) * sizeof(*n));
	return 0;
}

struct p_at {
	double p;
	size_t i;
};

static int cmp_p(const void *a, const void *b)
{
	const struct p_at *x = a, *y = b;

	if (x->p != y->p)
		return x->p < y->p ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

static struct lk_diff_change *family(struct lk_diff_site *s, bool alloc)
{
	return alloc ? &s->alloc : &s->live;
}

/* Benjamini-Hochberg over the sites whose change was tested (a sample behind it); the others
 * keep p = q = 1 and are not counted. */
static int adjust(struct lk_diff *d, bool alloc)
{
	size_t m = 0, cap = d->nsites ? d->nsites : 1;
	struct p_at *v = lk_budget_malloc(cap * sizeof(*v));
	double *q = lk_budget_malloc(cap * sizeof(*q));
	int k = 0;

	if (!v || !q) {
		k = -errno;
		goto out;
	}
	for (size_t i = 0; i < d->nsites; i++) {
		struct lk_diff_change *c = family(&d->sites[i], alloc);
		if (c->tested)
			v[m++] = (struct p_at){ c->change.p, i };
	}
	qsort(v, m, sizeof(*v), cmp_p);
	for (size_t i = 0; i < m; i++)
		q[i] = v[i].p;
	lk_change_adjust(q, m);
	for (size_t i = 0; i < m; i++) {
		struct lk_diff_change *c = family(&d->sites[v[i].i], alloc);
		c->q = q[i];
		c->significant = q[i] <= LK_CHANGE_FDR;
	}
out:
	lk_budget_free(v, cap * sizeof(*v));
	lk_budget_free(q, cap * sizeof(*q));
	return k;
}

/* The whole: every site compared, summed on each side, and tested once. */
static void totals(struct lk_diff *d)
{
	struct lk_estimate left = { 0 }, came = { 0 };

	d->live = d->alloc = (struct lk_diff_change){ 0 };
	for (size_t i = 0; i < d->nsites; i++) {
		const struct lk_diff_site *s = &d->sites[i];
		lk_estimate_add(&d->live.base, &s->live.base);
		lk_estimate_add(&d->live.new, &s->live.new);
		lk_estimate_add(&d->alloc.base, &s->alloc.base);
		lk_estimate_add(&d->alloc.new, &s->alloc.new);
	}
	if (d->opts.mode == LK_DIFF_PROFILES) {
		lk_diff_test(d, &d->live, &d->live.base, &d->live.new);
		lk_diff_test(d, &d->alloc, &d->alloc.base, &d->alloc.new);
	} else {
		const struct lk_report *r = d->side[0];
		for (size_t i = 0; i < r->nsites; i++) {
			lk_estimate_add(&left, &r->sites[i].window.left_bytes);
			lk_estimate_add(&came, &r->sites[i].window.came_bytes);
		}
		lk_diff_test(d, &d->live, &left, &came);
		lk_diff_allocated(&d->alloc, &d->alloc.new);
	}
	/* One test each, so no adjustment. */
	d->live.significant = d->live.tested && d->live.change.p <= LK_CHANGE_FDR;
	d->alloc.significant = d->alloc.tested && d->alloc.change.p <= LK_CHANGE_FDR;
}

static enum lk_diff_by sort_by; /* qsort has no context argument */

static int cmp_sites(const void *a, const void *b)
{
	const struct lk_diff_site *x = a, *y = b;
	enum lk_diff_by other = sort_by == LK_DIFF_BY_LIVE ? LK_DIFF_BY_ALLOC : LK_DIFF_BY_LIVE;
	double ax = fabs(lk_diff_figure(x, sort_by)->change.value);
	double ay = fabs(lk_diff_figure(y, sort_by)->change.value);

	if (ax != ay)
		return ax > ay ? -1 : 1;
	ax = fabs(lk_diff_figure(x, other)->change.value);
	ay = fabs(lk_diff_figure(y, other)->change.value);
	if (ax != ay)
		return ax > ay ? -1 : 1;
	return lk_site_key_compare(x->stack[x->site_frame], y->stack[y->site_frame]);
}

int lk_diff_finish(struct lk_diff *d)
{
	const struct lk_diff_change *total;
	double scale;
	size_t keep = 0;
	int k;

	/* Two profiles: one decision of which frames are wrappers, so that both sides' sites are
	 * cut alike (docs/design.md, "Comparing profiles"); two moments are one report already. */
	k = d->side[1] != d->side[0] ? lk_report_share_wrappers(d->side, 2) : 0;
	if (k >= 0)
		k = lk_report_finish(d->side[0], NULL);
	if (k >= 0 && d->side[1] != d->side[0])
		k = lk_report_finish(d->side[1], NULL);
	if (k >= 0)
		k = join(d);
	if (k >= 0)
		k = adjust(d, false);
	if (k >= 0 && d->opts.mode == LK_DIFF_PROFILES)
		k = adjust(d, true);
	if (k < 0)
		return k;
	totals(d);
	d->stacks_filtered = d->side[0]->stacks_filtered +
			     (d->side[1] != d->side[0] ? d->side[1]->stacks_filtered : 0);
	total = d->opts.by == LK_DIFF_BY_ALLOC ? &d->alloc : &d->live;
	scale = fmax(fabs(total->base.value), fabs(total->new.value));
	d->sites_total = d->nsites;
	for (size_t i = 0; i < d->nsites; i++) {
		struct lk_diff_site *s = &d->sites[i];
		const struct lk_diff_change *c = lk_diff_figure(s, d->opts.by);
		s->share = scale > 0 ? fabs(c->change.value) / scale : 0;
		d->significant += c->significant;
	}
	sort_by = d->opts.by;
	qsort(d->sites, d->nsites, sizeof(*d->sites), cmp_sites);
	for (size_t i = 0; i < d->nsites; i++) {
		if (d->sites[i].share < d->opts.min_share || (d->opts.top && keep >= d->opts.top))
			continue;
		d->sites[keep++] = d->sites[i];
	}
	d->nsites = keep;
	return 0;
}
