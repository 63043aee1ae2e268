/* view.c: one report of a profile that is still being written: read again from its start up to
 * the safe limit (whole once its process has gone), ranked into sites by report.c, or the list of
 * its recent frees with their allocations' stacks symbolized.
 *
 * Every view registers the profile's modules with the one symbolizer as profile 0, once each:
 * a module record never changes, so later views find the files opened already.
 *
 * Never: print, or keep the profile after the view is made (the report keeps what it shows).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "live.h"

#define SYM_PROFILE 0 /* the symbolizer's number for the watched profile */

const char *lk_live_kind_name(enum lk_live_kind k)
{
	static const char *const names[] = { "old", "all", "high_water", "frees" };

	return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}

struct lk_live_view *lk_live_view_free(struct lk_live_view *v)
{
	if (!v)
		return NULL;
	lk_report_free(v->r);
	for (size_t i = 0; i < v->nfrees; i++)
		free(v->frees[i].stack), free(v->frees[i].fstack);
	free(v->frees);
	if (v->synth) {
		lk_site_stack_done(v->synth);
		free(v->synth);
	}
	free(v);
	return NULL;
}

/* The modules not registered yet (-EEXIST: by an earlier view). */
static int add_modules(struct lk_symbolizer *sym, const struct lk_profile *p)
{
	const struct lk_module_info_rec *m;
	size_t n = lk_profile_modules(p, &m);

	for (size_t i = 0; i < n; i++) {
		int r = lk_symbolizer_add_module(sym, SYM_PROFILE, m[i].id, m[i].path,
						 m[i].build_id, m[i].build_id_len, m[i].base,
						 m[i].seg, m[i].nseg);
		if (r < 0 && r != -EEXIST)
			return r;
		if (m[i].unloaded_ns != UINT64_MAX)
			lk_symbolizer_unload_module(sym, SYM_PROFILE, m[i].id);
	}
	return 0;
}

static const struct lk_stack_stats *find_stack(const struct lk_profile *p, uint64_t id)
{
	const struct lk_stack_stats *st;
	size_t lo = 0, hi = lk_profile_stacks(p, &st);

	while (lo < hi) { /* in id order */
		size_t mid = lo + (hi - lo) / 2;
		if (st[mid].id == id)
			return &st[mid];
		if (st[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* The recent frees, each with its allocation's stack symbolized. */
static int make_frees(struct lk_live_view *v, struct lk_symbolizer *sym, const struct lk_profile *p)
{
	const struct lk_free_event *e;
	size_t n = lk_profile_frees_recent(p, &e);
	int r = 0;

	v->synth = calloc(1, sizeof(*v->synth));
	v->frees = calloc(n ? n : 1, sizeof(*v->frees));
	if (!v->synth || !v->frees)
		return -ENOMEM;
	lk_site_stack_init(v->synth);
	for (size_t i = 0; i < n && r >= 0; i++) {
		const struct lk_stack_stats *st = find_stack(p, e[i].alloc_stack);
		struct lk_live_free *lf = &v->frees[v->nfrees++];

		lf->e = e[i];
		r = st ? lk_site_symbolize(v->synth, sym, SYM_PROFILE, st->frames, st->modules,
					   st->nframes)
		       : lk_site_symbolize(v->synth, sym, SYM_PROFILE, NULL, NULL, 0);
		if (r < 0)
			break;
		lf->n = v->synth->n;
		lf->stack = malloc(lf->n * sizeof(*lf->stack));
		if (!lf->stack)
			return -ENOMEM;
		memcpy(lf->stack, v->synth->frames, lf->n * sizeof(*lf->stack));
		lf->site = lk_site_pick(v->opts.filter, lf->stack, lf->n);
		/* The freeing stack, in a profile written with LEEK_FREE_STACKS. */
		st = e[i].free_stack ? find_stack(p, e[i].free_stack) : NULL;
		if (!st)
			continue;
		r = lk_site_symbolize(v->synth, sym, SYM_PROFILE, st->frames, st->modules,
				      st->nframes);
		if (r < 0)
			break;
		lf->fn = v->synth->n;
		lf->fstack = malloc((lf->fn ? lf->fn : 1) * sizeof(*lf->fstack));
		if (!lf->fstack)
			return -ENOMEM;
		memcpy(lf->fstack, v->synth->frames, lf->fn * sizeof(*lf->fstack));
		lf->fsite = lk_site_pick(v->opts.filter, lf->fstack, lf->fn);
	}
	return r;
}

static enum lk_view view_of(enum lk_live_kind k)
{
	return k == LK_LIVE_OLD ? LK_VIEW_OLD : k == LK_LIVE_HIGH_WATER ? LK_VIEW_PEAK : LK_VIEW_LEAKS;
}

int lk_live_view_make(struct lk_live_source *s, const struct lk_live_opts *o,
		      struct lk_live_view **ret, char **err)
{
	struct lk_profile_opts po = {
		.at_ns = UINT64_MAX,
		.age_ns = o->age_ns,
		.known = o->known,
		.known_ns = o->known_ns,
		.known_mark = o->kind == LK_LIVE_OLD ? o->known_mark : NULL,
		.no_live_list = o->kind != LK_LIVE_OLD, /* old: each site's oldest block */
		.frees = o->kind == LK_LIVE_FREES,
		.frees_last = o->kind == LK_LIVE_FREES ? o->frees : 0,
		.segment_only = o->segment_only,
	};
	struct lk_report_opts ro = {
		.view = view_of(o->kind),
		.age_ns = o->age_ns,
		.top = o->top,
		.stacks = o->stacks,
		.ascii = o->ascii,
		.shown_only = !o->all_sites, /* only the sites with something in the view */
		.all_sites = o->all_sites,
		.filter = o->filter,
	};
	struct lk_profile *p = NULL;
	struct lk_live_view *v;
	bool ended = s->ended;
	int r;

	if (!ended) {
		if (s->lim.limit <= s->header_size)
			return -EAGAIN; /* nothing is written for good yet */
		po.limit = s->lim.limit;
		po.limit_whole = s->lim.whole;
	}
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->opts = *o;
	v->ended = ended;
	r = lk_profile_load(s->path, &po, &p, err);
	if (r >= 0)
		r = add_modules(s->sym, p);
	if (r >= 0) {
		v->end_ns = lk_profile_totals(p)->duration_ns;
		v->trailer = lk_profile_totals(p)->trailer;
		r = lk_report_new(&ro, &v->r);
	}
	if (r >= 0)
		r = lk_report_add(v->r, s->sym, SYM_PROFILE, s->path, p, err);
	if (r >= 0)
		r = lk_report_finish(v->r, err);
	if (r >= 0 && o->kind == LK_LIVE_FREES)
		r = make_frees(v, s->sym, p);
	lk_profile_free(p);
	if (r < 0) {
		lk_live_view_free(v);
		return r;
	}
	s->loads++;
	*ret = v;
	return 0;
}
