/* pprof-util.h: reading what `leek export --format pprof` writes, with the readers the tests
 * trust to be independent of it: `go tool pprof` (Debian's golang-go), whose -raw output is parsed
 * here, and, for the fields -raw rounds (the duration), the message itself decoded by protobuf-c.
 *
 * go_path() finds go in PATH; a test without it skips (SKIP, never a pass). Failures go through
 * FAIL (harness.h) and name the output file.
 */
#ifndef LEEK_TEST_PPROF_UTIL_H
#define LEEK_TEST_PPROF_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proc.h"

#define PPROF_VALUES 4 /* alloc_objects, alloc_space, inuse_objects, inuse_space */

struct pprof_line {
	char *function, *system_name, *file; /* system_name: NULL when -raw shows none (the same
					      * as function) */
	long line;
};

struct pprof_location {
	uint64_t id, address, mapping; /* mapping 0: none */
	size_t nlines;
	struct pprof_line *lines;      /* inlined functions first, as pprof keeps them */
};

struct pprof_mapping {
	uint64_t id, start, limit, offset;
	char *file, *build_id, *flags; /* flags: "[FN][FL][LN][IN]" */
};

struct pprof_sample {
	int64_t v[PPROF_VALUES];
	uint64_t *locs;                /* location ids, leaf first */
	size_t nlocs;
	bool base;                     /* labelled pprof::base:[true] */
};

/* `go tool pprof -raw`'s view of a profile (profile.Profile.String()). */
struct pprof_raw {
	char **comments;
	size_t ncomments;
	char *period_type, *time;      /* "space bytes"; "2026-12-03 23:00:46.537129407 +0000 UTC" */
	long long period;
	char *types[PPROF_VALUES];     /* "alloc_objects/count", ... */
	size_t ntypes;
	int dflt;                      /* the type marked [dflt]; -1 if none */
	struct pprof_sample *samples;
	size_t nsamples;
	struct pprof_location *locs;
	size_t nlocs;
	struct pprof_mapping *maps;
	size_t nmaps;
	char *text;                    /* the whole output */
};

/* The go binary in PATH, or NULL. */
const char *go_path(void);
/* go_path(), or SKIP the test. */
const char *need_go(void);

/* `go tool pprof ARGS...` in dir (TZ=UTC): fails the test unless it exits 0. */
void go_pprof(struct proc *p, const char *dir, const char *const *args);

/* `go tool pprof -raw [extra...] FILE`, parsed; extra may be NULL. */
void pprof_raw(const char *dir, const char *file, const char *const *extra, struct pprof_raw *r);
void pprof_raw_free(struct pprof_raw *r);
/* Sample values summed: column i of every sample. */
int64_t pprof_raw_sum(const struct pprof_raw *r, int i);
const struct pprof_location *pprof_location(const struct pprof_raw *r, uint64_t id);
const struct pprof_mapping *pprof_mapping(const struct pprof_raw *r, uint64_t id);

/* The "of T total" of `go tool pprof -top -sample_index=INDEX FILE` (bytes in -unit=B). */
int64_t pprof_top_total(const char *dir, const char *file, const char *index);

/* The message's header fields, decoded from the gzipped file by protobuf-c. */
struct pprof_header {
	int64_t time_nanos, duration_nanos, period;
	char *period_type, *period_unit, *default_sample_type;
	size_t nstrings;
	bool strings_valid; /* string_table[0] is "" and every string index in the message is
			     * within the table */
	bool canonical;     /* the bytes are those of the message packed whole by protobuf-c */
};
void pprof_decode_header(const char *file, struct pprof_header *h);

#endif /* LEEK_TEST_PPROF_UTIL_H */
