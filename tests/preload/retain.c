/* retain.c: 8 MiB of blocks freed and allocated again, and how many pages that faults back in.
 *
 * In exact mode every block is in leek's arena, and the arena keeps LEEK_ARENA_RETAIN bytes of
 * freed pages mapped (64 MiB unless set, in exact mode: src/common/options.h). The program
 * allocates 4096 blocks of 2000 bytes (two to a page in the arena's 2048-byte class: 2048 pages),
 * frees them all, and counts the minor page faults (getrusage) while it allocates and touches as
 * many again. It prints "pages P refaulted N": P is the pages the blocks take at two a page.
 */
#include "prog.h"

#define BLOCKS 4096
#define SIZE 2000

int main(void)
{
	static char *blocks[BLOCKS];

	for (int i = 0; i < BLOCKS; i++) {
		blocks[i] = malloc(SIZE);
		CHECK(blocks[i], "malloc(%d)", SIZE);
		memset(blocks[i], i, SIZE);
	}
	for (int i = 0; i < BLOCKS; i++)
		free(blocks[i]);
	long before = prog_minor_faults();
	for (int i = 0; i < BLOCKS; i++) {
		blocks[i] = malloc(SIZE);
		CHECK(blocks[i], "malloc(%d)", SIZE);
		memset(blocks[i], i, SIZE);
	}
	long refaulted = prog_minor_faults() - before;
	for (int i = 0; i < BLOCKS; i++)
		free(blocks[i]);
	printf("pages %d refaulted %ld\n", BLOCKS / 2, refaulted);
	return 0;
}
