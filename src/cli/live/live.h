/* live.h: the views of a profile that its process is still writing, for `leek watch` and
 * `leek top` (cmd-watch.c, cmd-top.c).
 *
 *   source.c   the watched file: found by path or through a pid's /proc/PID/maps (follow.h), its
 *              safe read limit, whether its process lives, and its heap followed record by record
 *              (for --high-water) between reports
 *   view.c     one report: the profile read again up to the limit (lk_profile_opts.limit), made
 *              into ranked, symbolized sites (report.h) of one kind (old, all, peak), or the list
 *              of the recent frees of sampled blocks
 *   out-live.c a view as text, or as one JSON object on one line (docs/json.md, "leek watch")
 *
 * A report reads the file from its start: the profile engine's growth verdicts need the whole
 * run's timeline, and reading is what `leek report` does anyway (bench/report-throughput.sh has its
 * speed). Memory is the profile's and the report's, as `leek report`'s (budget.h); the watched
 * process pays nothing but the answers to the SYNCs of lk_live_sync (two pwrites each), since
 * nothing else here writes to its file, and nothing signals it.
 *
 * Errors are negative errno values; the commands print them.
 */
#ifndef LEEK_LIVE_H
#define LEEK_LIVE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "ctl.h"
#include "follow.h"
#include "report.h"

/* The watched profile. */
struct lk_live_source {
	char *path;
	pid_t pid;                 /* its process: the one given, or the header's */
	int fd;                    /* for its size */
	struct stat st;            /* its identity */
	uint64_t header_size;      /* records start there */
	struct lk_follow_limit lim;
	bool ended;                /* the process has gone: the file is read whole from now on */
	struct lk_profile_follow *f; /* its records as they become safe to read, for the heap; NULL
				      * until the header is below the limit, or after a failure */
	bool follow_failed;        /* f failed: the heap is no longer followed */
	int follow_err;            /* why (< 0), with the reader's "offset N: ..." in follow_msg
				    * (malloc'd, maybe NULL): `leek push` reports it */
	char *follow_msg;
	struct lk_symbolizer *sym; /* shared by every view (files are opened once) */
	uint32_t loads;            /* views made */
	struct lk_ctl ctl;         /* its control block, for SYNC (lk_live_sync); fd -1: none */
	uint64_t max_lag_ns;       /* a SYNC is posted once the last is this old; 0: never */
	uint64_t synced_ns;        /* when the last SYNC was posted (CLOCK_MONOTONIC) */
	uint32_t syncs;            /* SYNCs carried out */
	uint32_t segment;          /* a rotated profile's segment (LEEK_MAX_SIZE): the next one,
				    * once it is there, is followed instead (source.c) */
	uint64_t origin_ns;        /* what its segments share */
};

/* arg is a pid (digits) or a file. A pid's profile is looked for until wait_ns has passed (a
 * process maps its profile only once it has something to write): -ENOENT after that. -ESRCH for
 * no such process; a file's errors as open(2)'s, -EMEDIUMTYPE for one that is not a raw profile.
 * sym is the symbolizer to use (owned by the caller, who frees it after the source). */
int lk_live_open(const char *arg, uint64_t wait_ns, struct lk_symbolizer *sym,
		 struct lk_live_source **ret);
/* Has each look (lk_live_poll) post a SYNC into the profile's control block once the last one is
 * max_lag_ns old, and take libleek's reply as the limit, so that what a view reads is at most
 * max_lag_ns plus the process's RSS interval behind (docs/design.md, "Watching a running
 * process"); 0 never writes to the file. 0; < 0 if the block cannot be written (*why, if not
 * NULL, says why: another user's file, a libleek before format version 7): the limit then moves
 * only with the file's size. */
int lk_live_sync(struct lk_live_source *s, uint64_t max_lag_ns, const char **why);
/* A SYNC now (with lk_live_sync on), and its reply waited for up to wait_ns: before a report. */
void lk_live_sync_now(struct lk_live_source *s, uint64_t wait_ns);
/* One look: the file's size, the limit, the heap follower's step, and whether the process still
 * runs (1) or has gone (0; ended is set, and stays). < 0 if the file has become unreadable.
 * The heap follower (f) reads up to the limit, and every record below a SYNC's reply; once the
 * process has gone, the file to its end, as a finished file is read (`leek push` takes each
 * interval from it: lk_profile_follow_snapshot). */
int lk_live_poll(struct lk_live_source *s);
/* The heap estimate after the records followed so far, its highest value, and their time since
 * the start (0, 0, 0 before the header is read). */
void lk_live_heap(const struct lk_live_source *s, double *now, double *peak, uint64_t *t_ns);
void lk_live_close(struct lk_live_source *s); /* NULL-safe */

enum lk_live_kind {
	LK_LIVE_OLD,        /* live sampled blocks at least age old, by site (--every, SIGUSR1) */
	LK_LIVE_ALL,        /* every live site (SIGHUP; the final report) */
	LK_LIVE_HIGH_WATER, /* the sites live at the heap's highest point (--high-water) */
	LK_LIVE_FREES,      /* the recent frees of sampled blocks (SIGUSR2) */
};
const char *lk_live_kind_name(enum lk_live_kind k); /* "old", "all", "high_water", "frees" */

struct lk_live_opts {
	enum lk_live_kind kind;
	uint64_t age_ns;           /* old */
	bool known;                /* old: leave out the blocks allocated at or before known_ns */
	int64_t known_ns;
	const char *known_mark;    /* old: and those allocated at or before this mark (--from) */
	unsigned frees;            /* frees: how many */
	size_t top;                /* sites kept; 0: all */
	bool all_sites;            /* also the sites with nothing in the view (`leek top`, which
				    * sorts by bytes allocated too) */
	bool stacks, ascii;
	const struct lk_site_filter *filter;
	bool segment_only;         /* --segment-only: the followed file alone, not its chain */
};

/* One free of a sampled block, with its allocation's site and stack symbolized. */
struct lk_live_free {
	struct lk_free_event e;
	const struct lk_sym_frame **stack; /* innermost first, into the symbolizer */
	size_t n, site;                    /* frames; stack[site] is the allocation's site */
	const struct lk_sym_frame **fstack; /* the freeing stack (LEEK_FREE_STACKS); NULL: none */
	size_t fn, fsite;                  /* its frames; fstack[fsite] the free's site */
};

struct lk_live_view {
	struct lk_live_opts opts;
	struct lk_report *r;        /* the sites (not for frees: its header and totals only) */
	uint64_t end_ns;            /* the time of the last record read, since the start */
	bool ended, trailer;        /* the process had gone, and ended cleanly */
	struct lk_live_free *frees; /* frees, oldest first */
	size_t nfrees;
	struct lk_site_stack *synth; /* frees: keeps the synthetic frames their stacks point at */
};

/* Reads the profile up to its limit (whole once the process has gone) and makes one view of it.
 * 0, or < 0 with a malloc'd message in *err (lk_profile_load's "offset N: ..."). */
int lk_live_view_make(struct lk_live_source *s, const struct lk_live_opts *o,
		      struct lk_live_view **ret, char **err);
struct lk_live_view *lk_live_view_free(struct lk_live_view *v); /* NULL-safe */

/* out-live.c. text: a title line and the sites; json: one object and a newline. label says why
 * the view was made ("every", "SIGHUP", "exit", ...). */
void lk_live_text(FILE *f, const struct lk_live_view *v, const char *label);
void lk_live_json(FILE *f, const struct lk_live_view *v, const char *label);

#endif /* LEEK_LIVE_H */
