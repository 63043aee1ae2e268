/* test-budget.c: the memory budget of reading profiles (src/cli/base/budget.c): the accounting, the
 * default limit as budget.h documents it (half of the least of the machine's memory, its cgroup's
 * limit, RLIMIT_AS and RLIMIT_DATA), the cgroup files it reads, and how messages show a limit.
 * What each reader takes from the budget is tested beside the reader (test-profile-budget.c,
 * test-site.c, tests/report/test-memory.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "budget.h"
#include "harness.h"

#define GiB (1ull << 30)
#define MiB (1ull << 20)

TEST(take_and_give)
{
	void *p, *q;

	lk_budget_set_limit(1000);
	ASSERT_EQ(lk_budget_limit(), 1000);
	ASSERT_OK(lk_budget_take(600));
	ASSERT_EQ(lk_budget_take(401), -E2BIG); /* nothing taken */
	ASSERT_EQ(lk_budget_used(), 600);
	ASSERT_OK(lk_budget_take(400)); /* exactly the limit */
	ASSERT_EQ(lk_budget_take(1), -E2BIG);
	ASSERT_EQ(lk_budget_take(SIZE_MAX), -E2BIG); /* no wrap-around */
	lk_budget_give(1000);
	ASSERT_EQ(lk_budget_used(), 0);
	ASSERT_EQ(lk_budget_peak(), 1000);

	/* The allocations take first, and give back what they took. */
	errno = 0;
	ASSERT_TRUE(lk_budget_malloc(1001) == NULL);
	ASSERT_EQ(errno, E2BIG);
	ASSERT_TRUE(lk_budget_calloc(SIZE_MAX / 2, 4) == NULL); /* n * size overflows */
	ASSERT_EQ(errno, ENOMEM);
	ASSERT_EQ(lk_budget_used(), 0);
	p = lk_budget_calloc(10, 30);
	ASSERT_TRUE(p != NULL);
	ASSERT_EQ(lk_budget_used(), 300);
	/* A realloc needs room for both blocks while it runs (it may copy), and keeps the old
	 * block when refused. */
	errno = 0;
	ASSERT_TRUE(lk_budget_realloc(p, 300, 701) == NULL);
	ASSERT_EQ(errno, E2BIG);
	ASSERT_EQ(lk_budget_used(), 300);
	q = lk_budget_realloc(p, 300, 700);
	ASSERT_TRUE(q != NULL);
	ASSERT_EQ(lk_budget_used(), 700);
	ASSERT_EQ(lk_budget_peak(), 1000);
	lk_budget_free(q, 700);
	lk_budget_free(NULL, 700); /* gives nothing */
	ASSERT_EQ(lk_budget_used(), 0);
}

TEST(default_is_half_the_least)
{
	const uint64_t none = UINT64_MAX;

	/* Physical memory alone. */
	ASSERT_EQ(lk_budget_default(&(struct lk_budget_machine){ 16 * GiB, none, none, none }),
		  8 * GiB);
	/* A cgroup, RLIMIT_AS or RLIMIT_DATA below it. */
	ASSERT_EQ(lk_budget_default(&(struct lk_budget_machine){ 16 * GiB, 2 * GiB, none, none }),
		  1 * GiB);
	ASSERT_EQ(lk_budget_default(&(struct lk_budget_machine){ 16 * GiB, 4 * GiB, 3 * GiB, none }),
		  3 * GiB / 2);
	ASSERT_EQ(lk_budget_default(&(struct lk_budget_machine){ 16 * GiB, none, 8 * GiB, 512 * MiB }),
		  256 * MiB);
	/* A limit above the memory changes nothing (cgroup v1 writes "no limit" as 2^63 - 4096). */
	ASSERT_EQ(lk_budget_default(&(struct lk_budget_machine){ 16 * GiB, 9223372036854771712ull,
								  none, none }),
		  8 * GiB);
	/* Nothing known. */
	ASSERT_EQ(lk_budget_default(&(struct lk_budget_machine){ none, none, none, none }),
		  LK_BUDGET_UNKNOWN);
	ASSERT_EQ(lk_budget_default(&(struct lk_budget_machine){ none, none, 1, none }), 1);
}

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st, (void)type, (void)ftw;
	return remove(path);
}

static void put(const char *dir, const char *rel, const char *text)
{
	char path[512], *s;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	/* mkdir -p of the file's directory */
	for (s = path + strlen(dir) + 1; (s = strchr(s, '/')); s++) {
		*s = 0;
		ASSERT_TRUE(mkdir(path, 0700) == 0 || errno == EEXIST);
		*s = '/';
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* The cgroup file systems as a tree of plain files: the limit of the process's cgroup or of any
 * parent counts, "max" is none, and a file that is missing is no limit. */
TEST(cgroup_limits)
{
	char fs[256];

	snprintf(fs, sizeof(fs), "%s/leek-budget-XXXXXX", getenv("TMPDIR") ?: "/tmp");
	ASSERT_TRUE(mkdtemp(fs) != NULL);

	/* cgroup v2 on its own: the parent's limit is the least. */
	put(fs, "v2/a/b/c/memory.max", "max\n");
	put(fs, "v2/a/b/memory.max", "3221225472\n");
	put(fs, "v2/a/memory.max", "8589934592\n");
	char v2[300];
	snprintf(v2, sizeof(v2), "%s/v2", fs);
	/* The root's too: in a container's cgroup namespace, the root is the container's. */
	put(fs, "v2/memory.max", "1\n");
	ASSERT_EQ(lk_budget_cgroup_limit("0::/a/b/c\n", v2), 1);
	put(fs, "v2/memory.max", "max\n");
	ASSERT_EQ(lk_budget_cgroup_limit("0::/a/b/c\n", v2), 3 * GiB);
	ASSERT_EQ(lk_budget_cgroup_limit("0::/a\n", v2), 8 * GiB);
	ASSERT_EQ(lk_budget_cgroup_limit("0::/elsewhere\n", v2), UINT64_MAX);
	ASSERT_EQ(lk_budget_cgroup_limit("", v2), UINT64_MAX);

	/* The hybrid layout: v2 in unified/, v1's memory controller in memory/, named in a list
	 * of controllers. The least of both. */
	put(fs, "hy/unified/s/memory.max", "max\n");
	put(fs, "hy/memory/x/y/memory.limit_in_bytes", "9223372036854771712\n");
	put(fs, "hy/memory/x/memory.limit_in_bytes", "2147483648\n");
	char hy[300];
	snprintf(hy, sizeof(hy), "%s/hy", fs);
	ASSERT_EQ(lk_budget_cgroup_limit("9:name=systemd:/\n4:cpu,memory:/x/y\n0::/s\n", hy),
		  2 * GiB);
	ASSERT_EQ(lk_budget_cgroup_limit("4:cpu:/x/y\n0::/s\n", hy), UINT64_MAX); /* not memory */
	ASSERT_EQ(lk_budget_cgroup_limit("4:memory:/x/y\n", hy), 2 * GiB);
	ASSERT_EQ(lk_budget_cgroup_limit("4:memory:/\n", hy), UINT64_MAX); /* v1's "no limit" */
	put(fs, "hy/memory/memory.limit_in_bytes", "9223372036854771712\n");
	ASSERT_EQ(lk_budget_cgroup_limit("4:memory:/\n", hy), UINT64_MAX);
	put(fs, "hy/unified/s/memory.max", "1073741824\n");
	ASSERT_EQ(lk_budget_cgroup_limit("4:memory:/x/y\n0::/s", hy), 1 * GiB); /* no last \n */
	/* What is not a number is no limit. */
	put(fs, "hy/unified/s/memory.max", "junk\n");
	ASSERT_EQ(lk_budget_cgroup_limit("0::/s\n", hy), UINT64_MAX);

	ASSERT_OK(nftw(fs, remove_one, 16, FTW_DEPTH | FTW_PHYS));
}

/* This machine's numbers, and the default made of them. */
TEST(machine)
{
	struct lk_budget_machine m;

	lk_budget_machine_read(&m);
	ASSERT_EQ(m.ram, (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE));
	lk_budget_set_limit(0); /* the default, chosen at first use */
	ASSERT_EQ(lk_budget_limit(), lk_budget_default(&m));
	ASSERT_TRUE(lk_budget_limit() <= m.ram / 2);
}

/* An address-space limit below the memory halves into the default. */
TEST(rlimit_as_lowers_the_default)
{
	struct lk_budget_machine m;
	struct rlimit rl;

#if defined(__SANITIZE_ADDRESS__)
	SKIP("ASan's shadow memory needs the address space that RLIMIT_AS would take");
#endif
	ASSERT_OK(getrlimit(RLIMIT_AS, &rl));
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 1024 * MiB)
		SKIP("RLIMIT_AS is %llu already", (unsigned long long)rl.rlim_cur);
	rl.rlim_cur = 1024 * MiB; /* the soft limit, in this test's process: it needs far less */
	ASSERT_OK(setrlimit(RLIMIT_AS, &rl));
	lk_budget_machine_read(&m);
	ASSERT_EQ(m.rlimit_as, 1024 * MiB);
	lk_budget_set_limit(0);
	ASSERT_TRUE(lk_budget_limit() <= 512 * MiB);
	ASSERT_EQ(lk_budget_limit(), lk_budget_default(&m));
}

TEST(format)
{
	char buf[32];

	ASSERT_STREQ(lk_budget_format(buf, sizeof(buf), 256 * MiB), "256 MiB");
	ASSERT_STREQ(lk_budget_format(buf, sizeof(buf), 12 * GiB), "12 GiB");
	ASSERT_STREQ(lk_budget_format(buf, sizeof(buf), 1024 * GiB), "1 TiB");
	ASSERT_STREQ(lk_budget_format(buf, sizeof(buf), 1000), "1000 B");
	ASSERT_STREQ(lk_budget_format(buf, sizeof(buf), 1536), "1.50 KiB");
	ASSERT_STREQ(lk_budget_format(buf, sizeof(buf), 12637875609ull), "11.77 GiB");
	ASSERT_STREQ(lk_budget_format(buf, sizeof(buf), 3 * GiB / 2), "1.50 GiB");
}
