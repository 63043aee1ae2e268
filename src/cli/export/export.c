/* export.c: a session of `leek export` (see export.h): the table of formats, and the files
 * loaded one at a time and fed, stack by stack, to one format's writer.
 *
 * A file is loaded as `leek report` loads it (lk_profile_load, its modules registered with the
 * report's lk_report_add_modules), fed through lk_export_stacks(), and freed before the next:
 * only the writer's tables and the symbolizer grow with the files.
 *
 * Never: print (the command does), or keep a profile after lk_export_add_file() or
 * lk_export_add_profile() returns.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "export-internal.h"
#include "report.h"

/* The formats, in the order `leek help export` lists them. */
static const struct lk_export_format *const formats[] = {
	&lk_export_pprof,
	&lk_export_folded,
	&lk_export_html,
};

#define NFORMATS (sizeof(formats) / sizeof(formats[0]))

const struct lk_export_format *lk_export_format_find(const char *name)
{
	for (size_t i = 0; i < NFORMATS; i++)
		if (strcmp(formats[i]->name, name) == 0)
			return formats[i];
	return NULL;
}

const char *lk_export_format_names(void)
{
	static char names[128];

	if (!names[0])
		for (size_t i = 0, n = 0; i < NFORMATS && n < sizeof(names); i++)
			n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s", i ? ", " : "",
					      formats[i]->name);
	return names;
}

struct lk_export {
	const struct lk_export_format *fmt;
	struct lk_export_opts opts;
	struct lk_symbolizer *sym;
	void *w;                 /* the format's writer */
	struct lk_site_stack st; /* each stack as it is symbolized; keeps the synthetic frames */
	size_t nprocs, nstacks;  /* added so far */
	bool broken;             /* a file failed after the writer had some of it */
	struct seen *seen;       /* the files added, to refuse two segments of one rotated profile */
};

/* A file added: which process's profile, and which segment of it (LEEK_MAX_SIZE). */
struct seen {
	char *path;
	uint32_t pid, segment;
	uint64_t origin_ns;
	bool base;
};

int lk_export_new(const struct lk_export_format *fmt, const struct lk_export_opts *o,
		  struct lk_symbolizer *sym, struct lk_export **ret)
{
	struct lk_export *x = calloc(1, sizeof(*x));
	int r;

	if (!x)
		return -ENOMEM;
	*x = (struct lk_export){ .fmt = fmt, .opts = *o, .sym = sym };
	lk_site_stack_init(&x->st);
	r = fmt->open(&x->opts, &x->w);
	if (r < 0) {
		lk_export_free(x);
		return r;
	}
	*ret = x;
	return 0;
}

struct lk_export *lk_export_free(struct lk_export *x)
{
	if (!x)
		return NULL;
	x->fmt->close(x->w);
	lk_site_stack_done(&x->st);
	for (size_t i = 0; i < x->nprocs; i++)
		free(x->seen[i].path);
	free(x->seen);
	free(x);
	return NULL;
}

size_t lk_export_processes(const struct lk_export *x)
{
	return x->nprocs;
}

void *lk_export_writer(struct lk_export *x)
{
	return x->w;
}

/* Counts the stacks for the budget's message, and hands each to the writer. */
static int count_stack(void *ctx, const struct lk_export_stack *s)
{
	struct lk_export *x = ctx;

	x->nstacks++;
	return x->fmt->stack(x->w, s);
}

/* What a -E2BIG from the budget says, as report.c's fail_budget does for a report. */
static int fail_budget(const struct lk_export *x, char **err)
{
	char limit[32];

	if (err && asprintf(err, "the profile needs more than %s of memory to export "
			    "(--max-memory; %zu stacks so far)",
			    lk_budget_format(limit, sizeof(limit), lk_budget_limit()),
			    x->nstacks) < 0)
		*err = NULL;
	return -E2BIG;
}

/* lk_report_add_modules for a file read before under the same number: the modules it had then
 * are there already (as live/view.c registers a watched file's at each report). */
static int add_modules_again(struct lk_symbolizer *sym, uint32_t number, const struct lk_profile *p)
{
	const struct lk_module_info_rec *m;
	size_t n = lk_profile_modules(p, &m);

	for (size_t i = 0; i < n; i++) {
		int r = lk_symbolizer_add_module(sym, number, m[i].id, m[i].path, m[i].build_id,
						 m[i].build_id_len, m[i].base, m[i].seg, m[i].nseg);
		if (r < 0 && r != -EEXIST)
			return r;
		if (m[i].unloaded_ns != UINT64_MAX)
			lk_symbolizer_unload_module(sym, number, m[i].id);
	}
	return 0;
}

int lk_export_add_file(struct lk_export *x, const char *path, uint32_t number, bool base,
		       bool *trailer, char **err)
{
	struct lk_profile_opts po = {
		.at_ns = x->opts.at == LK_EXPORT_AT_TIME ? x->opts.at_ns : UINT64_MAX,
		.no_live_list = true, /* no format shows a block: the list and its sort spared */
		.segment_only = x->opts.segment_only,
	};
	struct lk_profile *p = NULL;
	int r = lk_profile_load(path, &po, &p, err);

	if (r < 0)
		return r;
	r = lk_export_add_profile(x, path, p, number, base, trailer, err);
	lk_profile_free(p);
	return r;
}

int lk_export_add_profile(struct lk_export *x, const char *path, const struct lk_profile *p,
			  uint32_t number, bool base, bool *trailer, char **err)
{
	struct lk_export_process proc = { .path = path, .number = number, .sym = x->sym,
					  .base = base };
	int r;

	/* Two segments of one rotated profile on one side: the blocks live across the rotation are
	 * in both, and the sum would count them twice (report.c refuses the same). Each was read
	 * with its whole chain unless --segment-only: then the later one is the same timeline. */
	const struct lk_profile_header *h = lk_profile_header(p);
	bool chain = lk_profile_totals(p)->chain.segments;
	for (size_t i = 0; i < x->nprocs; i++)
		if (x->seen[i].base == base && x->seen[i].pid == h->h.pid &&
		    x->seen[i].origin_ns == h->origin_ns &&
		    (x->seen[i].segment != h->segment || chain)) {
			if (chain) {
				if (trailer)
					*trailer = lk_profile_totals(p)->trailer;
				return 0; /* the same chain, named twice */
			}
			if (err && asprintf(err, "%s and %s are segments %" PRIu32 " and %" PRIu32
					    " of one rotated profile, which are not merged when read "
					    "alone (--segment-only; the blocks live across a rotation "
					    "are in both): export them without it, as one timeline",
					    x->seen[i].path, path, x->seen[i].segment, h->segment) < 0)
				*err = NULL;
			return -EINVAL;
		}
	struct seen *seen = reallocarray(x->seen, x->nprocs + 1, sizeof(*seen));
	if (!seen)
		return -ENOMEM;
	x->seen = seen;
	seen[x->nprocs] = (struct seen){ .path = strdup(path), .pid = h->h.pid,
					 .segment = h->segment, .origin_ns = h->origin_ns,
					 .base = base };
	if (!seen[x->nprocs].path)
		return -ENOMEM;
	proc.profile = p;
	r = x->opts.reread ? add_modules_again(x->sym, number, p)
			   : lk_report_add_modules(x->sym, number, p);
	if (r >= 0) {
		r = x->fmt->process(x->w, &proc);
		if (r >= 0 && x->fmt->stack)
			r = lk_export_stacks(&x->st, x->sym, &proc, &x->opts, count_stack, x);
		x->broken |= r < 0; /* the writer may have part of it */
	}
	if (r >= 0) {
		x->nprocs++; /* its seen entry with it */
		*trailer = lk_profile_totals(p)->trailer;
	} else {
		free(x->seen[x->nprocs].path);
	}
	lk_site_stack_trim(&x->st);
	return r == -E2BIG ? fail_budget(x, err) : r;
}

int lk_export_write(struct lk_export *x, FILE *f)
{
	return x->broken ? -ECANCELED : x->fmt->write(x->w, f);
}
