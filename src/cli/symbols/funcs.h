/* funcs.h: a number for each function that a report's frames name, and whether each frame is an
 * allocator frame, so that the rules over many stacks (wrappers.h) and the call tree compare
 * integers rather than strings.
 *
 * A function is its key (lk_site_func_hash: function, file and module, whatever the line or the
 * address), so the frames of one function at several lines, or of one library in several
 * processes, get one id. An inlined instance is the same function as its out-of-line copy.
 * Whether a frame is an allocator frame (lk_site_is_allocator, which a --alloc-fn location
 * decides per address) is asked once per distinct frame and kept beside its id.
 *
 * Ids count from 0 in the order first seen; lk_funcs_frame() gives the first frame seen of each,
 * to print. Memory follows the number of distinct frames and functions, from the memory budget
 * (budget.h). Not thread-safe; never prints.
 */
#ifndef LEEK_FUNCS_H
#define LEEK_FUNCS_H

#include <stddef.h>
#include <stdint.h>

#include "site.h"
#include "u64map.h"

#define LK_FUNC_ALLOC (1u << 31) /* in lk_funcs_get's answer: an allocator frame */
#define LK_FUNC_ID(x) ((x) & ~LK_FUNC_ALLOC)
#define LK_FUNCS_MAX (1u << 30)  /* functions in one table */

struct lk_funcs {
	const struct lk_site_filter *filter; /* --alloc-fn, for the allocator flag */
	struct lk_u64map by_frame;           /* frame pointer -> answer */
	uint32_t *slot;                      /* id + 1, open addressing by lk_site_func_hash */
	size_t nslots;
	const struct lk_sym_frame **first;   /* id -> the first frame seen */
	size_t n, cap;
};

void lk_funcs_init(struct lk_funcs *t, const struct lk_site_filter *filter);
void lk_funcs_done(struct lk_funcs *t);

/* The frame's function id, with LK_FUNC_ALLOC if it is an allocator frame, into *ret. The frame
 * must outlive t (frames from the symbolizer or lk_site_stack do). 0, -ENOMEM or -E2BIG. */
int lk_funcs_get(struct lk_funcs *t, const struct lk_sym_frame *frame, uint32_t *ret);

/* Each function of from in t's numbering, into ids[0 .. from->n) (ids without the allocator
 * flag): the same functions of several reports under one numbering. 0, -ENOMEM or -E2BIG. */
int lk_funcs_map(struct lk_funcs *t, const struct lk_funcs *from, uint32_t *ids);

static inline const struct lk_sym_frame *lk_funcs_frame(const struct lk_funcs *t, uint32_t id)
{
	return t->first[LK_FUNC_ID(id)];
}

#endif /* LEEK_FUNCS_H */
