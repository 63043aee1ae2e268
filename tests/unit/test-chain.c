/* test-chain.c: a rotated profile's segments read as one timeline (src/cli/read/read-chain.c),
 * from segments built here with the writer's encoders, so that a sanitizer build reads them too
 * (tests/preload/test-rotate.c reads the chains libleek writes).
 *
 * The chain: segment 0 allocates a (100 bytes, stack A), b (200, B) and c (300, A), frees b,
 * and marks m1; segment 1 numbers its stacks the other way round (1 is B, 2 is A), inherits a
 * and c, allocates d (400, B), frees a, marks m2 and ends with a TRAILER. Read as one: 2 stacks,
 * 4 allocations, 2 frees, c and d live, both marks, 2 INHERITs matched.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build-profile.h"
#include "harness.h"
#include "leek/format.h"
#include "profile.h"
#include "read.h"

#define PID 4242
#define SESSION 77
#define ORIGIN 1700000000000000000ull
#define MONO0 5000000000ull
#define MONO1 (MONO0 + 2000000000ull) /* segment 1 begins 2 s later */

static const uint64_t frames_a[] = { 0x401000, 0x402000 }, frames_b[] = { 0x403000 };

/* A header of segment seg (0: no rotation block); pid and session may be another process's. */
static void header(struct pbuf *b, uint32_t seg, uint32_t pid, uint64_t mono)
{
	size_t at;

	pb_header(b, &(struct pb_header){ .flags = LK_HDR_EXACT | LK_HDR_CTL |
						   (seg ? LK_HDR_ROTATED : 0),
					  .pid = pid, .period = 1, .session = SESSION,
					  .start_realtime_ns = seg ? ORIGIN + 2000000000ull : ORIGIN,
					  .start_monotonic_ns = mono, .exe = "/bin/svc" });
	at = b->len;
	if (seg) {
		struct lk_rot_block rot = { .magic = LK_ROT_MAGIC, .segment = htole32(seg),
					    .origin_realtime_ns = htole64(ORIGIN) };
		pb_put(b, &rot, sizeof(rot));
	}
	struct lk_ctl_block ctl = { .magic = LK_CTL_MAGIC };
	pb_put(b, &ctl, sizeof(ctl));
	uint32_t hs;
	memcpy(&hs, b->p + 12, 4);
	hs = htole32(le32toh(hs) + (uint32_t)(b->len - at));
	memcpy(b->p + 12, &hs, 4);
}

static void segment0(struct pbuf *b)
{
	header(b, 0, PID, MONO0);
	PB_REC(b, lk_rec_stack(rec, 1, frames_a, 2));
	PB_REC(b, lk_rec_stack(rec, 2, frames_b, 1));
	pb_alloc(b, 1000, 1, 0xa, 100, 1);
	pb_alloc(b, 1000, 1, 0xb, 200, 2);
	pb_alloc(b, 1000, 1, 0xc, 300, 1);
	pb_free(b, 1000, 1, 0xb);
	PB_REC(b, lk_rec_ctl(rec, 1000, LK_CTL_MARK, "m1", 2));
}

/* inherit: which of a and c segment 1 inherits (a damaged chain leaves one out). */
static void segment1(struct pbuf *b, uint32_t seg, uint32_t pid, bool inherit_a, bool inherit_c)
{
	uint64_t counters[LK_CNT_MAX + 1] = { 0 };

	header(b, seg, pid, MONO1);
	PB_REC(b, lk_rec_stack(rec, 1, frames_b, 1));
	PB_REC(b, lk_rec_stack(rec, 2, frames_a, 2));
	if (inherit_a)
		pb_inherit(b, 0xa, 100, 2, MONO0 + 1000);
	if (inherit_c)
		pb_inherit(b, 0xc, 300, 2, MONO0 + 3000);
	pb_alloc(b, 1000, 1, 0xd, 400, 1);
	if (inherit_a)
		pb_free(b, 1000, 1, 0xa);
	PB_REC(b, lk_rec_ctl(rec, 1000, LK_CTL_MARK, "m2", 2));
	PB_REC(b, lk_rec_counters(rec, LK_REC_TRAILER, 1000, ORIGIN + 3000000000ull, counters));
}

static void write_file(const char *path, const struct pbuf *b)
{
	FILE *f = fopen(path, "wb");

	ASSERT_TRUE(f != NULL);
	ASSERT_EQ(fwrite(b->p, 1, b->len, f), b->len);
	ASSERT_EQ(fclose(f), 0);
}

/* A directory with segment 0 as svc.lk (unless !with0) and segment 1 as svc.lk.seg<seg1>. */
static void make_chain(char *dir, bool with0, uint32_t seg1, uint32_t pid1, bool inherit_a,
		       bool inherit_c)
{
	char path[300];
	struct pbuf b0 = { 0 }, b1 = { 0 };

	strcpy(dir, "/tmp/leek-test-chain-XXXXXX");
	ASSERT_TRUE(mkdtemp(dir) != NULL);
	segment0(&b0);
	segment1(&b1, seg1, pid1, inherit_a, inherit_c);
	if (with0) {
		snprintf(path, sizeof(path), "%s/svc.lk", dir);
		write_file(path, &b0);
	}
	snprintf(path, sizeof(path), "%s/svc.lk.seg%u", dir, seg1);
	write_file(path, &b1);
}

static void remove_dir(const char *dir)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ASSERT_EQ(system(cmd), 0);
}

TEST(chain_records_joined)
{
	char dir[64], path[300], *err = NULL;
	struct lk_chain_files f;
	struct lk_record rec;
	uint64_t stacks = 0, allocs = 0, frees = 0, inherits = 0, last_t = 0, freed[2];
	int k;

	make_chain(dir, true, 1, PID, true, true);
	snprintf(path, sizeof(path), "%s/svc.lk.seg1", dir);
	ASSERT_EQ(lk_chain_find(path, &f, &err), 0);
	ASSERT_EQ(f.n, 2);
	ASSERT_EQ(f.segments[0], 0);
	ASSERT_EQ(f.segments[1], 1);
	ASSERT_EQ(f.named, 1);
	struct lk_reader *rd = lk_reader_new();
	ASSERT_EQ(lk_reader_open_chain(rd, (const char *const *)f.paths, f.n, 0), 0);
	ASSERT_EQ(lk_reader_header(rd)->h.start_monotonic_ns, MONO0);
	while ((k = lk_reader_next(rd, &rec)) > 0) {
		ASSERT_TRUE(rec.time_ns >= last_t);
		last_t = rec.time_ns;
		if (rec.tag == LK_REC_STACK)
			stacks++;
		else if (rec.tag == LK_REC_INHERIT)
			inherits++;
		else if (rec.tag == LK_REC_ALLOC) {
			allocs++;
			if (allocs == 4) { /* d: after 2 s, on stack B, segment 1's block 3
					    * after segment 0's 3 */
				ASSERT_EQ(rec.alloc.block, 6);
				ASSERT_EQ(rec.alloc.stack, 2);
				ASSERT_EQ(rec.time_ns, 2000001000ull);
			}
		} else if (rec.tag == LK_REC_FREE) {
			ASSERT_TRUE(frees < 2);
			freed[frees++] = rec.free.block;
		}
	}
	ASSERT_EQ(k, 0);
	ASSERT_EQ(stacks, 2);   /* segment 1's are segment 0's */
	ASSERT_EQ(inherits, 0); /* both matched */
	ASSERT_EQ(allocs, 4);
	ASSERT_EQ(frees, 2);
	ASSERT_EQ(freed[0], 2); /* b */
	ASSERT_EQ(freed[1], 1); /* a, freed in segment 1 as its block 1 */
	ASSERT_TRUE(lk_reader_has_trailer(rd));
	struct lk_chain_stats st;
	lk_reader_chain_stats(rd, &st);
	ASSERT_EQ(st.matched, 2);
	ASSERT_EQ(st.unmatched, 0);
	ASSERT_EQ(st.dropped, 0);
	lk_reader_free(rd);
	lk_chain_files_done(&f);

	/* The profile of the chain, from segment 0's name. */
	struct lk_profile *p = NULL;
	snprintf(path, sizeof(path), "%s/svc.lk", dir);
	ASSERT_EQ(lk_profile_load(path, &(struct lk_profile_opts){ .at_ns = UINT64_MAX }, &p, &err),
		  0);
	const struct lk_profile_totals *t = lk_profile_totals(p);
	ASSERT_EQ(t->samples, 4);
	ASSERT_EQ(t->frees, 2);
	ASSERT_EQ(t->live_objects_end.value, 2);
	ASSERT_EQ(t->live_bytes_end.value, 700);
	ASSERT_EQ(t->alloc_bytes.value, 1000);
	ASSERT_EQ(t->nmarks, 2);
	ASSERT_EQ(t->chain.segments, 2);
	ASSERT_TRUE(t->trailer);
	lk_profile_free(p);
	/* --from m1 --to m2: d alone was allocated between the marks */
	ASSERT_EQ(lk_profile_load(path,
				  &(struct lk_profile_opts){ .at_ns = UINT64_MAX, .window = true,
							     .from_mark = "m1", .at_mark = "m2" },
				  &p, &err),
		  0);
	const struct lk_stack_stats *ss;
	size_t n = lk_profile_stacks(p, &ss);
	double window_alloc = 0;
	for (size_t i = 0; i < n; i++)
		if (ss[i].window)
			window_alloc += ss[i].window->alloc_bytes.value;
	ASSERT_EQ(window_alloc, 400);
	lk_profile_free(p);
	/* Alone: segment 1 as a profile of its own. */
	snprintf(path, sizeof(path), "%s/svc.lk.seg1", dir);
	ASSERT_EQ(lk_profile_load(path,
				  &(struct lk_profile_opts){ .at_ns = UINT64_MAX,
							     .segment_only = true },
				  &p, &err),
		  0);
	ASSERT_EQ(lk_profile_totals(p)->samples, 1);
	ASSERT_EQ(lk_profile_totals(p)->chain.segments, 0);
	lk_profile_free(p);
	remove_dir(dir);
}

/* Segment 0 deleted: the chain is segment 1 alone, its INHERITs blocks from before. */
TEST(chain_without_segment0)
{
	char dir[64], path[300], *err = NULL;
	struct lk_profile *p = NULL;

	make_chain(dir, false, 1, PID, true, true);
	snprintf(path, sizeof(path), "%s/svc.lk.seg1", dir);
	ASSERT_EQ(lk_profile_load(path, &(struct lk_profile_opts){ .at_ns = UINT64_MAX }, &p, &err),
		  0);
	const struct lk_profile_totals *t = lk_profile_totals(p);
	ASSERT_EQ(t->chain.segments, 1);
	ASSERT_EQ(t->chain.first, 1);
	ASSERT_EQ(t->inherited, 2);
	ASSERT_EQ(t->samples, 1);
	ASSERT_EQ(t->live_objects_end.value, 2);
	lk_profile_free(p);
	remove_dir(dir);
}

/* Segment 1 missing between 0 and 2: an error that names it. */
TEST(chain_gap_is_an_error)
{
	char dir[64], path[300], *err = NULL;
	struct lk_profile *p = NULL;

	make_chain(dir, true, 2, PID, true, true);
	snprintf(path, sizeof(path), "%s/svc.lk", dir);
	ASSERT_EQ(lk_profile_load(path, &(struct lk_profile_opts){ .at_ns = UINT64_MAX }, &p, &err),
		  -EINVAL);
	ASSERT_TRUE(err != NULL);
	ASSERT_CONTAINS(err, "segment 1 of pid 4242's rotated profile is missing");
	free(err);
	remove_dir(dir);
}

/* A file named as segment 1 that another process wrote (same origin): an error. */
TEST(chain_foreign_segment_is_an_error)
{
	char dir[64], path[300], *err = NULL;
	struct lk_chain_files f;

	make_chain(dir, true, 1, PID + 1, true, true);
	snprintf(path, sizeof(path), "%s/svc.lk", dir);
	ASSERT_EQ(lk_chain_find(path, &f, &err), -EINVAL);
	ASSERT_CONTAINS(err, "but another process wrote it");
	free(err);
	remove_dir(dir);
}

/* A damaged chain: segment 1 does not inherit a. It still reads; a is freed at the boundary and
 * counted, so the live set is the newest segment's. */
TEST(chain_not_inherited_is_dropped_and_counted)
{
	char dir[64], path[300], *err = NULL;
	struct lk_profile *p = NULL;

	make_chain(dir, true, 1, PID, false, true);
	snprintf(path, sizeof(path), "%s/svc.lk", dir);
	ASSERT_EQ(lk_profile_load(path, &(struct lk_profile_opts){ .at_ns = UINT64_MAX }, &p, &err),
		  0);
	const struct lk_profile_totals *t = lk_profile_totals(p);
	ASSERT_EQ(t->chain.dropped, 1);
	ASSERT_EQ(t->chain.matched, 1);
	ASSERT_EQ(t->live_objects_end.value, 2); /* c and d */
	lk_profile_free(p);
	remove_dir(dir);
}
