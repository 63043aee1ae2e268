/* budget-profile.c: writes tests/unit/live-build.h's profile of N live blocks, zstd-compressed, for
 * bench/budget.sh: `budget-profile N FILE`. Built by the script, never by meson.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* zst-build.h's checks, without the test harness. */
#define ASSERT_TRUE(x)                                                                             \
	do {                                                                                       \
		if (!(x))                                                                          \
			abort();                                                                   \
	} while (0)
static void lk_test_fail(const char *file, int line, const char *fmt, ...)
{
	(void)file, (void)line, (void)fmt;
	abort();
}

#include "build-profile.h"
#include "live-build.h"
#include "zst-build.h"

int main(int argc, char **argv)
{
	struct pbuf b = { 0 }, z = { 0 };
	FILE *f;

	if (argc != 3)
		return 2;
	pb_live(&b, strtoull(argv[1], NULL, 10));
	pb_zstd(&z, b.p, b.len, 19);
	f = fopen(argv[2], "w");
	if (!f || fwrite(z.p, 1, z.len, f) != z.len || fclose(f) != 0)
		return 1;
	printf("%s: %zu bytes of zstd, %zu raw\n", argv[2], z.len, b.len);
	return 0;
}
