/* test-hostile-env.c: libleek in hostile or unusual environments must never break the host.
 *
 * Each test reproduces one way an attacker or an odd limit could make leek harm the program it
 * profiles, or write where it should not (issue 27), and checks that the program now runs as it
 * would without leek: its exit status and output, a profile that reads to its end where one is
 * written, and the loss counted where leek had to give up. The programs are in this folder
 * (cut.c, fsize.c, aslimit.c, setuid.c, churn.c); runner.h starts them under libleek.
 *
 * The setuid test needs root (it makes a copy of setuid.c setuid root and runs it as nobody with
 * setpriv), and a file system without nosuid; elsewhere it is skipped.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "files.h"
#include "harness.h"
#include "proc.h"
#include "runner.h"

#define EXACT "LEEK_PERIOD=1"
#define LOSS(c) (1ull << (c))
#define MIB (1ull << 20)

static void expect_signal(const struct run *r, int sig)
{
	if (!WIFSIGNALED(r->status) || WTERMSIG(r->status) != sig)
		FAIL("expected death by SIG%s, status %#x; stderr:\n%s", sigabbrev_np(sig),
		     r->status, r->err);
}

/* ---- 1. a setuid program ignores LEEK_* and profiles nothing ---- */

/* Runs argv (a NULL-terminated list) in dir, its output in files apart from dir (whose files the
 * test counts). */
static void run_in(struct proc *p, const char *dir, const char *const *argv)
{
	char files[256];

	tmp_dir(files);
	proc_start_with(p, files, argv, &(struct proc_opts){ .cwd = dir });
	proc_wait(p);
	tmp_dir_remove(files);
}

TEST(setuid_program_ignores_leek_environment)
{
	char dir[] = "/tmp/leek-setuid-XXXXXX", prog[64], secret[64], output[128];
	struct statvfs vfs;
	struct proc p;

	if (geteuid() != 0)
		SKIP("needs root, to make a setuid-root program");
	if (access("/usr/bin/setpriv", X_OK) < 0)
		SKIP("no /usr/bin/setpriv (util-linux)");
	ASSERT_TRUE(mkdtemp(dir) != NULL);
	ASSERT_EQ(chmod(dir, 0755), 0);
	if (statvfs(dir, &vfs) == 0 && vfs.f_flag & ST_NOSUID) {
		rmdir(dir);
		SKIP("/tmp is mounted nosuid");
	}
	snprintf(prog, sizeof(prog), "%s/setuid", dir);
	snprintf(secret, sizeof(secret), "%s/secret", dir);
	snprintf(output, sizeof(output), "LEEK_OUTPUT=%s/anything-%%p.sh", secret);
	size_t len;
	char *image = read_file(PROG_DIR "/setuid", &len);
	write_file(prog, image, len);
	free(image);
	ASSERT_EQ(chmod(prog, 04755), 0); /* after the write, which would clear the setuid bit */
	ASSERT_EQ(mkdir(secret, 0700), 0); /* root's alone */

	/* As the user nobody: secure-execution mode, libleek loaded and inert. */
	const char *const as_nobody[] = { "/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
					  "--clear-groups", "--", "/usr/bin/env", "-i", output,
					  "LEEK_PERIOD=1", "LEEK_QUIET=0", prog, "\necho hi\n", NULL };
	run_in(&p, dir, as_nobody);
	ASSERT_EQ(p.status, 0);
	if (!strstr(p.out, "euid 0 ruid 65534 secure 1")) {
		/* A file system that ignores the setuid bit, or a loader that did not go secure. */
		unlink(prog);
		rmdir(secret);
		rmdir(dir);
		SKIP("the copy did not run setuid: %.200s", p.out);
	}
	ASSERT_CONTAINS(p.out, "leek 1");
	ASSERT_CONTAINS(p.out, "\n\necho hi\n\ndone\n");
	ASSERT_EQ(count_files(secret, "", ""), 0);
	ASSERT_EQ(count_files(dir, "", ""), 2); /* the program and secret/: no profile anywhere */
	proc_free(&p);

	/* As root, the same program is profiled where LEEK_OUTPUT says: the library works in it. */
	const char *const as_root[] = { "/usr/bin/env", "-i", output, prog, "root", NULL };
	run_in(&p, dir, as_root);
	ASSERT_EQ(p.status, 0);
	ASSERT_CONTAINS(p.out, "secure 0 leek 1");
	ASSERT_EQ(count_files(secret, "", ""), 1);
	proc_free(&p);

	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ASSERT_EQ(system(cmd), 0);
}

/* ---- 2. profiles are the user's alone ---- */

TEST(profile_created_0600)
{
	struct run r;
	const char *argv[] = { "churn", NULL };
	struct stat st;

	mode_t old = umask(0);
	run_prog(&r, &(struct run_opts){ 0 }, argv);
	umask(old);
	expect_clean(&r, 1, 0);
	ASSERT_EQ(stat(r.prof[0].path, &st), 0);
	ASSERT_EQ(st.st_mode & 07777, 0600);
	run_cleanup(&r);
}

/* ---- 5. RLIMIT_FSIZE stops the profile, not the program ---- */

/* The file stops below the limit with its trailer, counts what it could not hold, and SIGXFSZ
 * never comes. */
static void fsize_run(uint64_t limit, const char *lower)
{
	struct run r;
	const char *argv[] = { "fsize", lower, NULL };
	struct stat st;

	run_prog(&r, &(struct run_opts){ .env = { EXACT }, .limit_fsize = limit }, argv);
	expect_clean(&r, 1, LOSS(LK_CNT_FILE_LIMIT));
	ASSERT_STREQ(r.out, "done\n");
	const struct profile *p = main_profile(&r);
	ASSERT_EQ(stat(p->path, &st), 0);
	ASSERT_TRUE((uint64_t)st.st_size <= (lower ? strtoull(lower, NULL, 10) : limit));
	ASSERT_TRUE(p->counters[LK_CNT_FILE_LIMIT] > 0);
	ASSERT_TRUE(p->ntag[LK_REC_ALLOC] > 100);
	ASSERT_CONTAINS(r.err, "reached the file-size limit (ulimit -f)");
	ASSERT_EQ(count_lines(r.err), 1);
	run_cleanup(&r);
}

TEST(file_size_limit_stops_profile)
{
	fsize_run(256 << 10, NULL);
}

/* Lowered to 2 MB after about 0.8 MB of records. */
TEST(file_size_limit_lowered_while_running)
{
	fsize_run(64 * MIB, "2000000");
}

/* A limit below the header: no profile, one line, and the program as without leek. */
TEST(file_size_limit_below_header)
{
	struct run r;
	const char *argv[] = { "fsize", NULL };

	run_prog(&r, &(struct run_opts){ .env = { EXACT }, .limit_fsize = 512 }, argv);
	expect_clean(&r, 0, 0);
	ASSERT_STREQ(r.out, "done\n");
	ASSERT_CONTAINS(r.err, "cannot write the profile");
	ASSERT_CONTAINS(r.err, "ulimit -f");
	ASSERT_EQ(count_lines(r.err), 1);
	run_cleanup(&r);
}

/* ---- 6. a profile cut short under the writer ---- */

/* cut MODE: the program ends as it does without leek, and its profile is a whole one, begun
 * again after the last cut (LK_HDR_CONTINUED), which counts the cuts. */
static void cut_run(const char *mode)
{
	struct run r;
	const char *argv[] = { "cut", mode, NULL };

	run_prog(&r, &(struct run_opts){ .env = { EXACT } }, argv);
	expect_clean(&r, 1, LOSS(LK_CNT_FILE_CUT));
	ASSERT_STREQ(r.out, "cuts 3\ndone\n");
	const struct profile *p = main_profile(&r);
	ASSERT_TRUE(p->h.flags & LK_HDR_CONTINUED);
	ASSERT_EQ(p->counters[LK_CNT_FILE_CUT], 3);
	ASSERT_TRUE(p->ntag[LK_REC_ALLOC] > 1000);
	ASSERT_TRUE(p->ntag[LK_REC_MODULE] > 0);
	run_cleanup(&r);
}

TEST(cut_profile_plain)
{
	cut_run("plain");
}

TEST(cut_profile_signals_blocked)
{
	cut_run("blocked");
}

TEST(cut_profile_program_handler)
{
	cut_run("handler");
}

TEST(cut_profile_program_signal)
{
	cut_run("signal");
}

/* logrotate's copytruncate: each copy reads to its last complete record, and the file goes on. */
TEST(cut_profile_copytruncate)
{
	struct run r;
	const char *argv[] = { "cut", "copy", NULL };

	run_prog(&r, &(struct run_opts){ .env = { EXACT } }, argv);
	expect_exit0(&r);
	ASSERT_STREQ(r.out, "cuts 3\ndone\n");
	ASSERT_EQ(r.nprof, 4); /* the profile and its three copies: runner.c read each to its end */
	for (size_t i = 0; i < r.nprof; i++) {
		const struct profile *p = &r.prof[i];
		ASSERT_TRUE(p->ntag[LK_REC_ALLOC] > 1000);
		ASSERT_EQ(p->h.pid, (uint32_t)r.pid);
		ASSERT_EQ(!!(p->h.flags & LK_HDR_CONTINUED), !strstr(p->path, ".copy0"));
		if (p->trailer)
			check_counters(&r, p, LOSS(LK_CNT_FILE_CUT));
	}
	run_cleanup(&r);
}

/* Under `leek run`, which reads the profile as it grows: the program's status, and the profile
 * compressed as the file was at the end, begun again after its last cut. */
TEST(cut_profile_under_leek_run)
{
	struct run r;
	const char *argv[] = { "leek", "run", "--period", "1", "--", PROG_DIR "/cut", "plain", NULL };

	run_prog(&r, &(struct run_opts){ .preload = "", .exe = LEEK_BIN }, argv);
	expect_exit0(&r);
	ASSERT_CONTAINS(r.out, "cuts 3\ndone\n");
	ASSERT_EQ(r.nprof, 1);
	const struct profile *p = &r.prof[0];
	ASSERT_TRUE(strstr(p->path, ".lk.zst") != NULL);
	ASSERT_TRUE(p->trailer && p->h.flags & LK_HDR_CONTINUED);
	check_counters(&r, p, LOSS(LK_CNT_FILE_CUT));
	run_cleanup(&r);
}

/* The program's own SIGBUS with no handler still kills it, as without leek. */
TEST(cut_profile_own_sigbus_kills)
{
	struct run r;
	const char *argv[] = { "cut", "default", NULL };

	run_prog(&r, &(struct run_opts){ .env = { EXACT } }, argv);
	expect_signal(&r, SIGBUS);
	ASSERT_STREQ(r.out, "cuts 3\n");
	run_cleanup(&r);
}

/* ---- 7. an address-space limit ---- */

/* MIB MiB in blocks of BLOCK bytes under a 600 MiB limit: the program needs about 410 MiB of
 * it. Before, the arena took 512 MiB of the limit at start-up. */
static void aslimit_run(const char *mib, const char *block)
{
	struct run r;
	const char *argv[] = { "aslimit", mib, block, NULL };
	char want[64];

	run_prog(&r, &(struct run_opts){ .limit_as = 600 * MIB, .timeout = 60 }, argv);
	expect_clean(&r, 1, 0);
	snprintf(want, sizeof(want), "allocated %s MiB\n", mib);
	ASSERT_STREQ(r.out, want);
	ASSERT_CONTAINS(r.err, "address-space limit of 600 MiB (ulimit -v)");
	ASSERT_EQ(count_lines(r.err), 1);
	const struct profile *p = main_profile(&r);
	ASSERT_EQ(p->counters[LK_CNT_ARENA_FULL], 0);
	run_cleanup(&r);
}

/* Small blocks: nearly all go to the real allocator, which needs the room. */
TEST(address_space_limit_small_blocks)
{
	aslimit_run("400", "4096");
}

/* 1 MiB blocks: 86% are sampled, so the arena must grow to hold them. */
TEST(address_space_limit_large_blocks)
{
	aslimit_run("400", "1048576");
}

/* ---- small things: LEEK_OUTPUT and the numbers ---- */

/* LEEK_OUTPUT=/dev/null: no profile, nothing said, and no /dev/null.1 (root may create it). */
TEST(output_dev_null)
{
	struct run r;
	const char *argv[] = { "churn", NULL };

	unlink("/dev/null.1");
	run_prog(&r, &(struct run_opts){ .output = "/dev/null" }, argv);
	expect_clean(&r, 0, 0);
	ASSERT_STREQ(r.err, "");
	ASSERT_TRUE(access("/dev/null.1", F_OK) < 0);
	run_cleanup(&r);
}

/* A directory, with or without its '/': the default name inside it, and nothing beside it. */
static void output_dir(const char *suffix)
{
	struct run r;
	const char *argv[] = { "churn", NULL };
	char dir[300], out[310], path[400];

	snprintf(dir, sizeof(dir), "/tmp/leek-outdir-%d", (int)getpid());
	snprintf(out, sizeof(out), "%s%s", dir, suffix);
	ASSERT_EQ(mkdir(dir, 0700), 0);
	run_prog(&r, &(struct run_opts){ .output = out }, argv);
	expect_clean(&r, 0, 0);
	ASSERT_STREQ(r.err, "");
	snprintf(path, sizeof(path), "%s/leek.churn.%d.lk", dir, (int)r.pid);
	ASSERT_EQ(count_files(dir, "", ""), 1);
	ASSERT_EQ(access(path, R_OK), 0);
	snprintf(path, sizeof(path), "%s.1", dir);
	ASSERT_TRUE(access(path, F_OK) < 0);
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	ASSERT_EQ(system(path), 0);
	run_cleanup(&r);
}

TEST(output_directory)
{
	output_dir("");
}

TEST(output_directory_slash)
{
	output_dir("/");
}

/* A directory that does not exist: one line, no file beside it. */
TEST(output_missing_directory)
{
	struct run r;
	const char *argv[] = { "churn", NULL };
	char out[400];

	snprintf(out, sizeof(out), "/tmp/leek-nodir-%d/", (int)getpid());
	run_prog(&r, &(struct run_opts){ .output = out }, argv);
	expect_clean(&r, 0, 0);
	ASSERT_CONTAINS(r.err, "cannot write the profile");
	ASSERT_CONTAINS(r.err, "No such file or directory");
	ASSERT_EQ(count_lines(r.err), 1);
	out[strlen(out) - 1] = 0;
	ASSERT_TRUE(access(out, F_OK) < 0);
	run_cleanup(&r);
}

/* 4096 bytes or more: said, and no profile in the default place instead. */
TEST(output_too_long)
{
	struct run r;
	const char *argv[] = { "churn", NULL };
	static char out[5000];

	memset(out, 'a', sizeof(out) - 1);
	out[0] = '/';
	run_prog(&r, &(struct run_opts){ .output = out, .in_dir = true }, argv);
	expect_clean(&r, 0, 0);
	ASSERT_CONTAINS(r.err, "LEEK_OUTPUT is 4999 bytes long");
	ASSERT_EQ(count_lines(r.err), 1);
	run_cleanup(&r);
}

/* Malformed and out-of-range numbers: one line each, escaped, and the default in force. */
TEST(malformed_numbers_said)
{
	struct run r;
	const char *argv[] = { "churn", NULL };

	run_prog(&r, &(struct run_opts){ .env = { "LEEK_PERIOD=1e9", "LEEK_MAX_FRAMES=0",
						  "LEEK_SEED=abc", "LEEK_ARENA_RETAIN=\x1b]0;x\a" } },
		 argv);
	expect_clean(&r, 1, 0);
	ASSERT_CONTAINS(r.err, "LEEK_PERIOD='1e9' is not a size in bytes");
	ASSERT_CONTAINS(r.err, "using 524288");
	ASSERT_CONTAINS(r.err, "LEEK_MAX_FRAMES='0' is out of range (1 to 128); using 128\n");
	ASSERT_CONTAINS(r.err, "LEEK_SEED='abc' is not a whole number; using a random one");
	ASSERT_CONTAINS(r.err, "LEEK_ARENA_RETAIN='\\x1b]0;x\\x07'");
	ASSERT_TRUE(!strchr(r.err, '\x1b') && !strchr(r.err, '\a'));
	ASSERT_EQ(count_lines(r.err), 4);
	const struct profile *p = main_profile(&r);
	ASSERT_EQ(p->h.period, 524288);
	ASSERT_EQ(p->h.max_frames, 128);
	ASSERT_EQ(p->stackless, 0); /* LEEK_MAX_FRAMES=0 recorded no stacks */
	for (size_t i = 0; i < p->nstacks; i++)
		ASSERT_TRUE(p->stacks[i].nframes > 1);
	run_cleanup(&r);

	run_prog(&r, &(struct run_opts){ .env = { "LEEK_PERIOD=1e9", "LEEK_QUIET=1" } }, argv);
	expect_clean(&r, 1, 0);
	ASSERT_STREQ(r.err, "");
	run_cleanup(&r);
}

/* A huge LEEK_RSS_INTERVAL_MS means never, not a product that wraps to half a millisecond. */
TEST(rss_interval_huge)
{
	struct run r;
	const char *argv[] = { "churn", NULL };

	run_prog(&r, &(struct run_opts){ .env = { EXACT, "LEEK_RSS_INTERVAL_MS=18446744073710" } },
		 argv);
	expect_clean(&r, 1, 0);
	ASSERT_TRUE(main_profile(&r)->ntag[LK_REC_RSS] <= 2); /* the first sample's, and the exit's */
	run_cleanup(&r);
}
