/* push-sample.c: writes build-profile.c's round-trip sample profile to FILE for test-push.py's
 * unit cases (`push-sample FILE`), with a header pid no process can have (above any pid_max), so
 * that `leek push` takes the file as ended and pushes one interval of it whole. Under ASan too:
 * no program runs under libleek.
 */
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build-profile.h"

int main(int argc, char **argv)
{
	struct pb_sample s;
	uint32_t pid = htole32(0x3fffffff); /* pid_max is at most 2^22 (proc(5)) */
	FILE *f;

	if (argc != 2)
		return 2;
	pb_build_sample(&s);
	memcpy(s.b.p + 20, &pid, sizeof(pid)); /* struct lk_file_header.pid */
	f = fopen(argv[1], "wb");
	if (!f || fwrite(s.b.p, 1, s.b.len, f) != s.b.len || fclose(f) != 0)
		return 1;
	free(s.b.p);
	return 0;
}
