/* pprof.h: the tables of a pprof export, as pprof.c fills them and pprof-pack.c packs them into
 * a profile.proto message (third_party/pprof/profile.proto). Only those two files include it.
 *
 * Each table is an idset (idset.h) of packed keys, so an entry's number is its position and its
 * proto id that number + 1 (profile.proto: ids are nonzero); strings are numbered from 0, which
 * is "" as the proto requires. What a key does not hold sits in an array beside the set, at the
 * same index. Everything comes from the memory budget.
 */
#ifndef LEEK_PPROF_H
#define LEEK_PPROF_H

#include <stdbool.h>
#include <stdint.h>

#include "export-internal.h"
#include "idset.h"
#include "u64map.h"

/* Keys: without padding, so that equal keys are equal bytes. */
struct lk_pprof_mapping {    /* one loaded module, or several processes' identical ones */
	uint64_t start, limit;   /* the addresses its PT_LOAD segments span */
	uint32_t file, build_id; /* strings */
};

struct lk_pprof_function {
	uint32_t name, system_name, file; /* strings */
};

struct lk_pprof_location { /* one return address of a module (or of none) */
	uint64_t address;  /* return address - 1: inside the call, what was symbolized */
	uint64_t chain;    /* its first frame's address in memory: the symbolizer's answer for it */
	uint32_t mapping;  /* id; 0: no module covers it */
	uint32_t zero;     /* 0: no padding */
};

_Static_assert(sizeof(struct lk_pprof_mapping) == 24, "no padding in a key");
_Static_assert(sizeof(struct lk_pprof_function) == 12, "no padding in a key");
_Static_assert(sizeof(struct lk_pprof_location) == 24, "no padding in a key");

struct lk_pprof_line {
	uint32_t function; /* id */
	uint32_t line;
};

struct lk_pprof_span {
	uint64_t first;
	uint32_t n;
};

struct lk_pprof_sample {
	struct lk_pprof_span locs; /* its location ids, leaf first: locs[first...first + n) */
	int64_t value[_LK_EXPORT_VALUE_MAX]; /* rounded; a base's negated */
	bool base;                 /* from --base: labelled pprof::base=true */
};

struct lk_pprof {
	struct lk_export_opts opts;
	struct lk_idset strings, mappings, functions, locations;
	struct lk_u64map mapping_of;        /* profile number << 32 | module id -> mapping id */

	struct lk_pprof_span *loc_lines;    /* per location: its lines, inlined ones first */
	size_t loc_lines_cap;
	struct lk_pprof_line *lines;
	size_t nlines, lines_cap;

	struct lk_pprof_sample *samples;
	size_t nsamples, samples_cap;
	uint64_t *locs;                     /* every sample's location ids, one after the other */
	size_t nlocs, locs_cap;

	int64_t *comments;                  /* strings (int64_t: the proto's type) */
	size_t ncomments, comments_cap;
	uint64_t period;                    /* the first profile's */
	uint64_t start_ns, end_ns;          /* real time: the earliest start, the latest end */
	bool have_time;
	uint32_t type_names[_LK_EXPORT_VALUE_MAX], type_units[_LK_EXPORT_VALUE_MAX];
	uint32_t period_type, period_unit, base_key, base_true; /* strings */

	struct lk_strbuf tmp;               /* a string being escaped */
};

#endif /* LEEK_PPROF_H */
