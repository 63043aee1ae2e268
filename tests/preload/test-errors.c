/* test-errors.c: the memory errors libleek catches (src/preload/errors.c) in the fixture
 * tests/fixtures/fx-memerr.c, one bug a run in exact mode, where every block is in the arena:
 * the ERROR record and its fields, the report on stderr, the exit (SIGABRT, as glibc's), and with
 * LEEK_ABORT_ON_ERROR=0 a program that goes on with a whole profile; then `leek report errors`
 * on those profiles, text and JSON, its stacks symbolized to the fixture's functions.
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "harness.h"
#include "json-get.h"
#include "json.h"
#include "leek.h"
#include "runner.h"

#define EXACT "LEEK_PERIOD=1"

/* fx-memerr BUG in exact mode, with one more environment entry (or NULL). */
static void run_bug(struct run *r, const char *bug, const char *env)
{
	const char *argv[] = { "fx-memerr", bug, NULL };

	run_prog(r, &(struct run_opts){ .env = { EXACT, env }, .exe = FX_MEMERR }, argv);
}

static void expect_abort(const struct run *r)
{
	if (!WIFSIGNALED(r->status) || WTERMSIG(r->status) != SIGABRT)
		FAIL("status %#x, expected SIGABRT; stderr:\n%.4000s", r->status, r->err);
	ASSERT_TRUE(!strstr(r->out, "bug done"));
}

/* The one ERROR of the run's profile, of kind `kind`, its stacks through the fixture's code. */
static const struct error *the_error(const struct run *r, uint64_t kind)
{
	ASSERT_EQ(r->nprof, 1);
	const struct profile *p = main_profile(r);
	ASSERT_EQ(p->nerrors, 1);
	ASSERT_EQ(p->ntag[LK_REC_ERROR], 1);
	const struct error *e = &p->errors[0];
	ASSERT_EQ(e->kind, kind);
	ASSERT_TRUE(e->tid == (uint64_t)r->pid);
	ASSERT_TRUE(stack_in_module(p, e->stack, "fx-memerr"));
	ASSERT_TRUE(stack_in_module(p, e->alloc_stack, "fx-memerr"));
	ASSERT_TRUE(e->stack != e->alloc_stack);
	return e;
}

static void double_free(const char *bug, uint64_t size)
{
	struct run r;

	run_bug(&r, bug, NULL);
	expect_abort(&r);
	const struct error *e = the_error(&r, LK_ERR_DOUBLE_FREE);
	ASSERT_EQ(e->block_size, size);
	ASSERT_EQ(e->addr, e->block_addr);
	ASSERT_EQ(e->block, 0); /* freed: its number ended with its FREE */
	ASSERT_EQ(e->free_stack, 0); /* no LEEK_FREE_STACKS */
	ASSERT_CONTAINS(r.err, "leek: ERROR: double free of 0x");
	ASSERT_CONTAINS(r.err, "is the start of a freed block of");
	ASSERT_CONTAINS(r.err, "aborting");
	/* The report names the profile that has the record. */
	char hint[600];
	snprintf(hint, sizeof(hint), "are in the profile: leek report errors %s\n",
		 main_profile(&r)->path);
	ASSERT_CONTAINS(r.err, hint);
	run_cleanup(&r);
}

TEST(double_free_slot)
{
	double_free("double-free", 1013);
}

TEST(double_free_run)
{
	double_free("double-free-run", 5003);
}

/* With LEEK_FREE_STACKS the freed header keeps the stack that freed it, and the record has it. */
TEST(double_free_with_free_stack)
{
	struct run r;

	run_bug(&r, "double-free", "LEEK_FREE_STACKS=1");
	expect_abort(&r);
	const struct error *e = the_error(&r, LK_ERR_DOUBLE_FREE);
	const struct profile *p = main_profile(&r);
	ASSERT_TRUE(stack_in_module(p, e->free_stack, "fx-memerr"));
	ASSERT_TRUE(e->free_stack != e->stack && e->free_stack != e->alloc_stack);
	run_cleanup(&r);
}

TEST(invalid_free_interior)
{
	struct run r;

	run_bug(&r, "invalid-free", NULL);
	expect_abort(&r);
	const struct error *e = the_error(&r, LK_ERR_INVALID_FREE);
	ASSERT_EQ(e->addr, e->block_addr + 16);
	ASSERT_EQ(e->block_size, 1013);
	ASSERT_TRUE(e->block != 0); /* live: its number is known */
	ASSERT_CONTAINS(r.err, "leek: ERROR: invalid free of 0x");
	ASSERT_CONTAINS(r.err, "is inside a live block of 1013 bytes");
	run_cleanup(&r);
}

TEST(realloc_of_freed)
{
	struct run r;

	run_bug(&r, "realloc-freed", NULL);
	expect_abort(&r);
	const struct error *e = the_error(&r, LK_ERR_REALLOC_FREED);
	ASSERT_EQ(e->block_size, 3011);
	ASSERT_CONTAINS(r.err, "leek: ERROR: realloc of a freed block of 0x");
	run_cleanup(&r);
}

/* LEEK_ABORT_ON_ERROR=0: the bad free is ignored, the program ends normally, and its profile is
 * whole (a trailer, every FREE of a live block: runner.c), with the error counted in bad_free. */
TEST(continue_after_error)
{
	static const char *const bugs[] = { "double-free", "double-free-run", "invalid-free",
					    "realloc-freed" };

	for (size_t i = 0; i < sizeof(bugs) / sizeof(bugs[0]); i++) {
		struct run r;
		run_bug(&r, bugs[i], "LEEK_ABORT_ON_ERROR=0");
		expect_clean(&r, 1, (1ull << LK_CNT_BAD_FREE));
		ASSERT_CONTAINS(r.out, "bug done");
		ASSERT_CONTAINS(r.err, "the free is ignored");
		const struct profile *p = main_profile(&r);
		ASSERT_EQ(p->nerrors, 1);
		ASSERT_EQ(p->counters[LK_CNT_BAD_FREE], 1);
		run_cleanup(&r);
	}
}

/* LEEK_QUIET=1 keeps stderr empty (a setuid program's addresses), the record is written. */
TEST(quiet_report)
{
	struct run r;

	run_bug(&r, "double-free", "LEEK_QUIET=1");
	expect_abort(&r);
	the_error(&r, LK_ERR_DOUBLE_FREE);
	ASSERT_TRUE(!strstr(r.err, "leek:"));
	run_cleanup(&r);
}

/* ---- leek report errors ---- */

/* `leek report errors [-f json] PROFILE` of a run: its exit status 0, its stdout in *out. */
static void report(const struct run *r, bool json, struct proc *out)
{
	const char *text[] = { "report", "errors", main_profile(r)->path, NULL };
	const char *js[] = { "report", "errors", "-f", "json", main_profile(r)->path, NULL };

	leek_exec(out, r->dir, NULL, json ? js : text, 60);
	if (out->status != 0)
		FAIL("leek report errors: status %d; stderr:\n%s", out->status, out->err);
}

TEST(report_errors_text)
{
	struct run r;
	struct proc out;

	run_bug(&r, "double-free", "LEEK_FREE_STACKS=1");
	expect_abort(&r);
	report(&r, false, &out);
	ASSERT_CONTAINS(out.out, "1 error caught; the process did not exit normally");
	ASSERT_CONTAINS(out.out, "error 1: double-free of 0x");
	ASSERT_CONTAINS(out.out, "the address is the start of a block of 1013 bytes at 0x");
	/* The three stacks, in order, each at its function in the fixture. */
	const char *again = strstr(out.out, "  freed again:\n    > fx_bad_free (");
	const char *alloc = strstr(out.out, "  allocated:\n    > fx_alloc (");
	const char *freed = strstr(out.out, "  freed:\n    > fx_free (");
	if (!again || !alloc || !freed || !(again < alloc && alloc < freed))
		FAIL("the stacks of the double free, its allocation and its first free, in that "
		     "order, at fx_bad_free, fx_alloc and fx_free:\n%s", out.out);
	run_cleanup(&r);
}

TEST(report_errors_json)
{
	struct run r;
	struct proc out;
	struct json *doc = NULL;
	char jerr[128];

	run_bug(&r, "invalid-free", NULL);
	expect_abort(&r);
	report(&r, true, &out);
	ASSERT_EQ(json_parse(out.out, out.out_len, &doc, jerr, sizeof(jerr)), 0);
	ASSERT_STREQ(json_str(json_get(doc, "format")), "leek-errors");
	ASSERT_EQ(get_u64(doc, "version"), 1);
	const struct json *p = json_path(doc, "processes.0");
	ASSERT_EQ(get_u64(p, "errors_total"), 1);
	ASSERT_TRUE(!get_bool(p, "complete"));
	const struct json *e = json_path(p, "errors.0");
	ASSERT_STREQ(get_str(e, "kind"), "invalid-free");
	ASSERT_EQ(get_u64(e, "block_size"), 1013);
	ASSERT_EQ(get_num(e, "offset"), 16);
	ASSERT_TRUE(get_u64(e, "block") != 0);
	ASSERT_STREQ(json_str(json_path(e, "site.function")), "fx_bad_free");
	ASSERT_STREQ(json_str(json_path(e, "alloc_site.function")), "fx_alloc");
	ASSERT_TRUE(json_get(e, "free_site") && json_get(e, "free_site")->type == JSON_NULL);
	ASSERT_EQ(get_u64(e, "free_stack_id"), 0);
	ASSERT_STREQ(json_str(json_path(e, "stack.1.function")), "main");
	/* The addresses are strings of hex, one apart by the offset. */
	unsigned long long a, b;
	ASSERT_EQ(sscanf(get_str(e, "address"), "0x%llx", &a), 1);
	ASSERT_EQ(sscanf(get_str(e, "block_address"), "0x%llx", &b), 1);
	ASSERT_EQ(a - b, 16);
	json_free(doc);
	run_cleanup(&r);
}

/* A profile with no error: said in one line, exit 0. */
TEST(report_errors_none)
{
	struct run r;
	struct proc out;
	const char *argv[] = { "exact", NULL };

	run_prog(&r, &(struct run_opts){ .env = { EXACT } }, argv);
	expect_exit0(&r);
	report(&r, false, &out);
	ASSERT_CONTAINS(out.out, "no errors caught\n");
	run_cleanup(&r);
}

/* ---- guard mode (LEEK_GUARD): faults where they happen ---- */

#define GUARD "LEEK_GUARD=1000" /* more slots than the fixture has blocks: each one guarded */

/* fx-memerr BUG in exact guard mode: killed by sig, one ERROR of kind, at a block of size. */
static const struct error *guard_bug(struct run *r, const char *bug, const char *align, int sig,
				     uint64_t kind, uint64_t size)
{
	const char *argv[] = { "fx-memerr", bug, NULL };

	run_prog(r, &(struct run_opts){ .env = { EXACT, GUARD, align }, .exe = FX_MEMERR }, argv);
	if (!WIFSIGNALED(r->status) || WTERMSIG(r->status) != sig)
		FAIL("%s: status %#x, expected SIG%s; stderr:\n%.4000s", bug, r->status,
		     sigabbrev_np(sig), r->err);
	ASSERT_TRUE(!strstr(r->out, "bug done"));
	const struct error *e = the_error(r, kind);
	ASSERT_EQ(e->block_size, size);
	return e;
}

TEST(guard_overflow)
{
	struct run r;
	const struct error *e = guard_bug(&r, "overflow", NULL, SIGSEGV, LK_ERR_OVERFLOW, 96);

	ASSERT_EQ(e->addr, e->block_addr + 96); /* 96 is a multiple of 16: no slack */
	ASSERT_TRUE(e->block != 0);
	ASSERT_CONTAINS(r.err, "leek: ERROR: heap-buffer-overflow at 0x");
	struct proc out;
	report(&r, false, &out);
	ASSERT_CONTAINS(out.out, "the address is 1 byte past the end of a block of 96 bytes");
	ASSERT_CONTAINS(out.out, "  accessed:\n    > fx_write (");
	run_cleanup(&r);
}

TEST(guard_underflow_far)
{
	struct run r;
	const struct error *e = guard_bug(&r, "underflow-far", "LEEK_GUARD_ALIGN=left", SIGSEGV,
					  LK_ERR_UNDERFLOW, 96);

	ASSERT_EQ(e->addr, e->block_addr - 64);
	run_cleanup(&r);
}

/* One byte before a left-aligned block lands in its header: found at its free, which aborts. */
TEST(guard_underflow_into_header)
{
	struct run r;
	const struct error *e = guard_bug(&r, "underflow", "LEEK_GUARD_ALIGN=left", SIGABRT,
					  LK_ERR_UNDERFLOW, 96);

	ASSERT_EQ(e->addr, e->block_addr);
	run_cleanup(&r);
}

static void guard_uaf(const char *bug, uint64_t kind)
{
	struct run r;
	const struct error *e = guard_bug(&r, bug, NULL, SIGSEGV, kind, 200);
	const struct profile *p = main_profile(&r);

	ASSERT_EQ(e->addr, e->block_addr + 10);
	ASSERT_EQ(e->block, 0); /* freed */
	/* A guarded block's free takes its stack, LEEK_FREE_STACKS or not. */
	ASSERT_TRUE(stack_in_module(p, e->free_stack, "fx-memerr"));
	ASSERT_TRUE(e->free_stack != e->alloc_stack && e->free_stack != e->stack);
	struct proc out;
	report(&r, false, &out);
	ASSERT_CONTAINS(out.out, kind == LK_ERR_UAF_READ ? "  read:\n    > fx_read ("
							 : "  written:\n    > fx_write (");
	ASSERT_CONTAINS(out.out, "  freed:\n    > fx_free (");
	run_cleanup(&r);
}

TEST(guard_use_after_free_read)
{
	guard_uaf("uaf-read", LK_ERR_UAF_READ);
}

TEST(guard_use_after_free_write)
{
	guard_uaf("uaf-write", LK_ERR_UAF_WRITE);
}

/* A program's own SIGSEGV handler, installed after leek's, gets its own faults, and the program
 * goes on; nothing is reported. */
TEST(guard_program_handler)
{
	struct run r;
	const char *argv[] = { "fx-memerr", "own-segv", NULL };

	run_prog(&r, &(struct run_opts){ .env = { EXACT, GUARD }, .exe = FX_MEMERR }, argv);
	expect_clean(&r, 1, 0);
	ASSERT_CONTAINS(r.out, "own fault handled");
	ASSERT_EQ(main_profile(&r)->nerrors, 0);
	ASSERT_TRUE(!strstr(r.err, "leek:"));
	run_cleanup(&r);
}

/* A program's SIGSEGV handler set after leek's, in each of the ways (fx-memerr chain MODE): it
 * reads back its own action, gets its own three faults untouched and unreported, and then the
 * guarded overflow too, after leek has written its record and report (record, then chain). */
static void chain_run(const char *mode, int sig)
{
	struct run r;
	const char *argv[] = { "fx-memerr", "chain", mode, NULL };
	char ok[32];

	run_prog(&r, &(struct run_opts){ .env = { EXACT, GUARD }, .exe = FX_MEMERR }, argv);
	if (sig ? !WIFSIGNALED(r.status) || WTERMSIG(r.status) != sig
		: !WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0)
		FAIL("chain %s: status %#x; stdout:\n%s\nstderr:\n%.4000s", mode, r.status, r.out,
		     r.err);
	snprintf(ok, sizeof(ok), "chain %s ok\n", mode);
	ASSERT_CONTAINS(r.out, ok);
	ASSERT_CONTAINS(r.out, "bug done");
	const struct error *e = the_error(&r, LK_ERR_OVERFLOW); /* one: the program's are not */
	ASSERT_EQ(e->block_size, 96);
	ASSERT_EQ(e->addr, e->block_addr + 96);
	const char *report = strstr(r.err, "leek: ERROR: heap-buffer-overflow at 0x");
	const char *handler = strstr(r.err, "program handler: guarded fault");
	ASSERT_TRUE(report && handler && report < handler);
	ASSERT_TRUE(!strstr(report + 1, "leek: ERROR"));
	/* The report names the profile it wrote. */
	char hint[600];
	snprintf(hint, sizeof(hint), "leek report errors %s\n", main_profile(&r)->path);
	ASSERT_CONTAINS(r.err, hint);
	run_cleanup(&r);
}

TEST(guard_chain_siginfo_mprotect)
{
	chain_run("info", 0);
}

TEST(guard_chain_plain_handler)
{
	chain_run("plain", 0);
}

/* SA_RESETHAND: the default action after each fault, as sigaction reads back; the last fault,
 * with the default action in place, kills the program, and leek reports none of its own. */
TEST(guard_chain_resethand)
{
	chain_run("reset", SIGSEGV);
}

/* SIGSEGV's action in the kernel, which the program cannot see through sigaction: with guard mode
 * off, the program's own (leek touches nothing); on, leek's handler, in front of the program's. */
TEST(guard_segv_kernel_action)
{
	struct run r;
	const char *argv[] = { "fx-memerr", "raw-segv", NULL };

	run_prog(&r, &(struct run_opts){ .env = { EXACT }, .exe = FX_MEMERR }, argv);
	expect_clean(&r, 1, 0);
	ASSERT_CONTAINS(r.out, "raw before: default\nraw after: the program's\n");
	run_cleanup(&r);
	run_prog(&r, &(struct run_opts){ .env = { EXACT, GUARD }, .exe = FX_MEMERR }, argv);
	expect_clean(&r, 1, 0);
	ASSERT_CONTAINS(r.out, "raw before: another\nraw after: another\n");
	run_cleanup(&r);
}

/* Guard mode off: the overflow writes into the block's slack as it would under glibc, unseen, and
 * the program ends normally (no page, no handler). */
TEST(guard_off_changes_nothing)
{
	struct run r;
	const char *argv[] = { "fx-memerr", "overflow", NULL };

	run_prog(&r, &(struct run_opts){ .env = { EXACT }, .exe = FX_MEMERR }, argv);
	expect_clean(&r, 1, 0);
	ASSERT_CONTAINS(r.out, "bug done");
	ASSERT_EQ(main_profile(&r)->nerrors, 0);
	run_cleanup(&r);
}

/* The chance that guard mode guards an allocation of s bytes at the default period T is the
 * chance that it is sampled, 1 - exp(-s/T), while a slot is free (docs/sampling.md, section 14).
 * fx-memerr's catch-rate frees each 4000-byte block at once, so a slot is always free: over 4
 * seeds of 50 000 blocks, the guarded count is binomial, n = 200 000, p = 1 - exp(-4000/524288) =
 * 0.0075999, mean 1520, sigma 38.8; the bound is 4 sigma. Every guarded block is a sample and
 * every sample of 4000 bytes is guarded: the profile's ALLOCs of that size are the count. */
TEST(guard_catch_rate_default_period)
{
	const double n = 200000, p = 1 - exp(-4000.0 / 524288), mean = n * p,
		     sigma = sqrt(n * p * (1 - p));
	unsigned long total = 0;

	for (int seed = 1; seed <= 4; seed++) {
		struct run r;
		char s[32];
		const char *argv[] = { "fx-memerr", "catch-rate", "50000", "4000", NULL };
		snprintf(s, sizeof(s), "LEEK_SEED=%d", seed);
		run_prog(&r, &(struct run_opts){ .env = { "LEEK_GUARD=64", s }, .exe = FX_MEMERR },
			 argv);
		expect_clean(&r, 1, 0);
		unsigned long guarded = 0, of = 0;
		const char *at = strstr(r.out, "guarded ");
		ASSERT_TRUE(at && sscanf(at, "guarded %lu of %lu", &guarded, &of) == 2);
		ASSERT_EQ(of, 50000);
		uint64_t allocs, inherits, freed;
		prof_count_size(main_profile(&r), 4000, &allocs, &inherits, &freed);
		ASSERT_EQ(allocs, guarded);
		ASSERT_EQ(freed, guarded);
		printf("# seed %d: %lu of 50000 guarded\n", seed, guarded);
		total += guarded;
		run_cleanup(&r);
	}
	printf("# %lu of %.0f guarded; expected %.1f, sigma %.1f\n", total, n, mean, sigma);
	fflush(stdout); /* the harness's child ends with _exit */
	ASSERT_TRUE(fabs((double)total - mean) <= 4 * sigma);
}

/* `leek run --guard=N` sets LEEK_GUARD: the overflow is caught, the exit status is the program's
 * (128 + SIGSEGV, as a shell shows it), and `leek report errors` reads the profile it names. A
 * count out of range is a usage error. */
TEST(guard_leek_run)
{
	char dir[] = "/tmp/leek-guard-run-XXXXXX", out[300];
	struct proc p, rep;

	ASSERT_TRUE(mkdtemp(dir) != NULL);
	snprintf(out, sizeof(out), "%s/g.lk", dir);
	const char *args[] = { "run", "--guard=8", "-p", "1", "--no-compress", "-o", out, FX_MEMERR,
			       "overflow", NULL };
	leek_exec(&p, dir, NULL, args, 60);
	ASSERT_EQ(p.status, 128 + SIGSEGV);
	ASSERT_CONTAINS(p.err, "leek: ERROR: heap-buffer-overflow at 0x");
	const char *rargs[] = { "report", "errors", out, NULL };
	leek_exec(&rep, dir, NULL, rargs, 60);
	ASSERT_EQ(rep.status, 0);
	ASSERT_CONTAINS(rep.out, "error 1: overflow of 0x");

	const char *bad[] = { "run", "--guard=0", FX_MEMERR, "overflow", NULL };
	leek_exec(&p, dir, NULL, bad, 60);
	ASSERT_EQ(p.status, 1);
	ASSERT_CONTAINS(p.err, "--guard=0: not a count from 1 to 16384");
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ASSERT_EQ(system(cmd), 0);
}
