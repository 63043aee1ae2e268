/* budget.h: the memory budget of reading profiles: how much memory the contents of the profiles
 * that leek reads may make it take.
 *
 * A profile decides how many blocks are live at once, how many stacks it has and how deep, how
 * many modules, and so how many sites a report gets; and 7 KB of zstd can say "20 million live
 * blocks" (2.7 GB for `leek report` without a budget, docs/design.md "Reading a profile"). So
 * every structure whose size a profile decides beyond a fixed amount is allocated through the
 * functions below, which take its bytes from one budget before they allocate them and give them
 * back when they are freed: the live set (profile-live.c), the stack, frame, module and segment
 * tables (profile-tables.c), the list of the blocks live at the end (profile-result.c), a
 * report's stacks, sites, call tree and synthetic frames (report.c, report-sites.c, tree.c,
 * site.c), the function ids and wrapper rule over its stacks (symbols/funcs.c, wrappers.c), and
 * the symbolizer's answers, names, caches and tables (symbols/sym-pool.c). A take beyond the limit allocates
 * nothing and fails with E2BIG, which the readers turn into "offset N: the profile needs more
 * than 256 MiB of memory to read (--max-memory; ... so far)".
 *
 * What is counted is what is asked of malloc (capacities, not the part in use; a realloc counts
 * its old and new blocks while it runs), so the count is an upper bound on what those structures
 * can make resident. Not counted: what stays below a fixed size whatever the file says (the
 * reader's 64 KiB window, a zstd frame's window of at most 128 MiB, recent.h's window of 8 MiB,
 * the reader's table of loaded modules, a profile's header strings and its timeline of 64
 * points), and libdw's own memory for the files the symbolizer opens, which those files decide.
 *
 * The limit is --max-memory's (lk_budget_set_limit), else lk_budget_default() of this machine,
 * read at the first take. One budget for the process: `leek report --merge` counts the sites of
 * every file together with the profile being read, and `leek run`'s follower and summary share it.
 * Thread-safe (atomics): the follower takes from it on a thread of its own. Never prints.
 */
#ifndef LEEK_BUDGET_H
#define LEEK_BUDGET_H

#include <stddef.h>
#include <stdint.h>

/* malloc, calloc and realloc for memory a profile decides, taken from the budget first: NULL with
 * errno E2BIG if the budget cannot hold it (nothing is allocated), or ENOMEM. On failure
 * lk_budget_realloc leaves p as it was. lk_budget_free gives back the bytes the block was
 * allocated with (NULL gives nothing). */
void *lk_budget_malloc(size_t bytes);
void *lk_budget_calloc(size_t n, size_t size);
void *lk_budget_realloc(void *p, size_t old_bytes, size_t bytes);
void lk_budget_free(void *p, size_t bytes);
/* An array *p of *cap elements of elem bytes, grown (doubling, from 8) to hold at least need:
 * 0, or -E2BIG (the budget) or -ENOMEM with *p and *cap as they were. */
int lk_budget_grow(void **p, size_t *cap, size_t need, size_t elem);

/* The same accounting without the allocation: 0 or -E2BIG (nothing taken). */
int lk_budget_take(size_t bytes);
void lk_budget_give(size_t bytes);

/* The limit in bytes: set by --max-memory, else this machine's default (chosen once). 0 sets the
 * default back. */
uint64_t lk_budget_limit(void);
void lk_budget_set_limit(uint64_t bytes);
uint64_t lk_budget_used(void); /* taken and not given back */
uint64_t lk_budget_peak(void); /* the most ever taken at once */

/* "256 MiB", "11.77 GiB": bytes as the messages about the budget show them, into buf (at least 32
 * bytes); returns buf. */
const char *lk_budget_format(char *buf, size_t size, uint64_t bytes);

/* What the default is made of: the machine's memory and the limits the kernel enforces on this
 * process, in bytes; UINT64_MAX where there is none (or it is unknown). */
struct lk_budget_machine {
	uint64_t ram;         /* physical memory, sysconf(_SC_PHYS_PAGES) pages */
	uint64_t cgroup;      /* the least memory limit of the process's cgroup and its parents */
	uint64_t rlimit_as;   /* the soft RLIMIT_AS */
	uint64_t rlimit_data; /* the soft RLIMIT_DATA */
};

/* If nothing is known about the machine: half of a small machine's 8 GiB. */
#define LK_BUDGET_UNKNOWN (4ull << 30)

/* The default limit: half of the least of m's four, or LK_BUDGET_UNKNOWN if all are UINT64_MAX.
 *
 * Half, because the rest of the reading needs room beside what the budget counts (the
 * symbolizer, libdw's debug files, a zstd window, the page cache of the file itself) and so does
 * the rest of the machine; because exceeding a cgroup's limit brings the OOM killer, not an
 * error; and because an address-space limit holds the code, the mappings of debug files and the
 * thread stacks too (GNU sort leaves the same margin below RLIMIT_AS and RLIMIT_DATA). Physical
 * memory rather than what is free at the moment, so that the same command on the same machine
 * always gives the same answer. On a machine of 16 GiB the default holds the largest live set
 * the hard cap allows (LK_PROFILE_MAX_LIVE blocks at 144 bytes at most: 4.5 GiB), on one of 8 GiB
 * about 29 million live blocks (docs/design.md, "Reading a profile"). */
uint64_t lk_budget_default(const struct lk_budget_machine *m);

/* Reads m from this machine: sysconf, getrlimit, /proc/self/cgroup and the cgroup file systems
 * under /sys/fs/cgroup (lk_budget_cgroup_limit). */
void lk_budget_machine_read(struct lk_budget_machine *m);

/* The least memory limit of the cgroups named in self (the text of /proc/self/cgroup) and of
 * their parents, read from fs (where the cgroup file systems are mounted: "/sys/fs/cgroup"):
 * cgroup v2's memory.max, in fs itself or in fs/unified (the hybrid layout), and v1's
 * memory.limit_in_bytes in fs/memory. UINT64_MAX if none is set ("max"). */
uint64_t lk_budget_cgroup_limit(const char *self, const char *fs);

#endif /* LEEK_BUDGET_H */
