/* test-blockset.c: the summary's live set (src/cli/profile/blockset.c) against a plain array.
 *
  * Blocks come as a profile numbers them, 1, 2, 3, ..., and are freed after a random delay: most
  * soon (inside the window of pages), some after more than the window's LK_RECENT_BLOCKS numbers
  * (from the map the window hands its survivors to), some never; some frees name blocks that are
  * not live (freed twice, or never allocated). The numbering also jumps ahead by more than a
  * window, and numbers behind the window are added again. After every step the set must agree with
  * the reference on each block asked about, and on the count; at the end, on every live block.
 */
#include <errno.h>
#include <stdlib.h>

#include "blockset.h"
#include "harness.h"

#define N (5 * LK_RECENT_BLOCKS) /* numbers: five windows */

static uint64_t ref_value[N + 1];
static bool ref_live[N + 1];
static size_t ref_count;

static uint64_t rnd(uint64_t *x)
{
	*x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
	return *x;
}

static void check_block(struct lk_blockset *s, uint64_t b)
{
	uint64_t v = 0;
	bool was = lk_blockset_remove(s, b, &v);

	ASSERT_EQ(was, ref_live[b]);
	if (was) {
		ASSERT_EQ(v, ref_value[b]);
		ASSERT_OK(lk_blockset_add(s, b, v)); /* put back: only asked */
	}
}

static size_t seen;

static void visit(void *ctx, uint64_t block, uint64_t value)
{
	(void)ctx;
	ASSERT_TRUE(block <= N);
	ASSERT_TRUE(ref_live[block]);
	ASSERT_EQ(value, ref_value[block]);
	seen++;
}

TEST(random_against_reference)
{
	struct lk_blockset s;
	uint64_t x = 88172645463325252ull, next = 1;
	static uint64_t pending[N + 1]; /* blocks to free, by the number after which they go */

	lk_blockset_init(&s, N);
	while (next <= N) {
		uint64_t b = next++;
		if (b == 2 * LK_RECENT_BLOCKS)
			next += 3 * LK_RECENT_BLOCKS / 2; /* a jump past the window */
		uint64_t v = rnd(&x);
		ASSERT_OK(lk_blockset_add(&s, b, v));
		ref_count += !ref_live[b];
		ref_live[b] = true;
		ref_value[b] = v;
		/* When it goes: soon (a few hundred numbers), late (past the window), or never. */
		uint64_t r = rnd(&x) % 100, at;
		if (r < 80)
			at = b + 1 + rnd(&x) % 300;
		else if (r < 95)
			at = b + LK_RECENT_BLOCKS + rnd(&x) % 100000;
		else
			at = 0;
		if (at && at <= N && !pending[at])
			pending[at] = b;
		if (b <= N && pending[b]) {
			uint64_t f = pending[b], v2;
			ASSERT_EQ(lk_blockset_remove(&s, f, &v2), ref_live[f]);
			if (ref_live[f]) {
				ASSERT_EQ(v2, ref_value[f]);
				ref_live[f] = false;
				ref_count--;
			}
		}
		/* A free of a block that is not live: freed already, or never allocated. */
		if (rnd(&x) % 50 == 0) {
			uint64_t g = 1 + rnd(&x) % b;
			if (!ref_live[g])
				ASSERT_TRUE(!lk_blockset_remove(&s, g, NULL));
		}
		/* An old number added again (a replaced value), behind or inside the window. */
		if (rnd(&x) % 1000 == 0) {
			uint64_t g = 1 + rnd(&x) % b;
			uint64_t v3 = rnd(&x);
			ASSERT_OK(lk_blockset_add(&s, g, v3));
			ref_count += !ref_live[g];
			ref_live[g] = true;
			ref_value[g] = v3;
		}
		if (b % 4099 == 0)
			for (int k = 0; k < 64; k++)
				check_block(&s, 1 + rnd(&x) % b);
		ASSERT_EQ(lk_blockset_count(&s), ref_count);
	}
	seen = 0;
	lk_blockset_foreach(&s, visit, NULL);
	ASSERT_EQ(seen, ref_count);
	lk_blockset_done(&s);
}

TEST(cap)
{
	struct lk_blockset s;
	uint64_t far = 10 * LK_RECENT_BLOCKS;

	lk_blockset_init(&s, 3);
	ASSERT_TRUE(!lk_blockset_remove(&s, 1, NULL));
	ASSERT_OK(lk_blockset_add(&s, 1, 10));
	ASSERT_OK(lk_blockset_add(&s, 2, 20));
	ASSERT_OK(lk_blockset_add(&s, far, 30)); /* 1 and 2 leave the window for the map */
	ASSERT_EQ(lk_blockset_add(&s, far + 1, 40), -E2BIG);
	ASSERT_EQ(lk_blockset_add(&s, 3, 40), -E2BIG); /* behind the window, the same cap */
	ASSERT_OK(lk_blockset_add(&s, 2, 21));        /* replacing is not growing */
	uint64_t v = 0;
	ASSERT_TRUE(lk_blockset_remove(&s, 2, &v));
	ASSERT_EQ(v, 21);
	ASSERT_OK(lk_blockset_add(&s, far + 1, 40));
	ASSERT_EQ(lk_blockset_count(&s), 3);
	lk_blockset_done(&s);
}
