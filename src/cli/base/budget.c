/* budget.c: see budget.h. The only state is the budget's three numbers, which every thread sees
 * the same way (C11 atomics, relaxed: nothing else is published through them).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "budget.h"

static _Atomic uint64_t budget_limit; /* 0: not chosen yet (the machine's default, at first use) */
static _Atomic uint64_t budget_used, budget_peak;

uint64_t lk_budget_limit(void)
{
	uint64_t limit = atomic_load_explicit(&budget_limit, memory_order_relaxed), none = 0;
	struct lk_budget_machine m;

	if (limit)
		return limit;
	lk_budget_machine_read(&m);
	limit = lk_budget_default(&m);
	/* A limit set meanwhile (--max-memory) stands. */
	if (!atomic_compare_exchange_strong_explicit(&budget_limit, &none, limit, memory_order_relaxed,
						     memory_order_relaxed))
		limit = none;
	return limit;
}

void lk_budget_set_limit(uint64_t bytes)
{
	atomic_store_explicit(&budget_limit, bytes, memory_order_relaxed);
}

uint64_t lk_budget_used(void)
{
	return atomic_load_explicit(&budget_used, memory_order_relaxed);
}

uint64_t lk_budget_peak(void)
{
	return atomic_load_explicit(&budget_peak, memory_order_relaxed);
}

int lk_budget_take(size_t bytes)
{
	uint64_t limit = lk_budget_limit(), used, peak;

	used = atomic_load_explicit(&budget_used, memory_order_relaxed);
	do {
		if (bytes > limit || used > limit - bytes)
			return -E2BIG;
	} while (!atomic_compare_exchange_weak_explicit(&budget_used, &used, used + bytes,
							memory_order_relaxed, memory_order_relaxed));
	used += bytes;
	peak = atomic_load_explicit(&budget_peak, memory_order_relaxed);
	while (peak < used && !atomic_compare_exchange_weak_explicit(&budget_peak, &peak, used,
								      memory_order_relaxed,
								      memory_order_relaxed))
		;
	return 0;
}

void lk_budget_give(size_t bytes)
{
	atomic_fetch_sub_explicit(&budget_used, bytes, memory_order_relaxed);
}

void *lk_budget_malloc(size_t bytes)
{
	void *p;

	if (lk_budget_take(bytes) < 0) {
		errno = E2BIG;
		return NULL;
	}
	p = malloc(bytes);
	if (!p) {
		lk_budget_give(bytes);
		errno = ENOMEM;
	}
	return p;
}

void *lk_budget_calloc(size_t n, size_t size)
{
	void *p;

	if (size && n > SIZE_MAX / size) {
		errno = ENOMEM;
		return NULL;
	}
	if (lk_budget_take(n * size) < 0) {
		errno = E2BIG;
		return NULL;
	}
	p = calloc(n, size);
	if (!p) {
		lk_budget_give(n * size);
		errno = ENOMEM;
	}
	return p;
}

void *lk_budget_realloc(void *p, size_t old_bytes, size_t bytes)
{
	void *q;

	/* Both blocks are counted while realloc runs: it may copy one into the other. */
	if (lk_budget_take(bytes) < 0) {
		errno = E2BIG;
		return NULL;
	}
	q = realloc(p, bytes);
	if (!q) {
		lk_budget_give(bytes);
		errno = ENOMEM;
		return NULL;
	}
	lk_budget_give(old_bytes);
	return q;
}

int lk_budget_grow(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t n = *cap ? *cap : 8, bytes;
	void *q;

	if (need <= *cap)
		return 0;
	while (n < need)
		if (__builtin_mul_overflow(n, 2, &n))
			return -ENOMEM;
	if (__builtin_mul_overflow(n, elem, &bytes))
		return -ENOMEM;
	q = lk_budget_realloc(*p, *cap * elem, bytes);
	if (!q)
		return errno == E2BIG ? -E2BIG : -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

void lk_budget_free(void *p, size_t bytes)
{
	if (!p)
		return;
	free(p);
	lk_budget_give(bytes);
}

const char *lk_budget_format(char *buf, size_t size, uint64_t bytes)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	uint64_t v = bytes;
	unsigned u = 0;

	/* A whole number of a unit as it is ("256 MiB"), else two decimals ("11.77 GiB"). */
	while (v >= 1024 && v % 1024 == 0 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024;
		u++;
	}
	if (v < 1024) {
		snprintf(buf, size, "%llu %s", (unsigned long long)v, units[u]);
		return buf;
	}
	double d = (double)v;
	while (d >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		d /= 1024;
		u++;
	}
	snprintf(buf, size, "%.2f %s", d, units[u]);
	return buf;
}

uint64_t lk_budget_default(const struct lk_budget_machine *m)
{
	uint64_t least = m->ram;

	if (m->cgroup < least)
		least = m->cgroup;
	if (m->rlimit_as < least)
		least = m->rlimit_as;
	if (m->rlimit_data < least)
		least = m->rlimit_data;
	if (least == UINT64_MAX)
		return LK_BUDGET_UNKNOWN;
	return least / 2 ? least / 2 : 1;
}

/* The number in a cgroup limit file, or UINT64_MAX for "max", a missing file or anything else, and
 * for cgroup v1's "no limit", which it writes as the largest number of pages below 2^63. */
static uint64_t read_limit(const char *path)
{
	char buf[64], *end;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	unsigned long long v;
	ssize_t n;

	if (fd < 0)
		return UINT64_MAX;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0 || buf[0] < '0' || buf[0] > '9')
		return UINT64_MAX;
	buf[n] = 0;
	errno = 0;
	v = strtoull(buf, &end, 10);
	if (errno || (*end && *end != '\n') || v >= 1ull << 62)
		return UINT64_MAX;
	return v;
}

/* The least limit in file of the cgroup at path[0, len) under dir, and of each of its parents. */
static uint64_t least_up(const char *dir, const char *path, size_t len, const char *file)
{
	uint64_t least = UINT64_MAX, v;
	char p[4096];

	for (;;) {
		int n = snprintf(p, sizeof(p), "%s%.*s/%s", dir, (int)len, path, file);
		if (n > 0 && (size_t)n < sizeof(p) && (v = read_limit(p)) < least)
			least = v;
		if (len == 0)
			return least;
		while (len > 0 && path[len - 1] != '/') /* "/a/b" -> "/a/" -> "/a" -> "/" -> "" */
			len--;
		if (len > 0)
			len--;
	}
}

/* Whether the comma-separated list s[0, n) holds "memory". */
static bool has_memory(const char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t k = i;
		while (k < n && s[k] != ',')
			k++;
		if (k - i == 6 && memcmp(s + i, "memory", 6) == 0)
			return true;
		i = k + 1;
	}
	return false;
}

uint64_t lk_budget_cgroup_limit(const char *self, const char *fs)
{
	uint64_t least = UINT64_MAX, v;
	char dir[4096];

	/* Lines "hierarchy:controllers:path": "0::/path" for cgroup v2, "4:memory:/path" for v1's
	 * memory controller (proc(5)). */
	for (const char *line = self; line && *line;) {
		const char *nl = strchr(line, '\n'), *end = nl ? nl : line + strlen(line);
		const char *c1 = memchr(line, ':', (size_t)(end - line));
		const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;

		if (c2 && c2 + 1 < end && c2[1] == '/') {
			const char *path = c2 + 1;
			size_t len = (size_t)(end - path);
			if (c2 == c1 + 1) { /* v2: on its own at fs, or beside v1's at fs/unified */
				v = least_up(fs, path, len, "memory.max");
				least = v < least ? v : least;
				snprintf(dir, sizeof(dir), "%s/unified", fs);
				v = least_up(dir, path, len, "memory.max");
				least = v < least ? v : least;
			} else if (has_memory(c1 + 1, (size_t)(c2 - c1 - 1))) {
				snprintf(dir, sizeof(dir), "%s/memory", fs);
				v = least_up(dir, path, len, "memory.limit_in_bytes");
				least = v < least ? v : least;
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	return least;
}

static uint64_t rlimit(int which)
{
	struct rlimit rl;

	if (getrlimit(which, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return UINT64_MAX;
	return (uint64_t)rl.rlim_cur;
}

void lk_budget_machine_read(struct lk_budget_machine *m)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	char self[8192];
	ssize_t n = -1;
	int fd;

	*m = (struct lk_budget_machine){
		.ram = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : UINT64_MAX,
		.cgroup = UINT64_MAX,
		.rlimit_as = rlimit(RLIMIT_AS),
		.rlimit_data = rlimit(RLIMIT_DATA),
	};
	fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd >= 0) {
		n = read(fd, self, sizeof(self) - 1);
		close(fd);
	}
	if (n > 0) {
		self[n] = 0;
		m->cgroup = lk_budget_cgroup_limit(self, "/sys/fs/cgroup");
	}
}
