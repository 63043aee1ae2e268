/* site.h: a profile's stack as symbolized frames, which of them is its allocation site, and the
 * stack filters of `leek report` (--alloc-fn, --focus, --ignore).
 *
 * A stack's allocation site is its first frame, innermost first, that is not part of the
 * allocator: frames in libleek never reach the report (the writer strips them), and
 * lk_site_is_allocator() names the rest (a built-in list, documented in allocators.c, plus the
 * user's --alloc-fn patterns). A report may skip more: the wrappers its stacks reveal
 * (wrappers.h). A site is identified by its key: function, file, line and module
 * of that frame, compared as strings, so the same site matches across processes (--merge).
 *
 * Apart from lk_site_symbolize(), pure functions over struct lk_sym_frame: nothing here prints.
 * The filter owns its compiled regexes (POSIX extended, regcomp).
 */
#ifndef LEEK_SITE_H
#define LEEK_SITE_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbolize.h"
#include "u64map.h"

enum lk_site_pattern {
	LK_SITE_ALLOC_FN, /* a function that only allocates for its caller: skipped */
	LK_SITE_FOCUS,    /* keep only stacks with a frame matching one of these */
	LK_SITE_IGNORE,   /* drop stacks with a frame matching one of these */
	_LK_SITE_PATTERN_MAX,
};

/* A pattern: a location, "MODULE+0xOFFSET" as the symbolizer names a frame without a symbol
 * ("libsqlite3.so.0+0xa7503"), which matches every frame at that offset of a module with that
 * file name (or that path, if MODULE holds a '/'), symbol or not; else a regex. */
struct lk_site_rule {
	bool location;
	regex_t re;
	char *module;
	uint64_t offset;
};

struct lk_site_filter {
	struct lk_site_rule *rules[_LK_SITE_PATTERN_MAX];
	size_t n[_LK_SITE_PATTERN_MAX];
};

/* Adds a pattern: a location (above), else a regex compiled with REG_EXTENDED | REG_NOSUB. 0,
 * -ENOMEM, or -EINVAL with regerror's text in err (if err is not NULL). */
int lk_site_filter_add(struct lk_site_filter *f, enum lk_site_pattern which, const char *pattern,
		       char *err, size_t err_size);
void lk_site_filter_done(struct lk_site_filter *f); /* frees the patterns; f can be reused */

/* True if the frame belongs to the allocator or to a wrapper around it: the built-in list, or an
 * --alloc-fn pattern (a regex over the function, or a location). */
bool lk_site_is_allocator(const struct lk_site_filter *f, const struct lk_sym_frame *frame);
/* allocators.c: the built-in list alone. */
bool lk_site_builtin_allocator(const struct lk_sym_frame *frame);

/* The index of the site frame among n frames (innermost first): the first that is not an
 * allocator frame, or 0 if every frame is one. n must be at least 1. */
size_t lk_site_pick(const struct lk_site_filter *f, const struct lk_sym_frame *const *frames,
		    size_t n);

/* False if --focus or --ignore removes this stack. Each regex is tried on every frame's
 * function, module path and module file name, each location on every frame's address. */
bool lk_site_wanted(const struct lk_site_filter *f, const struct lk_sym_frame *const *frames,
		    size_t n);

/* One stack, symbolized and flattened: the chain of each address (inlined frames first), one
 * after the other, innermost first. Frames point into the symbolizer, or for an address no
 * module covers (or a stack with no frame) into this object, which keeps them until
 * lk_site_stack_done() so that pointers taken from one stack stay valid for later ones. Its frames
 * and synthetic frames are taken from the memory budget (budget.h). */
struct lk_site_stack {
	const struct lk_sym_frame **frames;
	size_t n, cap;
	struct lk_site_synth *synths;
	struct lk_u64map synth_by_pc;
};

void lk_site_stack_init(struct lk_site_stack *s);
void lk_site_stack_trim(struct lk_site_stack *s); /* frees frames[], keeps the synthetic ones */
void lk_site_stack_done(struct lk_site_stack *s);

/* Replaces s's frames with the stack's: frames are return addresses, so frames[i] - 1 is looked
 * up in module modules[i] of the symbolizer's profile (0: none). 0, -ENOMEM or -E2BIG (beyond the
 * budget). */
int lk_site_symbolize(struct lk_site_stack *s, struct lk_symbolizer *sym, uint32_t profile,
		      const uint64_t *frames, const uint64_t *modules, uint32_t nframes);

/* Site keys: (function, file, line, module); file and module may be NULL. */
uint64_t lk_site_key_hash(const struct lk_sym_frame *frame);
int lk_site_key_compare(const struct lk_sym_frame *a, const struct lk_sym_frame *b);
/* A function's key: (function, file, module), whatever the line (funcs.h). */
uint64_t lk_site_func_hash(const struct lk_sym_frame *frame);
int lk_site_func_compare(const struct lk_sym_frame *a, const struct lk_sym_frame *b);

/* The part of a path after its last '/'; "" for NULL. */
const char *lk_site_basename(const char *path);

#endif /* LEEK_SITE_H */
