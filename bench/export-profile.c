/* export-profile.c: writes an exact-mode profile of many distinct stacks, for bench/export.sh:
 * `export-profile STACKS DEPTH FILE`. Built by the script (with tests/lib/build-profile.c), never
 * by meson.
 *
 * The stacks form a call tree, as a program's do: at depth j from the root (j = 0 is the
 * outermost frame) stack i's frame is node i mod 4^j of that depth, so the roots are shared and
 * the leaves are not; every stack is distinct once 4^(DEPTH - 1) >= STACKS. The frames are in no
 * module (they symbolize as their addresses), so the export's own tables, protobuf-c and gzip are
 * what is measured, not libdw. Each stack gets one allocation of 100 to 1099 bytes, every other
 * one freed.
 */
#include <stdio.h>
#include <stdlib.h>

#include "build-profile.h"

int main(int argc, char **argv)
{
	struct pbuf b = { 0 };
	uint64_t frames[LK_MAX_FRAMES];
	FILE *f;

	if (argc != 4)
		return 2;
	size_t stacks = strtoull(argv[1], NULL, 10);
	uint32_t depth = (uint32_t)strtoul(argv[2], NULL, 10);
	if (!stacks || !depth || depth > LK_MAX_FRAMES)
		return 2;
	pb_header(&b, &(struct pb_header){ .flags = LK_HDR_EXACT, .period = 1, .pid = 7,
					   .exe = "/usr/bin/stacks" });
	for (size_t i = 0; i < stacks; i++) {
		for (uint32_t k = 0; k < depth; k++) { /* frames[0] is the leaf */
			uint32_t j = depth - 1 - k;
			uint64_t mask = j >= 16 ? UINT64_MAX : (1ull << (2 * j)) - 1;
			frames[k] = 0x10000000 + ((uint64_t)j << 36) + 16 * (i & mask);
		}
		PB_REC(&b, lk_rec_stack(rec, i + 1, frames, depth));
		pb_alloc(&b, 0, 1, 0x1000 + 16 * i, 100 + i % 1000, i + 1);
		if (i % 2)
			pb_free(&b, 0, 1, 0x1000 + 16 * i);
	}
	f = fopen(argv[3], "w");
	if (!f || fwrite(b.p, 1, b.len, f) != b.len || fclose(f) != 0)
		return 1;
	printf("%s: %zu stacks of %u frames, %zu bytes\n", argv[3], stacks, depth, b.len);
	return 0;
}
