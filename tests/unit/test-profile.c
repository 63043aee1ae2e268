/* test-profile.c: aggregation of a profile (src/cli/profile/profile*.c): exact totals, live, peak
 * and old sets, the timeline, modules of frames, INHERIT and unmatched frees, crashed and corrupt
 * files, pipes, bounded memory. The estimators and intervals are in test-profile-stats.c, the
 * growth verdicts in test-profile-growth.c.
 *
 * Every profile is built in memory with the writer's own encoders (profile-sim.h) and every
 * expected number below is worked out by hand from the records.
 */
#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"
#include "profile-sim.h"
#include "recent.h"
#include "z-build.h"

/* An exact estimate: the point, no interval, never "too few". */
#define ASSERT_EXACT(e, v)                                                                         \
	do {                                                                                       \
		ASSERT_EQ((e).value, (v));                                                         \
		ASSERT_EQ((e).lo, (v));                                                            \
		ASSERT_EQ((e).hi, (v));                                                            \
		ASSERT_EQ((e).var, 0);                                                             \
		ASSERT_EQ((e).observed, (v));                                                      \
		ASSERT_TRUE(isinf((e).k_eff));                                                     \
		ASSERT_TRUE(!(e).too_few);                                                         \
	} while (0)

/* The exact-mode run of the test below:
 *
 *   t   record          heap H(t)  live                 stack
 *   0   MODULE 1 (0x400000 + [0, 0x10000)), STACK 1 (in it), STACK 2 (outside)
 *   10  ALLOC A 100     100        A                    1
 *   20  ALLOC B 200     300        A B                  1
 *   30  ALLOC C 1000    1300       A B C                2
 *   40  FREE A          1200       B C
 *   50  ALLOC D 50      1250       B C D                2
 *   60  FREE C          250        B D
 *   65  RSS 5000
 *   70  ALLOC E 2000    2250 peak  B D E                1
 *   80  FREE E          250        B D
 *   85  UNLOAD 1, STACK 3 (stack 1's frames, now in no module)
 *   90  ALLOC F 10      260        B D F                3
 *   95  RSS 3000
 *   100 TRAILER (samples 6, frees 3)
 */
static void build_exact(struct sim *s)
{
	static const uint64_t frames1[] = { 0x401234, 0x40ffff, 0x400000 }, frames2[] = { 0x7f01 };
	struct lk_module_info m = { .id = 1, .base = 0x400000, .nseg = 1, .seg = { { 0, 0x10000 } },
				    .build_id_len = 2, .build_id = { 0xab, 0xcd },
				    .path = "/usr/bin/sim", .path_len = 12 };
	uint64_t counters[LK_CNT_MAX + 1] = { [LK_CNT_SAMPLES] = 6, [LK_CNT_FREES] = 3 };

	sim_start(s, 1, LK_HDR_EXACT);
	PB_REC(&s->b, lk_rec_module(rec, 0, &m));
	sim_stack(s, frames1, 3);
	sim_stack(s, frames2, 1);
	sim_alloc(s, 10, 0xa000, 100, 1);
	sim_alloc(s, 20, 0xb000, 200, 1);
	sim_alloc(s, 30, 0xc000, 1000, 2);
	sim_free(s, 40, 0xa000);
	sim_alloc(s, 50, 0xd000, 50, 2);
	sim_free(s, 60, 0xc000);
	sim_rss(s, 65, 5000);
	sim_alloc(s, 70, 0xe000, 2000, 1);
	sim_free(s, 80, 0xe000);
	PB_REC(&s->b, lk_rec_pair(rec, LK_REC_UNLOAD, sim_dt(s, 85), 1));
	sim_stack(s, frames1, 3);
	sim_alloc(s, 90, 0xf000, 10, 3);
	sim_rss(s, 95, 3000);
	sim_trailer(s, 100, counters);
}

TEST(exact_totals_peak_timeline)
{
	struct lk_profile_opts o = { .at_ns = UINT64_MAX, .buckets = 4 };
	const struct lk_profile_totals *t;
	const struct lk_timeline_point *tl;
	const struct lk_stack_stats *st;
	struct lk_profile *p = NULL;
	char *err = NULL;
	struct sim s;

	build_exact(&s);
	ASSERT_OK(sim_load(&s, &o, &p, &err));
	t = lk_profile_totals(p);
	ASSERT_EQ(t->period, 1);
	ASSERT_EQ(t->duration_ns, 100);
	ASSERT_EQ(t->records, 18); /* with the THREAD record before the first ALLOC */
	ASSERT_EQ(t->samples, 6);
	ASSERT_EQ(t->frees, 3);
	ASSERT_EQ(t->frees_unknown, 0);
	ASSERT_EQ(t->inherited, 0);
	ASSERT_EQ(t->max_live, 3);
	ASSERT_EQ(t->max_rss, 5000);
	ASSERT_EQ(t->losses[LK_CNT_SAMPLES], 6);
	ASSERT_EQ(t->losses[LK_CNT_ARENA_FULL], 0);
	ASSERT_TRUE(t->trailer);
	ASSERT_EXACT(t->alloc_bytes, 3360);
	ASSERT_EXACT(t->alloc_objects, 6);
	ASSERT_EXACT(t->live_bytes_end, 260);
	ASSERT_EXACT(t->live_objects_end, 3);
	ASSERT_EXACT(t->peak_bytes, 2250);
	ASSERT_EQ(t->peak_ns, 70);

	/* Stack 0 named no sample, so it is left out: ids 1, 2, 3. */
	ASSERT_EQ(lk_profile_stacks(p, &st), 3);
	ASSERT_EQ(st[0].id, 1);
	ASSERT_EXACT(st[0].alloc_bytes, 2300);
	ASSERT_EXACT(st[0].alloc_objects, 3);
	ASSERT_EXACT(st[0].live_bytes, 200);
	ASSERT_EXACT(st[0].peak_bytes, 2200); /* B and E */
	ASSERT_EXACT(st[0].peak_objects, 2);
	ASSERT_EXACT(st[1].alloc_bytes, 1050);
	ASSERT_EXACT(st[1].peak_bytes, 50);
	ASSERT_EXACT(st[2].live_bytes, 10);
	ASSERT_EXACT(st[2].peak_bytes, 0);

	/* Buckets end at 25, 50, 75, 100. */
	ASSERT_EQ(lk_profile_timeline(p, &tl), 4);
	const double heap[] = { 300, 1250, 2250, 260 }, max[] = { 300, 1300, 2250, 2250 };
	const uint64_t rss[] = { 0, 0, 5000, 3000 };
	const double s1[] = { 300, 200, 2200, 200 }, s2[] = { 0, 1050, 50, 50 };
	for (int i = 0; i < 4; i++) {
		ASSERT_EQ(tl[i].t_ns, 25 * (i + 1));
		ASSERT_EQ(tl[i].heap_bytes, heap[i]);
		ASSERT_EQ(tl[i].heap_max, max[i]);
		ASSERT_EQ(tl[i].rss_bytes, rss[i]);
		ASSERT_EQ(st[0].series[i], s1[i]);
		ASSERT_EQ(st[1].series[i], s2[i]);
		ASSERT_EQ(st[2].series[i], i == 3 ? 10 : 0);
	}
	ASSERT_EQ(st[0].growth.trend, LK_TREND_UNKNOWN); /* 4 points, 3 samples */
	lk_profile_free(p);
	free(s.b.p);
}

TEST(exact_live_at_and_old)
{
	struct lk_profile_opts o = { .at_ns = 35, .age_ns = 50 };
	const struct lk_stack_stats *st;
	const struct lk_live_block *lb;
	struct lk_profile *p = NULL;
	char *err = NULL;
	struct sim s;

	build_exact(&s);
	ASSERT_OK(sim_load(&s, &o, &p, &err));
	ASSERT_EQ(lk_profile_stacks(p, &st), 3);
	/* At 35: A, B (stack 1) and C (stack 2). */
	ASSERT_EXACT(st[0].live_bytes, 300);
	ASSERT_EXACT(st[0].live_objects, 2);
	ASSERT_EXACT(st[1].live_bytes, 1000);
	ASSERT_EXACT(st[2].live_bytes, 0);
	/* Old at 100, at least 50 ns: B (80) and D (50), not F (10). */
	ASSERT_EXACT(st[0].old_bytes, 200);
	ASSERT_EXACT(st[1].old_bytes, 50);
	ASSERT_EXACT(st[1].old_objects, 1);
	ASSERT_EXACT(st[2].old_bytes, 0);
	/* The live blocks at the end, oldest first, whatever "at" says. */
	ASSERT_EQ(lk_profile_live_blocks(p, &lb), 3);
	ASSERT_EQ(lb[0].block, 2); /* B */
	ASSERT_EQ(lb[0].t_ns, 20);
	ASSERT_EQ(lb[0].stack, 1);
	ASSERT_EQ(lb[0].size, 200);
	ASSERT_EQ(lb[0].weight, 1);
	ASSERT_EQ(lb[1].block, 4); /* D */
	ASSERT_EQ(lb[2].block, 6); /* F */
	lk_profile_free(p);

	/* Before the first record: nothing live. At 40 exactly: A's free counts. */
	o.at_ns = 0;
	ASSERT_OK(sim_load(&s, &o, &p, &err));
	lk_profile_stacks(p, &st);
	ASSERT_EXACT(st[0].live_bytes, 0);
	lk_profile_free(p);
	o.at_ns = 40;
	ASSERT_OK(sim_load(&s, &o, &p, &err));
	lk_profile_stacks(p, &st);
	ASSERT_EXACT(st[0].live_bytes, 200);
	lk_profile_free(p);
	free(s.b.p);
}

TEST(header_modules_and_frames)
{
	const struct lk_module_info_rec *m;
	const struct lk_stack_stats *st;
	const struct lk_profile_header *h;
	struct lk_profile *p = NULL;
	char *err = NULL;
	struct sim s;

	build_exact(&s);
	ASSERT_OK(sim_load(&s, NULL, &p, &err));
	h = lk_profile_header(p);
	ASSERT_STREQ(h->exe, "/usr/bin/sim");
	ASSERT_EQ(h->h.pid, 7);
	ASSERT_EQ(lk_profile_modules(p, &m), 1);
	ASSERT_EQ(m[0].id, 1);
	ASSERT_EQ(m[0].base, 0x400000);
	ASSERT_EQ(m[0].loaded_ns, 0);
	ASSERT_EQ(m[0].unloaded_ns, 85);
	ASSERT_EQ(m[0].nseg, 1);
	ASSERT_EQ(m[0].seg[0].len, 0x10000);
	ASSERT_EQ(m[0].build_id_len, 2);
	ASSERT_EQ(m[0].build_id[1], 0xcd);
	ASSERT_STREQ(m[0].path, "/usr/bin/sim");
	ASSERT_EQ(m[0].path_len, 12);

	ASSERT_EQ(lk_profile_stacks(p, &st), 3);
	ASSERT_EQ(st[0].nframes, 3);
	ASSERT_EQ(st[0].frames[0], 0x401234);
	/* Return addresses are looked up at frame - 1: 0x400000 - 1 is outside. */
	ASSERT_EQ(st[0].modules[0], 1);
	ASSERT_EQ(st[0].modules[1], 1);
	ASSERT_EQ(st[0].modules[2], 0);
	ASSERT_EQ(st[1].modules[0], 0);
	/* Stack 3 was written after the UNLOAD: the same frames name no module. */
	ASSERT_EQ(st[2].frames[0], 0x401234);
	ASSERT_EQ(st[2].modules[0], 0);
	/* Defaults: 64 buckets ending at the duration. */
	const struct lk_timeline_point *tl;
	ASSERT_EQ(lk_profile_timeline(p, &tl), LK_TIMELINE_BUCKETS);
	ASSERT_EQ(tl[LK_TIMELINE_BUCKETS - 1].t_ns, 100);
	ASSERT_EQ(tl[LK_TIMELINE_BUCKETS - 1].heap_bytes, 260);
	lk_profile_free(p);
	free(s.b.p);
}

/* A forked child's file: INHERITed blocks, a FREE of a block freed already, a block never freed,
 * no trailer. */
TEST(inherit_frees_and_crash)
{
	struct lk_profile_opts o = { .at_ns = UINT64_MAX, .age_ns = 100 };
	const struct lk_profile_totals *t;
	const struct lk_stack_stats *st;
	const struct lk_live_block *lb;
	struct lk_profile *p = NULL;
	char *err = NULL;
	struct sim s;

	sim_start(&s, 1, LK_HDR_EXACT | LK_HDR_FORKED);
	sim_site(&s, 0x401000);
	pb_inherit(&s.b, 0x9000, 300, 1, SIM_START_MONO - 5000);
	pb_inherit(&s.b, 0xa000, 700, 1, SIM_START_MONO - 1000);
	sim_alloc(&s, 10, 0xb000, 50, 1);
	sim_free(&s, 20, 0xa000);
	sim_free(&s, 30, 0xa000);            /* freed already */
	sim_alloc(&s, 40, 0xc000, 80, 1);
	pb_zeros(&s.b, 4096);                /* the writer's fallocate'd tail */
	ASSERT_OK(sim_load(&s, &o, &p, &err));

	t = lk_profile_totals(p);
	ASSERT_TRUE(!t->trailer);
	ASSERT_EQ(t->duration_ns, 40);
	ASSERT_EQ(t->samples, 2);
	ASSERT_EQ(t->inherited, 2);
	ASSERT_EQ(t->frees, 2);
	ASSERT_EQ(t->frees_unknown, 1);
	ASSERT_EXACT(t->alloc_bytes, 130);     /* inherited blocks were allocated elsewhere */
	ASSERT_EXACT(t->live_bytes_end, 430);  /* the first inherited block, the 50 and the 80 */
	ASSERT_EXACT(t->peak_bytes, 1050);
	ASSERT_EQ(t->peak_ns, 10);
	ASSERT_EQ(lk_profile_stacks(p, &st), 1);
	ASSERT_EXACT(st[0].alloc_objects, 2);
	ASSERT_EXACT(st[0].live_objects, 3);
	ASSERT_EXACT(st[0].old_bytes, 300);    /* 5040 ns old; the 50 bytes 30, the 80 bytes 0 */
	ASSERT_EQ(lk_profile_live_blocks(p, &lb), 3);
	ASSERT_EQ(lb[0].t_ns, -5000);
	ASSERT_EQ(lb[0].size, 300);
	ASSERT_EQ(lb[0].block, 1);
	ASSERT_EQ(lb[1].t_ns, 10);
	ASSERT_EQ(lb[1].block, 3);
	ASSERT_EQ(lb[2].t_ns, 40);
	ASSERT_EQ(lb[2].block, 4);
	lk_profile_free(p);
	free(s.b.p);
}

/* The live blocks at the end come oldest first (by time, then number) however many there are:
 * radix-sorted by number when the times agree with it (several passes: numbers past 2^11), and
 * sorted again when INHERITed blocks' times do not (here the later-numbered are the older). */
static void expect_oldest_first(const struct lk_profile *p, size_t want)
{
	const struct lk_live_block *lb;
	size_t n = lk_profile_live_blocks(p, &lb);

	ASSERT_EQ(n, want);
	for (size_t i = 1; i < n; i++)
		ASSERT_TRUE(lb[i - 1].t_ns < lb[i].t_ns ||
			    (lb[i - 1].t_ns == lb[i].t_ns && lb[i - 1].block < lb[i].block));
}

TEST(live_blocks_oldest_first)
{
	struct lk_profile_opts o = { .at_ns = UINT64_MAX };
	const struct lk_live_block *lb;
	struct lk_profile *p = NULL;
	char *err = NULL;
	struct sim s;

	sim_start(&s, 1, LK_HDR_EXACT);
	sim_site(&s, 0x401000);
	for (uint64_t i = 0; i < 20000; i++) /* 4 a tick: ties broken by number */
		sim_alloc(&s, i / 4, 0x100000 + 16 * i, 8 + i % 5, 1);
	for (uint64_t i = 0; i < 20000; i += 2) /* every other one, the oldest first */
		sim_free(&s, 5000, 0x100000 + 16 * i);
	ASSERT_OK(sim_load(&s, &o, &p, &err));
	expect_oldest_first(p, 10000);
	lk_profile_live_blocks(p, &lb);
	ASSERT_EQ(lb[0].block, 2);
	ASSERT_EQ(lb[9999].block, 20000);
	lk_profile_free(p);
	free(s.b.p);

	sim_start(&s, 1, LK_HDR_EXACT | LK_HDR_FORKED);
	sim_site(&s, 0x401000);
	for (uint64_t i = 0; i < 3000; i++) /* numbered 1 to 3000, the last the oldest */
		pb_inherit(&s.b, 0x100000 + 16 * i, 32, 1, SIM_START_MONO - 1 - i);
	for (uint64_t i = 0; i < 3000; i++)
		sim_alloc(&s, 10 + i, 0x200000 + 16 * i, 64, 1);
	ASSERT_OK(sim_load(&s, &o, &p, &err));
	expect_oldest_first(p, 6000);
	lk_profile_live_blocks(p, &lb);
	ASSERT_EQ(lb[0].block, 3000);
	ASSERT_EQ(lb[0].t_ns, -3000);
	ASSERT_EQ(lb[2999].block, 1);
	ASSERT_EQ(lb[3000].block, 3001);
	lk_profile_free(p);
	free(s.b.p);
}

TEST(stack0_and_losses)
{
	uint64_t loss[LK_CNT_MAX + 1] = { [LK_CNT_ARENA_FULL] = 3, [LK_CNT_UNWIND_FAILED] = 1 };
	const struct lk_profile_totals *t;
	const struct lk_stack_stats *st;
	struct lk_profile *p = NULL;
	char *err = NULL;
	struct sim s;

	sim_start(&s, 1, LK_HDR_EXACT);
	sim_site(&s, 0x401000);
	sim_alloc(&s, 5, 0x1000, 64, 0);
	PB_REC(&s.b, lk_rec_counters(rec, LK_REC_LOSS, sim_dt(&s, 6), 0, loss));
	sim_alloc(&s, 7, 0x2000, 32, 1);
	loss[LK_CNT_ARENA_FULL] = 4;
	loss[LK_CNT_SAMPLES] = 2;
	sim_trailer(&s, 9, loss);
	ASSERT_OK(sim_load(&s, NULL, &p, &err));
	t = lk_profile_totals(p);
	ASSERT_EQ(t->losses[LK_CNT_ARENA_FULL], 4);
	ASSERT_EQ(t->losses[LK_CNT_UNWIND_FAILED], 1);
	ASSERT_EQ(t->losses[LK_CNT_SAMPLES], 2);
	/* A sample had no stack: stack 0 comes first. */
	ASSERT_EQ(lk_profile_stacks(p, &st), 2);
	ASSERT_EQ(st[0].id, 0);
	ASSERT_EQ(st[0].nframes, 0);
	ASSERT_EXACT(st[0].live_bytes, 64);
	ASSERT_EQ(st[1].id, 1);
	lk_profile_free(p);
	free(s.b.p);
}

TEST(errors_name_the_offset)
{
	struct lk_profile *p = (struct lk_profile *)0x1;
	char *err = NULL, path[64];
	struct sim s;
	size_t off;
	int fd;

	/* A record cut by the end of the file is corruption, named by its offset. */
	sim_start(&s, 1, LK_HDR_EXACT);
	sim_site(&s, 0x401000);
	sim_alloc(&s, 100, 0x1000, 64, 1);
	off = s.b.len;
	sim_alloc(&s, 200, 0x2000, 64, 1);
	s.b.len -= 2;
	ASSERT_EQ(sim_load(&s, NULL, &p, &err), -EBADMSG);
	ASSERT_EQ((uintptr_t)p, 0x1); /* untouched */
	snprintf(path, sizeof(path), "offset %zu: ", off);
	ASSERT_CONTAINS(err, path);
	ASSERT_CONTAINS(err, "cut");
	free(err);

	ASSERT_EQ(lk_profile_load("/nonexistent/x.lk", NULL, &p, &err), -ENOENT);
	ASSERT_CONTAINS(err, "No such file");
	free(err);
	ASSERT_EQ(lk_profile_load("/", NULL, &p, &err), -EISDIR);
	free(err);
	fd = memfd_create("junk", MFD_CLOEXEC);
	ASSERT_EQ(write(fd, "not a profile at all", 20), 20);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ASSERT_EQ(lk_profile_load(path, NULL, &p, &err), -EMEDIUMTYPE);
	ASSERT_CONTAINS(err, "not a leek profile");
	free(err);
	ASSERT_EQ(lk_profile_load(path, NULL, &p, NULL), -EMEDIUMTYPE); /* err is optional */
	close(fd);
	ASSERT_TRUE(lk_profile_free(NULL) == NULL);
	free(s.b.p);
}

/* The set at the peak is remembered, not copied (profile-live.c): the block whose ALLOC made the
 * peak, blocks from before it still live at the end, blocks live at it that were freed or
 * replaced (their FREE missing) since, and none of those that came after it. */
TEST(peak_set_after_the_fact)
{
	const struct lk_profile_totals *t;
	const struct lk_stack_stats *st;
	struct lk_profile *p = NULL;
	char *err = NULL;
	struct sim s;

	sim_start(&s, 1, LK_HDR_EXACT);
	sim_site(&s, 0x401000);
	sim_site(&s, 0x402000);
	sim_alloc(&s, 1, 0xa000, 100, 1);
	sim_alloc(&s, 2, 0xb000, 200, 2);
	sim_free(&s, 3, 0xa000);
	sim_alloc(&s, 4, 0xc000, 50, 1);  /* 250 */
	sim_alloc(&s, 5, 0xd000, 400, 2); /* 650: the peak */
	sim_free(&s, 6, 0xc000);
	sim_free(&s, 7, 0xb000);
	sim_alloc(&s, 7, 0xb000, 10, 1);
	sim_alloc(&s, 8, 0xe000, 190, 1); /* 650 again: not a new peak */
	sim_free(&s, 9, 0xe000);
	sim_alloc(&s, 10, 0xf000, 5, 2);
	sim_trailer(&s, 11, NULL);
	ASSERT_OK(sim_load(&s, NULL, &p, &err));
	t = lk_profile_totals(p);
	ASSERT_EXACT(t->peak_bytes, 650);
	ASSERT_EQ(t->peak_ns, 5);
	ASSERT_EQ(lk_profile_stacks(p, &st), 2);
	ASSERT_EXACT(st[0].peak_bytes, 50);   /* C, freed since */
	ASSERT_EXACT(st[0].peak_objects, 1);
	ASSERT_EXACT(st[1].peak_bytes, 600);  /* B, freed since, and D, still live */
	ASSERT_EXACT(st[1].peak_objects, 2);
	ASSERT_EXACT(st[0].live_bytes, 10);
	ASSERT_EXACT(st[1].live_bytes, 405);
	lk_profile_free(p);
	free(s.b.p);
}

 /* The live set against a plain replay of the same records (tests/unit/test-u64map.c does the same
  * for the map): a few addresses taken and freed at random (the builder numbers the blocks, as the
  * writer does), FREEs of blocks freed already, INHERITs, times with ties, and a heap that rises to
  * new peaks, falls and rises again, so that the mark moves many times and the blocks live at it
  * leave in every order. In a longer run, eight rare addresses, taken only in the first twentieth
  * of the records and the last tenth, hold blocks that outlive the window of recent numbers
  * (recent.h), move to the live set's table, and are freed from there. In exact mode every number
  * must be equal; at a period, within rounding (sums in another order, q's fixed point). */
#define REPLAY_COMMON 48
#define REPLAY_ADDRS (REPLAY_COMMON + 8)
#define REPLAY_STACKS 5
#define REPLAY_RECORDS 40000
#define REPLAY_LONG 1200000 /* records of the run whose rare blocks outlive the window */
#define REPLAY_BUCKETS 16

struct replay_op {
	uint8_t tag;
	uint64_t t, addr, size, stack;
};

struct replay_block {
	bool live;
	uint64_t size, stack;
};

struct replay_sum {
	double bytes, bytes_var, objects, objects_var;
	uint64_t n;
};

/* The sums of docs/sampling.md section 4 per stack, from scratch, and the heap, their total. v1 =
 * w^2 - w is (1 - p)/p^2, taken without cancellation as profile-live.c does. */
static double replay_sums(const struct replay_block *live, uint64_t period,
			  struct replay_sum sum[REPLAY_STACKS + 1])
{
	double heap = 0;

	memset(sum, 0, sizeof(*sum) * (REPLAY_STACKS + 1));
	for (unsigned a = 0; a < REPLAY_ADDRS; a++) {
		double s = (double)live[a].size, w = lk_sample_weight(live[a].size, period), v1 = 0;
		struct replay_sum *x = &sum[live[a].stack];
		if (!live[a].live)
			continue;
		if (period > 1 && w > 1)
			v1 = exp(-s / (double)period) * w * w;
		x->bytes += s * w;
		x->bytes_var += s * s * v1;
		x->objects += w;
		x->objects_var += v1;
		x->n++;
		heap += s * w;
	}
	return heap;
}

static void expect_sum(const struct lk_estimate *bytes, const struct lk_estimate *objects,
		       const struct replay_sum *x, bool exact)
{
	ASSERT_EQ(bytes->samples, x->n);
	ASSERT_EQ(objects->samples, x->n);
	if (exact) {
		ASSERT_EXACT(*bytes, x->bytes);
		ASSERT_EXACT(*objects, x->objects);
		return;
	}
	ASSERT_NEAR(bytes->value, x->bytes, 1e-9 * (x->bytes + 1));
	ASSERT_NEAR(bytes->var, x->bytes_var, 1e-9 * (x->bytes_var + 1));
	ASSERT_NEAR(objects->value, x->objects, 1e-9 * (x->objects + 1));
	ASSERT_NEAR(objects->var, x->objects_var, 1e-9 * (x->objects_var + 1));
}

/* Equal in exact mode; else within what q's fixed point (2^-16 a block) and rounding allow. */
#define ASSERT_CLOSE(a, b, exact) ASSERT_NEAR((a), (b), (exact) ? 0 : 1e-9 * (fabs(b) + 1e6))

static void replay_check(uint64_t period, uint64_t seed, size_t records)
{
	static struct replay_op op[REPLAY_LONG];
	struct replay_sum peak[REPLAY_STACKS + 1], now[REPLAY_STACKS + 1];
	struct replay_block live[REPLAY_ADDRS] = { 0 };
	bool used[REPLAY_ADDRS] = { 0 }, taken[REPLAY_ADDRS] = { 0 };
	uint64_t ends[REPLAY_BUCKETS], peak_ns = 0, unknown = 0, count = 0, max_count = 0;
	uint64_t number[REPLAY_ADDRS] = { 0 }, numbered = 0, outlived = 0;
	double series[REPLAY_BUCKETS][REPLAY_STACKS + 1], heap[REPLAY_BUCKETS],
		heap_max[REPLAY_BUCKETS], best = 0, level = 0, h = 0;
	struct lk_profile_opts o = { .at_ns = UINT64_MAX, .buckets = REPLAY_BUCKETS };
	const struct lk_timeline_point *tl;
	const struct lk_profile_totals *t;
	const struct lk_stack_stats *st;
	bool exact = period == 1;
	struct lk_profile *p = NULL;
	unsigned b = 0;
	char *err = NULL;
	struct lk_rng rng;
	struct sim s;

	lk_rng_seed(&rng, seed, 0);
	sim_start(&s, period, exact ? LK_HDR_EXACT : 0);
	for (uint64_t k = 1; k <= REPLAY_STACKS; k++)
		sim_site(&s, 0x401000 + 0x100 * k);
	for (size_t i = 0, now_t = 0; i < records; i++) {
		uint64_t r = lk_rng_next(&rng);
		/* Phases of 4000 records: mostly ALLOCs, then mostly FREEs. */
		bool rising = (i / 4000) % 2 == 0;
		/* The rare addresses are taken only in the first twentieth and the last tenth. */
		bool rare = records == REPLAY_LONG && (i < records / 20 || i >= records / 10 * 9);
		now_t += r % 3; /* ties */
		op[i] = (struct replay_op){
			.tag = (r >> 8) % 50 == 0 ? LK_REC_INHERIT
			       : (r >> 16) % 100 < (rising ? 70u : 30u) ? LK_REC_ALLOC
									  : LK_REC_FREE,
			.t = now_t,
			.addr = 0x10000 + 0x40 * (rare && (r >> 24) % 2000 < 8
							? REPLAY_COMMON + (r >> 24) % 2000
							: (r >> 24) % REPLAY_COMMON),
			.size = 1 + (r >> 32) % 5000,
			.stack = 1 + (r >> 48) % REPLAY_STACKS,
		};
		/* A program allocates only where nothing is live, and frees only what it
		 * allocated: a FREE of a block freed already is the one wrong record. */
		unsigned a = (unsigned)((op[i].addr - 0x10000) / 0x40);
		if (op[i].tag != LK_REC_FREE && taken[a])
			op[i].tag = LK_REC_FREE;
		else if (op[i].tag == LK_REC_FREE && !used[a])
			op[i].tag = LK_REC_ALLOC;
		used[a] = true;
		taken[a] = op[i].tag != LK_REC_FREE;
		if (op[i].tag == LK_REC_ALLOC)
			sim_alloc(&s, op[i].t, op[i].addr, op[i].size, op[i].stack);
		else if (op[i].tag == LK_REC_FREE)
			sim_free(&s, op[i].t, op[i].addr);
		else
			pb_inherit(&s.b, op[i].addr, op[i].size, op[i].stack, SIM_START_MONO);
	}
	ASSERT_OK(sim_load(&s, &o, &p, &err));

	/* The replay: every block is its own array entry, every sum is done again from scratch.
	 * An INHERIT has no time of its own: it carries the last one. */
	for (unsigned k = 0; k < REPLAY_BUCKETS; k++)
		ends[k] = s.now * (k + 1) / REPLAY_BUCKETS;
	for (size_t i = 0, last_t = 0; i <= records; i++) {
		uint64_t t_i = i < records && op[i].tag != LK_REC_INHERIT ? op[i].t : last_t;
		while (b + 1 < REPLAY_BUCKETS && (i == records || t_i > ends[b])) {
			heap[b] = h;
			heap_max[b] = level;
			replay_sums(live, period, now);
			for (unsigned k = 0; k <= REPLAY_STACKS; k++)
				series[b][k] = now[k].bytes;
			level = h;
			b++;
		}
		if (i == records)
			break;
		last_t = t_i;
		unsigned a = (unsigned)((op[i].addr - 0x10000) / 0x40);
		if (op[i].tag == LK_REC_FREE && !live[a].live)
			unknown++;
		if (op[i].tag != LK_REC_FREE)
			number[a] = ++numbered;
		else if (live[a].live && numbered - number[a] > LK_RECENT_BLOCKS)
			outlived++;
		if (live[a].live) /* freed */
			count--;
		live[a].live = op[i].tag != LK_REC_FREE;
		if (live[a].live) {
			live[a].size = op[i].size;
			live[a].stack = op[i].stack;
			if (++count > max_count)
				max_count = count;
		}
		h = replay_sums(live, period, now);
		if (h > best) { /* the first time it is reached */
			best = h;
			peak_ns = t_i;
			memcpy(peak, now, sizeof(peak));
		}
		if (h > level)
			level = h;
	}
	heap[b] = h;
	heap_max[b] = level;
	replay_sums(live, period, now);
	for (unsigned k = 0; k <= REPLAY_STACKS; k++)
		series[b][k] = now[k].bytes;

	ASSERT_TRUE(outlived > 0 || records != REPLAY_LONG); /* the table behind the window */
	t = lk_profile_totals(p);
	ASSERT_EQ(t->records, records + REPLAY_STACKS + 1); /* and one THREAD */
	ASSERT_EQ(t->frees_unknown, unknown);
	ASSERT_EQ(t->max_live, max_count);
	ASSERT_EQ(t->peak_ns, peak_ns);
	ASSERT_EQ(lk_profile_stacks(p, &st), REPLAY_STACKS);
	for (unsigned k = 1; k <= REPLAY_STACKS; k++) {
		expect_sum(&st[k - 1].peak_bytes, &st[k - 1].peak_objects, &peak[k], exact);
		expect_sum(&st[k - 1].live_bytes, &st[k - 1].live_objects, &now[k], exact);
		for (unsigned j = 0; j < REPLAY_BUCKETS; j++)
			ASSERT_CLOSE(st[k - 1].series[j], series[j][k], exact);
	}
	ASSERT_CLOSE(t->peak_bytes.value, best, exact);
	ASSERT_EQ(lk_profile_timeline(p, &tl), REPLAY_BUCKETS);
	for (unsigned j = 0; j < REPLAY_BUCKETS; j++) {
		ASSERT_EQ(tl[j].t_ns, ends[j]);
		ASSERT_CLOSE(tl[j].heap_bytes, heap[j], exact);
		ASSERT_CLOSE(tl[j].heap_max, heap_max[j], exact);
	}
	lk_profile_free(p);
	free(s.b.p);
}

TEST(live_set_against_replay)
{
	for (uint64_t seed = 1; seed <= 4; seed++) {
		replay_check(1, seed, REPLAY_RECORDS);
		replay_check(4096, seed, REPLAY_RECORDS);
	}
}

/* Blocks that outlive the window of recent numbers (recent.h) and are freed from the table. */
TEST(live_set_beyond_the_window)
{
	replay_check(1, 5, REPLAY_LONG);
	replay_check(4096, 5, REPLAY_LONG);
}

TEST(pipe_is_read_twice)
{
	struct lk_profile *p = NULL;
	char *err = NULL, path[64];
	struct sim s;
	int fds[2];

	/* Small enough for the pipe's buffer: written first, read after. */
	build_exact(&s);
	ASSERT_TRUE(s.b.len < 4096);
	ASSERT_OK(pipe(fds));
	ASSERT_EQ(write(fds[1], s.b.p, s.b.len), (ssize_t)s.b.len);
	close(fds[1]);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fds[0]);
	ASSERT_OK(lk_profile_load(path, NULL, &p, &err));
	ASSERT_EXACT(lk_profile_totals(p)->peak_bytes, 2250);
	ASSERT_EQ(lk_profile_totals(p)->records, 18);
	lk_profile_free(p);
	close(fds[0]);
	free(s.b.p);
}

TEST(memory_follows_live_blocks_not_records)
{
	struct mallinfo2 before, after;
	const struct lk_profile_totals *t;
	struct lk_profile *p = NULL;
	char *err = NULL;
	struct sim s;

	/* 10^6 allocate-and-free pairs at distinct addresses: 2 million records. */
	sim_start(&s, 1, LK_HDR_EXACT);
	sim_site(&s, 0x401000);
	for (uint64_t i = 0; i < 1000000; i++) {
		sim_alloc(&s, 2 * i + 1, 0x100000 + 16 * i, 48, 1);
		sim_free(&s, 2 * i + 2, 0x100000 + 16 * i);
	}
	sim_trailer(&s, 2000001, NULL);
	before = mallinfo2();
	ASSERT_OK(sim_load(&s, NULL, &p, &err));
	after = mallinfo2();
	t = lk_profile_totals(p);
	ASSERT_EQ(t->samples, 1000000);
	ASSERT_EQ(t->frees, 1000000);
	ASSERT_EQ(t->max_live, 1);
	ASSERT_EXACT(t->alloc_bytes, 48e6);
	ASSERT_EXACT(t->live_bytes_end, 0);
	ASSERT_EXACT(t->peak_bytes, 48);
	/* What the profile keeps is a few KiB, whatever the length of the file (under ASan
	 * mallinfo2 says nothing, and this holds trivially). */
	ASSERT_TRUE(after.uordblks < before.uordblks + (1u << 20));
	lk_profile_free(p);
	free(s.b.p);
}

/* Cut at every byte and flipped at random, a profile gives a result or an error with a message,
 * never a crash (the ASan build runs this too). */
TEST(damaged_profiles)
{
	struct lk_profile *p;
	struct lk_rng rng;
	struct sim s;
	size_t len;
	int r;

	build_exact(&s);
	len = s.b.len;
	for (size_t cut = 0; cut <= len; cut++) {
		char *err = NULL;
		s.b.len = cut;
		r = sim_load(&s, NULL, &p, &err);
		if (r < 0) {
			ASSERT_TRUE(err && *err);
			free(err);
		} else {
			ASSERT_TRUE(lk_profile_totals(p)->live_bytes_end.value >= 0);
			lk_profile_free(p);
		}
	}
	s.b.len = len;
	lk_rng_seed(&rng, 42, 0);
	for (int i = 0; i < 2000; i++) {
		uint8_t *b = s.b.p + 96 + lk_rng_next(&rng) % (len - 96), old = *b;
		char *err = NULL;
		*b ^= (uint8_t)(1u << (lk_rng_next(&rng) % 8));
		r = sim_load(&s, NULL, &p, &err);
		if (r < 0) {
			ASSERT_TRUE(err && *err);
			free(err);
		} else {
			lk_profile_free(p);
		}
		*b = old;
	}
	free(s.b.p);
}

TEST(header_only)
{
	const struct lk_profile_totals *t;
	const struct lk_timeline_point *tl;
	const struct lk_stack_stats *st;
	struct lk_profile *p = NULL;
	char *err = NULL;
	struct sim s;

	sim_start(&s, 524288, 0);
	ASSERT_OK(sim_load(&s, NULL, &p, &err));
	t = lk_profile_totals(p);
	ASSERT_TRUE(!t->trailer);
	ASSERT_EQ(t->records, 0);
	ASSERT_EQ(t->duration_ns, 0);
	ASSERT_EXACT(t->alloc_bytes, 0);
	ASSERT_EXACT(t->peak_bytes, 0);
	ASSERT_EQ(lk_profile_stacks(p, &st), 0);
	ASSERT_EQ(lk_profile_timeline(p, &tl), LK_TIMELINE_BUCKETS);
	ASSERT_EQ(tl[0].t_ns, 0);
	ASSERT_EQ(tl[LK_TIMELINE_BUCKETS - 1].heap_max, 0);
	lk_profile_free(p);
	free(s.b.p);
}

/* ---- a profile followed while it is written (lk_profile_follow_*) ---- */

static void expect_same_estimate(const struct lk_estimate *a, const struct lk_estimate *b)
{
	ASSERT_EQ(a->value, b->value);
	ASSERT_EQ(a->var, b->var);
	ASSERT_EQ(a->lo, b->lo);
	ASSERT_EQ(a->hi, b->hi);
	ASSERT_EQ(a->samples, b->samples);
}

/* What a followed profile gives is what lk_profile_load() gives with one bucket; a's list of the
 * blocks live at the end, unless it was loaded without one (no_live_list), b's. */
/* What two profiles of the same events share, however they were read: the totals and each
 * stack's estimates. The number of stacks, with a's and b's in *sa and *sb. */
static size_t expect_same_core(const struct lk_profile *a, const struct lk_profile *b,
			       const struct lk_stack_stats **sa, const struct lk_stack_stats **sb)
{
	const struct lk_profile_totals *x = lk_profile_totals(a), *y = lk_profile_totals(b);
	size_t n = lk_profile_stacks(a, sa);

	ASSERT_EQ(x->duration_ns, y->duration_ns);
	ASSERT_EQ(x->samples, y->samples);
	ASSERT_EQ(x->frees, y->frees);
	ASSERT_EQ(x->frees_unknown, y->frees_unknown);
	ASSERT_EQ(x->max_live, y->max_live);
	ASSERT_EQ(x->max_rss, y->max_rss);
	ASSERT_EQ(x->peak_ns, y->peak_ns);
	ASSERT_EQ(x->trailer, y->trailer);
	expect_same_estimate(&x->alloc_bytes, &y->alloc_bytes);
	expect_same_estimate(&x->peak_bytes, &y->peak_bytes);
	expect_same_estimate(&x->live_bytes_end, &y->live_bytes_end);
	expect_same_estimate(&x->live_objects_end, &y->live_objects_end);
	ASSERT_EQ(n, lk_profile_stacks(b, sb));
	for (size_t i = 0; i < n; i++) {
		ASSERT_EQ((*sa)[i].id, (*sb)[i].id);
		expect_same_estimate(&(*sa)[i].alloc_bytes, &(*sb)[i].alloc_bytes);
		expect_same_estimate(&(*sa)[i].live_bytes, &(*sb)[i].live_bytes);
		expect_same_estimate(&(*sa)[i].peak_bytes, &(*sb)[i].peak_bytes);
		expect_same_estimate(&(*sa)[i].old_bytes, &(*sb)[i].old_bytes);
	}
	return n;
}

static void expect_same_profile(const struct lk_profile *a, const struct lk_profile *b,
				bool list)
{
	const struct lk_profile_totals *x = lk_profile_totals(a), *y = lk_profile_totals(b);
	const struct lk_stack_stats *sa, *sb;
	const struct lk_live_block *la, *lb;
	size_t n = expect_same_core(a, b, &sa, &sb);

	ASSERT_EQ(x->records, y->records);
	ASSERT_EQ(x->inherited, y->inherited);
	ASSERT_TRUE(memcmp(x->losses, y->losses, sizeof(x->losses)) == 0);
	for (size_t i = 0; i < n; i++) {
		ASSERT_EQ(sa[i].nframes, sb[i].nframes);
		ASSERT_TRUE(memcmp(sa[i].frames, sb[i].frames, 8 * sa[i].nframes) == 0);
		expect_same_estimate(&sa[i].old_objects, &sb[i].old_objects);
		ASSERT_EQ(sa[i].series[0], sb[i].series[0]);
	}
	n = lk_profile_live_blocks(a, &la);
	if (!list) {
		ASSERT_EQ(n, 0);
		return;
	}
	ASSERT_EQ(n, lk_profile_live_blocks(b, &lb));
	ASSERT_TRUE(n == 0 || memcmp(la, lb, n * sizeof(*la)) == 0);
}

/* A random run of records, INHERITs and a crash (no trailer) or a clean end among them. */
static void build_random(struct sim *s, uint64_t period, uint64_t seed, size_t records,
			 bool trailer)
{
	static const uint64_t counters[LK_CNT_MAX + 1] = { [LK_CNT_SAMPLES] = 1 };
	bool live[512] = { 0 };
	struct lk_rng rng;
	uint64_t t = 0;

	lk_rng_seed(&rng, seed, 0);
	sim_start(s, period, period == 1 ? LK_HDR_EXACT : 0);
	for (uint64_t k = 1; k <= 7; k++)
		sim_site(s, 0x401000 + 0x100 * k);
	for (size_t i = 0; i < records; i++) {
		uint64_t r = lk_rng_next(&rng), a = (r >> 8) % 512, addr = 0x10000 + 0x40 * a;
		uint64_t size = 1 + (r >> 20) % 9000, stack = 1 + (r >> 50) % 7;
		t += r % 5;
		if (r % 997 == 0) {
			sim_rss(s, t, r >> 40);
			continue;
		}
		if (live[a])
			sim_free(s, t, addr);
		else if (r % 61 == 0)
			pb_inherit(&s->b, addr, size, stack, SIM_START_MONO);
		else
			sim_alloc(s, t, addr, size, stack);
		live[a] = !live[a];
	}
	if (trailer)
		sim_trailer(s, t + 3, counters);
}

/* Without the list of the blocks live at the end, everything else is what it is with it: the
 * peak, the old blocks and the live snapshot at the end or before it come from the same pass. */
TEST(no_live_list_changes_only_the_list)
{
	for (uint64_t seed = 1; seed <= 3; seed++) {
		for (unsigned k = 0; k < 2; k++) {
			struct lk_profile_opts with = { .at_ns = k ? 20000 : UINT64_MAX,
							.age_ns = 5000, .buckets = 1 };
			struct lk_profile_opts without = with;
			struct lk_profile *a = NULL, *b = NULL;
			const struct lk_live_block *l;
			char *err = NULL;
			struct sim s;

			without.no_live_list = true;
			build_random(&s, seed == 2 ? 1 : 4096, seed, 60000, true);
			ASSERT_OK(sim_load(&s, &without, &a, &err));
			ASSERT_OK(sim_load(&s, &with, &b, &err));
			ASSERT_TRUE(lk_profile_live_blocks(b, &l) > 0); /* the list left out is not empty */
			expect_same_profile(a, b, false);
			lk_profile_free(a);
			lk_profile_free(b);
			free(s.b.p);
		}
	}
}

/* The file as a writer leaves it: garbage (a reserved tag, everywhere), which a reader that looked
 * past the limit would fail on, then the profile's bytes [from, to) written over it as the limit
 * passes them. */
static void write_junk(int fd, size_t file_len)
{
	static uint8_t junk[65536];

	memset(junk, LK_REC_MAX_KNOWN + 1, sizeof(junk));
	for (size_t at = 0; at < file_len; at += sizeof(junk)) {
		size_t n = file_len - at < sizeof(junk) ? file_len - at : sizeof(junk);
		ASSERT_EQ(pwrite(fd, junk, n, (off_t)at), (ssize_t)n);
	}
}

static void write_real(int fd, const struct pbuf *b, size_t from, size_t to)
{
	ASSERT_EQ(pwrite(fd, b->p + from, to - from, (off_t)from), (ssize_t)(to - from));
}

static void follow_check(uint64_t period, uint64_t seed, bool trailer)
{
	const struct lk_profile_opts one = { .at_ns = UINT64_MAX, .buckets = 1 };
	struct lk_profile *whole = NULL, *followed = NULL;
	struct lk_profile_follow *f = NULL;
	char *err = NULL, path[64];
	size_t limit, header;
	struct lk_rng rng;
	struct sim s;
	int fd;

	build_random(&s, period, seed, 60000, trailer);
	ASSERT_OK(sim_load(&s, &one, &whole, &err));
	fd = memfd_create("followed", MFD_CLOEXEC);
	ASSERT_TRUE(fd >= 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	memcpy(&header, s.b.p + 12, 4); /* header_size, little-endian */
	header &= 0xffffffff;

	/* The header must be below the limit to open. */
	write_junk(fd, s.b.len + 4096);
	write_real(fd, &s.b, 0, header - 1);
	ASSERT_TRUE(lk_profile_follow_open(path, header - 1, NULL, &f, &err) < 0);
	ASSERT_TRUE(err && *err);
	free(err);
	err = NULL;

	lk_rng_seed(&rng, seed, 1);
	limit = header;
	write_real(fd, &s.b, header - 1, limit);
	ASSERT_OK(lk_profile_follow_open(path, limit, NULL, &f, &err));
	while (limit < s.b.len) {
		/* Steps from one byte to 64 KiB: records cut by the limit everywhere. */
		size_t step = 1 + lk_rng_next(&rng) % (lk_rng_next(&rng) % 2 ? 64 : 65536);
		size_t from = limit;
		limit = limit + step < s.b.len ? limit + step : s.b.len;
		write_real(fd, &s.b, from, limit);
		ASSERT_OK(lk_profile_follow_step(f, limit, &err));
		/* Everything that ends a whole record's room before the limit is read. */
		ASSERT_TRUE(lk_profile_follow_offset(f) + LK_READ_RECORD_MAX + 64 >= limit ||
			    limit < header + LK_READ_RECORD_MAX);
		ASSERT_TRUE(lk_profile_follow_offset(f) <= limit);
	}
	ASSERT_EQ(ftruncate(fd, (off_t)s.b.len), 0); /* the writer's end: no garbage after it */
	ASSERT_OK(lk_profile_follow_finish(f, &followed, &err));
	lk_profile_follow_free(f);
	expect_same_profile(followed, whole, true);
	ASSERT_EQ(lk_profile_totals(followed)->trailer, trailer);
	lk_profile_free(followed);
	lk_profile_free(whole);
	close(fd);
	free(s.b.p);
}

TEST(followed_as_loaded)
{
	for (uint64_t seed = 1; seed <= 3; seed++) {
		follow_check(1, seed, true);
		follow_check(4096, seed, seed != 2); /* seed 2: a crash, no trailer */
	}
}

/* The values `leek push` sends, by stack: what it takes from the snapshot (delta.c). */
static void expect_same_values(const struct lk_profile *a, const struct lk_profile *b)
{
	const struct lk_stack_stats *sa, *sb;
	size_t n = lk_profile_stacks(a, &sa);

	ASSERT_EQ(n, lk_profile_stacks(b, &sb));
	for (size_t i = 0; i < n; i++) {
		const struct lk_estimate *x[] = { &sa[i].alloc_bytes, &sa[i].alloc_objects,
						  &sa[i].live_bytes, &sa[i].live_objects };
		const struct lk_estimate *y[] = { &sb[i].alloc_bytes, &sb[i].alloc_objects,
						  &sb[i].live_bytes, &sb[i].live_objects };
		ASSERT_EQ(sa[i].id, sb[i].id);
		for (size_t k = 0; k < 4; k++) {
			ASSERT_EQ(x[k]->value, y[k]->value);
			ASSERT_EQ(x[k]->var, y[k]->var);
			ASSERT_EQ(x[k]->observed, y[k]->observed);
			ASSERT_EQ(x[k]->samples, y[k]->samples);
		}
	}
}

/* `leek push`'s intervals (lk_profile_follow_snapshot): the follower stepped to a limit gives,
 * for every stack, the alloc_* and live_* that lk_profile_load() gives for the file read below
 * that limit, exactly (the same sums in the same order), having replayed only the records added
 * since its last step: its count of records read is the load's at every limit, so the records a
 * step replays are those between the two limits, and over the run each record is replayed once
 * (the sum of the steps is the file's count), where a load at each interval reads them all again.
 * A snapshot changes nothing after it: the follower's end is still the loaded file's. */
TEST(follow_snapshot_as_loaded_below_limit)
{
	for (uint64_t seed = 1; seed <= 3; seed++) {
		uint64_t period = seed == 2 ? 1 : 4096, replayed = 0, steps = 0, told = 0;
		const struct lk_profile_opts one = { .at_ns = UINT64_MAX, .buckets = 1,
						     .no_live_list = true, .segment_only = true };
		struct lk_profile *whole = NULL, *loaded = NULL, *followed = NULL;
		struct lk_profile_follow *f = NULL;
		const struct lk_profile *snap;
		char *err = NULL, path[64];
		size_t limit, header = 0;
		struct lk_rng rng;
		struct sim s;
		int fd;

		build_random(&s, period, seed, 60000, seed != 3);
		ASSERT_OK(sim_load(&s, &one, &whole, &err));
		fd = memfd_create("pushed", MFD_CLOEXEC);
		ASSERT_TRUE(fd >= 0);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		write_real(fd, &s.b, 0, s.b.len);
		memcpy(&header, s.b.p + 12, 4); /* header_size, little-endian */
		header &= 0xffffffff;
		lk_rng_seed(&rng, seed, 2);
		limit = header;
		ASSERT_OK(lk_profile_follow_open(path, limit, &one, &f, &err));
		while (limit < s.b.len) {
			struct lk_profile_opts below = one;
			uint64_t before = lk_profile_totals(lk_profile_follow_partial(f))->records;

			limit += 1 + lk_rng_next(&rng) % 40000;
			if (limit > s.b.len)
				limit = s.b.len;
			if (steps % 3 == 2) {
				/* A SYNC's reply (lk_profile_follow_whole): every record before the
				 * end of those a read below a higher limit reads is whole, and they
				 * are all read, not only those a record's room below it. */
				below.limit = limit + 2 * LK_READ_RECORD_MAX < s.b.len
						      ? limit + 2 * LK_READ_RECORD_MAX
						      : s.b.len;
				ASSERT_OK(lk_profile_load(path, &below, &loaded, &err));
				limit = told = lk_profile_totals(loaded)->end_offset;
				lk_profile_free(loaded);
				lk_profile_follow_whole(f, told);
			}
			below.limit = limit;
			below.limit_whole = told; /* what the follower was told, at later steps too */
			ASSERT_OK(lk_profile_follow_step(f, limit, &err));
			snap = lk_profile_follow_snapshot(f);
			ASSERT_TRUE(snap != NULL);
			ASSERT_OK(lk_profile_load(path, &below, &loaded, &err));
			ASSERT_EQ(lk_profile_totals(snap)->records, lk_profile_totals(loaded)->records);
			if (told == limit) /* every record below the limit: nothing waits */
				ASSERT_EQ(lk_profile_follow_offset(f), limit);
			replayed += lk_profile_totals(snap)->records - before;
			steps++;
			expect_same_values(snap, loaded);
			lk_profile_free(loaded);
		}
		/* The writer has gone: the rest, as the last interval reads it. */
		uint64_t before = lk_profile_totals(lk_profile_follow_partial(f))->records;
		ASSERT_OK(lk_profile_follow_step(f, UINT64_MAX, &err));
		snap = lk_profile_follow_snapshot(f);
		replayed += lk_profile_totals(snap)->records - before;
		ASSERT_EQ(replayed, lk_profile_totals(whole)->records); /* each once */
		expect_same_values(snap, whole);
		ASSERT_TRUE(steps >= 10); /* intervals enough to have reread the file many times */
		ASSERT_OK(lk_profile_follow_finish(f, &followed, &err));
		expect_same_values(followed, whole);
		lk_profile_free(followed);
		lk_profile_follow_free(f);
		lk_profile_free(whole);
		close(fd);
		free(s.b.p);
	}
}

/* A compressed profile, zstd or gzip, is read only once it is whole. */
TEST(follow_refuses_compressed)
{
	struct sim s;

	build_exact(&s);
	for (int zstd = 0; zstd < 2; zstd++) {
		struct lk_profile_follow *f = NULL;
		char *err = NULL, path[64];
		struct pbuf z = { 0 };
		int fd;

		if (zstd)
			pb_zstd(&z, s.b.p, s.b.len, 9);
		else
			pb_gzip(&z, s.b.p, s.b.len, 6);
		fd = memfd_create("z", MFD_CLOEXEC);
		ASSERT_EQ(write(fd, z.p, z.len), (ssize_t)z.len);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		ASSERT_EQ(lk_profile_follow_open(path, z.len, NULL, &f, &err), -EINVAL);
		ASSERT_CONTAINS(err, "cannot be followed");
		free(err);
		close(fd);
		free(z.p);
	}
	free(s.b.p);
}

/* What `leek dump --summary` prints comes from the profile's totals: the records of each kind,
 * the samples and frees, the blocks live at the end with their estimate, every counter (known or
 * not) and the trailer, on build-profile.h's sample of every record. */
TEST(counts_of_sample)
{
	const struct lk_profile_totals *t;
	struct lk_profile *p = NULL;
	struct pb_sample ps;
	char *err = NULL;
	struct sim s;
	double est = 0;

	pb_build_sample(&ps);
	s = (struct sim){ .b = ps.b };
	ASSERT_OK(sim_load(&s, &(struct lk_profile_opts){ .at_ns = UINT64_MAX }, &p, &err));
	t = lk_profile_totals(p);
	ASSERT_EQ(t->tags[LK_REC_ALLOC], 3);
	ASSERT_EQ(t->tags[LK_REC_FREE], 2);
	ASSERT_EQ(t->tags[LK_REC_STACK], 3);
	ASSERT_EQ(t->tags[LK_REC_MODULE], 3);
	ASSERT_EQ(t->tags[LK_REC_INHERIT], 1);
	ASSERT_EQ(t->tags[LK_REC_TRAILER], 1);
	ASSERT_EQ(t->ext_records, 2);
	ASSERT_EQ(t->samples, 3);
	ASSERT_EQ(t->inherited, 1);
	ASSERT_EQ(t->frees, 2);
	ASSERT_EQ(t->frees_unknown, 0);
	/* Live: 1 MiB and the inherited 64 B; the UINT64_MAX and 128 B blocks were freed. */
	ASSERT_EQ(t->live_objects_end.observed, 2);
	ASSERT_EQ(t->live_bytes_end.observed, (1 << 20) + 64);
	for (uint64_t size = 64; size <= 1 << 20; size *= 2)
		if (size == 64 || size == 1 << 20)
			est += (double)size / (1.0 - exp(-(double)size / 524288));
	ASSERT_NEAR(t->live_bytes_end.value, est, est * 1e-12);
	ASSERT_EQ(t->max_rss, 123456789);
	ASSERT_EQ(t->duration_ns, 189);
	ASSERT_TRUE(t->trailer);
	ASSERT_EQ(t->end_offset, ps.off[ps.nrec]);
	ASSERT_EQ(t->ncounters, 4); /* arena_full, records_dropped from the LOSS; samples, frees */
	ASSERT_EQ(t->counters[0].id, LK_CNT_ARENA_FULL);
	ASSERT_EQ(t->counters[0].value, 3);
	ASSERT_EQ(t->counters[1].id, LK_CNT_RECORDS_DROPPED);
	lk_profile_free(p);
	free(ps.b.p);
}

/* Exact mode, a FREE of a block freed already, a counter this leek does not know (kept by
 * number), and no trailer: the profile ends at its last record, at the end of the bytes. */
TEST(counts_exact_unknown_counter_no_trailer)
{
	const struct lk_profile_totals *t;
	struct lk_profile *p = NULL;
	char *err = NULL;
	struct sim s;

	sim_start(&s, 1, LK_HDR_EXACT);
	sim_site(&s, 0x401000);
	sim_alloc(&s, 1, 0x1000, 10, 1);
	sim_alloc(&s, 2, 0x2000, 20, 1);
	sim_alloc(&s, 3, 0x3000, 5, 1);
	sim_free(&s, 4, 0x3000);
	sim_free(&s, 5, 0x3000); /* freed already */
	/* LOSS with counter 40, beyond LK_CNT_MAX, and arena_full. */
	uint8_t rec[64];
	size_t n = 0;
	rec[n++] = LK_REC_LOSS;
	n += lk_varint_put(rec + n, sim_dt(&s, 6));
	n += lk_varint_put(rec + n, 2);
	n += lk_varint_put(rec + n, 40);
	n += lk_varint_put(rec + n, 9);
	n += lk_varint_put(rec + n, LK_CNT_ARENA_FULL);
	n += lk_varint_put(rec + n, 1);
	pb_put(&s.b, rec, n);
	ASSERT_OK(sim_load(&s, NULL, &p, &err));
	t = lk_profile_totals(p);
	ASSERT_EQ(t->live_objects_end.observed, 2);
	ASSERT_EQ(t->frees_unknown, 1);
	ASSERT_EQ(t->frees, 2);
	ASSERT_NEAR(t->live_bytes_end.value, 30, 1e-9);
	ASSERT_NEAR(t->live_objects_end.value, 2, 1e-9);
	ASSERT_TRUE(!t->trailer);
	ASSERT_EQ(t->end_offset, s.b.len);
	ASSERT_EQ(t->ncounters, 2);
	ASSERT_EQ(t->counters[0].id, 40);
	ASSERT_EQ(t->counters[0].value, 9);
	ASSERT_EQ(t->losses[LK_CNT_ARENA_FULL], 1);
	lk_profile_free(p);
	free(s.b.p);
}

/* ---- thread segments (version 6) ---- */

/* The records of a segmented profile, as the reader hands them out, written again as one version
 * 5 stream: the same events in the same order and at the same times, their blocks numbered in
 * that order rather than by the ranges the segments reserved. */
static void as_one_stream(const struct pbuf *seg, struct sim *v5)
{
	struct lk_reader *rd = lk_reader_new();
	const struct lk_profile_header *h;
	struct lk_record r;
	uint64_t t = 0;
	int k;

	ASSERT_TRUE(rd);
	ASSERT_OK(lk_reader_open_memory(rd, seg->p, seg->len));
	h = lk_reader_header(rd);
	*v5 = (struct sim){ 0 };
	pb_header(&v5->b, &(struct pb_header){ .version = 5, .flags = h->h.flags, .pid = h->h.pid,
					       .period = h->h.period, .exe = h->exe });
	while ((k = lk_reader_next(rd, &r)) > 0) {
		uint64_t dt = r.time_ns - t, counters[LK_CNT_MAX + 1] = { 0 };
		switch (r.tag) {
		case LK_REC_STACK:
			PB_REC(&v5->b, lk_rec_stack(rec, r.stack.id, r.stack.frames, r.stack.nframes));
			break;
		case LK_REC_ALLOC:
			pb_alloc(&v5->b, dt, r.alloc.tid, r.alloc.block, r.alloc.size, r.alloc.stack);
			break;
		case LK_REC_FREE:
			pb_free(&v5->b, dt, r.free.tid, r.free.block);
			break;
		case LK_REC_RSS:
			PB_REC(&v5->b, lk_rec_pair(rec, LK_REC_RSS, dt, r.rss.bytes));
			break;
		case LK_REC_TRAILER:
			for (uint32_t i = 0; i < r.counters.n; i++)
				counters[r.counters.v[i].id] = r.counters.v[i].value;
			PB_REC(&v5->b, lk_rec_counters(rec, LK_REC_TRAILER, dt,
						       r.counters.end_realtime_ns, counters));
			break;
		default: /* SEGMENT, THREAD: the stream above has its own */
			dt = 0;
			break;
		}
		t += dt;
	}
	ASSERT_EQ(k, 0);
	lk_reader_free(rd);
}

static int cmp_block_by_content(const void *x, const void *y)
{
	const struct lk_live_block *a = x, *b = y;

	if (a->t_ns != b->t_ns)
		return a->t_ns < b->t_ns ? -1 : 1;
	if (a->size != b->size)
		return a->size < b->size ? -1 : 1;
	return a->stack < b->stack ? -1 : a->stack > b->stack;
}

/* The same events give the same profile, whatever numbers their blocks have: a's and b's totals,
 * peak, stacks, timeline and blocks live at the end. */
static void expect_same_events(const struct lk_profile *a, const struct lk_profile *b)
{
	const struct lk_profile_totals *x = lk_profile_totals(a), *y = lk_profile_totals(b);
	const struct lk_timeline_point *ta, *tb;
	const struct lk_stack_stats *sa, *sb;
	const struct lk_live_block *la, *lb;
	size_t n = expect_same_core(a, b, &sa, &sb), nt = lk_profile_timeline(a, &ta);

	expect_same_estimate(&x->alloc_objects, &y->alloc_objects);
	for (size_t i = 0; i < n; i++) {
		expect_same_estimate(&sa[i].peak_objects, &sb[i].peak_objects);
		for (size_t k = 0; k < nt; k++)
			ASSERT_EQ(sa[i].series[k], sb[i].series[k]);
	}
	ASSERT_EQ(nt, lk_profile_timeline(b, &tb));
	for (size_t k = 0; k < nt; k++) {
		ASSERT_EQ(ta[k].t_ns, tb[k].t_ns);
		ASSERT_EQ(ta[k].heap_bytes, tb[k].heap_bytes);
		ASSERT_EQ(ta[k].heap_max, tb[k].heap_max);
	}
	n = lk_profile_live_blocks(a, &la);
	ASSERT_EQ(n, lk_profile_live_blocks(b, &lb));
	struct lk_live_block *ca = malloc(n * sizeof(*ca) + 1), *cb = malloc(n * sizeof(*cb) + 1);
	ASSERT_TRUE(ca && cb);
	memcpy(ca, la, n * sizeof(*ca));
	memcpy(cb, lb, n * sizeof(*cb));
	qsort(ca, n, sizeof(*ca), cmp_block_by_content);
	qsort(cb, n, sizeof(*cb), cmp_block_by_content);
	for (size_t i = 0; i < n; i++) {
		ASSERT_EQ(ca[i].t_ns, cb[i].t_ns);
		ASSERT_EQ(ca[i].size, cb[i].size);
		ASSERT_EQ(ca[i].stack, cb[i].stack);
	}
	free(ca);
	free(cb);
}

/* Threads that write their own segments: the profile is the one of the same events written as
 * one stream, though its blocks are numbered out of the order they come in (each segment's
 * from a range of its own), across the recent window too (segments of 1 MiB reserve up to
 * 131 072 numbers each), and the peak's set is taken while they come so. */
TEST(segments_as_one_stream)
{
	static const struct {
		uint64_t seed;
		unsigned threads;
		size_t body;
		bool crash;
	} runs[] = { { 1, 4, 256, false }, { 2, 8, 4096, true }, { 3, 6, LK_SEG_MAX, false } };

	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		struct lk_profile_opts o = { .at_ns = 300, .age_ns = 100, .buckets = 8 };
		struct lk_profile *a = NULL, *b = NULL;
		char *err = NULL;
		struct sim seg = { 0 }, one;

		pb_threads(&seg.b, runs[i].seed, 30000, runs[i].threads, runs[i].body, runs[i].crash,
			   NULL);
		as_one_stream(&seg.b, &one);
		ASSERT_OK(sim_load(&seg, &o, &a, &err));
		ASSERT_OK(sim_load(&one, &o, &b, &err));
		ASSERT_TRUE(lk_profile_totals(a)->samples > 10000);
		expect_same_events(a, b);
		lk_profile_free(a);
		lk_profile_free(b);
		free(seg.b.p);
		free(one.b.p);
	}
}

/* Where the records of a body end: after its SEG_END, or after its last record. */
static size_t body_content(const uint8_t *p, size_t len)
{
	size_t pos = 0;

	while (pos < len && p[pos] && p[pos] != LK_REC_SEG_END) {
		unsigned varints = p[pos] == LK_REC_ALLOC ? 3 : p[pos] == LK_REC_FREE ? 2 : 0;
		pos += p[pos] == LK_REC_ALLOC_FIXED ? LK_ALLOC_FIXED_SIZE
		       : p[pos] == LK_REC_FREE_FIXED ? LK_FREE_FIXED_SIZE : 1;
		for (; varints; varints--, pos++)
			while (p[pos] & 0x80)
				pos++;
	}
	return pos < len && p[pos] == LK_REC_SEG_END ? pos + 1 : pos;
}

/* A segmented profile followed as `leek run` follows it, its bodies written late: each body's
 * bytes are zeros when the limit first passes its SEGMENT, its first half is stored once the
 * limit is past its end, and the rest 64 KiB later, as its thread would fill it while the main
 * stream goes on. The follower never reads past a body not written whole, and ends with what
 * lk_profile_load() makes of the finished file. */
TEST(segments_followed_as_loaded)
{
	enum { BODIES = 4096, LAG = 65536 };
	const struct lk_profile_opts one = { .at_ns = UINT64_MAX, .buckets = 1 };
	static size_t body_at[BODIES], body_len[BODIES], stored[BODIES], content[BODIES];
	struct lk_profile *whole = NULL, *followed = NULL;
	struct lk_profile_follow *f = NULL;
	struct lk_reader *rd = lk_reader_new();
	char *err = NULL, path[64];
	size_t nbodies = 0, limit, header = 0, half = 0, done = 0;
	struct lk_record r;
	struct sim s = { 0 };
	int fd = memfd_create("followed", MFD_CLOEXEC);

	ASSERT_TRUE(fd >= 0 && rd);
	pb_threads(&s.b, 5, 40000, 5, 2048, false, NULL);
	ASSERT_OK(sim_load(&s, &one, &whole, &err));
	ASSERT_OK(lk_reader_open_memory(rd, s.b.p, s.b.len));
	header = lk_reader_header(rd)->h.header_size;
	while (lk_reader_next(rd, &r) > 0)
		if (r.tag == LK_REC_SEGMENT && r.segment.length) {
			ASSERT_TRUE(nbodies < BODIES);
			body_at[nbodies] = r.segment.body_offset;
			body_len[nbodies] = r.segment.length;
			content[nbodies++] = body_content(s.b.p + r.segment.body_offset,
							  r.segment.length);
		}
	lk_reader_free(rd);
	ASSERT_TRUE(nbodies > 20);

	write_junk(fd, s.b.len + 4096);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	write_real(fd, &s.b, 0, header);
	ASSERT_OK(lk_profile_follow_open(path, header, NULL, &f, &err));
	for (limit = header; limit < s.b.len;) {
		size_t from = limit;
		limit = limit + 4096 < s.b.len ? limit + 4096 : s.b.len;
		/* The main stream's new bytes; a body's as zeros, at first. */
		write_real(fd, &s.b, from, limit);
		for (size_t i = 0; i < nbodies; i++) {
			size_t a = body_at[i], z = a + body_len[i];
			if (a < limit && z > from) {
				size_t lo = a > from ? a : from, hi = z < limit ? z : limit;
				static const uint8_t zeros[4096];
				ASSERT_EQ(pwrite(fd, zeros, hi - lo, (off_t)lo), (ssize_t)(hi - lo));
			}
		}
		while (half < nbodies && body_at[half] + body_len[half] <= limit) {
			stored[half] = body_len[half] / 2;
			write_real(fd, &s.b, body_at[half], body_at[half] + stored[half]);
			half++;
		}
		while (done < half && body_at[done] + body_len[done] + LAG <= limit) {
			stored[done] = body_len[done];
			write_real(fd, &s.b, body_at[done], body_at[done] + stored[done]);
			done++;
		}
		ASSERT_OK(lk_profile_follow_step(f, limit, &err));
		/* Never past a body whose records are not all stored. */
		for (size_t i = 0; i < nbodies && body_at[i] < lk_profile_follow_offset(f); i++)
			ASSERT_TRUE(stored[i] >= content[i]);
	}
	ASSERT_TRUE(done < nbodies); /* the last ones wait for the end */
	ASSERT_TRUE(lk_profile_follow_offset(f) > s.b.len / 2); /* the rest did not */
	for (; done < nbodies; done++)
		write_real(fd, &s.b, body_at[done], body_at[done] + body_len[done]);
	ASSERT_EQ(ftruncate(fd, (off_t)s.b.len), 0);
	ASSERT_OK(lk_profile_follow_finish(f, &followed, &err));
	lk_profile_follow_free(f);
	expect_same_profile(followed, whole, true);
	lk_profile_free(followed);
	lk_profile_free(whole);
	close(fd);
	free(s.b.p);
}

/* ---- the window between two moments (opts.window, struct lk_window) ---- */

/* build_exact's run between 25 and 75: live at 25 are A and B (stack 1); at 75 B, E (stack 1) and
 * D (stack 2). E and D came, A left; C came and went, so it is only allocated: stack 2 allocated
 * C and D (1050), stack 1 E (2000). live - from = came - left on each stack. */
TEST(window_exact)
{
	struct lk_profile_opts o = { .from_ns = 25, .at_ns = 75, .window = true };
	const struct lk_stack_stats *st;
	struct lk_profile *p = NULL;
	char *err = NULL;
	struct sim s;

	build_exact(&s);
	ASSERT_OK(sim_load(&s, &o, &p, &err));
	ASSERT_EQ(lk_profile_stacks(p, &st), 3);
	ASSERT_EXACT(st[0].window->from_bytes, 300);
	ASSERT_EXACT(st[0].window->from_objects, 2);
	ASSERT_EXACT(st[0].live_bytes, 2200);
	ASSERT_EXACT(st[0].window->came_bytes, 2000);
	ASSERT_EXACT(st[0].window->left_bytes, 100);
	ASSERT_EXACT(st[0].window->left_objects, 1);
	ASSERT_EXACT(st[0].window->alloc_bytes, 2000);
	ASSERT_EXACT(st[1].window->from_bytes, 0);
	ASSERT_EXACT(st[1].live_bytes, 50);
	ASSERT_EXACT(st[1].window->came_bytes, 50);
	ASSERT_EXACT(st[1].window->left_bytes, 0);
	ASSERT_EXACT(st[1].window->alloc_bytes, 1050);
	ASSERT_EXACT(st[1].window->alloc_objects, 2);
	ASSERT_EXACT(st[2].window->alloc_bytes, 0);
	lk_profile_free(p);

	/* To the end (100): E left again, F came (stack 3). */
	o.at_ns = UINT64_MAX;
	ASSERT_OK(sim_load(&s, &o, &p, &err));
	lk_profile_stacks(p, &st);
	ASSERT_EXACT(st[0].live_bytes, 200);
	ASSERT_EXACT(st[0].window->came_bytes, 0);
	ASSERT_EXACT(st[0].window->left_bytes, 100);
	ASSERT_EXACT(st[0].window->alloc_bytes, 2000);
	ASSERT_EXACT(st[2].window->came_bytes, 10);
	ASSERT_EXACT(st[2].window->alloc_bytes, 10);
	lk_profile_free(p);

	/* One moment twice (40, where A's FREE counts): nothing came, left or was allocated. And
	 * a first moment after the last record: the end, twice. */
	for (int k = 0; k < 2; k++) {
		o.from_ns = k ? 500 : 40;
		o.at_ns = k ? UINT64_MAX : 40;
		ASSERT_OK(sim_load(&s, &o, &p, &err));
		lk_profile_stacks(p, &st);
		ASSERT_EXACT(st[0].window->from_bytes, k ? 200 : 200);
		ASSERT_EXACT(st[1].window->from_bytes, k ? 50 : 1000);
		for (size_t i = 0; i < 3; i++) {
			ASSERT_EQ(st[i].window->from_bytes.value, st[i].live_bytes.value);
			ASSERT_EXACT(st[i].window->came_bytes, 0);
			ASSERT_EXACT(st[i].window->left_bytes, 0);
			ASSERT_EXACT(st[i].window->alloc_bytes, 0);
		}
		lk_profile_free(p);
	}
	/* Without opts.window there is none. */
	ASSERT_OK(sim_load(&s, NULL, &p, &err));
	lk_profile_stacks(p, &st);
	ASSERT_TRUE(st[0].window == NULL);
	lk_profile_free(p);
	free(s.b.p);
}

/* A sampled run of 30000 ALLOCs and FREEs on 5 stacks, with INHERITs first (as libleek writes
 * them, at time 0): each part of the window against a tally of the same events with
 * lk_sample_weight(), from_* against a load with at_ns = from_ns (the same sums, bit for bit),
 * and live - from = came - left. */
struct tally_block {
	uint64_t t, size, stack, freed; /* freed: UINT64_MAX while live */
	bool inherited;
};

TEST(window_sampled_against_a_tally)
{
	enum { N = 30000, SLOTS = 400, STACKS = 5 };
	const uint64_t period = 65536, from = 40000, at = 90000;
	static struct tally_block blocks[N + SLOTS];
	size_t slot[SLOTS] = { 0 }, nb = 0; /* slot: block index + 1 */
	double came[STACKS + 1] = { 0 }, left[STACKS + 1] = { 0 }, alloc[STACKS + 1] = { 0 };
	struct lk_profile_opts o = { .from_ns = from, .at_ns = at, .window = true };
	struct lk_profile_opts o_from = { .at_ns = from };
	const struct lk_stack_stats *st, *sf;
	struct lk_profile *p = NULL, *pf = NULL;
	char *err = NULL;
	struct lk_rng rng;
	uint64_t t = 0;
	struct sim s;

	lk_rng_seed(&rng, 0x77696e646f77ull, 0); /* "window" */
	sim_start(&s, period, LK_HDR_FORKED);
	for (uint64_t k = 1; k <= STACKS; k++)
		sim_site(&s, 0x401000 + 0x100 * k);
	for (size_t a = 0; a < SLOTS; a += 4) { /* live in the parent at the fork */
		uint64_t size = 100 + 37 * a, stack = 1 + a % STACKS;
		pb_inherit(&s.b, 0x10000 + 0x40 * a, size, stack, SIM_START_MONO - 5);
		blocks[nb] = (struct tally_block){ 0, size, stack, UINT64_MAX, true };
		slot[a] = ++nb;
	}
	for (size_t i = 0; i < N; i++) {
		uint64_t r = lk_rng_next(&rng), a = (r >> 8) % SLOTS, addr = 0x10000 + 0x40 * a;
		t += 1 + r % 6;
		if (slot[a]) {
			sim_free(&s, t, addr);
			blocks[slot[a] - 1].freed = t;
			slot[a] = 0;
		} else {
			uint64_t size = 1 + (r >> 20) % 200000, stack = 1 + (r >> 50) % STACKS;
			sim_alloc(&s, t, addr, size, stack);
			blocks[nb] = (struct tally_block){ t, size, stack, UINT64_MAX, false };
			slot[a] = ++nb;
		}
	}
	sim_trailer(&s, t + 1, NULL);
	ASSERT_TRUE(t > at);
	for (size_t i = 0; i < nb; i++) {
		const struct tally_block *b = &blocks[i];
		double x = (double)b->size * lk_sample_weight(b->size, period);
		bool live_from = b->t <= from && b->freed > from;
		bool live_at = b->t <= at && b->freed > at;
		if (live_at && !live_from)
			came[b->stack] += x;
		if (live_from && !live_at)
			left[b->stack] += x;
		if (!b->inherited && b->t > from && b->t <= at)
			alloc[b->stack] += x;
	}
	ASSERT_OK(sim_load(&s, &o, &p, &err));
	ASSERT_OK(sim_load(&s, &o_from, &pf, &err));
	ASSERT_EQ(lk_profile_stacks(p, &st), STACKS);
	ASSERT_EQ(lk_profile_stacks(pf, &sf), STACKS);
	for (size_t i = 0; i < STACKS; i++) {
		const struct lk_window *w = st[i].window;
		uint64_t k = st[i].id;
		ASSERT_TRUE(w->came_bytes.samples > 10 && w->left_bytes.samples > 10);
		ASSERT_EQ(w->from_bytes.value, sf[i].live_bytes.value);
		ASSERT_EQ(w->from_bytes.var, sf[i].live_bytes.var);
		ASSERT_NEAR(w->came_bytes.value, came[k], 1e-9 * came[k]);
		ASSERT_NEAR(w->left_bytes.value, left[k], 1e-9 * left[k]);
		ASSERT_NEAR(w->alloc_bytes.value, alloc[k], 1e-9 * alloc[k]);
		ASSERT_NEAR(st[i].live_bytes.value - w->from_bytes.value,
			    w->came_bytes.value - w->left_bytes.value,
			    1e-9 * st[i].live_bytes.value);
		ASSERT_NEAR(st[i].live_bytes.var - w->from_bytes.var,
			    w->came_bytes.var - w->left_bytes.var, 1e-9 * st[i].live_bytes.var);
		ASSERT_EQ(st[i].live_bytes.samples + w->left_bytes.samples,
			  w->from_bytes.samples + w->came_bytes.samples);
	}
	lk_profile_free(p);
	lk_profile_free(pf);
	free(s.b.p);
}

/* `leek watch`'s options (profile.h): a limit below which only whole records are read, blocks
 * known up to a time left out of old_*, and the ring of the last frees.
 *
 *   t   record          live       frees so far
 *   10  ALLOC A 100     A
 *   20  ALLOC B 200     A B
 *   30  FREE A          B          A (lived 20)
 *       ---- cut: the limit below reads up to here ----
 *   40  ALLOC C 300     B C
 *   45  ALLOC D 50      B C D
 *   50  FREE B          C D        A B (lived 30)
 *   55  FREE D          C          A B D (lived 10)
 *   60  TRAILER
 */
TEST(watch_limit_known_recent_frees)
{
	static const uint64_t frames[] = { 0x7f01 };
	uint64_t counters[LK_CNT_MAX + 1] = { [LK_CNT_SAMPLES] = 4, [LK_CNT_FREES] = 3 };
	const struct lk_profile_totals *t;
	const struct lk_free_event *fe;
	const struct lk_stack_stats *st;
	struct lk_profile *p = NULL;
	char *err = NULL;
	struct sim s;
	size_t cut;

	sim_start(&s, 1, LK_HDR_EXACT);
	sim_stack(&s, frames, 1);
	sim_alloc(&s, 10, 0xa000, 100, 1);
	sim_alloc(&s, 20, 0xb000, 200, 1);
	sim_free(&s, 30, 0xa000);
	cut = s.b.len;
	sim_alloc(&s, 40, 0xc000, 300, 1);
	sim_alloc(&s, 45, 0xd000, 50, 1);
	sim_free(&s, 50, 0xb000);
	sim_free(&s, 55, 0xd000);
	sim_trailer(&s, 60, counters);
	pb_zeros(&s.b, 2 * LK_READ_RECORD_MAX); /* as a file being written: room past its records */

	/* A record is read only if it starts LK_READ_RECORD_MAX bytes or more before the limit. */
	struct lk_profile_opts o = { .at_ns = UINT64_MAX, .limit = cut + LK_READ_RECORD_MAX - 1,
				     .frees = true, .frees_last = 8 };
	ASSERT_OK(sim_load(&s, &o, &p, &err));
	t = lk_profile_totals(p);
	ASSERT_TRUE(!t->trailer);
	ASSERT_EQ(t->duration_ns, 30);
	ASSERT_EQ(t->frees, 1);
	ASSERT_EXACT(t->live_bytes_end, 200);
	ASSERT_EQ(lk_profile_frees_recent(p, &fe), 1);
	ASSERT_EQ(fe[0].size, 100);
	ASSERT_EQ(fe[0].alloc_ns, 10);
	ASSERT_EQ(fe[0].free_ns, 30);
	ASSERT_EQ(fe[0].alloc_stack, 1);
	ASSERT_EQ(fe[0].free_stack, 0); /* FREE records carry none yet */
	ASSERT_EQ(fe[0].weight, 1);
	lk_profile_free(p);

	/* The whole file; a ring of 2 keeps B and D, oldest first. */
	o = (struct lk_profile_opts){ .at_ns = UINT64_MAX, .frees = true, .frees_last = 2 };
	ASSERT_OK(sim_load(&s, &o, &p, &err));
	ASSERT_TRUE(lk_profile_totals(p)->trailer);
	ASSERT_EQ(lk_profile_frees_recent(p, &fe), 2);
	ASSERT_EQ(fe[0].size, 200);
	ASSERT_EQ(fe[0].free_ns - (uint64_t)fe[0].alloc_ns, 30);
	ASSERT_EQ(fe[1].size, 50);
	ASSERT_EQ(fe[1].free_ns, 55);
	lk_profile_free(p);
	o.frees = false; /* none kept */
	ASSERT_OK(sim_load(&s, &o, &p, &err));
	ASSERT_EQ(lk_profile_frees_recent(p, &fe), 0);
	lk_profile_free(p);

	/* C (allocated at 40) is the one block live at the end: known at 40, old at 39. */
	o = (struct lk_profile_opts){ .at_ns = UINT64_MAX, .known = true, .known_ns = 40 };
	ASSERT_OK(sim_load(&s, &o, &p, &err));
	ASSERT_EQ(lk_profile_stacks(p, &st), 1);
	ASSERT_EXACT(st[0].old_bytes, 0);
	ASSERT_EXACT(lk_profile_totals(p)->known_bytes, 300);
	ASSERT_EXACT(lk_profile_totals(p)->known_objects, 1);
	ASSERT_EXACT(st[0].live_bytes, 300); /* live_* as ever */
	lk_profile_free(p);
	o.known_ns = 39;
	ASSERT_OK(sim_load(&s, &o, &p, &err));
	lk_profile_stacks(p, &st);
	ASSERT_EXACT(st[0].old_bytes, 300);
	ASSERT_EQ(lk_profile_totals(p)->known_bytes.value, 0);
	lk_profile_free(p);
	free(s.b.p);
}

/* opts.frees: each free of a live sampled block goes to its (allocation stack, free stack) pair,
 * with its lifetime, and the last frees_last into the list of recent frees, oldest first (a ring
 * that wrapped comes out in order). Exact mode: every weight is 1, so every figure is exact. */
TEST(frees_kept_by_pair_and_recent)
{
	struct lk_profile_opts o = { .at_ns = UINT64_MAX, .frees = true, .frees_last = 2 };
	const struct lk_free_event *ev;
	const struct lk_free_pair *pr;
	struct lk_profile *p = NULL;
	char *err = NULL;
	struct sim s;

	sim_start(&s, 1, LK_HDR_EXACT);
	uint64_t a = sim_site(&s, 0x401000), b = sim_site(&s, 0x402000);
	uint64_t f = sim_site(&s, 0x403000), g = sim_site(&s, 0x404000);
	sim_alloc(&s, 10, 0x1000, 100, a);
	sim_alloc(&s, 20, 0x2000, 200, a);
	sim_alloc(&s, 30, 0x3000, 50, b);
	sim_alloc(&s, 35, 0x4000, 7, b); /* live at the end: no free */
	sim_free_stack(&s, 50, 0x1000, f);
	sim_free_stack(&s, 70, 0x2000, g);
	sim_free(&s, 100, 0x3000); /* a FREE without a stack, as without LEEK_FREE_STACKS */
	sim_trailer(&s, 110, NULL);

	ASSERT_OK(sim_load(&s, &o, &p, &err));
	ASSERT_EQ(lk_profile_free_stacks_seen(p), 2);
	ASSERT_EQ(lk_profile_frees_recent(p, &ev), 2);
	ASSERT_EQ(ev[0].alloc_stack, a);
	ASSERT_EQ(ev[0].free_stack, g);
	ASSERT_EQ(ev[0].size, 200);
	ASSERT_EQ(ev[0].alloc_ns, 20);
	ASSERT_EQ(ev[0].free_ns, 70);
	ASSERT_EQ(ev[1].alloc_stack, b);
	ASSERT_EQ(ev[1].free_stack, 0);
	ASSERT_EQ(ev[1].free_ns, 100);
	ASSERT_TRUE(ev[1].weight == 1.0);

	ASSERT_EQ(lk_profile_free_pairs(p, &pr), 3);
	/* By bytes freed: (a, g) 200, (a, f) 100, (b, none) 50. */
	ASSERT_EQ(pr[0].alloc_stack, a);
	ASSERT_EQ(pr[0].free_stack, g);
	ASSERT_EXACT(pr[0].bytes, 200);
	ASSERT_EQ(pr[0].life_min_ns, 50);
	ASSERT_EQ(pr[1].alloc_stack, a);
	ASSERT_EQ(pr[1].free_stack, f);
	ASSERT_EXACT(pr[1].bytes, 100);
	ASSERT_TRUE(pr[1].life_mean_ns == 40.0);
	ASSERT_EQ(pr[1].life_max_ns, 40);
	ASSERT_EQ(pr[2].alloc_stack, b);
	ASSERT_EQ(pr[2].free_stack, 0);
	ASSERT_EXACT(pr[2].objects, 1);
	lk_profile_free(p);

	/* Without opts.frees nothing is kept; with frees_last 0, the pairs alone. */
	ASSERT_OK(sim_load(&s, NULL, &p, &err));
	ASSERT_EQ(lk_profile_free_pairs(p, &pr), 0);
	ASSERT_EQ(lk_profile_frees_recent(p, &ev), 0);
	lk_profile_free(p);
	o.frees_last = 0;
	ASSERT_OK(sim_load(&s, &o, &p, &err));
	ASSERT_EQ(lk_profile_free_pairs(p, &pr), 3);
	ASSERT_EQ(lk_profile_frees_recent(p, &ev), 0);
	lk_profile_free(p);
	free(s.b.p);
}
