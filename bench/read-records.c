/* read-records.c: the reader alone (src/cli/read), every record of a profile read through one of
 * its entry points, for callgrind: no aggregation, no symbols, nothing printed but a count.
 *
 * usage: read-records FILE next|many|skip
 *   next   lk_reader_next(), one record a call (`leek dump`)
 *   many   lk_reader_next_many(), up to 16 a call (a report's second pass, profile.c)
 *   skip   lk_reader_skip() (a report's first pass)
 *
 * Built by hand against a build's libraries (docs/performance.md, "Reading profiles"). Prints
 * "N records" and the sum of their times, so that two builds can be seen to read the same.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "read.h"

int main(int argc, char *argv[])
{
	struct lk_reader *rd = lk_reader_new();
	struct lk_record rec[16];
	uint64_t n = 0, sum = 0, t;
	int r;

	if (argc != 3 || !rd || lk_reader_open(rd, argv[1]) < 0) {
		fprintf(stderr, "usage: read-records FILE next|many|skip (%s)\n",
			rd ? lk_reader_error(rd) : "out of memory");
		return 1;
	}
	if (strcmp(argv[2], "next") == 0)
		while ((r = lk_reader_next(rd, rec)) > 0)
			n++, sum += rec[0].time_ns;
	else if (strcmp(argv[2], "skip") == 0)
		while ((r = lk_reader_skip(rd, &t)) > 0)
			n++, sum += t;
	else
		while ((r = lk_reader_next_many(rd, rec, 16)) > 0)
			for (int i = 0; i < r; i++)
				n++, sum += rec[i].time_ns;
	if (r < 0)
		fprintf(stderr, "%s: %s\n", argv[1], lk_reader_error(rd));
	printf("%" PRIu64 " records, times summed %" PRIu64 "\n", n, sum);
	lk_reader_free(rd);
	return r < 0;
}
