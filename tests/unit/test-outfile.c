/* test-outfile.c: src/cli/base/outfile.c, the output files of `leek report`, `leek export` and
 * `leek diff` (-o FILE): FILE is the whole new output or what it was before, never a part of one,
 * and no temporary file stays behind on a failure. tests/report/test-outputs.c checks the same
 * through the three commands.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "files.h"
#include "harness.h"
#include "outfile.h"

/* A new directory (dir, 256 bytes) with dir/out holding "old\n"; its path in out (300 bytes). */
static void old_output(char *dir, char *out)
{
	tmp_dir(dir);
	snprintf(out, 300, "%s/out", dir);
	write_file(out, "old\n", 4);
}

static void expect_content(const char *path, const char *want)
{
	char *got = read_file(path, NULL);

	if (strcmp(got, want) != 0)
		FAIL("%s holds \"%.80s\", not \"%s\"", path, got, want);
	free(got);
}

static void expect_old(const char *dir, const char *out)
{
	expect_content(out, "old\n");
	ASSERT_EQ(count_files(dir, "", ""), 1); /* out alone: no temporary file left */
}

/* Nothing reaches FILE before the commit; then all of it does. */
TEST(replaced_whole_at_commit)
{
	char dir[256], out[300];
	struct lk_outfile o;

	old_output(dir, out);
	ASSERT_OK(lk_outfile_open(&o, out, 0666));
	ASSERT_TRUE(o.f != NULL && o.f != stdout);
	fputs("new ", o.f);
	fflush(o.f);
	expect_content(out, "old\n");
	ASSERT_EQ(count_files(dir, "out.", ""), 1); /* the temporary file, beside it */
	fputs("output\n", o.f);
	ASSERT_OK(lk_outfile_commit(&o));
	ASSERT_TRUE(o.f == NULL);
	expect_content(out, "new output\n");
	ASSERT_EQ(count_files(dir, "", ""), 1);
	lk_outfile_discard(&o); /* after a commit: nothing to do */
	expect_content(out, "new output\n");
	tmp_dir_remove(dir);
}

/* A new FILE's mode: 0666 less the umask, as open(2) would make it (report, diff); 0600 whatever
 * the umask allows (export: it holds what the profile holds). */
TEST(modes)
{
	static const struct {
		mode_t umask, mode, want;
	} cases[] = { { 027, 0666, 0640 }, { 0, 0666, 0666 }, { 0, 0600, 0600 }, { 077, 0600, 0600 } };
	char dir[256], out[300];
	struct lk_outfile o;
	struct stat st;

	tmp_dir(dir);
	snprintf(out, sizeof(out), "%s/new", dir);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		mode_t mask = umask(cases[i].umask);
		ASSERT_OK(lk_outfile_open(&o, out, cases[i].mode));
		umask(mask);
		ASSERT_OK(lk_outfile_commit(&o));
		ASSERT_EQ(stat(out, &st), 0);
		ASSERT_EQ(st.st_mode & 07777, cases[i].want);
		ASSERT_EQ(unlink(out), 0);
	}
	tmp_dir_remove(dir);
}

/* A command that fails after it started writing: the old FILE stays, the temporary file goes; a
 * FILE that did not exist is not made. */
TEST(discard_keeps_the_old_file)
{
	char dir[256], out[300], none[300];
	struct lk_outfile o;

	old_output(dir, out);
	ASSERT_OK(lk_outfile_open(&o, out, 0666));
	fputs("half an output", o.f);
	fflush(o.f);
	lk_outfile_discard(&o);
	expect_old(dir, out);
	lk_outfile_discard(&o); /* twice, as a cleanup attribute may */
	snprintf(none, sizeof(none), "%s/none", dir);
	ASSERT_OK(lk_outfile_open(&o, none, 0666));
	lk_outfile_discard(&o);
	expect_old(dir, out);
	tmp_dir_remove(dir);
}

/* A write that fails part-way (RLIMIT_FSIZE, with SIGXFSZ ignored: EFBIG) shows at the commit,
 * which keeps the old FILE and removes the part written. */
TEST(failed_write_keeps_the_old_file)
{
	char dir[256], out[300], buf[4096];
	struct rlimit rl;
	struct lk_outfile o;

	old_output(dir, out);
	ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &rl), 0);
	rl.rlim_cur = 10000;
	ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &rl), 0);
	signal(SIGXFSZ, SIG_IGN);
	memset(buf, 'x', sizeof(buf));
	ASSERT_OK(lk_outfile_open(&o, out, 0666));
	for (int i = 0; i < 4; i++)
		fwrite(buf, 1, sizeof(buf), o.f);
	ASSERT_EQ(lk_outfile_commit(&o), -EFBIG);
	expect_old(dir, out);
	tmp_dir_remove(dir);
}

/* The rename fails (FILE became a directory meanwhile): the temporary file goes. */
TEST(failed_rename_removes_the_temporary_file)
{
	char dir[256], out[300];
	struct lk_outfile o;

	old_output(dir, out);
	ASSERT_OK(lk_outfile_open(&o, out, 0666));
	fputs("new\n", o.f);
	ASSERT_EQ(unlink(out), 0);
	ASSERT_EQ(mkdir(out, 0700), 0);
	ASSERT_EQ(lk_outfile_commit(&o), -EISDIR);
	ASSERT_EQ(count_files(dir, "", ""), 1);
	ASSERT_EQ(rmdir(out), 0);
	tmp_dir_remove(dir);
}

/* Outputs that cannot be made fail at the open, before any work, and leave nothing. */
TEST(refused_at_open)
{
	char dir[256], path[300];
	struct lk_outfile o;

	tmp_dir(dir);
	ASSERT_EQ(lk_outfile_open(&o, dir, 0666), -EISDIR);
	ASSERT_TRUE(o.f == NULL);
	snprintf(path, sizeof(path), "%s/missing/out", dir);
	ASSERT_EQ(lk_outfile_open(&o, path, 0666), -ENOENT);
	ASSERT_TRUE(o.f == NULL);
	lk_outfile_discard(&o);
	ASSERT_EQ(count_files(dir, "", ""), 0);
	tmp_dir_remove(dir);
}

/* A symbolic link stays one: the file it names is replaced, beside which the temporary file
 * was. */
TEST(symlink_kept)
{
	char dir[256], out[300], link[300], target[300];
	struct lk_outfile o;
	ssize_t n;

	old_output(dir, out);
	snprintf(link, sizeof(link), "%s/link", dir);
	ASSERT_EQ(symlink("out", link), 0);
	ASSERT_OK(lk_outfile_open(&o, link, 0666));
	fputs("new\n", o.f);
	ASSERT_OK(lk_outfile_commit(&o));
	n = readlink(link, target, sizeof(target) - 1);
	ASSERT_EQ(n, 3);
	target[n] = '\0';
	ASSERT_STREQ(target, "out");
	expect_content(out, "new\n");
	ASSERT_EQ(count_files(dir, "", ""), 2);
	tmp_dir_remove(dir);
}

/* "-" is stdout; an existing FILE that is not a regular file is written as it is and never
 * replaced (a rename over /dev/null would make it a regular file, as root). */
TEST(streams_written_in_place)
{
	struct lk_outfile o;
	struct stat st;

	ASSERT_OK(lk_outfile_open(&o, "-", 0666));
	ASSERT_TRUE(o.f == stdout && o.tmp == NULL);
	ASSERT_OK(lk_outfile_commit(&o));
	ASSERT_OK(lk_outfile_open(&o, NULL, 0666));
	ASSERT_TRUE(o.f == stdout);
	lk_outfile_discard(&o);
	ASSERT_TRUE(fcntl(STDOUT_FILENO, F_GETFD) >= 0); /* not closed */
	ASSERT_OK(lk_outfile_open(&o, "/dev/null", 0666));
	ASSERT_TRUE(o.f != NULL && o.tmp == NULL);
	fputs("gone\n", o.f);
	ASSERT_OK(lk_outfile_commit(&o));
	ASSERT_EQ(stat("/dev/null", &st), 0);
	ASSERT_TRUE(S_ISCHR(st.st_mode));
}
