/* out-format.h: the pieces the text outputs share (out-text.c, out-tree.c, and `leek diff`'s
 * src/cli/diff/diff-text.c): byte figures and changes in binary units with 3 significant digits,
 * intervals, counts, times, estimates with their samples and their '~', frames and stacks,
 * every string escaped.
 */
#ifndef LEEK_OUT_FORMAT_H
#define LEEK_OUT_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profile.h"
#include "symbolize.h"

/* Each writes into buf (32 bytes are enough; 48 for an interval) and returns it. */
const char *lk_fmt_bytes(char *buf, size_t size, double v);                  /* "56.4 MiB" */
const char *lk_fmt_change(char *buf, size_t size, double v); /* "+1.20 MiB", "-300 B", "0 B" */
/* "[37.2, 43.1] MiB", "exact", "-" */
const char *lk_fmt_interval(char *buf, size_t size, const struct lk_estimate *e);
/* A change's: "[+2.10, +5.10] MiB", signed, both ends in the unit of the larger; "exact". */
const char *lk_fmt_change_interval(char *buf, size_t size, double lo, double hi);
const char *lk_fmt_count(char *buf, size_t size, double v);                  /* "1.5k" */
const char *lk_fmt_time(char *buf, size_t size, double ns);                  /* "250 ms" */

void lk_text_escaped(FILE *f, const char *s);
/* "56.42 MiB [53.00, 59.80] MiB, 412 samples", with a '~' for too few. */
void lk_text_estimate(FILE *f, const struct lk_estimate *e);
/* function (file:line) [module], the file and module as base names unless full. */
void lk_text_frame(FILE *f, const struct lk_sym_frame *fr, bool full);
/* A site's stack, one frame a line, the site marked '>' and the frames before it said to be the
 * allocator's or, by funcs (funcs.h; NULL: none), wrappers skipped; and how many stacks share
 * the site, if more than one. */
void lk_text_stack(FILE *f, const struct lk_sym_frame *const *stack, const uint32_t *funcs,
		   size_t n, size_t site_frame, size_t nstacks);

#endif /* LEEK_OUT_FORMAT_H */
