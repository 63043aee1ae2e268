/* test-outputs.c: -o FILE of `leek report`, `leek export` and `leek diff`, which all write it
 * through src/cli/base/outfile.c: FILE is the command's whole output or what it was before.
 *
 *   - a damaged profile: exit 2, and an existing FILE as it was, with no temporary file beside it;
 *   - a command killed part-way through writing its output (RLIMIT_FSIZE, whose SIGXFSZ kills):
 *     FILE as it was (its temporary file stays, as a killed process leaves it);
 *   - an intact profile: FILE replaced by exactly what the command prints to stdout without -o,
 *     mode 0666 less the umask (report, diff) or 0600 (export: it holds what the profile holds),
 *     and nothing else left in the directory.
 * The profiles are tests/lib/build-profile.h's sample, built record by record: no program runs
 * under libleek, so this also runs under ASan and UBSan.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "build-profile.h"
#include "files.h"
#include "harness.h"
#include "leek.h"

#define OLD "an older output\n"

struct command {
	const char *args[4]; /* before -o FILE and the profiles */
	unsigned nprofiles;  /* each of them given the same profile */
	unsigned mode;       /* of a new FILE, before the umask */
};

static const struct command report = { { "report" }, 1, 0666 };
static const struct command export = { { "export", "--format", "folded" }, 1, 0600 };
static const struct command diff = { { "diff" }, 2, 0666 };

/* A directory with the sample profile (dir/sample.lk), the sample cut inside its fourth record
 * (dir/cut.lk), and dir/out holding OLD. */
struct setup {
	char dir[256], good[300], cut[300], out[300];
};

static void set_up(struct setup *s)
{
	struct pb_sample sample;

	tmp_dir(s->dir);
	pb_build_sample(&sample);
	snprintf(s->good, sizeof(s->good), "%s/sample.lk", s->dir);
	snprintf(s->cut, sizeof(s->cut), "%s/cut.lk", s->dir);
	snprintf(s->out, sizeof(s->out), "%s/out", s->dir);
	write_file(s->good, sample.b.p, sample.b.len);
	write_file(s->cut, sample.b.p, sample.off[3] + 2);
	write_file(s->out, OLD, strlen(OLD));
	free(sample.b.p);
}

/* `leek COMMAND... [-o out] PROFILE...`, with a file size limit if fsize is not 0. */
static void run(struct proc *p, const struct setup *s, const struct command *c, bool to_out,
		const char *profile, uint64_t fsize)
{
	const char *args[16];
	size_t n = 0;

	for (size_t i = 0; i < 4 && c->args[i]; i++)
		args[n++] = c->args[i];
	if (to_out) {
		args[n++] = "-o";
		args[n++] = s->out;
	}
	for (unsigned i = 0; i < c->nprofiles; i++)
		args[n++] = profile;
	args[n] = NULL;
	leek_start_with(p, s->dir, args, &(struct proc_opts){ .timeout = 60, .limit_fsize = fsize });
	proc_wait(p);
}

static void expect_old(const struct setup *s, const char *what)
{
	char *got = read_file(s->out, NULL);

	if (strcmp(got, OLD) != 0)
		FAIL("%s: out changed: \"%.200s\"", what, got);
	free(got);
}

/* A profile that cannot be read: exit 2, out untouched, no temporary file, nothing on stdout. */
static void damaged_input(const struct command *c)
{
	struct setup s;
	struct proc p;

	set_up(&s);
	run(&p, &s, c, true, s.cut, 0);
	ASSERT_EQ(p.status, 2);
	ASSERT_CONTAINS(p.err, "cut.lk");
	ASSERT_EQ(p.out_len, 0);
	expect_old(&s, c->args[0]);
	ASSERT_EQ(count_files(s.dir, "out", ""), 1);
	proc_free(&p);
	tmp_dir_remove(s.dir);
}

/* Killed by SIGXFSZ at the first byte of the output past a limit between the sizes of stderr
 * (its warnings, which the limit covers too) and of the output: out untouched. (Written to out
 * itself, the output would have emptied it at the open, then held its first bytes.) */
static void killed_while_writing(const struct command *c)
{
	struct setup s;
	struct proc p;
	uint64_t limit;
	char *full;

	set_up(&s);
	run(&p, &s, c, false, s.good, 0);
	ASSERT_EQ(p.status, 0);
	ASSERT_TRUE(p.err_len + 16 < p.out_len); /* else no limit cuts the output alone */
	limit = (p.err_len + p.out_len) / 2;
	proc_free(&p);
	run(&p, &s, c, true, s.good, limit);
	if (p.status != 128 + SIGXFSZ)
		FAIL("%s: exit %d with a limit of %" PRIu64 " bytes, stderr:\n%s", c->args[0],
		     p.status, limit, p.err);
	expect_old(&s, c->args[0]);
	full = find_one(s.dir, "out.", ""); /* the temporary file: a killed process leaves it */
	ASSERT_EQ(unlink(full), 0);
	free(full);
	proc_free(&p);
	tmp_dir_remove(s.dir);
}

/* An intact profile: out replaced by stdout's output, with the command's mode. */
static void replaced_whole(const struct command *c)
{
	struct setup s;
	struct proc p;
	struct stat st;
	char *stdout_output, *got;
	mode_t mask = umask(022);

	set_up(&s);
	run(&p, &s, c, false, s.good, 0);
	ASSERT_EQ(p.status, 0);
	stdout_output = strdup(p.out);
	proc_free(&p);
	run(&p, &s, c, true, s.good, 0);
	ASSERT_EQ(p.status, 0);
	got = read_file(s.out, NULL);
	ASSERT_STREQ(got, stdout_output);
	ASSERT_EQ(stat(s.out, &st), 0);
	ASSERT_EQ(st.st_mode & 07777, c->mode & ~022u);
	ASSERT_EQ(count_files(s.dir, "out", ""), 1);
	free(got);
	free(stdout_output);
	proc_free(&p);
	umask(mask);
	tmp_dir_remove(s.dir);
}

TEST(report_damaged_input_keeps_output)
{
	damaged_input(&report);
}

TEST(export_damaged_input_keeps_output)
{
	damaged_input(&export);
}

TEST(diff_damaged_input_keeps_output)
{
	damaged_input(&diff);
}

TEST(report_killed_keeps_output)
{
	killed_while_writing(&report);
}

TEST(export_killed_keeps_output)
{
	killed_while_writing(&export);
}

TEST(diff_killed_keeps_output)
{
	killed_while_writing(&diff);
}

TEST(report_output_replaced_whole)
{
	replaced_whole(&report);
}

TEST(export_output_replaced_whole)
{
	replaced_whole(&export);
}

TEST(diff_output_replaced_whole)
{
	replaced_whole(&diff);
}
