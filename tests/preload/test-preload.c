/* test-preload.c: runs the programs of tests/preload under libleek and checks what they did.
 *
 * Each TEST runs one program (runner.h) in a fresh directory: the program checks its own
 * semantics and must exit 0 within its timeout; then every profile it wrote must read to the end
 * and satisfy the invariants that runner.c enforces while loading, and the scenario's own
 * expectations below. Programs whose answers belong to the allocator (realloc, aligned, usable,
 * errno) also run without leek, and their output must be identical with and without it, on each
 * of glibc, jemalloc, tcmalloc, tcmalloc_minimal and mimalloc (the allocator matrix).
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "files.h"
#include "harness.h"
#include "read.h"
#include "runner.h"

#define SEED "LEEK_SEED=12345"
#define EXACT "LEEK_PERIOD=1"
#define DEFAULT "LEEK_QUIET=0" /* the default period: a setting that changes nothing */
#define LOSS(c) (1ull << (c))

#if !defined(LIBUW_A_PATH) || !defined(LIBUW_B_PATH)
#error "meson passes LIBUW_A_PATH and LIBUW_B_PATH, the libraries unwind-dl.c loads"
#endif
#ifndef LIBDLO_PATH
#error "meson passes LIBDLO_PATH, the library dlopen.c loads"
#endif

/* Runs argv without leek and under each of the given environments, and requires the same stdout.
 * alloc: the allocator, preloaded alone for the reference run and after libleek for the others
 * ("" for glibc). */
static void same_output(const char *const *argv, const char *alloc, const char *const *envs,
			uint64_t allowed)
{
	struct run ref, r;
	char preload[1024];

	run_prog(&ref, &(struct run_opts){ .preload = alloc }, argv);
	expect_exit0(&ref);
	ASSERT_EQ(ref.nprof, 0);
	snprintf(preload, sizeof(preload), "%s%s%s", LIBLEEK_PATH, *alloc ? " " : "", alloc);
	for (const char *const *env = envs; *env; env++) {
		run_prog(&r, &(struct run_opts){ .preload = preload, .env = { *env, SEED } }, argv);
		expect_clean(&r, 1, allowed);
		if (strcmp(ref.out, r.out)) {
			const char *a = ref.out, *b = r.out;
			while (*a && *a == *b)
				a++, b++;
			while (a > ref.out && a[-1] != '\n')
				a--, b--;
			FAIL("%s under leek (%s, LD_PRELOAD=%s) differs from %s alone; first "
			     "difference:\n  without: %.200s\n  with:    %.200s\nfiles in %s",
			     argv[0], *env, preload, *alloc ? alloc : "glibc", a, b, r.dir);
		}
		if (r.exact)
			ASSERT_TRUE(main_profile(&r)->ntag[LK_REC_ALLOC] > 0);
		run_cleanup(&r);
	}
	run_cleanup(&ref);
}

/* ---- threads handing blocks to each other ---- */

static unsigned long printed(const struct run *r, const char *key)
{
	const char *s = strstr(r->out, key);

	if (!s)
		FAIL("no \"%s\" in the output of pid %d", key, (int)r->pid);
	return strtoul(s + strlen(key), NULL, 10);
}

static void threads(const char *preload, const char *period, const char *iterations)
{
	struct run r;
	const char *argv[] = { "threads", iterations, NULL };

	run_prog(&r, &(struct run_opts){ .preload = preload, .env = { period, SEED } }, argv);
	expect_clean(&r, 1, 0);
	const struct profile *p = main_profile(&r);
	unsigned long allocs = printed(&r, "allocs ");
	ASSERT_TRUE(allocs > 0);
	ASSERT_TRUE(p->ntag[LK_REC_ALLOC] > 0);
	if (r.exact) {
		/* Every block the program made is recorded, and every one of them was freed. */
		ASSERT_TRUE(p->h.flags & LK_HDR_EXACT);
		ASSERT_EQ(p->h.period, 1);
		ASSERT_TRUE(p->ntag[LK_REC_ALLOC] >= allocs);
		ASSERT_TRUE(p->ntag[LK_REC_FREE] >= allocs);
		/* Each of the program's four threads filled segments of its own, with no lock
		 * (docs/design.md, "Threads"). */
		ASSERT_TRUE(p->ntag[LK_REC_SEGMENT] >= 4);
	} else {
		ASSERT_TRUE(!(p->h.flags & LK_HDR_EXACT));
		ASSERT_EQ(p->h.seed, 12345);
	}
	run_cleanup(&r);
}

TEST(threads_default)
{
	threads(NULL, DEFAULT, "20000");
}

TEST(threads_period_4k)
{
	threads(NULL, "LEEK_PERIOD=4096", "20000");
}

TEST(threads_exact)
{
	threads(NULL, EXACT, "8000");
}

/* LEEK_FREE_STACKS in exact mode on the threads that hand blocks to each other: every FREE names
 * the stack that freed it but those a signal handler deferred (none here), the FREE_STACKs in the
 * main stream beside the threads' segments of ALLOCs, and the reader's merge of the two holds
 * (runner.c: every FREE of a live block, every stack written before it is named). */
TEST(threads_exact_free_stacks)
{
	struct run r;
	const char *argv[] = { "threads", "4000", NULL };

	run_prog(&r, &(struct run_opts){ .env = { EXACT, SEED, "LEEK_FREE_STACKS=1" } }, argv);
	expect_clean(&r, 1, 0);
	const struct profile *p = main_profile(&r);
	ASSERT_TRUE(p->ntag[LK_REC_FREE] >= printed(&r, "allocs "));
	ASSERT_EQ(p->free_stacks + p->counters[LK_CNT_DEFERRED_FREES], p->ntag[LK_REC_FREE]);
	ASSERT_TRUE(p->ntag[LK_REC_SEGMENT] >= 4); /* the ALLOCs still in the threads' segments */
	run_cleanup(&r);
}

/* The same at the default period, and with signal handlers that free while the thread is in
 * leek: their frees are deferred, and only they come without a stack. */
TEST(free_stacks_sampled_and_deferred)
{
	struct run r;
	const char *argv[] = { "threads", "20000", NULL };

	run_prog(&r, &(struct run_opts){ .env = { "LEEK_PERIOD=4096", SEED, "LEEK_FREE_STACKS=1" } },
		 argv);
	expect_clean(&r, 1, 0);
	const struct profile *p = main_profile(&r);
	ASSERT_TRUE(p->free_stacks > 0);
	ASSERT_EQ(p->free_stacks + p->counters[LK_CNT_DEFERRED_FREES], p->ntag[LK_REC_FREE]);
	run_cleanup(&r);

	const char *sig[] = { "signals", NULL };
	run_prog(&r, &(struct run_opts){ .env = { EXACT, "LEEK_FREE_STACKS=1" } }, sig);
	expect_clean(&r, 1, 0);
	p = main_profile(&r);
	ASSERT_TRUE(p->free_stacks > 0);
	ASSERT_EQ(p->free_stacks + p->counters[LK_CNT_DEFERRED_FREES], p->ntag[LK_REC_FREE]);
	run_cleanup(&r);
}

/* The threads' RSS records, each claimed by one thread and its /proc read outside lk_lock
 * (writer.c's lk_writer_rss_unlocked): every millisecond, with no loss and every block recorded. */
TEST(threads_exact_rss)
{
	struct run r;
	const char *argv[] = { "threads", "8000", NULL };

	run_prog(&r, &(struct run_opts){ .env = { EXACT, SEED, "LEEK_RSS_INTERVAL_MS=1" } }, argv);
	expect_clean(&r, 1, 0);
	const struct profile *p = main_profile(&r);
	ASSERT_TRUE(p->ntag[LK_REC_SEGMENT] >= 4);
	ASSERT_TRUE(p->ntag[LK_REC_ALLOC] >= printed(&r, "allocs "));
	ASSERT_TRUE(p->ntag[LK_REC_RSS] >= 3); /* the first sample's and exit's, and the threads' */
	run_cleanup(&r);
}

/* The body of the thread segment that holds the ALLOC of a block of `size` by thread tid, for
 * each such block in file order: its SEGMENT's offset, into at[] (at most n). */
static size_t bodies_of(const char *path, uint64_t tid, uint64_t size, uint64_t *at, size_t n)
{
	struct lk_reader *rd = lk_reader_new();
	struct { uint64_t seg, body, len; } segs[4096];
	size_t nsegs = 0, found = 0;
	struct lk_record rec;
	int k;

	ASSERT_TRUE(rd != NULL);
	ASSERT_OK(lk_reader_open(rd, path));
	while ((k = lk_reader_next(rd, &rec)) > 0) {
		if (rec.tag == LK_REC_SEGMENT && rec.segment.tid == tid && nsegs < 4096)
			segs[nsegs++] = (typeof(segs[0])){ rec.offset, rec.segment.body_offset,
							    rec.segment.length };
		if (rec.tag != LK_REC_ALLOC || rec.alloc.tid != tid || rec.alloc.size != size ||
		    found == n)
			continue;
		at[found] = 0;
		for (size_t i = 0; i < nsegs; i++)
			if (rec.offset - segs[i].body < segs[i].len)
				at[found] = segs[i].seg;
		found++;
	}
	ASSERT_EQ(k, 0);
	lk_reader_free(rd);
	return found;
}

/* Threads that sleep between bursts of allocations, beside a busy one: their bodies are ended
 * from the busy thread while they sleep, at times while they store a record, and nothing is lost.
 * A thread that allocates once, sleeps while the file grows by megabytes, and allocates again,
 * finds its body ended and begins a new one. */
TEST(threads_sleeping_bodies_ended)
{
	struct run r;
	const char *argv[] = { "sleepers", "400", NULL };
	uint64_t at[2];

	run_prog(&r, &(struct run_opts){ .env = { EXACT, SEED }, .timeout = 60 }, argv);
	expect_clean(&r, 1, 0);
	ASSERT_EQ(check_tallies(&r), 6); /* 4 sleepers, the busy thread, the one that slept */
	const struct profile *p = main_profile(&r);
	ASSERT_EQ(bodies_of(p->path, printed(&r, "once "), 6007, at, 2), 2);
	ASSERT_TRUE(at[0] != 0 && at[1] != 0); /* both in a body */
	if (at[0] == at[1])
		FAIL("both blocks of the thread that slept are in the body at %llu: it was never "
		     "ended", (unsigned long long)at[0]);
	run_cleanup(&r);
}

/* ---- fork, vfork+exec, posix_spawn ---- */

static void fork_exact(const char *walk)
{
	struct run r;
	const char *argv[] = { "fork", walk, NULL };

	/* The program is sound on its own. */
	run_prog(&r, &(struct run_opts){ .preload = "" }, argv);
	expect_exit0(&r);
	run_cleanup(&r);

	run_prog(&r, &(struct run_opts){ .env = { EXACT }, .timeout = 15 }, argv);
	/* The parent, 24 children, 1 grandchild, and /bin/true twice. */
	expect_clean(&r, 28, 0);
	ASSERT_EQ(check_tallies(&r), 1 + 24 * 4 + 3);

	unsigned forked = 0, trues = 0;
	for (size_t i = 0; i < r.nprof; i++) {
		const struct profile *p = &r.prof[i];
		const char *slash = strrchr(p->exe, '/');
		if (p->h.pid == (uint32_t)r.pid) {
			ASSERT_TRUE(!(p->h.flags & LK_HDR_FORKED));
		} else if (slash && !strcmp(slash, "/true")) {
			/* exec'd: a new program, not a fork, whose parent is ours */
			ASSERT_TRUE(!(p->h.flags & LK_HDR_FORKED));
			ASSERT_EQ(p->h.ppid, r.pid);
			trues++;
		} else {
			ASSERT_TRUE(p->h.flags & LK_HDR_FORKED);
			ASSERT_TRUE(p->h.flags & LK_HDR_EXACT);
			ASSERT_TRUE(prof_by_pid(&r, (pid_t)p->h.ppid) != NULL);
			ASSERT_TRUE(p->ntag[LK_REC_INHERIT] > 0);
			ASSERT_TRUE(p->ntag[LK_REC_MODULE] > 0); /* a new file gets every module again */
			forked++;
		}
	}
	ASSERT_EQ(forked, 25);
	ASSERT_EQ(trues, 2);
	run_cleanup(&r);
}

TEST(fork_exact)
{
	fork_exact(NULL);
}

/* fork while another thread of the program is inside dl_iterate_phdr: the child inherits the
 * loader's lock held (glibc does not reset it), so a child that calls into the loader hangs. */
TEST(fork_while_program_in_loader)
{
	fork_exact("--walk-phdr");
}

TEST(fork_default)
{
	struct run r;
	const char *argv[] = { "fork", NULL };

	run_prog(&r, &(struct run_opts){ .env = { SEED }, .timeout = 15 }, argv);
	expect_exit0(&r);
	/* Children that never sampled write no file; those that did end with a trailer. */
	ASSERT_TRUE(r.nprof >= 3);
	for (size_t i = 0; i < r.nprof; i++) {
		ASSERT_TRUE(r.prof[i].trailer);
		check_counters(&r, &r.prof[i], 0);
	}
	run_cleanup(&r);
}

/* ---- dlopen/dlclose against allocating threads ---- */

static void dlopen_run(const char *period, bool exact)
{
	struct run r;
	const char *argv[] = { "dlopen", LIBDLO_PATH, "1000", NULL };

	run_prog(&r, &(struct run_opts){ .env = { period, SEED }, .timeout = 40 }, argv);
	expect_clean(&r, 1, 0);
	const struct profile *p = main_profile(&r);
	unsigned loads = 0, unloads = 0, stacks = 0;
	for (size_t i = 0; i < p->nmodules; i++)
		if (strstr(p->modules[i].path, "libdlo.so")) {
			loads++;
			unloads += !p->modules[i].loaded;
		}
	for (size_t i = 1; i <= p->nstacks; i++)
		stacks += stack_in_module(p, i, "libdlo.so");
	if (exact && (loads == 0 || unloads == 0 || stacks == 0))
		FAIL("%s: libdlo.so loaded %u times, unloaded %u times, in %u stacks", p->path,
		     loads, unloads, stacks);
	run_cleanup(&r);
}

TEST(dlopen_default)
{
	dlopen_run(DEFAULT, false);
}

TEST(dlopen_exact)
{
	dlopen_run(EXACT, true);
}

/* ---- signal handlers ---- */

TEST(signals_default)
{
	struct run r;
	const char *argv[] = { "signals", NULL };

	run_prog(&r, &(struct run_opts){ .env = { SEED } }, argv);
	expect_clean(&r, 1, 0);
	run_cleanup(&r);
}

TEST(signals_exact)
{
	struct run r;
	const char *argv[] = { "signals", NULL };

	run_prog(&r, &(struct run_opts){ .env = { EXACT } }, argv);
	expect_clean(&r, 1, 0);
	ASSERT_EQ(check_tallies(&r), 3); /* 3333, 4444, and 5555 from the interrupting phase */
	run_cleanup(&r);
}

/* ---- the allocator matrix: each allocator behind leek answers as it does alone ---- */

/* leek is preloaded first and the allocator after it, so that leek's RTLD_NEXT finds the
 * allocator (real.c). Each program's answers (realloc, the aligned family, usable sizes, errno)
 * are compared with the same program on the same allocator without leek, never with glibc's. The
 * arguments make a program sound on an allocator that would fail it alone, or print the tables
 * whose answers depend on the request alone on that allocator (usable.c says which). */
struct allocator {
	const char *name, *path; /* path "": glibc, no preload */
	const char *package;     /* the Debian package that has it (scripts/setup installs it) */
	const char *aligned_arg, *errno_arg, *usable_args[3];
};

enum { GLIBC, JEMALLOC, TCMALLOC, TCMALLOC_MINIMAL, MIMALLOC };

#define LIBDIR "/usr/lib/x86_64-linux-gnu/"

static const struct allocator allocators[] = {
	[GLIBC] = { "glibc", "", "libc6" },
	/* Debian's jemalloc has no pvalloc (glibc's would give jemalloc's free a block of glibc's
	 * heap). Its failed realloc beyond PTRDIFF_MAX leaves errno alone, where its malloc sets
	 * ENOMEM: leek's realloc of a sampled block must fail as the real realloc does. */
	[JEMALLOC] = { "jemalloc", JEMALLOC_PATH, "libjemalloc2", "--no-pvalloc", "--no-pvalloc",
		       { "--large", "--aligned", "2097152" } },
	[TCMALLOC] = { "tcmalloc", LIBDIR "libtcmalloc.so.4", "libgoogle-perftools4", NULL, NULL,
		       { "--large", "--aligned", "2097152" } },
	[TCMALLOC_MINIMAL] = { "tcmalloc_minimal", LIBDIR "libtcmalloc_minimal.so.4",
			       "libtcmalloc-minimal4", NULL, NULL, { "--large", "--aligned", "2097152" } },
	/* mimalloc's first malloc leaves ENOENT in errno (errno.c, --warm). Its usable size of a
	 * block aligned beyond 64 KiB depends on where the block lands, not on the request alone. */
	[MIMALLOC] = { "mimalloc", LIBDIR "libmimalloc.so.2", "libmimalloc2.0", NULL, "--warm",
		       { "--large", "--aligned", "65536" } },
};

/* true, or the test is skipped if the allocator's library is not installed (scripts/setup installs
 * all of them, so this happens only on a machine set up by hand). */
static bool have(const struct allocator *a)
{
	if (!*a->path || !access(a->path, R_OK))
		return true;
	SKIP("%s is missing (install %s; scripts/setup does)", a->path, a->package);
}

/* argv: prog, then the optional arguments (NULLs skipped), then NULL. */
static void argv_of(const char **argv, const char *prog, const char *const *args, size_t nargs)
{
	size_t n = 0;

	argv[n++] = prog;
	for (size_t i = 0; i < nargs; i++)
		if (args[i])
			argv[n++] = args[i];
	argv[n] = NULL;
}

static void realloc_matrix(const struct allocator *a)
{
	const char *argv[] = { "realloc", NULL };
	const char *envs[] = { EXACT, "LEEK_PERIOD=65536", "LEEK_PERIOD=4k", DEFAULT, NULL };

	/* A failed huge request may be counted as a sample the arena could not hold. */
	same_output(argv, a->path, envs, LOSS(LK_CNT_ARENA_FULL));
}

static void aligned_matrix(const struct allocator *a)
{
	const char *argv[3];
	const char *envs[] = { EXACT, "LEEK_PERIOD=65536", DEFAULT, NULL };

	argv_of(argv, "aligned", &a->aligned_arg, 1);
	same_output(argv, a->path, envs, LOSS(LK_CNT_ARENA_FULL));
}

/* Exact mode: every block sampled, its usable size computed by leek; the default period: almost
 * every block unsampled, its usable size the allocator's own, through leek's hook. */
static void usable_matrix(const struct allocator *a)
{
	const char *argv[5];
	const char *envs[] = { EXACT, "LEEK_PERIOD=4096", DEFAULT, NULL };

	argv_of(argv, "usable", a->usable_args, 3);
	same_output(argv, a->path, envs, 0);
	if (!*a->path)
		return;
	/* The allocator was really the one answering: its table is not glibc's. */
	struct run mine, libc;
	run_prog(&mine, &(struct run_opts){ .preload = a->path }, argv);
	run_prog(&libc, &(struct run_opts){ .preload = "" }, argv);
	expect_exit0(&mine);
	expect_exit0(&libc);
	if (!strcmp(mine.out, libc.out))
		FAIL("usable sizes with LD_PRELOAD=%s are glibc's: was it loaded?", a->path);
	run_cleanup(&mine);
	run_cleanup(&libc);
}

static void errno_matrix(const struct allocator *a)
{
	const char *argv[3];
	const char *envs[] = { EXACT, DEFAULT, NULL };

	argv_of(argv, "errno", &a->errno_arg, 1);
	same_output(argv, a->path, envs, 0);
}

static void threads_matrix(const struct allocator *a)
{
	char preload[1024];

	snprintf(preload, sizeof(preload), "%s %s", LIBLEEK_PATH, a->path);
	threads(preload, DEFAULT, "20000");
	threads(preload, EXACT, "5000");
}

/* glibc: its own constants, checked on the reference run, show that the programs ask what they
 * mean to ask; then the same comparisons as for every allocator. */
TEST(realloc_glibc)
{
	const char *argv[] = { "realloc", NULL };
	struct run ref;

	run_prog(&ref, &(struct run_opts){ .preload = "" }, argv);
	expect_exit0(&ref);
	ASSERT_CONTAINS(ref.out, "realloc(malloc(100),0) -> NULL errno=unchanged");
	ASSERT_CONTAINS(ref.out, "realloc(malloc(300000),0) -> NULL errno=unchanged");
	ASSERT_CONTAINS(ref.out, "reallocarray(p,SIZE_MAX/2,3) -> NULL errno=ENOMEM");
	ASSERT_CONTAINS(ref.out, "calloc(SIZE_MAX/2,3) -> NULL errno=ENOMEM");
	ASSERT_CONTAINS(ref.out, "realloc(malloc(100),0xffffffffffffefff) -> NULL errno=ENOMEM");
	run_cleanup(&ref);
	realloc_matrix(&allocators[GLIBC]);
}

TEST(aligned_glibc)
{
	const char *argv[] = { "aligned", NULL };
	struct run ref;

	run_prog(&ref, &(struct run_opts){ .preload = "" }, argv);
	expect_exit0(&ref);
	ASSERT_CONTAINS(ref.out, "posix_memalign(3,10) -> EINVAL out=untouched");
	ASSERT_CONTAINS(ref.out, "posix_memalign(24,10) -> EINVAL out=untouched");
	ASSERT_CONTAINS(ref.out, "posix_memalign(0,10) -> EINVAL out=untouched");
	run_cleanup(&ref);
	aligned_matrix(&allocators[GLIBC]);
}

TEST(usable_glibc)
{
	const char *argv[] = { "usable", NULL };
	struct run ref;

	/* glibc's own table follows its chunk arithmetic: max(32, (n + 8 + 15) & ~15) - 8. */
	run_prog(&ref, &(struct run_opts){ .preload = "" }, argv);
	expect_exit0(&ref);
	unsigned rows = 0;
	for (const char *s = ref.out; (s = strstr(s, "usable ")); s++) {
		unsigned long n, u;
		ASSERT_EQ(sscanf(s, "usable %lu %lu", &n, &u), 2);
		unsigned long want = ((n + 8 + 15) & ~15ul) < 32 ? 24 : ((n + 8 + 15) & ~15ul) - 8;
		if (u != want)
			FAIL("glibc: malloc_usable_size(malloc(%lu)) = %lu, formula %lu", n, u,
			     want);
		rows++;
	}
	ASSERT_TRUE(rows > 4096);
	run_cleanup(&ref);
	usable_matrix(&allocators[GLIBC]);
}

TEST(errno_glibc)
{
	errno_matrix(&allocators[GLIBC]);
}

/* The same five tests for each allocator after leek. */
#define ALLOCATOR_TESTS(name, idx)                                                                 \
	TEST(realloc_##name)                                                                       \
	{                                                                                          \
		if (have(&allocators[idx]))                                                        \
			realloc_matrix(&allocators[idx]);                                          \
	}                                                                                          \
	TEST(aligned_##name)                                                                       \
	{                                                                                          \
		if (have(&allocators[idx]))                                                        \
			aligned_matrix(&allocators[idx]);                                          \
	}                                                                                          \
	TEST(usable_##name)                                                                        \
	{                                                                                          \
		if (have(&allocators[idx]))                                                        \
			usable_matrix(&allocators[idx]);                                           \
	}                                                                                          \
	TEST(errno_##name)                                                                         \
	{                                                                                          \
		if (have(&allocators[idx]))                                                        \
			errno_matrix(&allocators[idx]);                                            \
	}                                                                                          \
	TEST(threads_##name)                                                                       \
	{                                                                                          \
		if (have(&allocators[idx]))                                                        \
			threads_matrix(&allocators[idx]);                                          \
	}

ALLOCATOR_TESTS(jemalloc, JEMALLOC)
ALLOCATOR_TESTS(tcmalloc, TCMALLOC)
ALLOCATOR_TESTS(tcmalloc_minimal, TCMALLOC_MINIMAL)
ALLOCATOR_TESTS(mimalloc, MIMALLOC)

/* ---- C++ through libstdc++ ---- */

TEST(cxx_exact)
{
	struct run r;
	const char *argv[] = { "cxx", NULL };

	run_prog(&r, &(struct run_opts){ .env = { EXACT } }, argv);
	expect_clean(&r, 1, 0);
	ASSERT_EQ(check_tallies(&r), 6);
	const struct profile *p = main_profile(&r);
	/* new[] of 77777 bytes: frame 0 is operator new[] in libstdc++, and main is further out. */
	unsigned n = 0;
	for (size_t i = 0; i < p->nblocks; i++) {
		const struct block *b = &p->blocks[i];
		if (b->size != 77777 && b->size != 6400)
			continue;
		if (!stack_in_module(p, b->stack, "libstdc++") || !stack_in_module(p, b->stack, p->exe))
			FAIL("%s: the stack of a %llu-byte block (id %llu) is in:\n%s", p->path,
			     (unsigned long long)b->size, (unsigned long long)b->stack,
			     b->stack ? p->stacks[b->stack - 1].modules : "(none)");
		n++; /* cxx.cc checks the alignment of what it got */
	}
	ASSERT_EQ(n, 20);
	run_cleanup(&r);
}

TEST(cxx_default)
{
	struct run r;
	const char *argv[] = { "cxx", NULL };

	run_prog(&r, &(struct run_opts){ .env = { SEED } }, argv);
	expect_clean(&r, 1, 0);
	run_cleanup(&r);
}

/* ---- exact mode: the fixture's counts, to the block ---- */

TEST(exact_counts)
{
	struct run r;
	const char *argv[] = { "exact", NULL };
	static const uint64_t sizes[] = { 4099, 4101, 5001, 9001, 13001, 101, 109, 6007, 3001, 7013 };

	run_prog(&r, &(struct run_opts){ .env = { EXACT } }, argv);
	expect_clean(&r, 1, 0);
	ASSERT_EQ(check_tallies(&r), 10);
	const struct profile *p = main_profile(&r);
	ASSERT_TRUE(p->h.flags & LK_HDR_EXACT);
	uint64_t live = 0;
	for (size_t i = 0; i < p->nblocks; i++) {
		const struct block *b = &p->blocks[i];
		for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			if (b->size != sizes[k])
				continue;
			live += !b->freed;
			if (!stack_in_module(p, b->stack, p->exe))
				FAIL("%s: a %llu-byte block's stack does not pass through %s",
				     p->path, (unsigned long long)b->size, p->exe);
		} /* exact.c checks the alignment of what it got */
	}
	ASSERT_EQ(live, printed(&r, "live "));
	run_cleanup(&r);
}

/* With LEEK_ABORT_ON_ERROR=0, bad_free counts the program's own bad frees, each once, and nothing
 * else: badfree.c's double frees (on one thread, under lk_lock, and on a thread with a record of
 * its own, with no lock) and its realloc of a freed block, each an ERROR record (test-errors.c
 * checks their fields, and the abort that is the default). The profile holds one FREE a block
 * (runner.c fails a FREE of a block that is not live; the tallies count them). */
TEST(exact_bad_frees_counted)
{
	struct run r;
	const char *argv[] = { "badfree", NULL };

	run_prog(&r, &(struct run_opts){ .env = { EXACT, "LEEK_ABORT_ON_ERROR=0" } }, argv);
	expect_clean(&r, 1, LOSS(LK_CNT_BAD_FREE));
	ASSERT_EQ(check_tallies(&r), 5);
	ASSERT_EQ(main_profile(&r)->counters[LK_CNT_BAD_FREE], printed(&r, "bad "));
	ASSERT_EQ(printed(&r, "bad "), 5);
	ASSERT_EQ(main_profile(&r)->nerrors, 5);
	run_cleanup(&r);
}

/* A stack cut at LEEK_MAX_FRAMES is a loss counted once a sample, whether the sample's walk was
 * taken or found kept (walks-kept.c, lk_stack_kept: the count waits for the sample, so one that then
 * goes to the full capture is not counted twice). Every one of exact.c's own allocations is more
 * than 3 frames deep (its function, main, libc's start, _start). */
TEST(exact_cut_stacks_counted_once)
{
	struct run r;
	const char *argv[] = { "exact", NULL };
	static const uint64_t sizes[] = { 4099, 4101, 5001, 9001, 13001, 101, 109, 6007, 3001, 7013 };

	run_prog(&r, &(struct run_opts){ .env = { EXACT, "LEEK_MAX_FRAMES=3" } }, argv);
	expect_clean(&r, 1, 0);
	const struct profile *p = main_profile(&r);
	uint64_t own = 0;
	for (size_t i = 0; i < p->nblocks; i++)
		for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
			own += p->blocks[i].size == sizes[k];
	ASSERT_TRUE(own >= 100);
	ASSERT_TRUE(p->counters[LK_CNT_STACK_TRUNCATED] >= own);
	ASSERT_TRUE(p->counters[LK_CNT_STACK_TRUNCATED] <= p->counters[LK_CNT_SAMPLES]);
	run_cleanup(&r);
}

/* Exact mode keeps 64 MiB of freed arena pages for reuse, unless LEEK_ARENA_RETAIN says otherwise
 * (src/common/options.h): the arena holds the whole heap there, and 2 MiB made python3.11 fault
 * 100 000 pages back in. retain.c frees 2048 pages of blocks and allocates them again: with 64
 * MiB kept, the pages are reused (the faults left are the profile's new pages, a few), and with
 * LEEK_ARENA_RETAIN=2M all but 512 of them go back to the kernel and fault in again. */
TEST(exact_arena_retain)
{
	struct run r;
	const char *argv[] = { "retain", NULL };

	run_prog(&r, &(struct run_opts){ .env = { EXACT } }, argv);
	expect_clean(&r, 1, 0);
	unsigned long pages = printed(&r, "pages ");
	ASSERT_EQ(pages, 2048);
	ASSERT_TRUE(printed(&r, "refaulted ") < pages / 8);
	run_cleanup(&r);

	run_prog(&r, &(struct run_opts){ .env = { EXACT, "LEEK_ARENA_RETAIN=2M" } }, argv);
	expect_clean(&r, 1, 0);
	ASSERT_TRUE(printed(&r, "refaulted ") > pages / 2);
	run_cleanup(&r);
}

/* The profile's pages are put into the page cache before the window stores into them
 * (writer-window.c, page_in), so that a MiB of profile costs the program a fault a 64 KiB folio on
 * a kernel whose page cache has large folios, not one a page. pagein.c measures both ways on a scratch file next
 * to the profile, and leek's own: leek's must be the first kind, within a quarter of the way to
 * the second (window moves cost a few more). On Linux 6.18 and ext4: 16, 255 and 33. */
TEST(exact_profile_paged_in)
{
	struct run r;
	const char *argv[] = { "pagein", NULL };

	run_prog(&r, &(struct run_opts){ .env = { EXACT } }, argv);
	expect_clean(&r, 1, 0);
	unsigned long fallocated = printed(&r, "fallocated "), paged = printed(&r, "paged "),
		      leek = printed(&r, "leek ");
	run_cleanup(&r);
	if (paged * 2 > fallocated)
		SKIP("this kernel faults in a page a fault either way (%lu and %lu faults a MiB): "
		     "leek %lu", paged, fallocated, leek);
	ASSERT_TRUE(leek <= paged + (fallocated - paged) / 4);
}

/* ---- the cached unwinder against an independent one ---- */

/* unwind.c writes, for each of its allocations, the callers that glibc's backtrace() saw; the
 * profile's stack for that size must list the same callers (frame 0, the return address into the
 * allocating function itself, differs from backtrace's by design). Also under a period small
 * enough to sample each of its ~70 KB allocations, so that the default sampling path is used. */
static void unwind_check(const char *const *argv, const char *setting, int min_checked,
			 int min_deep)
{
	struct run r;
	char path[512];

	run_prog(&r, &(struct run_opts){ .env = { setting, SEED } }, argv);
	expect_clean(&r, 1, 0);
	const struct profile *p = main_profile(&r);
	snprintf(path, sizeof(path), "%s/%s.expect", r.dir, argv[0]);
	FILE *f = fopen(path, "r");
	ASSERT_TRUE(f != NULL);
	size_t size;
	int n, checked = 0, deep = 0;
	while (fscanf(f, "%zu %d", &size, &n) == 2) {
		uint64_t want[64];
		ASSERT_TRUE(n > 0 && n <= 64);
		for (int k = 0; k < n; k++) {
			unsigned long v;
			ASSERT_EQ(fscanf(f, " %lx", &v), 1);
			want[k] = v;
		}
		const struct block *b = NULL;
		for (size_t i = 0; i < p->nblocks && !b; i++)
			if (p->blocks[i].size == size)
				b = &p->blocks[i];
		if (!b)
			FAIL("%s: no block of %zu bytes", p->path, size);
		ASSERT_TRUE(b->stack > 0 && b->stack <= p->nstacks);
		const struct stack *st = &p->stacks[b->stack - 1];
		if (st->nframes != (uint32_t)n + 1)
			FAIL("%s: %zu bytes: %u frames, backtrace() saw %d callers + 1", p->path,
			     size, st->nframes, n);
		for (int k = 0; k < n; k++)
			if (st->frames[k + 1] != want[k])
				FAIL("%s: %zu bytes: frame %d is %#llx, backtrace() saw %#llx",
				     p->path, size, k + 1, (unsigned long long)st->frames[k + 1],
				     (unsigned long long)want[k]);
		checked++;
		deep += n > 30;
	}
	fclose(f);
	ASSERT_EQ((unsigned long)checked, printed(&r, "notes "));
	ASSERT_TRUE(checked >= min_checked && deep >= min_deep);
	run_cleanup(&r);
}

static void unwind_run(const char *setting)
{
	const char *argv[] = { "unwind", NULL };

	unwind_check(argv, setting, 300, 20);
}

TEST(unwind_exact)
{
	unwind_run(EXACT);
}

TEST(unwind_sampled)
{
	unwind_run("LEEK_PERIOD=64");
}

/* Code without unwind information (a JIT's) between an allocating function and callers without
 * frame pointers (jit.c): the walk goes through it by its frame-pointer chain and on into the
 * callers, whose offset rules start from the CFA it leaves. */
TEST(unwind_jit_exact)
{
	const char *argv[] = { "jit", NULL };

	unwind_check(argv, EXACT, 60, 0);
}

TEST(unwind_jit_sampled)
{
	const char *argv[] = { "jit", NULL };

	unwind_check(argv, "LEEK_PERIOD=64", 60, 0);
}

/* Two libraries with the same code layout and other frame sizes, loaded in turn: where one lands
 * where the other was unloaded, the rules of one must not walk the other's frames (unwind-dl.c).
 * Where it lands is the kernel's choice: on this project's machines 23 loads in 24 reused the
 * other's addresses, and without forgetting the rules at the unload 8 of 144 stacks came out
 * wrong; in a fresh chroot none did in exact mode (the profile's window took the hole first),
 * and the test then only checks the stacks. */
static void unwind_dl_run(const char *setting)
{
	const char *argv[] = { "unwind-dl", LIBUW_A_PATH, LIBUW_B_PATH, NULL };

	unwind_check(argv, setting, 144, 0);
}

TEST(unwind_dlclose_exact)
{
	unwind_dl_run(EXACT);
}

TEST(unwind_dlclose_sampled)
{
	unwind_dl_run("LEEK_PERIOD=64");
}

/* A period at which the 90001-byte blocks are sampled (all but e^-22 of them) and the loader's
 * own small allocations seldom are: 156 samples in 24 loads, far fewer than
 * LK_MODULES_LOOK_EVERY from one load to the next, so the periodic look at the loader does not
 * come between them; the look after each dlclose, or at a walk that meets a frame it has no
 * cached rule for, must. */
TEST(unwind_dlclose_few_samples)
{
	unwind_dl_run("LEEK_PERIOD=4096");
}

/* ---- a process that dies: the profile stops at its last complete record ---- */

static void crash(const char *how, int sig)
{
	struct run r;
	const char *argv[] = { "crash", how, NULL };

	run_prog(&r, &(struct run_opts){ .env = { EXACT } }, argv);
	if (!WIFSIGNALED(r.status) || WTERMSIG(r.status) != sig)
		FAIL("crash %s: status %#x, expected SIG%s; stderr:\n%s", how, r.status,
		     sigabbrev_np(sig), r.err);
	ASSERT_EQ(r.nprof, 1);
	const struct profile *p = main_profile(&r);
	ASSERT_TRUE(!p->trailer);
	ASSERT_EQ(check_tallies(&r), 2); /* the 100 blocks, the 30 frees, and the marker */
	struct stat st;
	ASSERT_EQ(stat(p->path, &st), 0);
	ASSERT_TRUE(p->ntag[LK_REC_ALLOC] >= 101);
	run_cleanup(&r);
}

TEST(crash_sigkill)
{
	crash("kill", SIGKILL);
}

TEST(crash_sigsegv)
{
	crash("segv", SIGSEGV);
}

/* ---- the profile cannot be written: the program runs on, leek says so once ---- */

static void output_fails(const char *output)
{
	struct run r;
	const char *argv[] = { "threads", "1000", NULL };

	run_prog(&r, &(struct run_opts){ .env = { EXACT }, .output = output }, argv);
	expect_exit0(&r);
	ASSERT_EQ(r.nprof, 0);
	if (count_lines(r.err) != 1 || strncmp(r.err, "leek: ", 6))
		FAIL("LEEK_OUTPUT=%s: stderr should be one line from leek, it is:\n%s", output,
		     r.err);
	ASSERT_CONTAINS(r.out, "allocs ");
	run_cleanup(&r);
}

TEST(output_missing_dir)
{
	output_fails("/nonexistent-leek-dir/sub/leek.%p.lk");
}

TEST(output_not_writable)
{
	/* root writes into a mode 0555 directory anyway; /proc refuses everyone. */
	if (geteuid() == 0) {
		output_fails("/proc/leek.%p.lk");
		return;
	}
	char dir[] = "/tmp/leek-ro-XXXXXX", pat[64];
	ASSERT_TRUE(mkdtemp(dir) != NULL);
	ASSERT_EQ(chmod(dir, 0555), 0);
	snprintf(pat, sizeof(pat), "%s/leek.%%p.lk", dir);
	output_fails(pat);
	rmdir(dir);
}

/* ---- LEEK_INHERIT: what an exec'd child finds in LD_PRELOAD ---- */

static void inherit(const char *setting, const char *preload, const char *want, size_t nprof)
{
	struct run r;
	const char *argv[] = { "inherit", NULL };
	char own[512];

	run_prog(&r, &(struct run_opts){ .preload = preload, .env = { setting } }, argv);
	expect_exit0(&r);
	ASSERT_STREQ(r.out, want);
	ASSERT_EQ(r.nprof, nprof);
	/* The program's own profile stops at the exec. The shell is the same process after exec, so
	 * its profile, if any, is the same name with .1 (never overwritten). dash leaves through
	 * _exit, so its profile has no trailer either. */
	snprintf(own, sizeof(own), "%s/leek.%d.lk", r.dir, (int)r.pid);
	for (size_t i = 0; i < r.nprof; i++) {
		const struct profile *p = &r.prof[i];
		ASSERT_EQ(p->h.pid, r.pid);
		if (!strcmp(p->path, own)) {
			ASSERT_TRUE(!p->trailer);
			ASSERT_TRUE(p->ntag[LK_REC_MODULE] > 0);
		} else {
			ASSERT_TRUE(strlen(p->path) == strlen(own) + 2 && !strncmp(p->path, own, strlen(own)) &&
				    !strcmp(p->path + strlen(own), ".1"));
			ASSERT_CONTAINS(p->exe, "sh");
			ASSERT_TRUE(p->ntag[LK_REC_MODULE] > 0);
		}
	}
	run_cleanup(&r);
}

TEST(inherit_default)
{
	char want[1024];

	snprintf(want, sizeof(want), "[%s]\n", LIBLEEK_PATH);
	inherit("LEEK_INHERIT=1", NULL, want, 2);
}

TEST(inherit_off)
{
	char preload[1024], want[1024];

	inherit("LEEK_INHERIT=0", NULL, "[]\n", 1);
	/* Only libleek leaves: the allocator after it stays. */
	snprintf(preload, sizeof(preload), "%s %s", LIBLEEK_PATH, JEMALLOC_PATH);
	snprintf(want, sizeof(want), "[%s]\n", JEMALLOC_PATH);
	inherit("LEEK_INHERIT=0", preload, want, 1);
}

/* ---- edge cases: the result without leek, no hang, a profile that reads to the end ---- */

/* s without its "tally " lines (exact mode adds them), in a static buffer. */
static const char *untallied(const char *s, char *buf, size_t size)
{
	size_t w = 0;

	for (const char *line = s; *line;) {
		const char *nl = strchr(line, '\n');
		size_t n = nl ? (size_t)(nl - line) + 1 : strlen(line);
		if (strncmp(line, "tally ", 6) && w + n < size) {
			memcpy(buf + w, line, n);
			w += n;
		}
		line += n;
	}
	buf[w] = 0;
	return buf;
}

/* Runs argv without leek, then at the default period and in exact mode: each run must exit 0
 * within timeout seconds with the reference's stdout (tally lines aside), one profile with its
 * trailer, and, in exact mode, the program's tallies. Returns how many tally lines were checked. */
static unsigned edge_run_in_flight(const char *const *argv, unsigned timeout, unsigned in_flight)
{
	static char a[8192], b[8192];
	struct run ref, r;
	unsigned tallies = 0;
	const char *envs[] = { DEFAULT, EXACT };

	run_prog(&ref, &(struct run_opts){ .preload = "", .timeout = timeout }, argv);
	expect_exit0(&ref);
	ASSERT_EQ(ref.nprof, 0);
	for (size_t i = 0; i < 2; i++) {
		run_prog(&r,
			 &(struct run_opts){ .env = { envs[i], SEED }, .timeout = timeout,
					     .in_flight = in_flight },
			 argv);
		expect_clean(&r, 1, 0);
		ASSERT_STREQ(untallied(r.out, b, sizeof(b)), untallied(ref.out, a, sizeof(a)));
		const struct profile *p = main_profile(&r);
		ASSERT_EQ(!!(p->h.flags & LK_HDR_EXACT), r.exact); /* the environment was read */
		if (r.exact) {
			ASSERT_TRUE(p->ntag[LK_REC_ALLOC] > 0);
			tallies = check_tallies(&r);
		}
		run_cleanup(&r);
	}
	run_cleanup(&ref);
	return tallies;
}

static unsigned edge_run(const char *const *argv, unsigned timeout)
{
	return edge_run_in_flight(argv, timeout, 0);
}

/* Allocation from .preinit_array and a priority-101 constructor: the first malloc runs before
 * libc has set environ, and leek must still read LEEK_* (config.c), and blocks from then free
 * from main. */
TEST(edge_early_alloc)
{
	const char *argv[] = { "early", NULL };

	ASSERT_EQ(edge_run(argv, 15), 2);
}

/* Threads whose first allocator call frees blocks that another thread sampled (handoff.c): in
 * exact mode every one of those frees meets a thread that leek has not set up. */
TEST(edge_first_call_frees)
{
	const char *argv[] = { "handoff", NULL };

	ASSERT_EQ(edge_run(argv, 30), 2);
}

/* pthread_key destructors that allocate, realloc and free at thread exit, 8 threads at a time. */
TEST(edge_tsd_destructors)
{
	const char *argv[] = { "tlsdtor", "50", NULL };

	ASSERT_EQ(edge_run(argv, 30), 2);
}

/* exit() while four threads allocate and free, with an allocating atexit handler. leek's
 * destructor writes the trailer under its lock and switches sampling off, so the profile ends
 * with a trailer (docs/design.md, "The writer") although the threads run on until exit_group.
 * Each of the four may be storing a record into its own segment at that instant, which the
 * trailer's counts may or may not have (docs/design.md, "Threads"). */
TEST(edge_exit_while_allocating)
{
	const char *argv[] = { "exitrace", NULL };

	for (int i = 0; i < 5; i++)
		edge_run_in_flight(argv, 10, 4);
}

/* A program that unmasked every floating-point exception and checks the x87 control and status
 * words and MXCSR after each allocator call, in two threads. libunwind's getcontext used to mask
 * every x87 exception at a walk (fnstenv), and the sampler's draw raises MXCSR's inexact flag. */
TEST(edge_fp_environment)
{
	const char *argv[] = { "fpenv", NULL };

	ASSERT_EQ(edge_run(argv, 15), 2);
}

/* Sampled allocations 12 calls deep on threads whose whole stack is PTHREAD_STACK_MIN (16 KiB,
 * of which glibc takes about 4.4 KiB for TLS and its descriptor), and in a handler on a
 * MINSIGSTKSZ * 2 sigaltstack, at both periods. libunwind's DWARF lookups and the dynamic
 * linker's lazy binding of libunwind take 8 to 11 KiB; leek runs them on a stack of its own
 * (unwind-altstack.c, lk_unwind_run). Before it did, a thread's first sample overflowed such a stack in 12
 * to 17 runs out of 30 at the default period (and with lk_unwind_run disabled, this test failed
 * once in three). Run 20 times, since which sample comes first on which thread varies. */
TEST(edge_small_stacks)
{
	const char *at_min[] = { "smallstack", "0", NULL };

	for (int i = 0; i < 20; i++)
		ASSERT_EQ(edge_run(at_min, 15), 2);
}

/* dlopen with RTLD_DEEPBIND (the library's malloc binds to libc's, not leek's) and without, and
 * blocks the library allocated freed and realloc'ed by main after its dlclose. */
TEST(edge_deepbind_dlclose)
{
	const char *argv[] = { "dlbind", LIBDLO_PATH, NULL };

	edge_run(argv, 20);
}

/* ---- fork under held locks; vfork and posix_spawn while threads allocate ---- */

/* A run of a program that starts children: without leek, then at the default period, at 4 KiB
 * and in exact mode. Each must exit 0 in time with the reference's stdout (tally lines aside);
 * every profile must read to the end and end with its trailer (every process leaves through
 * exit); in exact mode there is one profile per process (nprocs) and the tallies hold. Returns
 * how many tally lines the exact run checked. */
static unsigned children_run(const char *const *argv, unsigned timeout, size_t nprocs)
{
	static char a[8192], b[8192];
	const char *envs[] = { DEFAULT, "LEEK_PERIOD=4096", EXACT };
	struct run ref, r;
	unsigned tallies = 0;

	run_prog(&ref, &(struct run_opts){ .preload = "", .timeout = timeout }, argv);
	expect_exit0(&ref);
	ASSERT_EQ(ref.nprof, 0);
	for (size_t i = 0; i < 3; i++) {
		/* Up to 3 threads sample while each child forks (forklock.c, spawn.c). */
		run_prog(&r, &(struct run_opts){ .env = { envs[i], SEED }, .timeout = timeout,
						 .stackless_extra = 3 * (unsigned)(nprocs - 1) },
			 argv);
		expect_exit0(&r);
		ASSERT_STREQ(untallied(r.out, b, sizeof(b)), untallied(ref.out, a, sizeof(a)));
		ASSERT_TRUE(main_profile(&r) != NULL);
		if (r.exact)
			expect_clean(&r, nprocs, 0);
		for (size_t k = 0; k < r.nprof; k++) {
			if (!r.prof[k].trailer)
				FAIL("%s has no trailer", r.prof[k].path);
			check_counters(&r, &r.prof[k], 0);
		}
		if (r.exact)
			tallies = check_tallies(&r);
		run_cleanup(&r);
	}
	run_cleanup(&ref);
	return tallies;
}

/* 200 forks while three threads allocate through leek's sample path (forklock.c); a child that
 * hangs for 10 s fails the program. */
TEST(edge_fork_under_locks)
{
	const char *argv[] = { "forklock", "200", NULL };

	ASSERT_EQ(children_run(argv, 120, 201), 2 * 200);
}

/* 25 rounds of vfork+execve, posix_spawn, posix_spawn with file actions and attributes, and
 * posix_spawnp of true, while two threads allocate (spawn.c). */
TEST(edge_vfork_posix_spawn)
{
	const char *argv[] = { "spawn", "25", NULL };

	ASSERT_EQ(children_run(argv, 120, 1 + 4 * 25), 3 * 25);
}

/* ---- daemons that close every descriptor or dup2 over leek's ---- */

/* daemon.c, without leek, then at the default period, at 4 KiB and in exact mode: the same stdout
 * (tally lines aside), one profile that reads to the end and has its trailer (so leek found its
 * file again after losing its descriptor), in exact mode the blocks allocated after the
 * descriptors went (tallies), and the program's own data file, through the descriptor that was
 * leek's, byte for byte what it is without leek. relative: LEEK_OUTPUT relative to the start
 * directory, and the program chdirs to / first, as daemon(3) does. */
static void daemon_run(const char *how, bool relative)
{
	static char a[8192], b[8192];
	const char *argv[] = { "daemon", how, relative ? "--chdir" : NULL, NULL };
	const char *envs[] = { DEFAULT, "LEEK_PERIOD=4096", EXACT };
	const char *output = relative ? "leek.%p.lk" : NULL;
	char path[512];
	struct run ref, r;
	size_t want_len, got_len;

	run_prog(&ref, &(struct run_opts){ .preload = "", .output = output, .in_dir = relative }, argv);
	expect_exit0(&ref);
	ASSERT_EQ(ref.nprof, 0);
	snprintf(path, sizeof(path), "%s/daemon.expect", ref.dir);
	char *want = read_file_or_empty(path, &want_len);
	ASSERT_EQ(want_len, 4u << 20);
	for (size_t i = 0; i < 3; i++) {
		run_prog(&r, &(struct run_opts){ .env = { envs[i], SEED }, .output = output,
						 .in_dir = relative, .timeout = 60 },
			 argv);
		/* The program's data first: a damaged file says more than its exit status. */
		snprintf(path, sizeof(path), "%s/daemon.expect", r.dir);
		char *got = read_file_or_empty(path, &got_len); /* missing: empty, and differs below */
		if (got_len != want_len || memcmp(got, want, want_len)) {
			size_t k = 0;
			while (k < got_len && k < want_len && got[k] == want[k])
				k++;
			FAIL("daemon %s (%s): the program's data file has %zu bytes, first "
			     "difference at byte %zu, from the run without leek (%zu bytes); files "
			     "in %s", how, envs[i], got_len, k, want_len, r.dir);
		}
		free(got);
		expect_clean(&r, 1, 0);
		ASSERT_STREQ(untallied(r.out, b, sizeof(b)), untallied(ref.out, a, sizeof(a)));
		/* leek holds no descriptor the program could find (writer-window.c, lk_window_fd):
		 * the program took 200, where leek's descriptor used to be. */
		if (strstr(r.err, "leek fd found"))
			FAIL("daemon %s (%s): the program found a descriptor of leek's profile",
			     how, envs[i]);
		const struct profile *p = main_profile(&r);
		if (r.exact) {
			ASSERT_EQ(check_tallies(&r), 2);
			ASSERT_TRUE(p->h.flags & LK_HDR_EXACT);
		}
		run_cleanup(&r);
	}
	free(want);
	run_cleanup(&ref);
}

TEST(edge_daemon_close_range)
{
	daemon_run("close", false);
}

TEST(edge_daemon_close_loop)
{
	daemon_run("close-loop", false);
}

/* A program that dup2s its own file over descriptor 200 (where leek's used to be): leek's next
 * window must not map the program's file. */
TEST(edge_daemon_dup2)
{
	daemon_run("dup2", false);
}

/* LEEK_OUTPUT is relative by default: leek must reopen its file where it created it. */
TEST(edge_daemon_chdir_close)
{
	daemon_run("close", true);
}

TEST(edge_daemon_chdir_dup2)
{
	daemon_run("dup2", true);
}
