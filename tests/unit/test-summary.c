/* test-summary.c: `leek dump --summary`'s counts and estimate (src/cli/profile/summary.c), and the
 * CLI's number parsing (src/cli/base/util.c).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>

#include "budget.h"
#include "build-profile.h"
#include "harness.h"
#include "recent.h"
#include "read.h"
#include "summary.h"
#include "util.h"

TEST(weight)
{
	/* w(s) = 1 / (1 - exp(-s/T)): about T/s for small blocks, 1 for blocks far above T. */
	ASSERT_NEAR(lk_sample_weight(128, 524288), 1.0 / (1.0 - exp(-128.0 / 524288)), 1e-6);
	ASSERT_NEAR(lk_sample_weight(1, 524288), 524288.5, 0.01);
	ASSERT_NEAR(lk_sample_weight(524288, 524288), 1.0 / (1.0 - exp(-1.0)), 1e-12);
	ASSERT_NEAR(lk_sample_weight(100 << 20, 524288), 1.0, 1e-12);
	ASSERT_EQ(lk_sample_weight(1, 1), 1.0); /* exact mode: the caller passes period 1 */
	ASSERT_EQ(lk_sample_weight(0, 524288), 1.0);
}

TEST(summary_of_sample)
{
	struct lk_reader *rd = lk_reader_new();
	struct lk_summary s;
	struct pb_sample p;
	char *err = NULL;
	double est = 0;

	pb_build_sample(&p);
	ASSERT_OK(lk_reader_open_memory(rd, p.b.p, p.b.len));
	ASSERT_OK(lk_summary_read(rd, &s, &err));
	ASSERT_TRUE(err == NULL);
	ASSERT_EQ(s.records[LK_REC_ALLOC], 3);
	ASSERT_EQ(s.records[LK_REC_FREE], 2);
	ASSERT_EQ(s.records[LK_REC_STACK], 3);
	ASSERT_EQ(s.records[LK_REC_MODULE], 3);
	ASSERT_EQ(s.records[LK_REC_TRAILER], 1);
	ASSERT_EQ(s.ext_records, 2);
	ASSERT_EQ(s.allocs, 3);
	ASSERT_EQ(s.inherited, 1);
	ASSERT_EQ(s.frees, 2);
	ASSERT_EQ(s.unmatched_frees, 0);
	/* Live: 1 MiB and the inherited 64 B; the UINT64_MAX and 128 B blocks were freed. */
	ASSERT_EQ(s.live_blocks, 2);
	ASSERT_EQ(s.live_bytes, (1 << 20) + 64);
	for (uint64_t size = 64; size <= 1 << 20; size *= 2)
		if (size == 64 || size == 1 << 20)
			est += (double)size / (1.0 - exp(-(double)size / 524288));
	ASSERT_NEAR(s.est_live_bytes, est, est * 1e-12);
	ASSERT_EQ(s.max_rss, 123456789);
	ASSERT_EQ(s.duration_ns, 189);
	ASSERT_EQ(s.end_realtime_ns, 1700000001000000000);
	ASSERT_TRUE(s.trailer);
	ASSERT_EQ(s.ncounters, 4); /* arena_full, records_dropped, samples, frees */
	ASSERT_EQ(s.counters[0].id, LK_CNT_ARENA_FULL);
	ASSERT_EQ(s.counters[0].value, 3);
	lk_reader_free(rd);
	free(p.b.p);
}

TEST(summary_exact_mode)
{
	struct lk_reader *rd = lk_reader_new();
	struct pbuf b = { 0 };
	struct lk_summary s;
	char *err = NULL;

	pb_header(&b, &(struct pb_header){ .flags = LK_HDR_EXACT, .period = 1, .exe = "/x" });
	pb_alloc(&b, 1, 1, 0x1000, 10, 0);
	pb_alloc(&b, 1, 1, 0x2000, 20, 0);
	pb_alloc(&b, 1, 1, 0x3000, 5, 0);
	pb_free(&b, 1, 1, 0x3000);
	pb_free(&b, 1, 1, 0x3000); /* freed already */
	ASSERT_OK(lk_reader_open_memory(rd, b.p, b.len));
	ASSERT_OK(lk_summary_read(rd, &s, &err));
	ASSERT_TRUE(err == NULL);
	ASSERT_EQ(s.live_blocks, 2);
	ASSERT_EQ(s.unmatched_frees, 1);
	ASSERT_NEAR(s.est_live_bytes, 30, 1e-9);
	ASSERT_NEAR(s.est_live_blocks, 2, 1e-9);
	ASSERT_TRUE(!s.trailer);
	ASSERT_EQ(s.end_offset, b.len);
	lk_reader_free(rd);
	free(b.p);
}

/* `leek dump --summary` keeps the sampled blocks live, and takes their table from the memory
 * budget (budget.h) once they are behind recent.h's window: a million live blocks with 4 MiB to
 * keep them stop at the ALLOC that would have gone over, named by its offset; everything taken is
 * given back. */
TEST(summary_beyond_the_budget)
{
	static size_t off[1000000];
	struct lk_reader *rd = lk_reader_new();
	struct pbuf b = { 0 };
	struct lk_summary s;
	char *err = NULL, want[64];
	size_t live;

	pb_header(&b, &(struct pb_header){ .flags = LK_HDR_EXACT, .period = 1, .exe = "/x" });
	PB_REC(&b, lk_rec_stack(rec, 1, (uint64_t[]){ 0x401000 }, 1));
	PB_REC(&b, lk_rec_thread(rec, 1));
	for (size_t i = 0; i < 1000000; i++)
		off[i] = PB_REC(&b, lk_rec_alloc(rec, 1, 16, 1));
	lk_budget_set_limit(4 << 20);
	ASSERT_OK(lk_reader_open_memory(rd, b.p, b.len));
	ASSERT_EQ(lk_summary_read(rd, &s, &err), -E2BIG);
	ASSERT_TRUE(err != NULL);
	ASSERT_EQ(sscanf(err, "offset %*u: the profile needs more than 4 MiB of memory to read "
			 "(--max-memory; %zu live blocks so far)", &live), 1);
	ASSERT_TRUE(live >= LK_RECENT_BLOCKS && live < 1000000);
	snprintf(want, sizeof(want), "offset %zu: ", off[live]);
	ASSERT_CONTAINS(err, want);
	ASSERT_EQ(lk_budget_used(), 0);
	ASSERT_TRUE(lk_budget_peak() <= 4 << 20);
	free(err);
	lk_reader_free(rd);
	free(b.p);
}

TEST(parse_size)
{
	uint64_t v;

	ASSERT_OK(lk_parse_size("4096", &v));
	ASSERT_EQ(v, 4096);
	ASSERT_OK(lk_parse_size("512K", &v));
	ASSERT_EQ(v, 512 * 1024);
	ASSERT_OK(lk_parse_size("4MiB", &v));
	ASSERT_EQ(v, 4 << 20);
	ASSERT_OK(lk_parse_size("1g", &v));
	ASSERT_EQ(v, 1 << 30);
	ASSERT_EQ(lk_parse_size("", &v), -EINVAL);
	ASSERT_EQ(lk_parse_size("-1", &v), -EINVAL);
	ASSERT_EQ(lk_parse_size("12X", &v), -EINVAL);
	ASSERT_EQ(lk_parse_size("18446744073709551616", &v), -ERANGE);
	ASSERT_EQ(lk_parse_size("17179869184G", &v), -ERANGE);
	ASSERT_OK(lk_parse_u64("18446744073709551615", &v));
	ASSERT_EQ(v, UINT64_MAX);
	ASSERT_EQ(lk_parse_u64("1K", &v), -EINVAL);
}
