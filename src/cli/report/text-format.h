/* text-format.h: how leek's text outputs write numbers, times and sites for people: `leek
 * report`'s (out-text.c) and `leek diff`'s (src/cli/diff/diff-text.c), alike.
 *
 * Byte figures are in binary units (KiB, MiB) with about 3 significant digits, an interval prints
 * both ends in one unit, and a string from a profile or a debug file is printed escaped
 * (lk_print_escaped: a file name could hold terminal escapes). The lk_text_* that fill a buffer
 * return it; buf must hold at least 32 bytes (48 for an interval).
 */
#ifndef LEEK_TEXT_FORMAT_H
#define LEEK_TEXT_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "report.h"

const char *lk_text_bytes(char *buf, size_t size, double v);  /* "56.4 MiB" */
const char *lk_text_change(char *buf, size_t size, double v); /* "+1.20 MiB", "-300 B", "0 B" */
/* "[37.2, 43.1] MiB", both ends in the unit of the upper one; "exact" when there is no
 * uncertainty, "-" without a sample. */
const char *lk_text_interval(char *buf, size_t size, const struct lk_estimate *e);
/* A change's: "[+2.10, +5.10] MiB", signed, both ends in the unit of the larger. */
const char *lk_text_change_interval(char *buf, size_t size, double lo, double hi);
const char *lk_text_count(char *buf, size_t size, double v);  /* "412", "1.5k", "2.0M" */
const char *lk_text_time(char *buf, size_t size, double ns);  /* "250 ms", "1.50 s" */

void lk_text_escaped(FILE *f, const char *s);
/* "56.42 MiB [53.00, 59.80] MiB, 412 samples", with a '~' for too few. */
void lk_text_estimate(FILE *f, const struct lk_estimate *e);
/* function (file:line) [module], the file and module as base names unless full. */
void lk_text_site(FILE *f, const struct lk_sym_frame *fr, bool full);
/* A site's stack, one frame a line, the site marked '>' and its allocator frames said; and how
 * many stacks share the site, if more than one. */
void lk_text_stack(FILE *f, const struct lk_sym_frame *const *stack, size_t n, size_t site_frame,
		   size_t nstacks);
/* A process's command line, and " [cut]" if its profile cut it. */
void lk_text_cmdline(FILE *f, const struct lk_report_process *q);

#endif /* LEEK_TEXT_FORMAT_H */
