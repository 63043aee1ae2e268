/* test-profile-budget.c: what reading a profile takes from the memory budget
 * (src/cli/base/budget.h), in lk_profile_load() and in a profile followed as it is written: live
 * blocks, stacks and modules beyond the limit fail with -E2BIG and "offset N: the profile needs
 * more than ... of memory to read (--max-memory; ...)", N the offset of the record that went over;
 * everything taken is given back, whether the read succeeds or fails; and the cost of a live block,
 * which the default limit is chosen for (budget.h, docs/design.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "budget.h"
#include "harness.h"
#include "profile-sim.h"
#include "recent.h"

#define MiB (1ull << 20)

/* An exact profile: one stack, then n ALLOCs of 16 bytes, none freed, one THREAD record first;
 * off[i] (if not NULL) the offset of the ALLOC of block i + 1. */
static void build_live(struct sim *s, size_t n, size_t *off)
{
	sim_start(s, 1, LK_HDR_EXACT);
	sim_site(s, 0x401000);
	PB_REC(&s->b, lk_rec_thread(rec, 1));
	for (size_t i = 0; i < n; i++) {
		size_t at = PB_REC(&s->b, lk_rec_alloc(rec, i % 2, 16, 1));
		if (off)
			off[i] = at;
	}
}

/* "offset N: the profile needs more than LIMIT of memory to read (--max-memory; K live blocks and
 * S stacks so far)": N, K and S. */
static void parse_budget_error(const char *err, const char *limit, size_t *offset, size_t *live,
			       size_t *stacks)
{
	char want[128];

	ASSERT_TRUE(err != NULL);
	ASSERT_EQ(sscanf(err, "offset %zu: ", offset), 1);
	snprintf(want, sizeof(want), ": the profile needs more than %s of memory to read "
		 "(--max-memory; ", limit);
	ASSERT_CONTAINS(err, want);
	ASSERT_EQ(sscanf(strstr(err, "--max-memory; "), "--max-memory; %zu live block%*[s] and %zu",
			 live, stacks),
		  2);
	ASSERT_CONTAINS(err, "so far)");
}

/* Two million live blocks with 1 MiB to read them in: the read stops at the ALLOC that would
 * have gone over, names it, holds no more than the limit on the way, and gives everything back. */
TEST(live_blocks_beyond_the_budget)
{
	static size_t off[2000000];
	struct lk_profile *p = NULL;
	size_t at, live, stacks;
	char *err = NULL;
	struct sim s;

	build_live(&s, 2000000, off);
	lk_budget_set_limit(1 * MiB);
	ASSERT_EQ(sim_load(&s, NULL, &p, &err), -E2BIG);
	ASSERT_TRUE(p == NULL);
	parse_budget_error(err, "1 MiB", &at, &live, &stacks);
	ASSERT_EQ(stacks, 1);
	/* The record is the ALLOC that did not fit, or the one just added when room was made to
	 * remember the set at its peak (profile-live.c's mark). */
	ASSERT_TRUE(live > 0 && live < 2000000);
	ASSERT_TRUE(at == off[live] || at == off[live - 1]);
	/* Every live block has room kept for it in case it leaves after the peak (16 bytes, 48
	 * while that room doubles); those behind recent.h's window (which is not counted: 8 MiB at
	 * most) take at least 32 bytes more. */
	ASSERT_TRUE(live >= 1 * MiB / 48);
	ASSERT_TRUE(live <= LK_RECENT_BLOCKS + 1 * MiB / 32);
	ASSERT_TRUE(lk_budget_peak() <= 1 * MiB);
	ASSERT_EQ(lk_budget_used(), 0);
	free(err);
	free(s.b.p);
}

/* Deep stacks: the stack table and its frames. */
TEST(stacks_beyond_the_budget)
{
	static uint64_t frames[LK_MAX_FRAMES];
	static size_t off[20001];
	struct lk_profile *p = NULL;
	size_t at, live, stacks;
	char *err = NULL;
	struct sim s;

	sim_start(&s, 1, LK_HDR_EXACT);
	for (size_t i = 1; i <= 20000; i++) {
		for (size_t f = 0; f < LK_MAX_FRAMES; f++)
			frames[f] = 0x400000 + 64 * (i * LK_MAX_FRAMES + f);
		off[i] = s.b.len;
		sim_stack(&s, frames, LK_MAX_FRAMES);
	}
	lk_budget_set_limit(8 * MiB);
	ASSERT_EQ(sim_load(&s, NULL, &p, &err), -E2BIG);
	parse_budget_error(err, "8 MiB", &at, &live, &stacks);
	ASSERT_EQ(live, 0);
	ASSERT_TRUE(stacks > 1000 && stacks < 20000); /* a stack is about 3 KiB here */
	ASSERT_EQ(at, off[stacks + 1]);               /* the STACK record that did not fit */
	ASSERT_TRUE(lk_budget_peak() <= 8 * MiB);
	ASSERT_EQ(lk_budget_used(), 0);
	free(err);
	free(s.b.p);
}

/* Modules with long paths. */
TEST(modules_beyond_the_budget)
{
	static char path[LK_MAX_PATH];
	static size_t off[2000];
	struct lk_module_info m = { .nseg = 1, .seg = { { 0, 0x1000 } }, .path = path,
				    .path_len = sizeof(path) };
	struct lk_profile *p = NULL;
	char *err = NULL, want[32];
	struct sim s;
	size_t k;

	memset(path, 'x', sizeof(path));
	sim_start(&s, 1, LK_HDR_EXACT);
	for (size_t i = 0; i < 2000; i++) {
		m.id = i + 1;
		m.base = 0x10000000 + 0x10000 * i;
		off[i] = PB_REC(&s.b, lk_rec_module(rec, 0, &m));
	}
	lk_budget_set_limit(1 * MiB);
	ASSERT_EQ(sim_load(&s, NULL, &p, &err), -E2BIG);
	ASSERT_CONTAINS(err, "of memory to read (--max-memory; 0 live blocks and 0 stacks so far)");
	for (k = 0; k < 2000; k++) {
		snprintf(want, sizeof(want), "offset %zu:", off[k]);
		if (strncmp(err, want, strlen(want)) == 0)
			break;
	}
	ASSERT_TRUE(k > 100 && k < 2000); /* a module is a little over 4 KiB here */
	ASSERT_EQ(lk_budget_used(), 0);
	free(err);
	free(s.b.p);
}

/* A profile of every kind of record, loaded and freed, with and without the list of the blocks
 * live at the end, and followed: the budget ends as it started. */
TEST(everything_given_back)
{
	static const uint64_t frames[] = { 0x401234, 0x402345, 0x7f0000001000 };
	struct lk_module_info m = { .id = 1, .base = 0x400000, .nseg = 1, .seg = { { 0, 0x10000 } },
				    .build_id_len = 2, .build_id = { 0xab, 0xcd },
				    .path = "/usr/bin/sim", .path_len = 12 };
	struct lk_profile_opts no_list = { .at_ns = UINT64_MAX, .no_live_list = true };
	struct lk_profile *p = NULL;
	struct lk_profile_follow *f = NULL;
	char *err = NULL, path[64];
	struct sim s;
	int fd;

	sim_start(&s, 64, 0);
	PB_REC(&s.b, lk_rec_module(rec, 0, &m));
	for (uint64_t i = 1; i <= 50; i++)
		sim_stack(&s, frames, 3);
	/* A third of the blocks stay: past recent.h's window, they go to the table. The others are
	 * freed at once, or one in ten later (the set at the peak keeps them aside). */
	for (uint64_t i = 0; i < 300000; i++) {
		sim_alloc(&s, 2 * i + 1, 0x100000 + 16 * i, 8 + i % 100, 1 + i % 50);
		if (i % 3 == 1)
			sim_free(&s, 2 * i + 2, 0x100000 + 16 * i);
		else if (i % 3 == 2 && i % 10 == 0)
			sim_free(&s, 2 * i + 2, 0x100000 + 16 * (i / 2));
	}
	PB_REC(&s.b, lk_rec_pair(rec, LK_REC_UNLOAD, 1, 1));
	sim_trailer(&s, 700000, NULL);

	ASSERT_EQ(lk_budget_used(), 0);
	ASSERT_OK(sim_load(&s, NULL, &p, &err));
	ASSERT_TRUE(lk_budget_used() > 0); /* what the profile holds */
	lk_profile_free(p);
	ASSERT_EQ(lk_budget_used(), 0);
	ASSERT_OK(sim_load(&s, &no_list, &p, &err));
	lk_profile_free(p);
	ASSERT_EQ(lk_budget_used(), 0);

	fd = memfd_create("followed", MFD_CLOEXEC);
	ASSERT_EQ(write(fd, s.b.p, s.b.len), (ssize_t)s.b.len);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ASSERT_OK(lk_profile_follow_open(path, s.b.len / 2, NULL, &f, &err));
	ASSERT_OK(lk_profile_follow_step(f, s.b.len / 2, &err));
	lk_profile_follow_free(f); /* given up half way */
	ASSERT_EQ(lk_budget_used(), 0);
	ASSERT_OK(lk_profile_follow_open(path, s.b.len, NULL, &f, &err));
	ASSERT_OK(lk_profile_follow_finish(f, &p, &err));
	lk_profile_follow_free(f);
	lk_profile_free(p);
	ASSERT_EQ(lk_budget_used(), 0);
	close(fd);
	free(s.b.p);
}

/* `leek run`'s follower reads with the same budget: a step that goes over fails with the offset,
 * and so does every call after it. */
TEST(followed_beyond_the_budget)
{
	static size_t off[500000];
	struct lk_profile_follow *f = NULL;
	struct lk_profile *p = NULL;
	char *err = NULL, *again = NULL, path[64];
	size_t at, live, stacks;
	struct sim s;
	int fd;

	build_live(&s, 500000, off);
	fd = memfd_create("followed", MFD_CLOEXEC);
	ASSERT_EQ(write(fd, s.b.p, s.b.len), (ssize_t)s.b.len);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	lk_budget_set_limit(2 * MiB);
	ASSERT_OK(lk_profile_follow_open(path, s.b.len, NULL, &f, &err));
	ASSERT_EQ(lk_profile_follow_step(f, s.b.len, &err), -E2BIG);
	parse_budget_error(err, "2 MiB", &at, &live, &stacks);
	ASSERT_TRUE(at == off[live] || at == off[live - 1]);
	ASSERT_EQ(lk_profile_follow_finish(f, &p, &again), -E2BIG);
	ASSERT_STREQ(again, err);
	lk_profile_follow_free(f);
	ASSERT_EQ(lk_budget_used(), 0);
	free(err);
	free(again);
	close(fd);
	free(s.b.p);
}

/* What a live block costs the budget, at most, whether the blocks live at the end are listed
 * (`leek report old`) or not: the figure docs/design.md gives, and what the default limit is
 * chosen for. The most is where every array has just doubled, one block past 2^21 in the table:
 * its slot (32 bytes, twice over once the slots have doubled), its entry in the table (8 bytes,
 * in a table at most half full, which has just doubled and whose old half is still there while
 * it is copied) and the room kept for it in case it leaves after the peak (16 bytes, doubled):
 * 64 + 48 + 32. The list (40 bytes, and as much again while it is sorted) comes after the table
 * and the slots are gone. 2.4 million blocks read under the default limit, as an honest exact
 * profile of a large heap is. */
#define LIVE_COST_MAX 144 /* bytes a live block */

TEST(cost_of_a_live_block)
{
	const struct lk_profile_opts no_list = { .at_ns = UINT64_MAX, .no_live_list = true };
	const size_t n = LK_RECENT_BLOCKS + (1u << 21) + 1;
	struct lk_profile *p = NULL;
	char *err = NULL;
	struct sim s;

	build_live(&s, n, NULL);
	ASSERT_OK(sim_load(&s, &no_list, &p, &err));
	ASSERT_EQ(lk_profile_totals(p)->max_live, n);
	lk_profile_free(p);
	printf("budget: %.1f bytes a live block without the list\n",
	       (double)lk_budget_peak() / (double)n);
	ASSERT_TRUE(lk_budget_peak() <= n * LIVE_COST_MAX);
	ASSERT_OK(sim_load(&s, NULL, &p, &err));
	lk_profile_free(p);
	printf("budget: %.1f bytes a live block with it\n", (double)lk_budget_peak() / (double)n);
	ASSERT_TRUE(lk_budget_peak() <= n * LIVE_COST_MAX);
	ASSERT_EQ(lk_budget_used(), 0);

	/* The default of a machine of 16 GiB holds the largest live set the hard cap allows. */
	struct lk_budget_machine m16 = { 16ull << 30, UINT64_MAX, UINT64_MAX, UINT64_MAX };
	ASSERT_TRUE(lk_budget_default(&m16) >= (uint64_t)LK_PROFILE_MAX_LIVE * LIVE_COST_MAX);
	free(s.b.p);
}
