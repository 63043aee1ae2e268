/* summary.h: one pass over a profile that counts what `leek dump --summary` and `leek run` show.
 *
 * It tracks the sampled blocks still live (address -> size) and nothing else, so its memory
 * follows the live samples, capped at LK_SUMMARY_MAX_LIVE and by the memory budget (budget.h).
 * The estimate of live bytes weights
 * each live sample by w(s) = 1 / (1 - exp(-s/T)), the inverse of the chance that a block of s
 * bytes is sampled with mean period T (docs/sampling.md); exact mode (T = 1) weighs 1.
 */
#ifndef LEEK_SUMMARY_H
#define LEEK_SUMMARY_H

#include <stdio.h>

#include "read.h"

#define LK_SUMMARY_MAX_LIVE (1u << 25)

struct lk_summary {
	uint64_t records[LK_REC_MAX_KNOWN + 1], ext_records;
	uint64_t allocs, inherited, frees, unmatched_frees;
	uint64_t live_blocks, live_bytes;     /* sampled blocks live at the end, bytes requested */
	double est_live_bytes, est_live_blocks;
	uint64_t max_rss, duration_ns, end_realtime_ns;
	uint32_t ncounters;                   /* last value of each counter seen */
	struct lk_counter_value counters[LK_READ_MAX_COUNTERS];
	bool trailer;
	uint64_t end_offset;
};

/* The estimator's weight of one sampled block of `size` bytes; period 1 is exact mode. Defined in
 * profile-stats.c (profile.h declares it too). */
double lk_sample_weight(uint64_t size, uint64_t period);

/* Reads every remaining record of an opened reader. 0; or the reader's error, *err NULL (the
 * caller prints lk_reader_error()); or -ENOMEM, or -E2BIG for more live blocks than
 * LK_SUMMARY_MAX_LIVE or the budget holds, with a malloc'ed "offset N: ..." in *err. */
int lk_summary_read(struct lk_reader *r, struct lk_summary *s, char **err);

/* The `leek dump --summary` block, "key: value" lines. */
void lk_summary_print(FILE *f, const char *path, const struct lk_profile_header *h,
		      const struct lk_summary *s);

/* "leek: PATH: what is wrong" for an error r from the reader or lk_summary_read(); returns r. */
int lk_print_read_error(const char *path, const struct lk_reader *rd, int r);
/* "leek: PATH: warning: no trailer: profile ends at its last complete record at offset N (...)" */
void lk_print_no_trailer(const char *path, uint64_t end_offset);

#endif /* LEEK_SUMMARY_H */
