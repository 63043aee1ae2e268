/* report.h: what `leek report` shows, built from loaded profiles (report.c) and printed by
 * out-text.c, out-tree.c, out-json.c (through json-write.h) and chart.c. report.c builds,
 * report-sites.c makes the sites (skipping the wrappers the stacks reveal), report-view.c ranks
 * them, or makes the call tree (tree.h) in the tree view.
 *
 * A section is one process, or several merged (--merge). Building one: lk_report_new(), then
 * lk_report_add() per loaded profile (the profile can be freed right after: the section keeps
 * its stacks, symbolized, copies of what it prints and pointers into the symbolizer, which must
 * outlive it), then lk_report_finish(), which finishes the estimates, makes the sites
 * (report-sites.c), ranks them and keeps the top ones. Memory follows the number of distinct
 * stacks and their frames, never the length of a profile; the stacks, the sites and the
 * synthetic frames are taken from the memory budget (budget.h).
 *
 * Glossary: the view's figure is the estimate a view ranks by (live bytes for leaks, bytes at the
 * peak for peak, ...); a site's "heaviest stack" is the one of its stacks with the largest figure,
 * the one printed under it.
 */
#ifndef LEEK_REPORT_H
#define LEEK_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "funcs.h"
#include "json-write.h"
#include "profile.h"
#include "site.h"
#include "symbolize.h"
#include "tree.h"
#include "wrappers.h"

enum lk_view {
	LK_VIEW_LEAKS,
	LK_VIEW_PEAK,
	LK_VIEW_INUSE,
	LK_VIEW_ALLOC,
	LK_VIEW_OLD,
	LK_VIEW_GROWTH,
	LK_VIEW_TIMELINE,
	_LK_VIEW_MAX,
};

const char *lk_view_name(enum lk_view v);
int lk_view_from_name(const char *name); /* enum lk_view, or -EINVAL */
const char *lk_trend_name(enum lk_trend t); /* "growing", "plateau", "flat", "unknown" */

struct lk_report_opts {
	enum lk_view view;
	uint64_t at_ns;   /* inuse: live at this time since each profile's start */
	const char *at_mark; /* inuse: not NULL, at each profile's mark of this name instead; leaks
			      * and alloc with window: the same for --to */
	bool window;         /* --from, --to: leaks and inuse count the blocks allocated after
			      * from_ns and live at at_ns, alloc those allocated in between (each
			      * stack's lk_window: came, alloc) */
	uint64_t from_ns;
	const char *from_mark;
	uint64_t age_ns;  /* old */
	size_t top;       /* sites kept after ranking; 0 = all */
	double min_share; /* sites (tree nodes) below this fraction of the view's total are dropped */
	bool merge, stacks, ascii;
	bool no_auto_wrappers; /* skip no wrapper but the listed ones (wrappers.h) */
	bool tree;             /* a call tree of the view's figure instead of sites (tree.h) */
	bool inverted;         /* tree: innermost frames at the root */
	bool objects;          /* tree: objects instead of bytes */
	bool shown_only;  /* only stacks with something in the view: a site's other figures then
			   * leave out its stacks without any (`leek run`'s summary, which prints
			   * the view's figure alone, and need not symbolize every stack) */
	bool all_sites;   /* keep the sites with nothing in the view too (`leek diff`: a site may
			   * have changed in another figure, or on the other side) */
	bool series;      /* keep each stack's live bytes over time (lk_report_stack.series):
			   * the HTML report's flame graph of a moment */
	const struct lk_site_filter *filter;
};

/* One stack of a section, symbolized and kept until the report is freed: the sites, the tree
 * (tree.h) and the wrapper rule (wrappers.h) are made of these, and a writer may walk them. */
struct lk_report_stack {
	const struct lk_sym_frame **frames;      /* innermost first, into the symbolizer */
	uint32_t *funcs;                         /* each frame's function id and allocator flag
						  * (funcs.h: r->funcs); in frames' block */
	uint32_t n;
	uint32_t alloc_at;                       /* frames[alloc_at] is the first frame that is
						  * not an allocator frame (0 if none is) */
	bool filtered;                           /* left out by --focus or --ignore: only the
						  * wrapper rule looks at it */
	struct lk_estimate alloc_bytes, alloc_objects, live_bytes, live_objects;
	struct lk_estimate peak_bytes, peak_objects, old_bytes, old_objects;
	uint64_t samples;                        /* allocated in all, whatever the window: the
						  * wrapper rule's */
	struct lk_growth growth;
	int64_t oldest_age_ns;                   /* old: age of its oldest live sample at the
						  * end of its profile; -1 if none */
	struct lk_window *window;                /* lk_profile_opts.window: a copy of the
						  * stack's (from the budget); else NULL */
	double *series;                          /* opts.series: a copy of the stack's
						  * (LK_TIMELINE_BUCKETS points, from the budget);
						  * else NULL */
};

/* "tree" for a tree (opts.tree), else the view's name. */
const char *lk_report_view_name(const struct lk_report_opts *o);

struct lk_report_site {
	const struct lk_sym_frame *const *stack; /* heaviest stack, innermost first */
	size_t nframes, site_frame;              /* stack[site_frame] is the site */
	const uint32_t *funcs;                   /* its frames' function ids (funcs.h): before
						  * the site, those without LK_FUNC_ALLOC are the
						  * wrappers the report skipped (wrappers.h) */
	size_t nstacks;                          /* stacks that share this site */
	struct lk_estimate alloc_bytes, alloc_objects, live_bytes, live_objects;
	struct lk_estimate peak_bytes, peak_objects, old_bytes, old_objects;
	struct lk_growth growth;                 /* of the heaviest stack */
	struct lk_window window;                 /* the sum of its stacks' (lk_profile_opts.window);
						  * zeros without one */
	int64_t oldest_age_ns;                   /* old: age of its oldest live sample at the
						  * end of its profile; -1 if none */
	double figure;                           /* heaviest stack's figure (internal) */
	double share;                            /* of the view's total, 0 to 1 */
};

/* One profile, as the report prints its header. Strings are copies. */
struct lk_report_process {
	char *path, *exe, *cmdline; /* cmdline: NUL-separated, cmdline_len bytes */
	size_t exe_len, cmdline_len;
	uint32_t pid, ppid, flags;
	uint32_t segment;   /* a rotated segment's number (LEEK_MAX_SIZE); 0 otherwise */
	uint64_t origin_ns; /* what the segments of one process share */
	uint64_t period, start_realtime_ns;
	struct lk_profile_totals totals;
	struct lk_timeline_point *timeline; /* until lk_report_finish() (merged: summed) */
	size_t ntimeline;
};

struct lk_report {
	struct lk_report_opts opts;
	struct lk_report_process *procs;
	size_t nprocs;
	struct lk_profile_totals totals;      /* the process's, or the sum (merged) */
	uint64_t span_ns;                     /* merged: first start to last end, in real time */
	bool periods_differ;                  /* merged: totals.period is the first one's */
	struct lk_estimate view_bytes, view_objects; /* the view's figure over every stack */
	struct lk_report_stack *stacks;       /* every stack added (with shown_only, but those with
					       * nothing in the view) */
	size_t nstacks;
	struct lk_funcs funcs;                /* the stacks' function ids */
	struct lk_wrappers wrappers;          /* the wrappers the sites skip, found in the stacks
					       * (after lk_report_finish) */
	bool wrappers_shared;                 /* wrappers came from lk_report_share_wrappers */
	struct lk_tree *tree;                 /* opts.tree: the call tree, pruned by min_share
					       * (after lk_report_finish; no sites then) */
	struct lk_tree_pruned tree_pruned;    /* what the pruning left out */
	struct lk_report_site *sites;         /* ranked (after lk_report_finish) */
	size_t nsites, sites_total;           /* shown; before --top and --min-share */
	size_t sites_cap;
	size_t stacks_filtered;               /* stacks dropped by --focus / --ignore */
	struct lk_timeline_point *timeline;   /* the process's; merged: the sum on one real-time
					       * axis, from the first start (after lk_report_finish) */
	size_t ntimeline;

	struct lk_report_index *index;        /* report.c's state while adding */
};

int lk_report_new(const struct lk_report_opts *o, struct lk_report **ret);
/* profile is the symbolizer's profile number for p (its modules must be registered). 0, -ENOMEM,
 * or -E2BIG beyond the memory budget (budget.h), with a malloc'd "the profile needs more than ...
 * of memory to report (--max-memory; ...)" in *err if err is not NULL. */
int lk_report_add(struct lk_report *r, struct lk_symbolizer *sym, uint32_t profile,
		  const char *path, const struct lk_profile *p, char **err);
/* Loads the file and adds it, with its modules: the usual way to call the two above. On an error,
 * *err may hold a malloc'd message (lk_profile_load's "offset N: ...", or lk_report_add's). */
int lk_report_add_file(struct lk_report *r, struct lk_symbolizer *sym, uint32_t profile,
		       const char *path, const struct lk_profile_opts *po, char **err);
/* 0, -ENOMEM, or -E2BIG beyond the memory budget, with *err as lk_report_add's. */
int lk_report_finish(struct lk_report *r, char **err);
/* The file that process i of the report is shown as, from now on (`leek run` compresses the
 * profile while the report is made). -ERANGE for no such process, -ENOMEM. */
int lk_report_rename(struct lk_report *r, size_t i, const char *path);
int lk_report_rank(struct lk_report *r); /* report-view.c: lk_report_finish() without the cleanup */
int lk_report_sites(struct lk_report *r); /* report-sites.c: the sites of r's stacks, unranked */
/* report-sites.c: where stack st of r has its site: its first frame past the allocator's that is
 * not a wrapper r skips (after lk_report_finish, or lk_report_share_wrappers), or alloc_at if
 * every frame past the allocator's is one. */
size_t lk_report_stack_site(const struct lk_report *r, const struct lk_report_stack *st);
/* report-sites.c: the wrappers that the stacks of n reports reveal together, as each report's
 * (`leek diff`: its two sides skip the same frames, so that a site's key means the same on both).
 * The rule runs once over every stack of them all, on one numbering of their functions; each
 * report skips every wrapper found and lists those its stacks have. After the last lk_report_add(),
 * before lk_report_finish(), which then finds none of its own; nothing with no_auto_wrappers (the
 * reports' options must agree on it and on the filter). 0, -ENOMEM or -E2BIG. */
int lk_report_share_wrappers(struct lk_report *const *r, size_t n);
struct lk_report *lk_report_free(struct lk_report *r); /* NULL-safe, returns NULL */
static inline void lk_report_freep(struct lk_report **r)
{
	lk_report_free(*r);
}

/* Registers every module of p with the symbolizer as profile number `profile`. */
int lk_report_add_modules(struct lk_symbolizer *sym, uint32_t profile, const struct lk_profile *p);

/* Whether s can be a mark's name (`leek ctl PID mark NAME`): 1 to LK_CTL_NAME_MAX bytes of 0x21 to
 * 0x7e (format.h). */
bool lk_mark_name_ok(const char *s);

/* The figure a view ranks by (kind bytes) and its objects (kind objects), in p, a stack's
 * (struct lk_stack_stats) or a site's: both name their eight estimates alike. */
#define LK_VIEW_FIGURE(p, v, kind)                                                                 \
	((v) == LK_VIEW_PEAK    ? &(p)->peak_##kind                                                \
	 : (v) == LK_VIEW_ALLOC ? &(p)->alloc_##kind                                               \
	 : (v) == LK_VIEW_OLD   ? &(p)->old_##kind                                                 \
				: &(p)->live_##kind)
const struct lk_estimate *lk_report_figure(const struct lk_report_site *s, enum lk_view v);
const struct lk_estimate *lk_report_figure_objects(const struct lk_report_site *s,
						   enum lk_view v);

/* out-text.c */
void lk_text_report(FILE *f, const struct lk_report *r);
/* What the view's figure is: "heap live at the end", "allocated in all, freed or not", ... */
void lk_text_view_title(FILE *f, const struct lk_report *r);
/* out-tree.c: the tree view (r->tree), as text after the header, and as the JSON value of the
 * tree's "root" (nested NODE objects, their lines indented from indent levels on). */
void lk_text_tree(FILE *f, const struct lk_report *r);
void lk_json_tree(FILE *f, unsigned indent, const struct lk_report *r);
/* The few lines `leek run` prints per profile (to stderr). */
void lk_text_run_summary(FILE *f, const struct lk_report *r);

/* out-json.c: one document per call of begin/end; sections in between (see docs/json.md). */
struct lk_json_doc;
int lk_json_begin(FILE *f, const struct lk_report_opts *o, bool per_process,
		  struct lk_json_doc **ret);
void lk_json_report(struct lk_json_doc *d, const struct lk_report *r);
void lk_json_end(struct lk_json_doc *d); /* closes and frees */
/* The parts of the document that `leek diff`'s shares (docs/json.md): a frame's function, file,
 * line and module members; a "stack" key and its FRAME array (funcs, if not NULL, marks the
 * wrappers skipped before site_frame); a "processes" key and r's PROCESS array; a
 * "wrappers_skipped" key and r's WRAPPER array. */
void lk_json_frame_key(struct lk_json *j, const struct lk_sym_frame *f);
void lk_json_stack(struct lk_json *j, const struct lk_sym_frame *const *stack,
		   const uint32_t *funcs, size_t n, size_t site_frame);
/* The same under another key (`leek watch`'s free_stack). */
void lk_json_stack_named(struct lk_json *j, const char *key, const struct lk_sym_frame *const *stack,
			 const uint32_t *funcs, size_t n, size_t site_frame);
void lk_json_processes(struct lk_json *j, const struct lk_report *r);
void lk_json_wrappers(struct lk_json *j, const struct lk_report *r);

/* chart.c: the timeline as a chart, 80 columns wide. */
void lk_chart_timeline(FILE *f, const struct lk_timeline_point *p, size_t n, bool ascii);

#endif /* LEEK_REPORT_H */
