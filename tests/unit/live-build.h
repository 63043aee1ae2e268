/* live-build.h: a profile that claims many live blocks in few bytes, for the tests of the memory
 * budget (tests/report/test-memory.c) and bench/budget.sh.
 *
 * An exact-mode header, one stack, a THREAD record, then n ALLOCs of 16 bytes at that stack, never
 * freed, and no trailer (a crash). Each ALLOC is 4 bytes, the first at the offset pb_live()
 * returns; zstd makes a few kilobytes of millions of them, which a reader must hold as that many
 * live blocks.
 *
 * Test-only: include after build-profile.h; aborts on out-of-memory.
 */
#ifndef LEEK_TEST_LIVE_BUILD_H
#define LEEK_TEST_LIVE_BUILD_H

static inline size_t pb_live(struct pbuf *b, size_t n)
{
	static const uint64_t frames[] = { 0x401234, 0x402000 };
	size_t first;

	pb_header(b, &(struct pb_header){ .flags = LK_HDR_EXACT, .period = 1, .pid = 7,
					  .exe = "/usr/bin/live" });
	PB_REC(b, lk_rec_stack(rec, 1, frames, 2));
	PB_REC(b, lk_rec_thread(rec, 1));
	first = b->len;
	for (size_t i = 0; i < n; i++)
		PB_REC(b, lk_rec_alloc(rec, 0, 16, 1));
	return first;
}

#endif /* LEEK_TEST_LIVE_BUILD_H */
