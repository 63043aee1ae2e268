/* section.h: what the one-profile sections of `leek report frees` (frees.h) and `leek report
 * errors` (errors.h) share: the profile's header fields they print, the stacks they name, each
 * symbolized once (section.c), and those parts of their text and JSON (out-section.c).
 *
 * A stack's site is picked as the report picks an allocation's (site.h). The stacks' frames point
 * into the section's site stack, so a section can outlive its profile, not its symbolizer.
 * Memory, from the budget (budget.h): the room for the stacks and one copy of each one's frames.
 */
#ifndef LEEK_SECTION_H
#define LEEK_SECTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "json-write.h"
#include "profile.h"
#include "site.h"
#include "symbolize.h"
#include "u64map.h"

/* The profile a section is of. */
struct lk_section_head {
	char *path, *exe;
	uint32_t pid;
	uint64_t period; /* 1: exact */
	bool trailer;
};

struct lk_section_stack {
	uint64_t id;                        /* in its profile; 0: none */
	const struct lk_sym_frame **frames; /* innermost first; NULL for id 0 */
	size_t n, site;                     /* frames[site] is the site */
};

/* A section's stacks: v[0..n), never moved once made (events point in), n <= cap. */
struct lk_section_stacks {
	struct lk_section_stack *v;
	size_t n, cap;
	struct lk_site_stack st; /* the synthetic frames the stacks point to */
};

/* What making a section's stacks needs, from lk_section_stacks_begin to _end. */
struct lk_section_builder {
	struct lk_section_stacks *ss;
	struct lk_symbolizer *sym;
	const struct lk_site_filter *filter;
	uint32_t index;                  /* the profile's in sym */
	const struct lk_stack_stats *st; /* the profile's, in id order (profile.h) */
	size_t nst;
	struct lk_u64map by_id; /* stack id -> its index in ss->v + 1 */
};

/* h from profile p, read from path. 0 or -ENOMEM; lk_section_head_done either way. */
int lk_section_head_init(struct lk_section_head *h, const char *path, const struct lk_profile *p);
void lk_section_head_done(struct lk_section_head *h);

/* Room in ss for cap stacks of profile p, symbolized in sym as profile `index`. 0, -ENOMEM or
 * -E2BIG (beyond the budget); lk_section_stacks_end and _done either way. */
int lk_section_stacks_begin(struct lk_section_builder *b, struct lk_section_stacks *ss,
			    const struct lk_profile *p, struct lk_symbolizer *sym, uint32_t index,
			    const struct lk_site_filter *filter, size_t cap);
/* The section's copy of stack id (0: an empty stack, "no stack"), symbolized the first time;
 * NULL once *err is set, or on failure (*err set then: -ENOMEM, -E2BIG, or -EOVERFLOW past cap). */
const struct lk_section_stack *lk_section_stack_of(struct lk_section_builder *b, uint64_t id,
						   int *err);
void lk_section_stacks_end(struct lk_section_builder *b); /* what only the making needed */
void lk_section_stacks_done(struct lk_section_stacks *ss);

/* out-section.c */
/* "TITLE: PATH (pid N, EXE, exact)" or "..., period 512 KiB)", and a newline. */
void lk_section_text_head(FILE *f, const char *title, const struct lk_section_head *h);
/* The document's start, {"format": FORMAT, "version": 1, ...; the caller adds its keys, then
 * lk_section_json_processes. */
void lk_section_json_begin(struct lk_json *j, FILE *f, const char *format);
void lk_section_json_processes(struct lk_json *j); /* "processes": [ */
void lk_section_json_end(struct lk_json *j);       /* ]}, and a newline */
/* A process's object opened, with its path, pid, exe, period and complete. */
void lk_section_json_head(struct lk_json *j, const struct lk_section_head *h);
/* KEY: the site's frame, or null without a stack. */
void lk_section_json_site(struct lk_json *j, const char *key, const struct lk_section_stack *s);
/* ID_KEY: the stack's id (0 without one) and KEY: its frames, or null without a stack. */
void lk_section_json_stack(struct lk_json *j, const char *id_key, const char *key,
			   const struct lk_section_stack *s);

#endif /* LEEK_SECTION_H */
