/* errors.h: `leek report errors`: the memory errors that libleek caught in one profile (ERROR
 * records, format version 8), symbolized (errors.c), and their text and JSON (out-errors.c;
 * docs/json.md, "leek-errors").
 *
 * Each error names up to three stacks: the one that allocated the block, the one that freed it
 * (a double free under LEEK_FREE_STACKS, a use-after-free of a guarded block) and the one of the
 * bad free or faulting access, each symbolized once (section.h). The profile can be freed once the
 * section is made; the symbolizer must outlive it. Memory, from the budget (budget.h): the errors
 * kept (profile.h, LK_PROFILE_MAX_ERRORS) and one symbolized copy of each stack they name.
 */
#ifndef LEEK_ERRORS_H
#define LEEK_ERRORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "json-write.h"
#include "profile.h"
#include "section.h"
#include "symbolize.h"

struct lk_errors_event {
	struct lk_error_event e;
	const struct lk_section_stack *alloc, *free, *at; /* NULL: no such stack recorded */
};

struct lk_errors_section {
	struct lk_section_head head;
	uint64_t errors;       /* ERROR records of the profile; the first nerrors are in events */
	struct lk_errors_event *events; /* in file order */
	size_t nerrors;
	struct lk_section_stacks stacks;
	size_t events_cap; /* for lk_budget_free */
};

/* The section of profile p, its stacks symbolized in sym as profile `index` (its modules added
 * here). 0, -ENOMEM or -E2BIG (beyond the budget). */
int lk_errors_section_new(const char *path, const struct lk_profile *p, struct lk_symbolizer *sym,
			  uint32_t index, const struct lk_site_filter *filter,
			  struct lk_errors_section **ret);
struct lk_errors_section *lk_errors_section_free(struct lk_errors_section *s); /* NULL-safe */
static inline void lk_errors_section_freep(struct lk_errors_section **s)
{
	lk_errors_section_free(*s);
}

/* out-errors.c */
void lk_errors_text(FILE *f, const struct lk_errors_section *s, bool stacks);
void lk_errors_json_begin(struct lk_json *j, FILE *f);
void lk_errors_json(struct lk_json *j, const struct lk_errors_section *s);
void lk_errors_json_end(struct lk_json *j);

#endif /* LEEK_ERRORS_H */
