/* report.c: builds a report section from aggregated profiles (see report.h).
 *
 * Per stack of each profile: symbolize its frames (one chain of inlined frames per address,
 * flattened), apply --focus/--ignore, pick its site (site.c), and add its estimates to the site's
 * sums with lk_estimate_add(); lk_report_finish() then calls lk_estimate_finish() once per sum, so
 * a site made of several stacks, or of several processes (--merge), gets the interval of the sum
 * and not a sum of intervals. Sums are valid across profiles with different periods because every
 * estimate is already weighted.
 *
 * Never: read a profile's records (profile.c does, and keeps only per-stack state), or keep a
 * pointer into a profile after lk_report_add() returns; the symbolizer's frames are kept, so it
 * must outlive the report.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "report.h"
#include "u64map.h"

#define MAX_SITES (1u << 24)

struct lk_report_index {
	size_t *slots;           /* site index + 1, open addressing by key hash; 0 = empty */
	size_t nslots, sites_cap;
	struct lk_site_stack st; /* the stack being added, symbolized */
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
	*ret = r;
	return 0;
}

/* What only lk_report_add() needs; the synthetic frames stay, sites point at them. */
static void free_lookup(struct lk_report_index *x)
{
	lk_budget_free(x->slots, x->nslots * sizeof(*x->slots));
	x->slots = NULL;
	x->nslots = 0;
	lk_site_stack_trim(&x->st);
}

static void free_index(struct lk_report_index *x)
{
	if (!x)
		return;
	lk_budget_free(x->slots, x->nslots * sizeof(*x->slots));
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
	for (size_t i = 0; i < r->nsites; i++)
		lk_budget_free((void *)r->sites[i].stack,
			       r->sites[i].nframes * sizeof(*r->sites[i].stack));
	lk_budget_free(r->sites, (r->index ? r->index->sites_cap : 0) * sizeof(*r->sites));
	free(r->timeline);
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

static int grow_slots(struct lk_report *r)
{
	struct lk_report_index *x = r->index;
	size_t n = x->nslots ? 2 * x->nslots : 1024;
	size_t *slots = lk_budget_calloc(n, sizeof(*slots));

	if (!slots)
		return -errno;
	for (size_t i = 0; i < r->nsites; i++) {
		const struct lk_report_site *s = &r->sites[i];
		size_t h = (size_t)lk_site_key_hash(s->stack[s->site_frame]) & (n - 1);
		while (slots[h])
			h = (h + 1) & (n - 1);
		slots[h] = i + 1;
	}
	lk_budget_free(x->slots, x->nslots * sizeof(*x->slots));
	x->slots = slots;
	x->nslots = n;
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

/* NULL and errno ENOMEM or E2BIG (the budget) on failure. */
static const struct lk_sym_frame **copy_stack(const struct lk_report_index *x, size_t n)
{
	const struct lk_sym_frame **copy = lk_budget_malloc(n * sizeof(*copy));

	if (copy)
		memcpy(copy, x->st.frames, n * sizeof(*copy));
	return copy;
}

/* The site of the stack in x->st (n frames, the site at site_frame), added with that stack if
 * new; NULL and errno ENOMEM, or E2BIG (the budget) on failure. */
static struct lk_report_site *find_site(struct lk_report *r, size_t n, size_t site_frame)
{
	struct lk_report_index *x = r->index;
	const struct lk_sym_frame *key = x->st.frames[site_frame], **stack;
	size_t h;
	int k;

	if ((r->nsites + 1) * 2 > x->nslots && (k = grow_slots(r)) < 0) {
		errno = -k;
		return NULL;
	}
	h = (size_t)lk_site_key_hash(key) & (x->nslots - 1);
	for (; x->slots[h]; h = (h + 1) & (x->nslots - 1)) {
		struct lk_report_site *s = &r->sites[x->slots[h] - 1];
		if (lk_site_key_compare(s->stack[s->site_frame], key) == 0)
			return s;
	}
	if (r->nsites == x->sites_cap) {
		size_t cap = x->sites_cap ? 2 * x->sites_cap : 64;
		struct lk_report_site *sites;
		if (cap > MAX_SITES) {
			errno = ENOMEM;
			return NULL;
		}
		sites = lk_budget_realloc(r->sites, x->sites_cap * sizeof(*sites),
					  cap * sizeof(*sites));
		if (!sites)
			return NULL;
		r->sites = sites;
		x->sites_cap = cap;
	}
	stack = copy_stack(x, n);
	if (!stack)
		return NULL;
	x->slots[h] = r->nsites + 1;
	r->sites[r->nsites] = (struct lk_report_site){
		.stack = stack,
		.nframes = n,
		.site_frame = site_frame,
		.oldest_age_ns = -1,
		.figure = -1,
	};
	return &r->sites[r->nsites++];
}

/* Adds one stack's estimates to its site; the heaviest stack becomes the site's stack. */
static int add_to_site(struct lk_report *r, struct lk_report_site *s,
		       const struct lk_stack_stats *st, size_t n, size_t site_frame)
{
	double figure = LK_VIEW_FIGURE(st, r->opts.view, bytes)->value;

	lk_estimate_add(&s->alloc_bytes, &st->alloc_bytes);
	lk_estimate_add(&s->alloc_objects, &st->alloc_objects);
	lk_estimate_add(&s->live_bytes, &st->live_bytes);
	lk_estimate_add(&s->live_objects, &st->live_objects);
	lk_estimate_add(&s->peak_bytes, &st->peak_bytes);
	lk_estimate_add(&s->peak_objects, &st->peak_objects);
	lk_estimate_add(&s->old_bytes, &st->old_bytes);
	lk_estimate_add(&s->old_objects, &st->old_objects);
	s->nstacks++;
	if (!(figure > s->figure))
		return 0;
	if (s->nstacks > 1) {
		const struct lk_sym_frame **copy = copy_stack(r->index, n);
		if (!copy)
			return -errno;
		lk_budget_free((void *)s->stack, s->nframes * sizeof(*s->stack));
		s->stack = copy;
		s->nframes = n;
		s->site_frame = site_frame;
	}
	s->growth = st->growth;
	s->figure = figure;
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
	for (unsigned i = 0; i <= LK_CNT_MAX; i++)
		sum->losses[i] += t->losses[i];
	sum->trailer = sum->trailer && t->trailer;
}

/* old: the age at the end of each site's oldest live sample, through a map from stack id to
 * site. */
static void note_oldest(struct lk_report *r, const struct lk_profile *p,
			const struct lk_u64map *site_of)
{
	const struct lk_live_block *b;
	size_t n = lk_profile_live_blocks(p, &b);
	int64_t end = (int64_t)lk_profile_totals(p)->duration_ns;

	for (size_t i = 0; i < n; i++) {
		uint64_t *k = lk_u64map_get(site_of, b[i].stack);
		if (k && end - b[i].t_ns > r->sites[*k].oldest_age_ns)
			r->sites[*k].oldest_age_ns = end - b[i].t_ns;
	}
}

/* What a -E2BIG from the budget says, for lk_report_add's err. */
static int fail_budget(const struct lk_report *r, char **err)
{
	char limit[32];

	if (err && asprintf(err, "the profile needs more than %s of memory to report (--max-memory; "
			    "%zu sites so far)", lk_budget_format(limit, sizeof(limit),
								  lk_budget_limit()),
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
		struct lk_report_site *s;
		size_t n, at;

		if (r->opts.shown_only && !(LK_VIEW_FIGURE(&st[i], r->opts.view, bytes)->value > 0))
			continue; /* adds nothing to the view's figures: no site shows it */
		lk_estimate_add(&r->view_bytes, LK_VIEW_FIGURE(&st[i], r->opts.view, bytes));
		lk_estimate_add(&r->view_objects, LK_VIEW_FIGURE(&st[i], r->opts.view, objects));
		k = lk_site_symbolize(&r->index->st, sym, profile, st[i].frames, st[i].modules,
				      st[i].nframes);
		if (k < 0)
			break;
		n = r->index->st.n;
		if (!lk_site_wanted(r->opts.filter, r->index->st.frames, n)) {
			r->stacks_filtered++;
			continue;
		}
		at = lk_site_pick(r->opts.filter, r->index->st.frames, n);
		if (r->opts.on_stack &&
		    (k = r->opts.on_stack->fn(r->opts.on_stack->ctx, profile, r->index->st.frames, n,
					      at, &st[i])) < 0)
			break;
		s = find_site(r, n, at);
		k = s ? add_to_site(r, s, &st[i], n, at) : -errno;
		if (k >= 0 && r->opts.view == LK_VIEW_OLD)
			k = lk_u64map_put(&site_of, st[i].id, (uint64_t)(s - r->sites));
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

int lk_report_finish(struct lk_report *r)
{
	int k = lk_report_rank(r);

	free_lookup(r->index); /* the slots point at sites that moved */
	return k;
}
