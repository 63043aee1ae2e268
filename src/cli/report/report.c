/* report.c: builds a report section from aggregated profiles (see report.h).
 *
 * Per stack of each profile: symbolize its frames (one chain of inlined frames per address,
 * flattened), note whether --focus/--ignore leave it out, find where the allocator's frames end
 * (funcs.h), and keep the stack with its estimates. lk_report_finish() makes the sites of every
 * stack kept at once (report-sites.c), so that the wrappers a section's stacks reveal are
 * skipped in every one of them, whichever file of a --merge it came from. Sums are valid across profiles with different
 * periods because every estimate is already weighted.
 *
 * Never: read a profile's records (profile.c does, and keeps only per-stack state), or keep a
 * pointer into a profile after lk_report_add() returns; the symbolizer's frames are kept, so it
 * must outlive the report.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "report.h"
#include "u64map.h"


/* A kept stack's block: its frames, then their function ids. */
#define STACK_FRAME_BYTES (sizeof(struct lk_sym_frame *) + sizeof(uint32_t))
#define SERIES_BYTES (sizeof(((struct lk_stack_stats *)0)->series)) /* opts.series */

struct lk_report_index {
	struct lk_site_stack st; /* the stack being added, symbolized */
	size_t stacks_cap;
};

int lk_report_new(const struct lk_report_opts *o, struct lk_report **ret)
{
	struct lk_report *r = calloc(1, sizeof(*r));

	if (!r || !(r->index = calloc(1, sizeof(*r->index)))) {
		free(r);
		return -ENOMEM;
	}
	r->opts = *o;
	lk_site_stack_init(&r->index->st);
	lk_funcs_init(&r->funcs, o->filter);
	*ret = r;
	return 0;
}

/* What only lk_report_add() needs; the synthetic frames stay, stacks point at them. */
static void free_lookup(struct lk_report_index *x)
{
	lk_site_stack_trim(&x->st);
}

static void free_index(struct lk_report_index *x)
{
	if (!x)
		return;
	lk_site_stack_done(&x->st);
	free(x);
}

struct lk_report *lk_report_free(struct lk_report *r)
{
	if (!r)
		return NULL;
	for (size_t i = 0; i < r->nprocs; i++) {
		free(r->procs[i].path);
		free(r->procs[i].exe);
		free(r->procs[i].cmdline);
		free(r->procs[i].timeline);
	}
	free(r->procs);
	for (size_t i = 0; i < r->nstacks; i++) {
		lk_budget_free(r->stacks[i].frames, r->stacks[i].n * STACK_FRAME_BYTES);
		lk_budget_free(r->stacks[i].window, sizeof(*r->stacks[i].window));
		lk_budget_free(r->stacks[i].series, SERIES_BYTES);
	}
	lk_budget_free(r->stacks, (r->index ? r->index->stacks_cap : 0) * sizeof(*r->stacks));
	lk_budget_free(r->sites, r->sites_cap * sizeof(*r->sites));
	free(r->timeline);
	lk_funcs_done(&r->funcs);
	lk_wrappers_done(&r->wrappers);
	lk_tree_free(r->tree);
	free_index(r->index);
	free(r);
	return NULL;
}

int lk_report_add_modules(struct lk_symbolizer *sym, uint32_t profile, const struct lk_profile *p)
{
	const struct lk_module_info_rec *m;
	size_t n = lk_profile_modules(p, &m);
	int r;

	for (size_t i = 0; i < n; i++) {
		r = lk_symbolizer_add_module(sym, profile, m[i].id, m[i].path, m[i].build_id,
					     m[i].build_id_len, m[i].base, m[i].seg, m[i].nseg);
		if (r < 0)
			return r;
		if (m[i].unloaded_ns != UINT64_MAX)
			lk_symbolizer_unload_module(sym, profile, m[i].id);
	}
	return 0;
}

int lk_report_rename(struct lk_report *r, size_t i, const char *path)
{
	char *copy;

	if (i >= r->nprocs)
		return -ERANGE;
	if (!(copy = strdup(path)))
		return -ENOMEM;
	free(r->procs[i].path);
	r->procs[i].path = copy;
	return 0;
}

static int copy_process(struct lk_report *r, const char *path, const struct lk_profile *p)
{
	const struct lk_profile_header *h = lk_profile_header(p);
	const struct lk_timeline_point *tl;
	struct lk_report_process *procs, *q;
	size_t ntl = lk_profile_timeline(p, &tl);

	procs = reallocarray(r->procs, r->nprocs + 1, sizeof(*procs));
	if (!procs)
		return -ENOMEM;
	r->procs = procs;
	q = &procs[r->nprocs];
	*q = (struct lk_report_process){
		.path = strdup(path),
		.exe = strndup(h->exe, h->h.exe_len),
		.cmdline = malloc(h->h.cmdline_len + 1),
		.exe_len = h->h.exe_len,
		.cmdline_len = h->h.cmdline_len,
		.pid = h->h.pid,
		.ppid = h->h.ppid,
		.flags = h->h.flags,
		.segment = h->segment,
		.origin_ns = h->origin_ns,
		.period = h->h.period,
		.start_realtime_ns = h->h.start_realtime_ns,
		.totals = *lk_profile_totals(p),
		.timeline = ntl ? malloc(ntl * sizeof(*tl)) : NULL,
		.ntimeline = ntl,
	};
	r->nprocs++; /* freed with the report from here on, whatever is missing */
	if (!q->path || !q->exe || !q->cmdline || (ntl && !q->timeline))
		return -ENOMEM;
	memcpy(q->cmdline, h->cmdline, h->h.cmdline_len);
	q->cmdline[h->h.cmdline_len] = 0;
	if (ntl)
		memcpy(q->timeline, tl, ntl * sizeof(*tl));
	return 0;
}

/* Keeps the stack in x->st (n frames) with p's estimates of it, also if --focus or --ignore
 * left it out (the wrappers are the profile's, whatever is shown); 0, -ENOMEM or -E2BIG. */
/* The view's figure of a profile's stack, bytes or objects: with --from or --to, its window's. */
static const struct lk_estimate *stack_figure(const struct lk_report *r,
					      const struct lk_stack_stats *st, bool objects)
{
	const struct lk_window *w = st->window;

	if (r->opts.window && w && r->opts.view == LK_VIEW_ALLOC)
		return objects ? &w->alloc_objects : &w->alloc_bytes;
	if (r->opts.window && w)
		return objects ? &w->came_objects : &w->came_bytes;
	return objects ? LK_VIEW_FIGURE(st, r->opts.view, objects)
		       : LK_VIEW_FIGURE(st, r->opts.view, bytes);
}

static int keep_stack(struct lk_report *r, const struct lk_stack_stats *p, size_t n,
		      bool filtered)
{
	struct lk_report_index *x = r->index;
	struct lk_report_stack *s;
	const struct lk_sym_frame **frames = NULL;
	uint32_t *funcs = NULL;
	struct lk_window *window = NULL;
	double *series = NULL;
	size_t alloc_at = n;
	int k = 0;

	if (n > UINT32_MAX)
		return -E2BIG;
	if (r->nstacks == x->stacks_cap) {
		size_t cap = x->stacks_cap ? 2 * x->stacks_cap : 64;
		s = lk_budget_realloc(r->stacks, x->stacks_cap * sizeof(*s), cap * sizeof(*s));
		if (!s)
			return -errno;
		r->stacks = s;
		x->stacks_cap = cap;
	}
	if (p->window && !(window = lk_budget_malloc(sizeof(*window))))
		return -errno;
	if ((r->opts.series && !(series = lk_budget_malloc(SERIES_BYTES))) ||
	    !(frames = lk_budget_malloc(n * STACK_FRAME_BYTES))) {
		k = -errno;
	} else {
		memcpy(frames, x->st.frames, n * sizeof(*frames));
		funcs = (uint32_t *)(frames + n);
	}
	for (size_t i = 0; i < n && k >= 0; i++) {
		k = lk_funcs_get(&r->funcs, frames[i], &funcs[i]);
		if (k >= 0 && alloc_at == n && !(funcs[i] & LK_FUNC_ALLOC))
			alloc_at = i;
	}
	if (k < 0) {
		lk_budget_free(frames, n * STACK_FRAME_BYTES);
		lk_budget_free(series, SERIES_BYTES);
		lk_budget_free(window, sizeof(*window));
		return k;
	}
	r->stacks[r->nstacks++] = (struct lk_report_stack){
		.frames = frames,
		.funcs = funcs,
		.n = (uint32_t)n,
		.alloc_at = alloc_at < n ? (uint32_t)alloc_at : 0,
		.filtered = filtered,
		.alloc_bytes = p->alloc_bytes,
		.alloc_objects = p->alloc_objects,
		.live_bytes = p->live_bytes,
		.live_objects = p->live_objects,
		.peak_bytes = p->peak_bytes,
		.peak_objects = p->peak_objects,
		.old_bytes = p->old_bytes,
		.old_objects = p->old_objects,
		.samples = p->alloc_bytes.samples,
		.growth = p->growth,
		.oldest_age_ns = -1,
		.window = window,
		.series = series,
	};
	if (window)
		*window = *p->window;
	if (window && r->opts.window) { /* --from, --to: the window's figures */
		struct lk_report_stack *kept = &r->stacks[r->nstacks - 1];
		kept->live_bytes = window->came_bytes;
		kept->live_objects = window->came_objects;
		kept->alloc_bytes = window->alloc_bytes;
		kept->alloc_objects = window->alloc_objects;
	}
	if (series)
		memcpy(series, p->series, SERIES_BYTES);
	return 0;
}

static void add_totals(struct lk_profile_totals *sum, const struct lk_profile_totals *t)
{
	lk_estimate_add(&sum->alloc_bytes, &t->alloc_bytes);
	lk_estimate_add(&sum->alloc_objects, &t->alloc_objects);
	lk_estimate_add(&sum->live_bytes_end, &t->live_bytes_end);
	lk_estimate_add(&sum->live_objects_end, &t->live_objects_end);
	lk_estimate_add(&sum->peak_bytes, &t->peak_bytes);
	sum->samples += t->samples;
	sum->frees += t->frees;
	sum->frees_unknown += t->frees_unknown;
	sum->max_rss += t->max_rss;
	sum->off_ns += t->off_ns;
	sum->off_periods += t->off_periods;
	sum->off_at_end |= t->off_at_end;
	for (uint32_t i = 0; i < t->nmarks && i < LK_PROFILE_MARKS; i++)
		if (sum->nmarks < LK_PROFILE_MARKS)
			sum->marks[sum->nmarks++] = t->marks[i];
		else
			sum->nmarks++;
	for (unsigned i = 0; i <= LK_CNT_MAX; i++)
		sum->losses[i] += t->losses[i];
	sum->trailer = sum->trailer && t->trailer;
}

/* old: the age at the end of each stack's oldest live sample, through a map from the profile's
 * stack id to the report's stack. */
static void note_oldest(struct lk_report *r, const struct lk_profile *p,
			const struct lk_u64map *site_of)
{
	const struct lk_live_block *b;
	size_t n = lk_profile_live_blocks(p, &b);
	int64_t end = (int64_t)lk_profile_totals(p)->duration_ns;

	for (size_t i = 0; i < n; i++) {
		uint64_t *k = lk_u64map_get(site_of, b[i].stack);
		if (k && end - b[i].t_ns > r->stacks[*k].oldest_age_ns)
			r->stacks[*k].oldest_age_ns = end - b[i].t_ns;
	}
}

/* What a -E2BIG from the budget says, for lk_report_add's err. */
static int fail_budget(const struct lk_report *r, char **err)
{
	char limit[32];

	if (err && asprintf(err, "the profile needs more than %s of memory to report (--max-memory; "
			    "%zu stacks and %zu sites so far)",
			    lk_budget_format(limit, sizeof(limit), lk_budget_limit()), r->nstacks,
			    r->nsites) < 0)
		*err = NULL;
	return -E2BIG;
}

int lk_report_add(struct lk_report *r, struct lk_symbolizer *sym, uint32_t profile,
		  const char *path, const struct lk_profile *p, char **err)
{
	const struct lk_stack_stats *st;
	size_t nst = lk_profile_stacks(p, &st);
	struct lk_u64map site_of;
	const struct lk_profile_header *h = lk_profile_header(p);

	/* Two segments of one rotated profile: the blocks live across the rotation are in both,
	 * live at the older one's end and INHERITed by the newer, and a sum would count them twice.
	 * Each was read with its whole chain (lk_profile_load), so the later one is the same timeline
	 * again, and adds nothing; read alone (--segment-only), they are refused. */
	for (size_t i = 0; i < r->nprocs; i++)
		if (r->procs[i].pid == h->h.pid && r->procs[i].origin_ns == h->origin_ns &&
		    (r->procs[i].segment != h->segment || r->procs[i].totals.chain.segments)) {
			if (r->procs[i].totals.chain.segments &&
			    lk_profile_totals(p)->chain.segments)
				return 0; /* the same chain, named twice */
			if (err && asprintf(err, "%s and %s are segments %" PRIu32 " and %" PRIu32
					    " of one rotated profile, which are not merged when read "
					    "alone (--segment-only; the blocks live across a rotation "
					    "are in both): read them without it, as one timeline",
					    r->procs[i].path, path, r->procs[i].segment,
					    h->segment) < 0)
				*err = NULL;
			return -EINVAL;
		}
	int k = copy_process(r, path, p);

	if (k < 0)
		return k;
	if (r->nprocs == 1)
		r->totals = r->procs[0].totals;
	else {
		add_totals(&r->totals, &r->procs[r->nprocs - 1].totals);
		r->periods_differ |= r->procs[r->nprocs - 1].period != r->totals.period;
	}

	lk_u64map_init_budgeted(&site_of, SIZE_MAX);
	for (size_t i = 0; i < nst && k >= 0; i++) {
		bool filtered;
		size_t n;

		if (r->opts.shown_only && !(stack_figure(r, &st[i], false)->value > 0))
			continue; /* adds nothing to the view's figures: no site shows it */
		lk_estimate_add(&r->view_bytes, stack_figure(r, &st[i], false));
		lk_estimate_add(&r->view_objects, stack_figure(r, &st[i], true));
		k = lk_site_symbolize(&r->index->st, sym, profile, st[i].frames, st[i].modules,
				      st[i].nframes);
		if (k < 0)
			break;
		n = r->index->st.n;
		filtered = !lk_site_wanted(r->opts.filter, r->index->st.frames, n);
		r->stacks_filtered += filtered;
		k = keep_stack(r, &st[i], n, filtered);
		if (k >= 0 && r->opts.view == LK_VIEW_OLD)
			k = lk_u64map_put(&site_of, st[i].id, r->nstacks - 1);
	}
	if (k >= 0 && r->opts.view == LK_VIEW_OLD)
		note_oldest(r, p, &site_of);
	lk_u64map_done(&site_of);
	return k == -E2BIG ? fail_budget(r, err) : k;
}

int lk_report_add_file(struct lk_report *r, struct lk_symbolizer *sym, uint32_t profile,
		       const char *path, const struct lk_profile_opts *po, char **err)
{
	struct lk_profile *p = NULL;
	int k = lk_profile_load(path, po, &p, err);

	if (k < 0)
		return k;
	k = lk_report_add_modules(sym, profile, p);
	if (k >= 0)
		k = lk_report_add(r, sym, profile, path, p, err);
	lk_profile_free(p);
	return k;
}

int lk_report_finish(struct lk_report *r, char **err)
{
	int k = lk_report_rank(r);

	free_lookup(r->index);
	return k == -E2BIG ? fail_budget(r, err) : k;
}
