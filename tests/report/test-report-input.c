/* test-report-input.c: `leek report` on damaged and foreign input.
 *
 * The profile under test is tests/lib/build-profile.h's sample, built with the writer's own
 * encoders and holding one record of every type (and the odd values the format allows: a size of
 * 2^64 - 1, stack 0, extension records). Every way of damaging it must make `leek report` exit 2
 * and name the byte offset of the damaged record's tag, in both output formats, and print nothing
 * on stdout that could pass for a report. Nothing here runs under LD_PRELOAD, so this suite also
 * runs under ASan and UBSan, where a damaged file is most likely to show a memory error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build-profile.h"
#include "files.h"
#include "harness.h"
#include "leek.h"

static struct proc res;

static void report(const char *dir, const char *format, const char *path)
{
	proc_free(&res);
	leek_exec(&res, dir, NULL, (const char *const[]){ "report", "--format", format, path, NULL },
		  30);
}

static void expect_offset_error(const char *what, const char *path, size_t offset)
{
	if (res.status != 2 || !leek_says_offset(res.err, offset))
		FAIL("%s (%s): expected exit 2 and \"offset %zu\" on stderr; got exit %d, "
		     "stderr:\n%s", what, path, offset, res.status, res.err);
	/* A report of the damaged file's first part would pass for the whole; nothing may be
	 * printed instead of the error. */
	if (res.out_len)
		FAIL("%s: exit 2, but stdout has %zu bytes:\n%.2000s", what, res.out_len, res.out);
}

TEST(intact_sample_reads)
{
	char dir[256], path[300];
	struct pb_sample s;

	tmp_dir(dir);
	pb_build_sample(&s);
	snprintf(path, sizeof(path), "%s/sample.lk", dir);
	write_file(path, s.b.p, s.b.len);
	report(dir, "json", path);
	if (res.status != 0)
		FAIL("intact sample: exit %d, stderr:\n%s", res.status, res.err);
	report(dir, "text", path);
	ASSERT_EQ(res.status, 0);
	free(s.b.p);
	tmp_dir_remove(dir);
}

/* Cut inside each record in turn: the reader meets a record cut by the end of the file. (A cut
 * at a record boundary is a crashed profile, not damage: see test-report.c.) */
TEST(truncated_mid_record)
{
	char dir[256], path[300], what[64];
	struct pb_sample s;

	tmp_dir(dir);
	pb_build_sample(&s);
	snprintf(path, sizeof(path), "%s/cut.lk", dir);
	for (size_t i = 0; i < s.nrec; i++) {
		size_t len = s.off[i + 1] - s.off[i], cut = s.off[i] + (len > 2 ? len / 2 : 1);
		write_file(path, s.b.p, cut);
		snprintf(what, sizeof(what), "record %zu cut after %zu of %zu bytes", i,
			 cut - s.off[i], len);
		report(dir, i % 2 ? "text" : "json", path);
		expect_offset_error(what, path, s.off[i]);
	}
	free(s.b.p);
	tmp_dir_remove(dir);
}

/* Bit 6 of a tag byte turns every record tag (1 to 10) into a reserved one (0x41 to 0x4a), which
 * a reader must treat as corruption (docs/format.md). Extension tags stay extensions, so they are
 * left alone. */
TEST(flipped_tag)
{
	char dir[256], path[300], what[64];
	struct pb_sample s;
	unsigned tested = 0;

	tmp_dir(dir);
	pb_build_sample(&s);
	snprintf(path, sizeof(path), "%s/flip.lk", dir);
	for (size_t i = 0; i < s.nrec; i++) {
		uint8_t tag = s.b.p[s.off[i]];
		if (tag >= 0x80)
			continue;
		s.b.p[s.off[i]] ^= 0x40;
		write_file(path, s.b.p, s.b.len);
		s.b.p[s.off[i]] = tag;
		snprintf(what, sizeof(what), "record %zu: tag %#x flipped to %#x", i, tag, tag ^ 0x40);
		report(dir, i % 2 ? "text" : "json", path);
		expect_offset_error(what, path, s.off[i]);
		tested++;
	}
	ASSERT_TRUE(tested >= 12);
	free(s.b.p);
	tmp_dir_remove(dir);
}

TEST(foreign_files)
{
	static const char text[] = "name,bytes\nmain,4096\n";
	char dir[256], path[300];
	struct pb_sample s;

	tmp_dir(dir);
	snprintf(path, sizeof(path), "%s/data.csv", dir);
	write_file(path, text, sizeof(text) - 1);
	report(dir, "json", path);
	ASSERT_EQ(res.status, 2);
	ASSERT_CONTAINS(res.err, "not a leek profile");
	ASSERT_EQ(res.out_len, 0);

	/* An ELF file: the leek binary itself. */
	report(dir, "text", leek_bin);
	ASSERT_EQ(res.status, 2);
	ASSERT_CONTAINS(res.err, "not a leek profile");

	/* Empty, and a profile cut inside its header. */
	write_file(path, "", 0);
	report(dir, "json", path);
	ASSERT_EQ(res.status, 2);
	pb_build_sample(&s);
	write_file(path, s.b.p, 50);
	report(dir, "json", path);
	ASSERT_EQ(res.status, 2);
	ASSERT_EQ(res.out_len, 0);
	free(s.b.p);

	report(dir, "json", "/nonexistent/leek.lk");
	ASSERT_EQ(res.status, 2);
	ASSERT_CONTAINS(res.err, "/nonexistent/leek.lk");
	tmp_dir_remove(dir);
}

/* `leek report frees` of built profiles: version 7's FREE_STACK names the stack that freed each
 * block (made-up frames, so every site is a module offset or an address); a version 6 or 5
 * profile, which has none, still reads, its frees without free stacks; a FREE_STACK whose stack is
 * not defined yet is an error at its offset. */
TEST(report_frees_of_every_version)
{
	char dir[256], path[300];

	tmp_dir(dir);
	snprintf(path, sizeof(path), "%s/frees.lk", dir);
	for (uint16_t v = 5; v <= LK_FORMAT_VERSION; v++) {
		struct pbuf b = { 0 };
		pb_header(&b, &(struct pb_header){ .version = v, .pid = 7, .period = 1,
						   .flags = LK_HDR_EXACT, .exe = "/x" });
		pb_made_up_stack(&b, 1, 3);
		pb_made_up_stack(&b, 2, 3);
		for (uint64_t i = 0; i < 10; i++)
			pb_alloc(&b, 1, 5, 0x1000 + i * 16, 32, 1);
		for (uint64_t i = 0; i < 10; i++) {
			if (v >= 7 && i % 2)
				pb_free_stack(&b, 1, 5, 0x1000 + i * 16, 2);
			else
				pb_free(&b, 1, 5, 0x1000 + i * 16);
		}
		PB_REC(&b, lk_rec_counters(rec, LK_REC_TRAILER, 1, 0,
					   (const uint64_t[LK_CNT_MAX + 1]){ 0 }));
		write_file(path, b.p, b.len);
		proc_free(&res);
		leek_exec(&res, dir, NULL,
			  (const char *const[]){ "report", "frees", "--format", "json", path, NULL }, 30);
		if (res.status != 0)
			FAIL("version %u: exit %d, stderr:\n%s", v, res.status, res.err);
		ASSERT_CONTAINS(res.out, "\"frees\": 10,");
		ASSERT_CONTAINS(res.out, v >= 7 ? "\"frees_with_stack\": 5," :
						  "\"frees_with_stack\": 0,");
		ASSERT_CONTAINS(res.out, v >= 7 ? "\"pairs_total\": 2," : "\"pairs_total\": 1,");
		if (v >= 7) {
			/* The same with the free stack not defined: an error at the FREE_STACK. */
			struct pbuf c = { 0 };
			pb_simple_header(&c);
			pb_made_up_stack(&c, 1, 3);
			pb_alloc(&c, 1, 5, 0x1000, 32, 1);
			size_t at = pb_free_stack(&c, 1, 5, 0x1000, 2);
			write_file(path, c.p, c.len);
			proc_free(&res);
			leek_exec(&res, dir, NULL,
				  (const char *const[]){ "report", "frees", path, NULL }, 30);
			expect_offset_error("FREE_STACK of an undefined stack", path, at);
			free(c.p);
		}
		free(b.p);
	}
	tmp_dir_remove(dir);
}
