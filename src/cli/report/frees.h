/* frees.h: `leek report frees`: the frees of sampled blocks of one profile, symbolized (frees.c),
 * and their text and JSON (out-frees.c; docs/json.md, "leek-frees").
 *
 * A section holds the last frees (profile.h's lk_free_event) and every (allocation stack, free
 * stack) pair (lk_free_pair), each stack symbolized once (section.h; its site is the first frame
 * outside the allocator, so free and operator delete are skipped too). The profile can be freed
 * once the section is made; the symbolizer must outlive it. Memory, from the budget (budget.h): a copy of the profile's recent frees and of the pairs
 * shown, and one symbolized copy of each stack they name.
 */
#ifndef LEEK_FREES_H
#define LEEK_FREES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "json-write.h"
#include "profile.h"
#include "section.h"
#include "symbolize.h"

#define LK_FREES_LAST_DEFAULT 20 /* recent frees shown: a screen, what a use-after-free hunt reads
				  * first (the newest frees of the block's site) */

struct lk_frees_event {
	struct lk_free_event e;
	const struct lk_section_stack *alloc, *free; /* free: NULL without a free stack */
};

struct lk_frees_pair {
	struct lk_free_pair p;
	const struct lk_section_stack *alloc, *free;
};

struct lk_frees_section {
	struct lk_section_head head;
	uint64_t frees;           /* FREE records of the profile */
	uint64_t with_stack;      /* of the sampled frees kept, those with a free stack */
	struct lk_frees_event *recent; /* oldest first */
	size_t nrecent;
	struct lk_frees_pair *pairs;   /* by bytes freed, largest first */
	size_t npairs, npairs_total;   /* shown (--top), and in all */
	struct lk_section_stacks stacks;
	size_t recent_cap, pairs_cap; /* for lk_budget_free */
};

/* The section of profile p (loaded with opts.frees), its stacks symbolized in sym as profile
 * `index` (its modules added here). top: pairs kept, 0 all. 0, -ENOMEM or -E2BIG (beyond the
 * budget). */
int lk_frees_section_new(const char *path, const struct lk_profile *p, struct lk_symbolizer *sym,
			 uint32_t index, const struct lk_site_filter *filter, size_t top,
			 struct lk_frees_section **ret);
struct lk_frees_section *lk_frees_section_free(struct lk_frees_section *s); /* NULL-safe */
static inline void lk_frees_section_freep(struct lk_frees_section **s)
{
	lk_frees_section_free(*s);
}

/* out-frees.c */
void lk_frees_text(FILE *f, const struct lk_frees_section *s, bool stacks);
void lk_frees_json_begin(struct lk_json *j, FILE *f, size_t last, size_t top);
void lk_frees_json(struct lk_json *j, const struct lk_frees_section *s);
void lk_frees_json_end(struct lk_json *j);

#endif /* LEEK_FREES_H */
