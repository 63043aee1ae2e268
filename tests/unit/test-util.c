/* test-util.c: what the CLI's layers share from src/cli/base/util.c: number parsing (every option
 * that takes a size or a count) and the escaping that keeps whatever a profile holds from
 * reaching the terminal as control bytes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "util.h"

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

TEST(escaped)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ASSERT_TRUE(f != NULL);
	lk_print_escaped(f, "a\x1b]0;x\a\n\\b", 10);
	ASSERT_EQ(fclose(f), 0);
	ASSERT_STREQ(buf, "a\\x1b]0;x\\x07\\x0a\\x5cb");
	free(buf);
}
