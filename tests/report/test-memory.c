/* test-memory.c: the memory `leek report` and `leek dump --summary` take for what a profile says,
 * from outside (src/cli/base/budget.h, docs/design.md "Reading a profile").
 *
 * A few kilobytes of zstd can hold millions of ALLOC records of one stack, never freed: a live set
 * that the file's size says nothing about. Under --max-memory, leek must refuse such a file with
 * exit 2 and "offset N: the profile needs more than ... of memory to read", N the offset of an
 * ALLOC, and its peak resident set (wait4's ru_maxrss: memory, not time) must stay below the
 * limit plus a fixed allowance for what the budget does not count (the binary and its libraries,
 * the reader's and zstd's windows, recent.h's window of 8 MiB). A profile as large that a machine
 * can hold reads under the default limit, and --max-memory takes only sizes it can mean.
 *
 * Nothing here runs under LD_PRELOAD, so this suite also runs under ASan and UBSan, where the
 * resident set says nothing (ASan's shadow and quarantine) and only its bound is left out.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build-profile.h"
#include "files.h"
#include "harness.h"
#include "leek.h"
#include "z-build.h"

#define MiB (1024L * 1024)
#define HOSTILE_BLOCKS (4u << 20) /* 16 MiB of ALLOC records: about 300 MiB to read them all */
#define ALLOWANCE (64 * MiB)      /* what the budget does not count, generously */

/* pb_live()'s profile of n live blocks, compressed with zstd unless raw: the offset of its first
 * ALLOC (each is 4 bytes) in *first. */
static void write_live(const char *path, size_t n, bool raw, size_t *first)
{
	struct pbuf b = { 0 }, z = { 0 };

	*first = pb_live(&b, n);
	ASSERT_EQ(b.len, *first + 4 * n);
	if (raw) {
		write_file(path, b.p, b.len);
	} else {
		pb_zstd(&z, b.p, b.len, 3);
		write_file(path, z.p, z.len);
	}
	free(b.p);
	free(z.p);
}

/* err holds "offset N: the profile needs more than <limit> of memory to read (--max-memory; "
 * with N the offset of one of the n ALLOCs from first. */
static void expect_refused(const struct proc *p, const char *what, const char *limit, size_t first,
			   size_t n)
{
	char want[128];
	const char *at;
	size_t offset;

	snprintf(want, sizeof(want), ": the profile needs more than %s of memory to read "
		 "(--max-memory; ", limit);
	at = strstr(p->err, "offset ");
	if (p->status != 2 || !at || sscanf(at, "offset %zu", &offset) != 1 || !strstr(at, want) ||
	    offset < first || offset >= first + 4 * n || (offset - first) % 4)
		FAIL("%s: expected exit 2 and \"offset N%s\" at an ALLOC; got exit %d, stderr:\n%s",
		     what, want, p->status, p->err);
	if (p->out_len)
		FAIL("%s: exit 2, but stdout has %zu bytes:\n%.2000s", what, p->out_len, p->out);
}

/* Its peak resident set stayed below the limit and the allowance. */
static void expect_bounded(const struct proc *p, const char *what, long limit)
{
#if defined(__SANITIZE_ADDRESS__)
	(void)p, (void)what, (void)limit; /* ASan's shadow and quarantine: the RSS means nothing */
#else
	printf("%s: peak RSS %ld KiB, at most %ld KiB\n", what, p->max_rss_kb,
	       (limit + ALLOWANCE) / 1024);
	fflush(stdout);
	if (p->max_rss_kb * 1024 > limit + ALLOWANCE)
		FAIL("%s: peak RSS %ld KiB, above %ld KiB (the limit and %ld KiB)", what,
		     p->max_rss_kb, (limit + ALLOWANCE) / 1024, ALLOWANCE / 1024);
#endif
}

/* `leek ARGS...` (ending with NULL) in dir. */
static void run(struct proc *p, const char *dir, const char *const *args)
{
	leek_exec(p, dir, NULL, args, 120);
}

/* A few kilobytes of zstd that claim four million live blocks: refused, in bounded memory. */
TEST(small_file_many_live_blocks)
{
	char dir[256], path[300];
	struct proc p;
	size_t first, size;

	tmp_dir(dir);
	snprintf(path, sizeof(path), "%s/hostile.lk.zst", dir);
	write_live(path, HOSTILE_BLOCKS, false, &first);
	free(read_file(path, &size));
	ASSERT_TRUE(size < 64 * 1024); /* what makes it hostile: kilobytes of file */

	const char *const report[] = { "report", "--max-memory", "32M", path, NULL };
	run(&p, dir, report);
	expect_refused(&p, "report", "32 MiB", first, HOSTILE_BLOCKS);
	expect_bounded(&p, "report", 32 * MiB);
	proc_free(&p);

	/* Every view and format reads the same way; old also lists the blocks live at the end. */
	const char *const old[] = { "report", "old", "--age", "0", "--format", "json",
				    "--max-memory", "32M", path, NULL };
	run(&p, dir, old);
	expect_refused(&p, "report old", "32 MiB", first, HOSTILE_BLOCKS);
	expect_bounded(&p, "report old", 32 * MiB);
	proc_free(&p);

	const char *const dump[] = { "dump", "--summary", "--max-memory", "32M", path,
				     NULL };
	run(&p, dir, dump);
	expect_refused(&p, "dump --summary", "32 MiB", first, HOSTILE_BLOCKS);
	expect_bounded(&p, "dump --summary", 32 * MiB);
	proc_free(&p);

	/* --merge: the file after a good one is refused, the good one still reported. */
	char good[300];
	size_t first_good;
	snprintf(good, sizeof(good), "%s/good.lk", dir);
	write_live(good, 1000, true, &first_good);
	const char *const merge[] = { "report", "--merge", "--max-memory", "32M", good,
				      path, NULL };
	run(&p, dir, merge);
	ASSERT_EQ(p.status, 2);
	ASSERT_CONTAINS(p.err, "hostile.lk.zst: offset ");
	ASSERT_CONTAINS(p.err, "of memory to read (--max-memory; ");
	ASSERT_CONTAINS(p.out, "good.lk: live, pid 7"); /* the good one is reported */
	expect_bounded(&p, "report --merge", 32 * MiB);
	proc_free(&p);
	tmp_dir_remove(dir);
}

/* A profile of a million live blocks, as an exact profile of a large heap holds, reads under the
 * default limit (half the machine's memory at the least, budget.h), and under a limit it fits:
 * the budget refuses what a profile needs, not what its records say. */
TEST(large_profile_reads_under_the_default)
{
	char dir[256], path[300];
	struct proc p;
	size_t first;

	tmp_dir(dir);
	snprintf(path, sizeof(path), "%s/large.lk.zst", dir);
	write_live(path, 1u << 20, false, &first);

	const char *const report[] = { "report", "--format", "json", path, NULL };
	run(&p, dir, report);
	if (p.status != 0)
		FAIL("report: exit %d, stderr:\n%s", p.status, p.err);
	ASSERT_CONTAINS(p.out, "\"live_objects_end\": 1048576");
	proc_free(&p);

	const char *const fits[] = { "report", "--max-memory", "256M", path, NULL };
	run(&p, dir, fits);
	ASSERT_EQ(p.status, 0);
	expect_bounded(&p, "report --max-memory 256M", 256 * MiB);
	proc_free(&p);

	const char *const dump[] = { "dump", "--summary", path, NULL };
	run(&p, dir, dump);
	ASSERT_EQ(p.status, 0);
	ASSERT_CONTAINS(p.out, "live at end: 1048576 sampled blocks");
	proc_free(&p);
	tmp_dir_remove(dir);
}

/* --max-memory takes a size, with a suffix: "512" alone would be 512 bytes, in which no profile
 * can be read, so anything below 1M is refused as a likely slip. */
TEST(max_memory_usage)
{
	static const char *const cmds[][3] = { { "report", NULL }, { "dump", "--summary" },
					       { "run", NULL }, { "diff", NULL } };
	static const char *const bad[][2] = { { "512", "is less than 1M" },
					      { "lots", "is not a size in bytes" },
					      { "1Q", "is not a size in bytes" } };
	char dir[256];
	struct proc p;

	tmp_dir(dir);
	for (size_t c = 0; c < sizeof(cmds) / sizeof(cmds[0]); c++)
		for (size_t i = 0; i < 3; i++) {
			const char *argv[8] = { cmds[c][0] };
			size_t n = 1;
			if (cmds[c][1])
				argv[n++] = cmds[c][1];
			argv[n++] = "--max-memory";
			argv[n++] = bad[i][0];
			argv[n++] = strcmp(cmds[c][0], "run") ? "/nonexistent.lk" : "true";
			run(&p, dir, argv);
			ASSERT_EQ(p.status, 1);
			ASSERT_CONTAINS(p.err, "--max-memory");
			ASSERT_CONTAINS(p.err, bad[i][1]);
			proc_free(&p);
		}
	for (size_t c = 0; c < 2; c++) {
		const char *const help[] = { "help", c ? "diff" : "report", NULL };
		run(&p, dir, help);
		ASSERT_CONTAINS(p.out, "--max-memory SIZE");
		ASSERT_CONTAINS(p.out, "--max-memory's default here");
		proc_free(&p);
	}
	tmp_dir_remove(dir);
}

/* The symbolizer takes what it keeps for each distinct address from the budget too: a profile of
 * 2000 stacks of 128 frames, every frame another address in a module that no file backs, makes
 * it keep 256 000 answers ("lib.so+0x1a2b", with its chain and cache entry: about 40 MiB), where
 * the reader's tables and the report's sites need about 6 MiB. Under 16 MiB it is refused while
 * reporting; under 256 MiB it reads. */
TEST(symbolizer_takes_from_the_budget)
{
	static uint64_t frames[LK_MAX_FRAMES];
	struct lk_module_info m = { .id = 1, .base = 0x400000, .nseg = 1,
				    .seg = { { 0, 0x10000000 } }, .path = "/nonexistent/lib.so",
				    .path_len = 19 };
	char dir[256], path[300];
	struct pbuf b = { 0 };
	struct proc p;

	tmp_dir(dir);
	snprintf(path, sizeof(path), "%s/deep.lk", dir);
	pb_simple_header(&b);
	PB_REC(&b, lk_rec_module(rec, 0, &m));
	pb_thread(&b, 1);
	for (uint64_t s = 1; s <= 2000; s++) {
		for (unsigned i = 0; i < LK_MAX_FRAMES; i++)
			frames[i] = m.base + 16 * ((s - 1) * LK_MAX_FRAMES + i) + 1;
		PB_REC(&b, lk_rec_stack(rec, s, frames, LK_MAX_FRAMES));
		PB_REC(&b, lk_rec_alloc(rec, 1, 64, s));
	}
	write_file(path, b.p, b.len);
	free(b.p);

	const char *const small[] = { "report", "--max-memory", "16M", path, NULL };
	run(&p, dir, small);
	if (p.status != 2 || !strstr(p.err, "of memory to report (--max-memory; "))
		FAIL("expected exit 2 while reporting; got %d:\n%s", p.status, p.err);
	expect_bounded(&p, "report of 2000 deep stacks", 16 * MiB);
	proc_free(&p);

	const char *const enough[] = { "report", "--max-memory", "256M", path, NULL };
	run(&p, dir, enough);
	ASSERT_EQ(p.status, 0);
	ASSERT_CONTAINS(p.out, "lib.so+0x");
	proc_free(&p);
	tmp_dir_remove(dir);
}
