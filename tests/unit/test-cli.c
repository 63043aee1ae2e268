/* test-cli.c: the `leek` binary from outside: exit codes, `leek dump` lines, `leek run`'s checks.
 *
 * tests/lib/leek.h runs the binary of this build. The tests of `leek run` that need libleek.so
 * skip without it (a sanitizer build), and those that need root or a file system that honours
 * set-user-id bits skip elsewhere. Profiles are built with record.h's encoders, so the expected
 * lines here are the format's contract with tests/golden. `leek run` must refuse, with exit 2 and
 * one line, a program it cannot profile: statically linked, or run in the loader's
 * secure-execution mode (setuid, setgid, file capabilities).
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "build-profile.h"
#include "files.h"
#include "harness.h"
#include "leek.h"

/* Runs leek with args (after "leek", ending with NULL), with LEEK_LIBRARY=library if it is not
 * NULL (else this build's, if there is one), in a directory of its own. */
static void run_leek(struct proc *res, const char *library, const char *const *args)
{
	char dir[256], lib[300];
	const char *const env[] = { lib, NULL };

	snprintf(lib, sizeof(lib), "LEEK_LIBRARY=%s", library ? library : "");
	tmp_dir(dir);
	proc_free(res);
	leek_exec(res, dir, library ? env : NULL, args, 60);
	tmp_dir_remove(dir);
}

/* path: a mkstemp template, filled in. */
static void write_temp(char *path, const void *p, size_t n)
{
	int fd = mkstemp(path);

	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ(write(fd, p, n), (ssize_t)n);
	close(fd);
}

static struct proc res;

TEST(usage_and_version)
{
	run_leek(&res, NULL, (const char *[]){ NULL });
	ASSERT_EQ(res.status, 1);
	ASSERT_CONTAINS(res.err, "usage: leek");
	run_leek(&res, NULL, (const char *[]){ "--version", NULL });
	ASSERT_EQ(res.status, 0);
	ASSERT_CONTAINS(res.out, "leek ");
	run_leek(&res, NULL, (const char *[]){ "frobnicate", NULL });
	ASSERT_EQ(res.status, 1);
	run_leek(&res, NULL, (const char *[]){ "dump", NULL });
	ASSERT_EQ(res.status, 1);
	run_leek(&res, NULL, (const char *[]){ "dump", "--bogus", "x", NULL });
	ASSERT_EQ(res.status, 1);
	run_leek(&res, NULL, (const char *[]){ "help", "env", NULL });
	ASSERT_EQ(res.status, 0);
	ASSERT_CONTAINS(res.out, "LEEK_PERIOD");
}

TEST(dump_sample)
{
	char path[] = "/tmp/leek-cli-XXXXXX";
	struct pb_sample s;

	pb_build_sample(&s);
	write_temp(path, s.b.p, s.b.len);
	run_leek(&res, NULL, (const char *[]){ "dump", path, NULL });
	unlink(path);
	ASSERT_EQ(res.status, 0);
	ASSERT_STREQ(res.err, "");
	ASSERT_CONTAINS(res.out, "HEADER version=8 pid=4242 ppid=4241 flags=0x2(forked) "
				 "period=524288 seed=99 session=77 clock=monotonic page_size=4096 "
				 "max_frames=128 header_size=112 "
				 "start_realtime=1700000000.123456789 start_monotonic=1.000000000\n"
				 "EXE /usr/bin/prog\nCMDLINE prog -x 'a b'\n");
	ASSERT_CONTAINS(res.out, " MODULE 1 t=0.000000005 base=0x555555554000 "
				 "segments=0x0+0x1000,0x2000+0x5a0 "
				 "build-id=a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3 path=/usr/bin/prog\n");
	ASSERT_CONTAINS(res.out, " STACK 1: 0x555555555123 0x7f0000012345 0x555555555000\n");
	ASSERT_CONTAINS(res.out, " STACK 3:\n");
	/* The file holds differences and THREAD records; dump shows tids and block numbers. */
	ASSERT_CONTAINS(res.out, " STACK 3:\n@429 THREAD tid=42\n@431 ALLOC t=0.000000105 tid=42 "
				 "block=1 size=128 stack=1\n@436 THREAD tid=43\n");
	ASSERT_CONTAINS(res.out, " THREAD tid=43\n@461 FREE t=0.000000163 tid=43 block=2\n");
	ASSERT_CONTAINS(res.out, " UNLOAD t=0.000000166 module=2\n");
	ASSERT_CONTAINS(res.out, " RSS t=0.000000175 rss=123456789\n");
	ASSERT_CONTAINS(res.out, " LOSS t=0.000000177 arena_full=3 records_dropped=1\n");
	ASSERT_CONTAINS(res.out, " EXT tag=0x81 len=5\n");
	ASSERT_CONTAINS(res.out, " INHERIT block=4 size=64 stack=3 alloc_t=-0.999999500\n@494 FREE "
				 "t=0.000000177 tid=43 block=1\n");
	ASSERT_CONTAINS(res.out, " MODULE 4 t=0.000000178 base=0x7f1000000000 segments=none "
				 "build-id=none path=\n");
	ASSERT_CONTAINS(res.out, " TRAILER t=0.000000189 end_realtime=1700000001.000000000 "
				 "arena_full=3 samples=3 frees=1\n");
	ASSERT_CONTAINS(res.out, "END offset=");
	ASSERT_CONTAINS(res.out, " trailer=yes\n");
	char at[32];
	snprintf(at, sizeof(at), "\n@%zu ALLOC ", s.off[6]);
	ASSERT_CONTAINS(res.out, at);

	/* Twice in one call, summaries this time. */
	strcpy(path, "/tmp/leek-cli-XXXXXX");
	write_temp(path, s.b.p, s.b.len);
	run_leek(&res, NULL, (const char *[]){ "dump", "--summary", path, path, NULL });
	unlink(path);
	ASSERT_EQ(res.status, 0);
	ASSERT_CONTAINS(res.out, "pid:         4242 (ppid 4241), forked\n");
	ASSERT_CONTAINS(res.out, "live at end: 2 sampled blocks, 1048640 bytes requested\n");
	ASSERT_CONTAINS(res.out, "trailer:     yes\n");
	ASSERT_CONTAINS(strstr(res.out, "trailer:") + 1, "file:");
	free(s.b.p);
}

/* A thread segment's SEGMENT line, and its records where the reader merges them, with its tid. */
TEST(dump_segments)
{
	char path[] = "/tmp/leek-cli-XXXXXX", want[512];
	struct pbuf b = { 0 };
	struct pb_seg s;
	size_t seg, a, f, rss;

	pb_simple_header(&b);
	pb_made_up_stack(&b, 1, 1);
	seg = pb_segment(&b, &s, 10, 77, 2, 3, 16);
	a = pb_seg_alloc(&b, &s, 5, 0x1, 64, 1);
	f = pb_seg_free_fixed(&b, &s, 0x1);
	pb_seg_end(&b, &s);
	rss = PB_REC(&b, lk_rec_pair(rec, LK_REC_RSS, 10, 4096));
	write_temp(path, b.p, b.len);
	run_leek(&res, NULL, (const char *[]){ "dump", path, NULL });
	ASSERT_EQ(res.status, 0);
	snprintf(want, sizeof(want),
		 "\n@%zu SEGMENT t=0.000000010 tid=77 first_block=1 blocks=2 body=%zu length=16\n"
		 "@%zu ALLOC t=0.000000015 tid=77 block=1 size=64 stack=1\n"
		 "@%zu FREE t=0.000000015 tid=77 block=1\n"
		 "@%zu RSS t=0.000000020 rss=4096\nEND offset=%zu trailer=no\n",
		 seg, s.body, a, f, rss, b.len);
	ASSERT_CONTAINS(res.out, want);
	run_leek(&res, NULL, (const char *[]){ "dump", "--summary", path, NULL });
	unlink(path);
	ASSERT_EQ(res.status, 0);
	ASSERT_CONTAINS(res.out, "samples:     1 allocations, 1 frees, 0 inherited");
	ASSERT_CONTAINS(res.out, "live at end: 0 sampled blocks, 0 bytes requested\n");
	free(b.p);
}

TEST(dump_errors)
{
	char path[] = "/tmp/leek-cli-XXXXXX", good[] = "/tmp/leek-cli-XXXXXX", want[256];
	struct pb_sample s;

	pb_build_sample(&s);
	write_temp(good, s.b.p, s.b.len);
	/* Cut inside the first ALLOC: the records before it print, then the error; exit 2. */
	write_temp(path, s.b.p, s.off[6] + 2);
	run_leek(&res, NULL, (const char *[]){ "dump", path, good, NULL });
	ASSERT_EQ(res.status, 2);
	snprintf(want, sizeof(want), "leek: %s: offset %zu: ALLOC record cut by the end of the "
		 "file\n", path, s.off[6]);
	ASSERT_STREQ(res.err, want);
	ASSERT_CONTAINS(res.out, " STACK 3:\n@429 THREAD tid=42\n");
	ASSERT_CONTAINS(res.out, "trailer=yes"); /* the second file still ran */
	unlink(path);

	/* Cut at a record boundary: a warning, exit 0. */
	strcpy(path, "/tmp/leek-cli-XXXXXX");
	write_temp(path, s.b.p, s.off[5]);
	run_leek(&res, NULL, (const char *[]){ "dump", path, NULL });
	ASSERT_EQ(res.status, 0);
	snprintf(want, sizeof(want), "no trailer: profile ends at its last complete record at "
		 "offset %zu (process crashed, was killed or exec'd)", s.off[5]);
	ASSERT_CONTAINS(res.err, want);
	ASSERT_CONTAINS(res.out, "trailer=no\n");
	unlink(path);
	unlink(good);

	run_leek(&res, NULL, (const char *[]){ "dump", leek_bin, NULL });
	ASSERT_EQ(res.status, 2);
	ASSERT_CONTAINS(res.err, ": not a leek profile (bad magic)\n");

	/* A version-1 profile: one line, exit 2, whichever command reads it. */
	uint16_t v1 = htole16(1);
	memcpy(s.b.p + 8, &v1, 2);
	strcpy(path, "/tmp/leek-cli-XXXXXX");
	write_temp(path, s.b.p, s.b.len);
	snprintf(want, sizeof(want), "leek: %s: offset 8: profile format version 1; this leek "
		 "reads versions 3 to %d (record it again with this leek)\n", path,
		 LK_FORMAT_VERSION);
	run_leek(&res, NULL, (const char *[]){ "dump", path, NULL });
	ASSERT_EQ(res.status, 2);
	ASSERT_STREQ(res.err, want);
	ASSERT_STREQ(res.out, "");
	run_leek(&res, NULL, (const char *[]){ "report", path, NULL });
	ASSERT_EQ(res.status, 2);
	ASSERT_STREQ(res.err, want);
	ASSERT_STREQ(res.out, "");
	unlink(path);
	run_leek(&res, NULL, (const char *[]){ "dump", "-s", "/nonexistent.lk", NULL });
	ASSERT_EQ(res.status, 2);
	ASSERT_STREQ(res.err, "leek: /nonexistent.lk: No such file or directory\n");
	free(s.b.p);
}

/* A copy of this (dynamic) test program with its PT_INTERP turned into PT_NULL: to leek it
 * looks statically linked, and nothing needs libc.a to build it. */
static void make_static_lookalike(char *path)
{
	static char buf[1 << 22];
	int fd = open("/proc/self/exe", O_RDONLY);
	ssize_t n = read(fd, buf, sizeof(buf));
	ElfW(Ehdr) *eh = (ElfW(Ehdr) *)buf;
	bool patched = false;

	close(fd);
	ASSERT_TRUE(n > (ssize_t)sizeof(*eh) && n < (ssize_t)sizeof(buf));
	for (int i = 0; i < eh->e_phnum; i++) {
		ElfW(Phdr) *ph = (ElfW(Phdr) *)(buf + eh->e_phoff) + i;
		if (ph->p_type == PT_INTERP) {
			ph->p_type = PT_NULL;
			patched = true;
		}
	}
	ASSERT_TRUE(patched);
	write_temp(path, buf, (size_t)n);
	ASSERT_EQ(chmod(path, 0755), 0);
}

TEST(run_refuses)
{
	char path[] = "/tmp/leek-cli-static-XXXXXX", want[128];

	make_static_lookalike(path);
	run_leek(&res, NULL, (const char *[]){ "run", path, NULL });
	ASSERT_EQ(res.status, 2);
	snprintf(want, sizeof(want), "leek: %s is statically linked: LD_PRELOAD cannot "
		 "interpose its malloc, so leek cannot profile it\n", path);
	ASSERT_STREQ(res.err, want);
	unlink(path);

	run_leek(&res, NULL, (const char *[]){ "run", "--", "leek-no-such-command", NULL });
	ASSERT_EQ(res.status, 127);
	ASSERT_CONTAINS(res.err, "leek-no-such-command: command not found");
	run_leek(&res, NULL, (const char *[]){ "run", "--period", "lots", "true", NULL });
	ASSERT_EQ(res.status, 1);
	run_leek(&res, "/nonexistent/libleek.so", (const char *[]){ "run", "true", NULL });
	ASSERT_EQ(res.status, 2);
	ASSERT_CONTAINS(res.err, "LEEK_LIBRARY=/nonexistent/libleek.so");
}

/* A copy of /bin/true (dynamic) owned by uid:gid with mode, in a fresh file under /tmp. */
static void make_copy(char *path, uid_t uid, gid_t gid, mode_t mode)
{
	static char buf[1 << 20];
	int fd = open("/bin/true", O_RDONLY);
	ssize_t n = read(fd, buf, sizeof(buf));

	close(fd);
	ASSERT_TRUE(n > 0 && n < (ssize_t)sizeof(buf));
	write_temp(path, buf, (size_t)n);
	ASSERT_EQ(chown(path, uid, gid), 0);
	ASSERT_EQ(chmod(path, mode), 0); /* after chown, which clears the set-id bits */
}

/* Set-user-id and set-group-id bits do nothing on a nosuid mount, where run-target.c lets the
 * program run. */
static void need_suid_tmp(void)
{
	struct statvfs vfs;

	ASSERT_EQ(statvfs("/tmp", &vfs), 0);
	if (vfs.f_flag & ST_NOSUID)
		SKIP("/tmp is mounted nosuid");
}

/* `leek run` of a program whose exec changes its ids: the loader runs it in secure-execution mode
 * and ignores LD_PRELOAD (ld.so(8)), so leek must refuse with exit 2 and say why, before running
 * it (a refused program that waited for input would hang the run). What counts is a change of
 * ids: a set-user-id file owned by the user who runs it changes nothing, and is profiled
 * (run_profiles_own_setuid). The refused cases need a file owned by someone else, which only root
 * can make here. */
TEST(run_refuses_setuid)
{
	static const struct {
		uid_t uid;
		gid_t gid;
		mode_t mode;
		const char *why;
	} cases[] = {
		{ 65534, 0, 04755, "setuid" },  /* owned by nobody: exec makes us nobody */
		{ 0, 65534, 02755, "setgid" },  /* group nogroup */
		{ 65534, 65534, 06755, "setuid" },
	};
	char path[] = "/tmp/leek-cli-setid-XXXXXX", want[256];

	need_suid_tmp();
	if (geteuid() != 0)
		SKIP("making a file of another user's needs root (chown)");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		strcpy(path, "/tmp/leek-cli-setid-XXXXXX");
		make_copy(path, cases[i].uid, cases[i].gid, cases[i].mode);
		run_leek(&res, NULL, (const char *[]){ "run", "--", path, NULL });
		ASSERT_EQ(res.status, 2);
		snprintf(want, sizeof(want), "leek: %s is %s: the dynamic loader ignores "
			 "LD_PRELOAD for it (secure-execution mode), so leek cannot profile it\n",
			 path, cases[i].why);
		ASSERT_STREQ(res.err, want);
		ASSERT_STREQ(res.out, "");
		unlink(path);
	}
}

/* File capabilities: the same secure-execution mode. A v2 capability set granting
 * CAP_NET_BIND_SERVICE (bit 10), permitted and effective. */
TEST(run_refuses_file_capabilities)
{
	static const uint32_t caps[5] = { 0x02000000 | 1, 1u << 10, 0, 0, 0 };
	char path[] = "/tmp/leek-cli-setid-XXXXXX";

	need_suid_tmp();
	if (geteuid() != 0)
		SKIP("setting file capabilities needs root (CAP_SETFCAP)");
	make_copy(path, 0, 0, 0755);
	if (setxattr(path, "security.capability", caps, sizeof(caps), 0) != 0) {
		int e = errno;
		unlink(path);
		SKIP("setxattr security.capability: %s", strerror(e));
	}
	run_leek(&res, NULL, (const char *[]){ "run", "--", path, NULL });
	ASSERT_EQ(res.status, 2);
	ASSERT_CONTAINS(res.err, "is given file capabilities: the dynamic loader ignores "
				 "LD_PRELOAD for it");
	unlink(path);
}

/* Set-user-id, but ours: no change of ids, so leek runs it. */
TEST(run_profiles_own_setuid)
{
	char path[] = "/tmp/leek-cli-setid-XXXXXX", dir[256], out[300];

	need_suid_tmp();
	if (!leek_library)
		SKIP("no libleek.so to run a program under (a sanitizer build)");
	make_copy(path, geteuid(), getegid(), 06755);
	tmp_dir(dir);
	snprintf(out, sizeof(out), "%s/p.%%p.lk", dir);
	run_leek(&res, NULL, (const char *[]){ "run", "--period", "1", "-o", out, "--", path, NULL });
	ASSERT_EQ(res.status, 0);
	ASSERT_CONTAINS(res.err, "1 profile written");
	ASSERT_EQ(count_files(dir, "p.", ""), 1);
	tmp_dir_remove(dir);
	unlink(path);
}

TEST(run_status)
{
	char dir[256], out[300];

	if (!leek_library)
		SKIP("no libleek.so to run a program under (a sanitizer build)");
	tmp_dir(dir);
	snprintf(out, sizeof(out), "%s/p.%%p.lk", dir);
	run_leek(&res, NULL, (const char *[]){ "run", "-o", out, "sh", "-c", "exit 7", NULL });
	ASSERT_EQ(res.status, 7);
	ASSERT_CONTAINS(res.err, "1 profile written");
	run_leek(&res, NULL, (const char *[]){ "run", "-o", out, "--", "sh", "-c", "kill -TERM $$",
					     NULL });
	ASSERT_EQ(res.status, 128 + 15);
	ASSERT_CONTAINS(res.err, "leek: program killed by signal SIGTERM\n");
	/* The older profile in the directory is not this run's: still one. */
	ASSERT_CONTAINS(res.err, "1 profile written");
	tmp_dir_remove(dir);
}
