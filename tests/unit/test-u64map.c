/* test-u64map.c: the CLI's hash map (src/cli/base/u64map.c) against a plain array, under a random
 * mix of puts and removes that keeps long probe runs and wrap-around at the table's end busy.
 */
#include <errno.h>
#include <string.h>

#include "harness.h"
#include "u64map.h"

#define KEYS 512

TEST(random_against_reference)
{
	static uint64_t value[KEYS];
	static bool present[KEYS];
	struct lk_u64map m;
	uint64_t x = 12345, v;

	lk_u64map_init(&m, KEYS);
	for (int iter = 0; iter < 200000; iter++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		/* Keys that collide a lot: multiples of 4096 and small numbers. */
		size_t k = x % KEYS;
		uint64_t key = k % 2 ? k << 12 : k;
		if (x >> 62) {
			ASSERT_OK(lk_u64map_put(&m, key, x));
			present[k] = true;
			value[k] = x;
		} else {
			ASSERT_EQ(lk_u64map_remove(&m, key, &v), present[k]);
			if (present[k])
				ASSERT_EQ(v, value[k]);
			present[k] = false;
		}
		if (iter % 997 == 0) {
			size_t count = 0;
			for (size_t i = 0; i < KEYS; i++) {
				uint64_t *p = lk_u64map_get(&m, i % 2 ? i << 12 : i);
				ASSERT_EQ(p != NULL, present[i]);
				if (p)
					ASSERT_EQ(*p, value[i]);
				count += present[i];
			}
			ASSERT_EQ(m.count, count);
		}
	}
	lk_u64map_done(&m);
}

TEST(cap)
{
	struct lk_u64map m;

	lk_u64map_init(&m, 3);
	ASSERT_TRUE(!lk_u64map_get(&m, 1));
	ASSERT_TRUE(!lk_u64map_remove(&m, 1, NULL));
	for (uint64_t k = 0; k < 3; k++)
		ASSERT_OK(lk_u64map_put(&m, k, k));
	ASSERT_EQ(lk_u64map_put(&m, 9, 9), -E2BIG);
	ASSERT_OK(lk_u64map_put(&m, 2, 7)); /* replacing is not growing */
	ASSERT_EQ(*lk_u64map_get(&m, 2), 7);
	ASSERT_TRUE(lk_u64map_remove(&m, 0, NULL));
	ASSERT_OK(lk_u64map_put(&m, 9, 9));
	lk_u64map_done(&m);
}
