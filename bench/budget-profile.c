/* budget-profile.c: writes tests/lib/build-profile.c's pb_live() profile of N live blocks,
 * zstd-compressed, for bench/budget.sh: `budget-profile N FILE`. Built by the script (with
 * tests/lib/build-profile.c and z-build.c), never by meson.
 */
#include <stdio.h>
#include <stdlib.h>

#include "build-profile.h"
#include "harness.h"
#include "z-build.h"

/* z-build.c's checks, without the test harness. */
void lk_test_fail(const char *file, int line, const char *fmt, ...)
{
	(void)file, (void)line, (void)fmt;
	abort();
}

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
