/* test-rotate.c: rotation of the profile by size and by age (LEEK_MAX_SIZE, LEEK_MAX_AGE,
 * LEEK_KEEP; src/preload/writer-rotate.c), with rotate.c's tallies in exact mode.
 *
 * What every rotated run must show (check_chain): the segments of the process are numbered
 * without a gap up to the newest, share their origin, and only the newest may have a trailer;
 * segment k's INHERIT records are exactly the blocks live at the end of segment k - 1, size by
 * size (the checkpoint stands for them: nothing is counted twice or lost at a boundary); the
 * newest segment alone holds the live set the program's tally says.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "proc.h"
#include "read-only.h"
#include "runner.h"

#define EXACT "LEEK_PERIOD=1"
#define KEPT 4099
#define CHURN 5003
#define LIVE 1500
#define MIB (1ull << 20)

/* Blocks of size live at the end of p: allocated or inherited, not freed. */
static uint64_t live_of(const struct profile *p, uint64_t size)
{
	uint64_t a, i, f;

	prof_count_size(p, size, &a, &i, &f);
	return a + i - f;
}

static uint64_t inherits_of(const struct profile *p, uint64_t size)
{
	uint64_t a, i, f;

	prof_count_size(p, size, &a, &i, &f);
	return i;
}

#define MAX_SEGMENTS 4096

/* A rotated run of the rotate workload (tests/preload/rotate.c): its directory and profiles (r),
 * and its segments by number (seg[k], NULL where there is none: deleted, or not reached), the
 * newest's number in newest. */
struct chain {
	struct run r;
	const struct profile *seg[MAX_SEGMENTS];
	uint32_t newest;
};

/* Files c->seg from c->r: every profile is of the run's process, one per segment, flagged as
 * rotated unless it is the first. */
static void chain_index(struct chain *c)
{
	c->newest = 0;
	memset(c->seg, 0, sizeof(c->seg));
	for (size_t i = 0; i < c->r.nprof; i++) {
		const struct profile *p = &c->r.prof[i];
		ASSERT_EQ(p->h.pid, c->r.pid);
		ASSERT_TRUE(p->segment < MAX_SEGMENTS);
		if (c->seg[p->segment])
			FAIL("two profiles of segment %u: %s and %s", p->segment,
			     c->seg[p->segment]->path, p->path);
		c->seg[p->segment] = p;
		ASSERT_EQ(!!(p->h.flags & LK_HDR_ROTATED), p->segment > 0);
		if (p->segment > c->newest)
			c->newest = p->segment;
	}
}

/* The fixture of every test here: `rotate MODE ARG` in exact mode with libleek's rotation set by
 * rotation (LEEK_MAX_SIZE=... or LEEK_MAX_AGE=...) and keep (LEEK_KEEP=..., or NULL for its
 * default), run to its end and indexed into c. Its exit status is the test's to check
 * (expect_exit0, or the kill's signal); run_cleanup(&c->r) removes it. */
static void chain_make(struct chain *c, const char *mode, const char *arg, const char *rotation,
		       const char *keep)
{
	const char *argv[] = { "rotate", mode, arg, NULL };

	run_prog(&c->r, &(struct run_opts){ .env = { EXACT, rotation, keep } }, argv);
	chain_index(c);
}

/* The checks every rotated run passes (the header comment), for the segments from first on;
 * the newest segment. */
static const struct profile *check_chain(const struct chain *c, uint32_t first, bool clean)
{
	const struct profile *const *seg = c->seg;

	for (uint32_t k = first; k <= c->newest; k++) {
		if (!seg[k])
			FAIL("segment %u of %u missing in %s", k, c->newest, c->r.dir);
		ASSERT_EQ(seg[k]->origin_ns, seg[first]->origin_ns);
		ASSERT_EQ(seg[k]->trailer, clean && k == c->newest);
		if (k > first)
			for (uint64_t size = KEPT; size <= CHURN; size += CHURN - KEPT)
				if (inherits_of(seg[k], size) != live_of(seg[k - 1], size))
					FAIL("segment %u inherits %llu blocks of %llu bytes, %llu "
					     "were live at the end of segment %u",
					     k, (unsigned long long)inherits_of(seg[k], size),
					     (unsigned long long)size,
					     (unsigned long long)live_of(seg[k - 1], size), k - 1);
	}
	for (uint32_t k = 0; k < first; k++)
		if (seg[k])
			FAIL("segment %u should have been deleted (%s)", k, seg[k]->path);
	return seg[c->newest];
}

/* The bytes of every file in dir. */
static uint64_t disk_use(const struct run *r)
{
	uint64_t sum = 0;
	struct stat st;

	for (size_t i = 0; i < r->nprof; i++)
		if (stat(r->prof[i].path, &st) == 0)
			sum += (uint64_t)st.st_blocks * 512;
	return sum;
}

/* The sum over the segments of the ALLOC and FREE records of blocks of size. */
static void totals(const struct run *r, uint64_t size, uint64_t *allocs, uint64_t *frees)
{
	*allocs = *frees = 0;
	for (size_t i = 0; i < r->nprof; i++) {
		uint64_t a, in, f;
		prof_count_size(&r->prof[i], size, &a, &in, &f);
		*allocs += a;
		*frees += f;
	}
}

TEST(rotate_by_size_joined_totals)
{
	struct chain c;

	chain_make(&c, "run", "200000", "LEEK_MAX_SIZE=64k", "LEEK_KEEP=256");
	expect_exit0(&c.r);
	if (c.r.nprof < 10)
		FAIL("%zu segments; 200 000 pairs of exact mode fill more than 10 of 64 KiB",
		     c.r.nprof);
	const struct profile *p = check_chain(&c, 0, true);
	/* The newest alone: the live set the program kept. */
	ASSERT_EQ(live_of(p, KEPT), LIVE / 2);
	ASSERT_EQ(live_of(p, CHURN), 0);
	/* Together: every allocation and free once. */
	uint64_t a, f;
	totals(&c.r, CHURN, &a, &f);
	ASSERT_EQ(a, 200000);
	ASSERT_EQ(f, 200000);
	totals(&c.r, KEPT, &a, &f);
	ASSERT_EQ(a, LIVE);
	ASSERT_EQ(f, LIVE / 2);
	for (size_t i = 0; i < c.r.nprof; i++)
		check_counters(&c.r, &c.r.prof[i], 0);
	run_cleanup(&c.r);
}

TEST(rotate_keep_deletes_oldest_disk_bound)
{
	struct chain c;

	chain_make(&c, "run", "200000", "LEEK_MAX_SIZE=64k", "LEEK_KEEP=3");
	expect_exit0(&c.r);
	ASSERT_EQ(c.r.nprof, 3);
	ASSERT_TRUE(c.newest >= 9);
	const struct profile *p = check_chain(&c, c.newest - 2, true);
	ASSERT_EQ(live_of(p, KEPT), LIVE / 2);
	/* Within docs/design.md's bound, "Bounded files", KEEP x (MAX_SIZE + C + 1 MiB) + C, even
	 * without its checkpoints C (1 500 live blocks: about 20 KB each). */
	uint64_t use = disk_use(&c.r);
	if (use > 3 * ((64u << 10) + MIB))
		FAIL("%llu bytes on disk, above 3 x (64 KiB + 1 MiB)", (unsigned long long)use);
	run_cleanup(&c.r);
}

TEST(rotate_by_age)
{
	struct chain c;

	chain_make(&c, "age", "4", "LEEK_MAX_AGE=1s", "LEEK_KEEP=256");
	expect_exit0(&c.r);
	/* 4 s at a rotation a second: 4 or 5 segments (the last second's may begin at the end). */
	if (c.r.nprof < 3 || c.r.nprof > 6)
		FAIL("%zu segments in 4 s with LEEK_MAX_AGE=1s", c.r.nprof);
	const struct profile *p = check_chain(&c, 0, true);
	ASSERT_EQ(live_of(p, KEPT), LIVE);
	for (size_t i = 0; i + 1 < c.r.nprof; i++) {
		const struct profile *q = &c.r.prof[i];
		ASSERT_TRUE(q->h.flags & LK_HDR_ROTATED || q->segment == 0);
	}
	run_cleanup(&c.r);
}

/* SIGKILL at a random moment while the file rotates every few milliseconds (64 KiB of exact
 * mode, with a checkpoint of 1 500 blocks in each): every segment reads to its last record (the
 * runner's reader), the segments are whole in number, and the newest holds the live set. */
TEST(rotate_killed_anywhere)
{
	for (unsigned seed = 1; seed <= 30; seed++) {
		struct chain c;
		char s[16];
		snprintf(s, sizeof(s), "%u", seed);
		chain_make(&c, "kill", s, "LEEK_MAX_SIZE=64k", "LEEK_KEEP=256");
		if (!WIFSIGNALED(c.r.status) || WTERMSIG(c.r.status) != SIGKILL)
			FAIL("seed %u: status %#x, expected SIGKILL; stderr:\n%s", seed, c.r.status,
			     c.r.err);
		const struct profile *p = check_chain(&c, 0, false);
		if (p->segment < 1) /* rotate.c kills after a rotation's worth of records */
			FAIL("seed %u: killed in segment %u", seed, p->segment);
		if (live_of(p, KEPT) != LIVE)
			FAIL("seed %u: the newest segment (%s) holds %llu live blocks of %d bytes, "
			     "not %d", seed, p->path, (unsigned long long)live_of(p, KEPT), KEPT,
			     LIVE);
		if (live_of(p, CHURN) > 1) /* a pair cut between its malloc and its free */
			FAIL("seed %u: %llu live churn blocks", seed,
			     (unsigned long long)live_of(p, CHURN));
		run_cleanup(&c.r);
	}
}

/* The directory made read-only under the running program: rotation fails, counted and said
 * once, and the program and its first file go on whole. */
TEST(rotate_fails_in_read_only_dir)
{
	struct chain c;
	struct run *r = &c.r;

	chain_make(&c, "ro", "100000", "LEEK_MAX_SIZE=64k", NULL);
	int dfd = open(r->dir, O_RDONLY | O_DIRECTORY);
	if (dfd >= 0) {
		dir_read_only(dfd, false);
		close(dfd);
	}
	expect_exit0(r);
	if (!strncmp(r->out, "skip ", 5)) {
		char *nl = strchr(r->out, '\n');
		if (nl)
			*nl = 0;
		run_cleanup(r);
		SKIP("%s", r->out + 5);
	}
	ASSERT_EQ(r->nprof, 1);
	const struct profile *p = main_profile(r);
	ASSERT_TRUE(p->trailer);
	ASSERT_TRUE(p->counters[LK_CNT_ROTATE_FAILED] >= 1);
	ASSERT_EQ(count_lines(r->err), 1);
	ASSERT_CONTAINS(r->err, "cannot begin a new profile segment");
	ASSERT_EQ(check_tallies(r), 2);
	check_counters(r, p, 0);
	run_cleanup(r);
}

/* `leek watch FILE` given the first segment follows the profile onto each new one, and its last
 * report (the process's exit) is of the newest segment, whose live estimate agrees with what the
 * fixture's tally says is live (its leak and its pool) to 4 sigma. */
TEST(watch_follows_rotation)
{
	struct proc svc = { 0 }, w = { 0 };
	char dir[] = "/tmp/leek-test-rotate-watch-XXXXXX", out[300], tally_path[300];
	char env_out[400];

	ASSERT_TRUE(mkdtemp(dir) != NULL);
	snprintf(out, sizeof(out), "%s/svc.lk", dir);
	snprintf(tally_path, sizeof(tally_path), "%s/tally", dir);
	snprintf(env_out, sizeof(env_out), "LEEK_OUTPUT=%s", out);
	const char *env[] = { "LD_PRELOAD=" LIBLEEK_PATH, "LEEK_PERIOD=4096", "LEEK_MAX_SIZE=64k",
			      "LEEK_KEEP=256", "LEEK_SEED=7", env_out, NULL };
	/* 4 s of 20 MB/s churn at a 4 KiB period: a segment of 64 KiB every half second or so. */
	const char *svc_argv[] = { FX_SERVICE, "4", "256K", "2M", "20M", tally_path, NULL };
	proc_start(&svc, dir, svc_argv, env, 60);
	struct stat st;
	for (int i = 0; i < 400 && stat(out, &st) < 0; i++)
		usleep(10000);
	const char *w_argv[] = { LEEK_BIN, "watch", "--every", "1s", "--format", "json", out, NULL };
	proc_run(&w, dir, w_argv, NULL, 60);
	proc_wait(&svc);
	ASSERT_EQ(svc.status, 0);
	ASSERT_EQ(w.status, 0);
	/* The last line: the exit's report. */
	char *last = w.out, *nl;
	while ((nl = strchr(last, '\n')) && nl[1])
		last = nl + 1;
	ASSERT_CONTAINS(last, "\"reason\": \"exit\"");
	ASSERT_CONTAINS(last, "\"trailer\": true");
	const char *seg = strstr(last, "svc.lk.seg");
	if (!seg)
		FAIL("watch's last report is not of a later segment:\n%.300s", last);
	if (atoi(seg + strlen("svc.lk.seg")) < 2)
		FAIL("watch's last report is of %.16s: fewer than 2 rotations in 4 s", seg);
	unsigned long long truth = 0, v;
	FILE *f = fopen(tally_path, "r");
	ASSERT_TRUE(f != NULL);
	char line[128];
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "leaked_bytes %llu", &v) == 1 || sscanf(line, "pool_bytes %llu", &v) == 1)
			truth += v;
	fclose(f);
	double lo, hi;
	const char *ci = strstr(last, "\"heap_bytes_ci95\": [");
	ASSERT_TRUE(ci && sscanf(ci, "\"heap_bytes_ci95\": [%lf, %lf]", &lo, &hi) == 2);
	/* Within 4 sigma of the estimate (a 95% interval is 1.96 sigma each side; docs/sampling.md):
	 * a chance of 6e-5 to fail by chance. */
	double mid = (lo + hi) / 2, sigma = (hi - lo) / 3.92;
	if ((double)truth < mid - 4 * sigma || (double)truth > mid + 4 * sigma)
		FAIL("live %llu bytes by the tally, more than 4 sigma from the newest segment's "
		     "estimate (95%% interval [%.0f, %.0f])", truth, lo, hi);
	proc_free(&svc);
	proc_free(&w);
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ASSERT_EQ(system(cmd), 0);
}

/* Values libleek cannot use are said in one line each, and rotation then does what the line
 * says: none for a malformed age, 64 KiB for a size below it. */
TEST(rotate_knobs_checked)
{
	struct chain c;

	chain_make(&c, "run", "20000", "LEEK_MAX_AGE=5x", "LEEK_KEEP=0");
	expect_exit0(&c.r);
	ASSERT_CONTAINS(c.r.err, "LEEK_MAX_AGE='5x' is not a duration");
	ASSERT_CONTAINS(c.r.err, "LEEK_KEEP='0' is out of range");
	ASSERT_EQ(c.r.nprof, 1);
	run_cleanup(&c.r);

	chain_make(&c, "run", "20000", "LEEK_MAX_SIZE=1k", "LEEK_KEEP=256");
	expect_exit0(&c.r);
	ASSERT_CONTAINS(c.r.err, "LEEK_MAX_SIZE is below 65536; using 65536");
	ASSERT_TRUE(c.r.nprof >= 2); /* 160 KB of exact mode at 64 KiB */
	check_chain(&c, 0, true);
	run_cleanup(&c.r);
}

/* Read alone (--segment-only), two segments of one process are not summed: report --merge, and
 * export, refuse them with both names (each would count the blocks live across the rotation
 * twice); each alone reads, and says which segment it is. Without it, naming both reads the
 * chain once. */
TEST(rotate_segments_only_not_merged)
{
	struct chain c;

	chain_make(&c, "run", "20000", "LEEK_MAX_SIZE=64k", "LEEK_KEEP=256");
	expect_exit0(&c.r);
	ASSERT_TRUE(c.newest >= 1);
	struct proc p = { 0 };
	const char *merge[] = { LEEK_BIN, "report", "--segment-only", "--merge", c.seg[0]->path,
				c.seg[1]->path, NULL };
	proc_run(&p, c.r.dir, merge, NULL, 60);
	ASSERT_EQ(p.status, 2);
	ASSERT_CONTAINS(p.err, "are segments 0 and 1 of one rotated profile");
	proc_free(&p);
	char folded[300];
	snprintf(folded, sizeof(folded), "%s/merged.folded", c.r.dir);
	const char *exp[] = { LEEK_BIN, "export", "--segment-only", "--merge", "--format", "folded",
			      "-o", folded, c.seg[0]->path, c.seg[1]->path, NULL };
	proc_run(&p, c.r.dir, exp, NULL, 60);
	ASSERT_EQ(p.status, 2);
	ASSERT_CONTAINS(p.err, "are segments 0 and 1 of one rotated profile");
	proc_free(&p);
	const char *one[] = { LEEK_BIN, "report", "--segment-only", c.seg[1]->path, NULL };
	proc_run(&p, c.r.dir, one, NULL, 60);
	ASSERT_EQ(p.status, 0);
	ASSERT_CONTAINS(p.out, "segment      1 of a rotated profile");
	proc_free(&p);
	/* Joined: both names, one report of the whole chain. */
	const char *both[] = { LEEK_BIN, "report", c.seg[0]->path, c.seg[1]->path, NULL };
	proc_run(&p, c.r.dir, both, NULL, 60);
	ASSERT_EQ(p.status, 0);
	ASSERT_CONTAINS(p.out, "of a rotated profile, read as one");
	if (strstr(strstr(p.out, "==") + 2, "\n=="))
		FAIL("two reports of one chain:\n%s", p.out);
	proc_free(&p);
	run_cleanup(&c.r);
}

/* The unsigned integer after the first `"key": ` that follows anchor in a JSON text (anchor NULL:
 * from the start); fails the test if there is none. */
static uint64_t json_after(const char *text, const char *anchor, const char *key)
{
	char k[128];
	const char *at = anchor ? strstr(text, anchor) : text;
	unsigned long long v;

	snprintf(k, sizeof(k), "\"%s\": ", key);
	if (!at || !(at = strstr(at, k)) || sscanf(at + strlen(k), "%llu", &v) != 1)
		FAIL("no \"%s\" after %s in:\n%.2000s", key, anchor ? anchor : "the start", text);
	return v;
}

/* `leek ARGS...` in r's directory, with its status, output and errors in *p. */
static void leek(struct proc *p, const struct run *r, const char *const *args)
{
	const char *argv[24] = { LEEK_BIN };
	size_t n = 1;

	for (; args[n - 1] && n < 23; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;
	*p = (struct proc){ 0 };
	proc_run(p, r->dir, argv, NULL, 120);
}

/* Sums over the segments of c (all of them, or the newest's live set alone). */
static void chain_truth(const struct chain *c, uint64_t *allocs, uint64_t *frees, uint64_t *live)
{
	const struct profile *n = c->seg[c->newest];

	*allocs = *frees = 0;
	for (size_t i = 0; i < c->r.nprof; i++) {
		*allocs += c->r.prof[i].ntag[LK_REC_ALLOC];
		*frees += c->r.prof[i].ntag[LK_REC_FREE];
	}
	*live = n->ntag[LK_REC_ALLOC] + n->ntag[LK_REC_INHERIT] - n->ntag[LK_REC_FREE];
}

/* A chain read as one, from any of its segments: in exact mode every count is the workload's,
 * summed over the segments (allocations, frees), the live set is the newest segment's, and each
 * site is one stack with its whole counts (the stacks of the segments are one). */
TEST(chain_read_joined_equals_workload)
{
	struct chain c;

	chain_make(&c, "run", "200000", "LEEK_MAX_SIZE=64k", "LEEK_KEEP=256");
	expect_exit0(&c.r);
	ASSERT_TRUE(c.newest >= 9);
	uint64_t allocs, frees, live;
	chain_truth(&c, &allocs, &frees, &live);
	ASSERT_EQ(live, LIVE / 2 + 1); /* and stdio's buffer */
	const char *names[] = { c.seg[0]->path, c.seg[c.newest / 2]->path, c.seg[c.newest]->path };
	for (size_t i = 0; i < 3; i++) {
		struct proc p;
		leek(&p, &c.r, (const char *[]){ "report", "--format", "json", names[i], NULL });
		ASSERT_EQ(p.status, 0);
		ASSERT_EQ(json_after(p.out, NULL, "segments"), c.newest + 1);
		ASSERT_EQ(json_after(p.out, NULL, "segments_missing"), 0);
		ASSERT_EQ(json_after(p.out, NULL, "chain_unmatched"), 0);
		ASSERT_EQ(json_after(p.out, NULL, "chain_dropped"), 0);
		ASSERT_EQ(json_after(p.out, "\"totals\"", "samples"), allocs);
		ASSERT_EQ(json_after(p.out, "\"totals\"", "frees"), frees);
		ASSERT_EQ(json_after(p.out, "\"totals\"", "alloc_objects"), allocs);
		ASSERT_EQ(json_after(p.out, "\"totals\"", "live_objects_end"), live);
		ASSERT_EQ(json_after(p.out, "\"function\": \"keep\"", "live_objects"), LIVE / 2);
		ASSERT_EQ(json_after(p.out, "\"function\": \"keep\"", "alloc_objects"), LIVE);
		ASSERT_EQ(json_after(p.out, "\"function\": \"keep\"", "stacks"), 1);
		proc_free(&p);
	}
	struct proc p;
	leek(&p, &c.r, (const char *[]){ "report", "alloc", "--format", "json", names[1], NULL });
	ASSERT_EQ(p.status, 0);
	ASSERT_EQ(json_after(p.out, "\"function\": \"pair\"", "alloc_objects"), 200000);
	ASSERT_EQ(json_after(p.out, "\"function\": \"pair\"", "stacks"), 1);
	proc_free(&p);
	/* Text: which segments. */
	leek(&p, &c.r, (const char *[]){ "report", names[2], NULL });
	ASSERT_EQ(p.status, 0);
	char line[96];
	snprintf(line, sizeof(line), "segments     0-%u of a rotated profile, read as one", c.newest);
	ASSERT_CONTAINS(p.out, line);
	ASSERT_TRUE(!strstr(p.err, "no trailer"));
	proc_free(&p);
	run_cleanup(&c.r);
}

/* LEEK_KEEP deleted the oldest: the timeline begins at the oldest kept segment, whose INHERITs are
 * blocks from before; the report says which segments are missing and that their totals are not
 * in it. The live set is still whole. */
TEST(chain_with_deleted_segments_says_so)
{
	struct chain c;

	chain_make(&c, "run", "200000", "LEEK_MAX_SIZE=64k", "LEEK_KEEP=3");
	expect_exit0(&c.r);
	ASSERT_TRUE(c.newest >= 9);
	uint64_t allocs, frees, live;
	chain_truth(&c, &allocs, &frees, &live);
	struct proc p;
	leek(&p, &c.r, (const char *[]){ "report", "--format", "json", c.seg[c.newest]->path, NULL });
	ASSERT_EQ(p.status, 0);
	ASSERT_EQ(json_after(p.out, NULL, "segments"), 3);
	ASSERT_EQ(json_after(p.out, NULL, "segments_missing"), c.newest - 2);
	ASSERT_EQ(json_after(p.out, NULL, "chain_unmatched"), 0);
	ASSERT_EQ(json_after(p.out, "\"totals\"", "samples"), allocs);
	ASSERT_EQ(json_after(p.out, "\"totals\"", "live_objects_end"), live);
	proc_free(&p);
	leek(&p, &c.r, (const char *[]){ "report", c.seg[c.newest - 2]->path, NULL });
	ASSERT_EQ(p.status, 0);
	char line[160];
	snprintf(line, sizeof(line), "missing      segments 0-%u (deleted: LEEK_KEEP)", c.newest - 3);
	ASSERT_CONTAINS(p.out, line);
	snprintf(line, sizeof(line), "segment %u is not in the totals", c.newest - 2);
	ASSERT_CONTAINS(p.out, line);
	proc_free(&p);
	run_cleanup(&c.r);
}

/* A segment missing between two kept ones is an error that names it; two files of one segment,
 * and a file named as a segment that another process wrote, are errors too: exit 2. Each file
 * still reads alone with --segment-only. */
TEST(chain_gap_duplicate_foreign_refused)
{
	struct chain c;
	char cmd[1200], copy[320];
	struct proc p;

	chain_make(&c, "run", "100000", "LEEK_MAX_SIZE=64k", "LEEK_KEEP=256");
	expect_exit0(&c.r);
	ASSERT_TRUE(c.newest >= 4);
	/* Two segment 3s. */
	snprintf(copy, sizeof(copy), "%s.1", c.seg[3]->path);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", c.seg[3]->path, copy);
	ASSERT_EQ(system(cmd), 0);
	leek(&p, &c.r, (const char *[]){ "report", c.seg[c.newest]->path, NULL });
	ASSERT_EQ(p.status, 2);
	ASSERT_CONTAINS(p.err, "are both segment 3 of pid");
	proc_free(&p);
	/* A foreign one: the copy's pid changed (bytes 20-23 of the header). */
	FILE *f = fopen(copy, "r+b");
	ASSERT_TRUE(f != NULL);
	uint32_t other = (uint32_t)c.r.pid + 1;
	ASSERT_EQ(fseek(f, 20, SEEK_SET), 0);
	ASSERT_EQ(fwrite(&other, 4, 1, f), 1);
	ASSERT_EQ(fclose(f), 0);
	leek(&p, &c.r, (const char *[]){ "report", c.seg[0]->path, NULL });
	ASSERT_EQ(p.status, 2);
	ASSERT_CONTAINS(p.err, "but another process wrote it");
	proc_free(&p);
	ASSERT_EQ(unlink(copy), 0);
	/* A gap: segment 2 gone. */
	ASSERT_EQ(unlink(c.seg[2]->path), 0);
	leek(&p, &c.r, (const char *[]){ "report", c.seg[c.newest]->path, NULL });
	ASSERT_EQ(p.status, 2);
	ASSERT_CONTAINS(p.err, "segment 2 of pid");
	ASSERT_CONTAINS(p.err, "is missing");
	proc_free(&p);
	leek(&p, &c.r, (const char *[]){ "report", "--segment-only", c.seg[c.newest]->path, NULL });
	ASSERT_EQ(p.status, 0);
	proc_free(&p);
	run_cleanup(&c.r);
}

/* The lines of text that begin with prefix. */
static unsigned lines_with(const char *text, const char *prefix)
{
	unsigned n = 0;

	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
		n += !strncmp(l, prefix, strlen(prefix));
	return n;
}

/* `leek dump --chain` of any segment prints every segment whole, oldest first, each under its
 * FILE line, with no warning for the older ones' missing trailers (and a chain once, however
 * many of its segments are named); without it, the named file alone. A gap is an error. */
TEST(dump_chain_prints_each_segment)
{
	struct chain c;
	struct proc p;
	char line[400];

	chain_make(&c, "run", "40000", "LEEK_MAX_SIZE=64k", "LEEK_KEEP=256");
	expect_exit0(&c.r);
	ASSERT_TRUE(c.newest >= 2);
	leek(&p, &c.r, (const char *[]){ "dump", "--chain", c.seg[1]->path, NULL });
	ASSERT_EQ(p.status, 0);
	ASSERT_STREQ(p.err, "");
	ASSERT_EQ(lines_with(p.out, "FILE "), c.newest + 1);
	ASSERT_EQ(lines_with(p.out, "END "), c.newest + 1);
	ASSERT_EQ(lines_with(p.out, "END offset="), c.newest + 1);
	const char *at = p.out;
	for (uint32_t k = 0; k <= c.newest; k++) {
		snprintf(line, sizeof(line), "FILE %s\nHEADER ", c.seg[k]->path);
		if (!(at = strstr(at, line)))
			FAIL("no FILE line of segment %u (%s) after segment %u's", k, c.seg[k]->path,
			     k ? k - 1 : 0);
		const char *end = strstr(at, "\nEND offset=");
		ASSERT_TRUE(end != NULL);
		const char *want = k == c.newest ? " trailer=yes\n" : " trailer=no\n";
		const char *tr = strstr(end, " trailer=");
		ASSERT_TRUE(tr && !strncmp(tr, want, strlen(want)));
		at = end;
	}
	proc_free(&p);
	/* Named twice, printed once. */
	leek(&p, &c.r, (const char *[]){ "dump", "--chain", c.seg[c.newest]->path, c.seg[0]->path,
					 NULL });
	ASSERT_EQ(p.status, 0);
	ASSERT_EQ(lines_with(p.out, "FILE "), c.newest + 1);
	proc_free(&p);
	/* Summaries: one a segment; the older ones said to be continued, not crashed. */
	leek(&p, &c.r, (const char *[]){ "dump", "--summary", "--chain", c.seg[0]->path, NULL });
	ASSERT_EQ(p.status, 0);
	ASSERT_STREQ(p.err, "");
	ASSERT_EQ(lines_with(p.out, "file:"), c.newest + 1);
	ASSERT_EQ(lines_with(p.out, "trailer:     no: an older segment of its chain"), c.newest);
	ASSERT_EQ(lines_with(p.out, "trailer:     yes"), 1);
	proc_free(&p);
	/* Without --chain: the file alone, and its missing trailer said. */
	leek(&p, &c.r, (const char *[]){ "dump", c.seg[1]->path, NULL });
	ASSERT_EQ(p.status, 0);
	ASSERT_EQ(lines_with(p.out, "FILE "), 1);
	snprintf(line, sizeof(line), "FILE %s\n", c.seg[1]->path);
	ASSERT_TRUE(!strncmp(p.out, line, strlen(line)));
	ASSERT_CONTAINS(p.err, "warning: no trailer");
	proc_free(&p);
	/* A gap: segment 1 gone. */
	ASSERT_EQ(unlink(c.seg[1]->path), 0);
	leek(&p, &c.r, (const char *[]){ "dump", "--chain", c.seg[0]->path, NULL });
	ASSERT_EQ(p.status, 2);
	ASSERT_CONTAINS(p.err, "segment 1 of pid");
	ASSERT_CONTAINS(p.err, "is missing");
	ASSERT_EQ(lines_with(p.out, "FILE "), 0);
	proc_free(&p);
	run_cleanup(&c.r);
}

/* Killed at a random point of its rotations, the chain reads joined: the live set the program
 * kept, each block counted once (no INHERIT left unmatched, no live block dropped). */
TEST(chain_killed_reads_joined)
{
	for (unsigned seed = 3; seed <= 30; seed += 9) {
		struct chain c;
		char s[16];
		snprintf(s, sizeof(s), "%u", seed);
		chain_make(&c, "kill", s, "LEEK_MAX_SIZE=64k", "LEEK_KEEP=256");
		ASSERT_TRUE(WIFSIGNALED(c.r.status));
		const struct profile *p0 = check_chain(&c, 0, false);
		uint64_t allocs, frees, live;
		chain_truth(&c, &allocs, &frees, &live);
		struct proc p;
		leek(&p, &c.r, (const char *[]){ "report", "--format", "json", p0->path, NULL });
		ASSERT_EQ(p.status, 0);
		ASSERT_EQ(json_after(p.out, NULL, "segments"), p0->segment + 1);
		ASSERT_EQ(json_after(p.out, NULL, "chain_unmatched"), 0);
		ASSERT_EQ(json_after(p.out, NULL, "chain_dropped"), 0);
		ASSERT_EQ(json_after(p.out, "\"totals\"", "samples"), allocs);
		ASSERT_EQ(json_after(p.out, "\"totals\"", "frees"), frees);
		ASSERT_EQ(json_after(p.out, "\"totals\"", "live_objects_end"), live);
		ASSERT_EQ(json_after(p.out, "\"function\": \"keep\"", "live_objects"), LIVE);
		proc_free(&p);
		run_cleanup(&c.r);
	}
}

/* Marks in different segments: report --from --to and diff of the two marks read across the
 * rotations; the window's allocations are the pairs between them (some, not all). */
TEST(chain_marks_across_segments)
{
	struct proc svc = { 0 }, p;
	char dir[] = "/tmp/leek-test-rotate-marks-XXXXXX", out[300], env_out[400], spid[16];
	struct run r = { 0 };

	ASSERT_TRUE(mkdtemp(dir) != NULL);
	snprintf(r.dir, sizeof(r.dir), "%s", dir);
	snprintf(out, sizeof(out), "%s/svc.lk", dir);
	snprintf(env_out, sizeof(env_out), "LEEK_OUTPUT=%s", out);
	const char *env[] = { "LD_PRELOAD=" LIBLEEK_PATH, EXACT, "LEEK_MAX_AGE=1s",
			      "LEEK_KEEP=256", env_out, NULL };
	const char *svc_argv[] = { PROG_DIR "/rotate", "age", "4", NULL };
	proc_start(&svc, dir, svc_argv, env, 60);
	snprintf(spid, sizeof(spid), "%d", (int)svc.pid);
	struct stat st;
	for (int i = 0; i < 400 && stat(out, &st) < 0; i++)
		usleep(10000);
	usleep(300000);
	leek(&p, &r, (const char *[]){ "ctl", spid, "mark", "first", NULL });
	ASSERT_EQ(p.status, 0);
	proc_free(&p);
	usleep(2200000); /* two rotations or more at 1 s */
	leek(&p, &r, (const char *[]){ "ctl", spid, "mark", "second", NULL });
	ASSERT_EQ(p.status, 0);
	proc_free(&p);
	proc_wait(&svc);
	ASSERT_EQ(svc.status, 0);
	char seg1[320];
	snprintf(seg1, sizeof(seg1), "%s.seg2", out);
	ASSERT_EQ(stat(seg1, &st), 0);
	leek(&p, &r, (const char *[]){ "report", "alloc", "--from", "first", "--to", "second",
				       "--format", "json", seg1, NULL });
	ASSERT_EQ(p.status, 0);
	uint64_t pairs = json_after(p.out, "\"function\": \"pair\"", "alloc_objects");
	proc_free(&p);
	leek(&p, &r, (const char *[]){ "report", "alloc", "--format", "json", seg1, NULL });
	ASSERT_EQ(p.status, 0);
	uint64_t all = json_after(p.out, "\"function\": \"pair\"", "alloc_objects");
	/* 2.2 s or more at a pair every 20 ms or more (nanosleep sleeps at least that): 5 at the
	 * least under any load; fewer than all, since pairs came before the first mark. */
	if (pairs < 5 || pairs >= all)
		FAIL("%llu pairs between the marks, %llu in all", (unsigned long long)pairs,
		     (unsigned long long)all);
	uint64_t marks = json_after(p.out, "\"totals\"", "marks_total");
	ASSERT_EQ(marks, 2);
	uint64_t frees = json_after(p.out, "\"totals\"", "frees");
	proc_free(&p);
	leek(&p, &r, (const char *[]){ "diff", "--from", "first", "--to", "second", "--format",
				       "json", out, NULL });
	ASSERT_EQ(p.status, 0);
	ASSERT_CONTAINS(p.out, "\"function\": \"pair\"");
	proc_free(&p);
	/* export of the chain, read by go tool pprof: the pairs of the whole chain */
	char pb[320];
	snprintf(pb, sizeof(pb), "%s/chain.pb.gz", dir);
	leek(&p, &r, (const char *[]){ "export", "--format", "pprof", "-o", pb, out, NULL });
	ASSERT_EQ(p.status, 0);
	proc_free(&p);
	/* watch started on the finished chain: its one report spans every segment, the frees of
	 * segments 0 and 1 included */
	leek(&p, &r, (const char *[]){ "watch", "--format", "json", seg1, NULL });
	ASSERT_EQ(p.status, 0);
	ASSERT_CONTAINS(p.out, "\"reason\": \"exit\"");
	ASSERT_EQ(json_after(p.out, NULL, "frees_total"), frees);
	proc_free(&p);
	proc_free(&svc);
	char go_bin[300] = "";
	FILE *which = popen("command -v go", "r");
	if (which && fgets(go_bin, sizeof(go_bin), which))
		go_bin[strcspn(go_bin, "\n")] = 0;
	if (which)
		pclose(which);
	if (*go_bin == '/') {
		const char *go[] = { go_bin, "tool", "pprof", "-raw", pb, NULL };
		struct proc g = { 0 };
		proc_run(&g, dir, go, NULL, 120);
		ASSERT_EQ(g.status, 0);
		ASSERT_CONTAINS(g.out, "pair");
		proc_free(&g);
	}
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ASSERT_EQ(system(cmd), 0);
	if (*go_bin != '/')
		SKIP("no go in PATH to read the export with `go tool pprof` (Debian: golang-go)");
}

/* leek run --max-size --keep: libleek rotates, leek run compresses the segments it kept (and no
 * others) and summarizes the newest, saying how many older ones there are. */
TEST(run_rotates_and_summarizes_newest)
{
	char dir[] = "/tmp/leek-test-rotate-run-XXXXXX", prof[300], out[320];
	struct proc p = { 0 };

	ASSERT_TRUE(mkdtemp(dir) != NULL);
	snprintf(prof, sizeof(prof), "%s/prof", dir); /* the profiles alone: proc.h's files apart */
	ASSERT_EQ(mkdir(prof, 0700), 0);
	snprintf(out, sizeof(out), "%s/r.lk", prof);
	const char *argv[] = { LEEK_BIN, "run", "--period", "1", "--max-size", "64k", "--keep", "2",
			       "-o", out, "--", PROG_DIR "/rotate", "run", "100000", NULL };
	proc_run(&p, dir, argv, NULL, 120);
	ASSERT_EQ(p.status, 0);
	ASSERT_CONTAINS(p.err, "of pid");
	ASSERT_CONTAINS(p.err, "rotated profile, 1 older segment kept");
	ASSERT_CONTAINS(p.err, "1 profile written");
	/* Two .zst files, the newest two segments, and nothing raw. */
	DIR *d = opendir(prof);
	ASSERT_TRUE(d != NULL);
	struct dirent *de;
	unsigned zst = 0, other = 0;
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		if (de->d_name[0] == '.')
			continue;
		if (n > 4 && !strcmp(de->d_name + n - 4, ".zst") && strstr(de->d_name, "r.lk.seg"))
			zst++;
		else
			other++;
	}
	closedir(d);
	ASSERT_EQ(zst, 2);
	ASSERT_EQ(other, 0);
	proc_free(&p);
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ASSERT_EQ(system(cmd), 0);
}
