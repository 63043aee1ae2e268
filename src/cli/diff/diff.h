/* diff.h: what `leek diff` shows: the change at each allocation site between two profiles (or two
 * groups of profiles, each merged), or between two moments of one, with a 95% interval and
 * whether it is significant (docs/sampling.md section 12). diff.c builds, diff-rank.c tests and
 * ranks, diff-text.c, diff-json.c and diff-html.c print; another output is one more printer of
 * struct lk_diff.
 *
 * Building one: lk_diff_new(), lk_diff_add_file() per file, lk_diff_finish(). Each side is a
 * report (report.h) of its files merged, with every site kept; sites are matched across the sides
 * by their key (function, file, line, module: site.h), so a site matches across processes and
 * runs. Memory follows the sites, never the profiles' length: the sides' reports and the diff's
 * sites are taken from the memory budget (budget.h).
 *
 * Glossary: base and new are the two sides (moments: the first and the second moment); a site's
 * figure is the estimate the diff ranks by (--by: live or alloc); a change is new - base.
 */
#ifndef LEEK_DIFF_H
#define LEEK_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "flame.h"
#include "report.h"

enum lk_diff_mode {
	LK_DIFF_PROFILES, /* BASE NEW: two profiles, or two groups of them */
	LK_DIFF_MOMENTS,  /* --from T1 --to T2 FILE: two moments of the same profiles */
};

enum lk_diff_when {   /* profiles: which live bytes */
	LK_DIFF_END,      /* at the end of each profile (leaks) */
	LK_DIFF_PEAK,     /* at each profile's peak */
	LK_DIFF_AT,       /* at at_ns since each profile's start (inuse) */
};

enum lk_diff_by {
	LK_DIFF_BY_LIVE,  /* rank by the change in live bytes */
	LK_DIFF_BY_ALLOC, /* ... in allocated bytes (profiles only) */
};

struct lk_diff_opts {
	enum lk_diff_mode mode;
	enum lk_diff_when when;    /* profiles */
	enum lk_diff_by by;
	uint64_t at_ns;            /* profiles, LK_DIFF_AT; moments: the second moment, UINT64_MAX
				    * for the end */
	uint64_t from_ns;          /* moments: the first moment, at or before at_ns */
	const char *from_mark;     /* moments: not NULL, the first moment is each profile's mark of
				    * this name (`leek ctl PID mark NAME`), and from_ns unused */
	const char *at_mark;       /* the same for at_ns */
	size_t top;                /* sites kept after ranking; 0 = all */
	double min_share;          /* sites whose change is below this fraction of the larger side's
				    * total go */
	bool stacks;               /* the text shows each site's stack */
	bool no_auto_wrappers;     /* skip only the listed allocator frames (report.h) */
	bool segment_only;         /* a rotated profile's file alone (lk_profile_opts) */
	const struct lk_site_filter *filter;
};

/* One figure of one site (or of the whole) on both sides, and its change. */
struct lk_diff_change {
	struct lk_estimate base, new; /* moments, live: at the first and at the second moment */
	struct lk_change change;      /* new - base, its 95% interval and p-value */
	double q;                     /* p adjusted for the number of sites (lk_change_adjust) */
	bool tested;                  /* a p-value and q (moments' alloc is not a change) */
	bool significant;             /* tested and q <= LK_CHANGE_FDR */
};

struct lk_diff_site {
	const struct lk_sym_frame *const *stack; /* the heaviest stack of the new side's site, or
						  * of the base's if new has none */
	const uint32_t *funcs;                   /* its frames' function ids (report.h) */
	size_t nframes, site_frame, nstacks;     /* of that side's site */
	struct lk_diff_change live;
	struct lk_diff_change alloc;             /* moments: new is what was allocated between the
						  * two, base is empty, and it is not tested */
	double share;                            /* |change| of the figure over the larger side's
						  * total of it */
};

struct lk_diff {
	struct lk_diff_opts opts;
	struct lk_report *side[2];   /* base, new; moments: one report, both */
	uint64_t period[2];          /* the largest period of each side's files (1: all exact) */
	struct lk_diff_change live, alloc; /* over every site compared */
	struct lk_diff_site *sites;  /* ranked, after lk_diff_finish() */
	size_t nsites;               /* shown (--top, --min-share) */
	size_t sites_total;          /* compared: with a sample on either side */
	size_t significant;          /* of them, with a significant change of the figure */
	size_t stacks_filtered;      /* stacks left out by --focus and --ignore */
	size_t sites_cap;
};

int lk_diff_new(const struct lk_diff_opts *o, struct lk_diff **ret);
/* Loads a file and adds it to side 0 (base) or 1 (new; moments: only 0), as report.h's
 * lk_report_add_file(); profile is the file's number for the symbolizer, unique over both sides.
 * On an error, *err may hold a malloc'd message. */
int lk_diff_add_file(struct lk_diff *d, unsigned side, struct lk_symbolizer *sym,
		     uint32_t profile, const char *path, char **err);
/* diff-rank.c: matches the sites of the two sides, tests each change, ranks and keeps the top.
 * 0, -ENOMEM or -E2BIG (the budget). */
int lk_diff_finish(struct lk_diff *d);
struct lk_diff *lk_diff_free(struct lk_diff *d); /* NULL-safe, returns NULL */
static inline void lk_diff_freep(struct lk_diff **d)
{
	lk_diff_free(*d);
}

/* diff-rank.c: c's change, new - base, tested on x1 and x2: base and new themselves (profiles),
 * or the blocks that left and came (moments), whose difference is the same up to rounding. */
void lk_diff_test(const struct lk_diff *d, struct lk_diff_change *c, const struct lk_estimate *x1,
		  const struct lk_estimate *x2);
/* What was allocated between two moments, e, as c: a figure (new), not a change (not tested). */
void lk_diff_allocated(struct lk_diff_change *c, const struct lk_estimate *e);

/* The figure that ranks (--by) and the other one. */
static inline const struct lk_diff_change *lk_diff_figure(const struct lk_diff_site *s,
							  enum lk_diff_by by)
{
	return by == LK_DIFF_BY_ALLOC ? &s->alloc : &s->live;
}

/* diff-text.c, diff-json.c (docs/json.md, "leek diff"). */
void lk_diff_text(FILE *f, const struct lk_diff *d);
void lk_diff_json(FILE *f, const struct lk_diff *d);
/* diff-html.c: one self-contained page (src/cli/html/page.h): both sides' summaries, a flame
 * graph of the change and the sites' changes. The flame graph first, from the sides' stacks (0,
 * -ENOMEM or -E2BIG: the budget), then the page; the flame graph freed before the diff. */
int lk_diff_flame(const struct lk_diff *d, struct lk_flame **ret);
void lk_diff_html(FILE *f, const struct lk_diff *d, const struct lk_flame *flame);

#endif /* LEEK_DIFF_H */
