/* export.h: profiles written in other tools' formats (`leek export`): pprof's profile.proto
 * (pprof.c, pprof-pack.c), the folded stacks of flame graphs (folded.c), and the HTML report's
 * page (html.c: a report, src/cli/html/html.h).
 *
 * Every format is fed the same way, by one step that any writer can call: lk_export_stacks()
 * hands out each stack of a loaded profile, symbolized (every inlined frame included) with its
 * four estimates. A session (lk_export_new) loads the files, feeds a format's writer, and has it
 * write one output:
 *
 *   lk_export_new(format, &opts, sym, &x);
 *   lk_export_add_file(x, path, number, false, ...);   once per file (--merge: several)
 *   lk_export_add_file(x, base, number, true, ...);    --base: subtracted
 *   lk_export_write(x, out);
 *   lk_export_free(x);
 *
 * A new format is a struct lk_export_format and a row of export.c's table.
 *
 * Values are the report's estimates (docs/sampling.md section 4): a stack's allocated objects and
 * bytes over the whole profile, and its objects and bytes in use at the moment opts.at says (the
 * end, the peak, or a time), each exactly what `leek report` sums for its alloc, leaks, peak and
 * inuse views. Strings that come from a profile or from the files it names are escaped
 * (escape.c) before they are written.
 *
 * Memory follows the distinct stacks, frames and strings (never the length of a profile) and
 * comes from the memory budget (budget.h); beyond it a session fails with -E2BIG and "the
 * profile needs more than ... of memory to export (--max-memory; ...)". Errors are negative
 * errnos; nothing here prints.
 */
#ifndef LEEK_EXPORT_H
#define LEEK_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profile.h"
#include "site.h"
#include "symbolize.h"

/* The four values of a stack, in pprof's order for Go's heap profiles. */
enum lk_export_value {
	LK_EXPORT_ALLOC_OBJECTS,
	LK_EXPORT_ALLOC_SPACE,
	LK_EXPORT_INUSE_OBJECTS,
	LK_EXPORT_INUSE_SPACE,
	_LK_EXPORT_VALUE_MAX,
};

const char *lk_export_value_name(enum lk_export_value v); /* "alloc_objects", ... */
int lk_export_value_from_name(const char *name);           /* enum lk_export_value, -EINVAL */
bool lk_export_value_is_bytes(enum lk_export_value v);     /* *_space: bytes; else objects */

/* When the in-use values are taken. */
enum lk_export_at {
	LK_EXPORT_AT_END,  /* live at the end (a crashed profile: at its last record) */
	LK_EXPORT_AT_PEAK, /* live at the estimated high-water mark of the heap (merged: each
			    * profile's own) */
	LK_EXPORT_AT_TIME, /* live at at_ns since each profile's start */
};

struct lk_export_opts {
	enum lk_export_at at;
	uint64_t at_ns;                      /* LK_EXPORT_AT_TIME */
	enum lk_export_value value;          /* folded: the one value written */
	const struct lk_site_filter *filter; /* --focus, --ignore; NULL: every stack */
	uint64_t span_from_ns, span_until_ns; /* both set: the pprof's time_nanos and duration (push:
					      * its interval, real time); else the profiles' span */
	bool reread;                         /* files are read again with the same number (push's
					      * intervals): modules registered before are kept */
	void *writer_ctx;                    /* a format's own state, given to its open() (push's
					      * deltas, src/cli/push/); NULL for the table's */
	bool segment_only;                   /* a rotated profile's file alone (lk_profile_opts) */
};

/* One loaded profile, as a writer sees it while its stacks come. */
struct lk_export_process {
	const char *path;
	const struct lk_profile *profile; /* header, totals, modules (lk_profile_modules) */
	uint32_t number;                  /* its modules' profile number in the symbolizer */
	struct lk_symbolizer *sym;        /* the session's, where they are registered */
	bool base;                        /* from --base: a diff's base, whose values a writer
					   * subtracts */
};

/* One stack with its estimates. frames come from the symbolizer or from the caller's struct
 * lk_site_stack, and hold while both do: each return address of stats->frames (innermost
 * first) gives a chain of frames, the inlined ones first and its function last (the only frame
 * of the chain with inlined false), and frames is these chains one after the other. A stack
 * without frames (stats->nframes 0: the unwinder failed) has one frame, "(no stack)". */
struct lk_export_stack {
	const struct lk_export_process *proc;
	const struct lk_stack_stats *stats;
	const struct lk_sym_frame *const *frames;
	size_t nframes;
	double value[_LK_EXPORT_VALUE_MAX]; /* unrounded, as they are for a base too */
};

/* v rounded to the nearest integer, clamped to int64_t (a profile may claim allocations of
 * 2^64 - 1 bytes, which no int64_t holds); NaN is 0. */
int64_t lk_export_round(double v);

/* The length of the chain that starts at frames[i]: up to and including its first frame that is
 * not inlined. */
size_t lk_export_chain_length(const struct lk_sym_frame *const *frames, size_t n, size_t i);

typedef int lk_export_stack_fn(void *ctx, const struct lk_export_stack *s);

/* The step every format uses: each stack of proc's profile (its modules registered with sym as
 * proc->number), symbolized into st, that o->filter keeps, with its values, to fn in stack-id
 * order. st keeps the frames of addresses no module covers until lk_site_stack_done(), so that
 * a writer may keep pointers to frames across stacks and profiles. 0, fn's first error, or
 * -ENOMEM / -E2BIG (the budget). */
int lk_export_stacks(struct lk_site_stack *st, struct lk_symbolizer *sym,
		     const struct lk_export_process *proc, const struct lk_export_opts *o,
		     lk_export_stack_fn *fn, void *ctx);

/* A format: its name, where its output goes by default, and its writer. A writer gets each
 * process before that process's stacks, then writes everything at once. */
struct lk_export_format {
	const char *name;   /* --format NAME */
	const char *suffix; /* an output named after its input: FILE + suffix */
	bool binary;        /* by default written beside its input, never to a terminal; else to
			     * stdout */
	bool takes_base;    /* --base: a diff */
	bool takes_value;   /* --value: writes one of the four values */
	const char *no_base; /* without takes_base: why, for --base's message */
	int (*open)(const struct lk_export_opts *o, void **ret);
	int (*process)(void *w, const struct lk_export_process *p);
	lk_export_stack_fn *stack; /* NULL: the writer reads the profile in process() */
	int (*write)(void *w, FILE *f); /* f's errors are the caller's to check */
	void (*close)(void *w);         /* accepts NULL */
};

/* The format named name, or NULL; lk_export_format_names() lists them ("pprof, folded, html"). */
const struct lk_export_format *lk_export_format_find(const char *name);
const char *lk_export_format_names(void);

struct lk_export;

int lk_export_new(const struct lk_export_format *fmt, const struct lk_export_opts *o,
		  struct lk_symbolizer *sym, struct lk_export **ret);
/* Loads the file (as `leek report` does, the in-use moment of opts), registers its modules as
 * profile number `number` and feeds its stacks to the writer; *trailer says whether the profile
 * ends with a trailer. On an error, *err may hold a malloc'd message (the loader's "offset N:
 * ...", or "the profile needs more than ... of memory to export (--max-memory; ...)"). */
int lk_export_add_file(struct lk_export *x, const char *path, uint32_t number, bool base,
		       bool *trailer, char **err);
/* The same for a profile loaded or followed by the caller (`leek push`'s follower, read a few
 * records at a time: lk_profile_follow_snapshot), named path, which it keeps: its stacks with the
 * values they have now. opts.segment_only is the caller's to have applied. */
int lk_export_add_profile(struct lk_export *x, const char *path, const struct lk_profile *p,
			  uint32_t number, bool base, bool *trailer, char **err);
size_t lk_export_processes(const struct lk_export *x); /* added so far, bases too */
/* The writer's state, as its format's open() made it: for a format that wraps another's
 * (src/cli/push/delta.c), to read what it kept. */
void *lk_export_writer(struct lk_export *x);
/* Has the writer write the output to f. -ECANCELED if a file failed after the writer had part
 * of it (an output would hold part of a profile): a file that could not be loaded leaves the
 * others' output whole. */
int lk_export_write(struct lk_export *x, FILE *f);
struct lk_export *lk_export_free(struct lk_export *x); /* NULL-safe, returns NULL */
static inline void lk_export_freep(struct lk_export **x)
{
	lk_export_free(*x);
}

#endif /* LEEK_EXPORT_H */
