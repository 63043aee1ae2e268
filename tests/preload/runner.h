/* runner.h: runs a test program under libleek and loads every profile it wrote.
 *
 * run_prog() starts a program from tests/preload in a fresh temporary directory, with LD_PRELOAD
 * and LEEK_OUTPUT set, as tests/lib/proc.h starts any program: its stdout and stderr captured, in
 * its own process group, killed with the group after a timeout. Then it reads every profile in the
 * directory with the reader library (src/cli/read/read.h) and keeps what the tests look at: the
 * header, the counts of each record type, the trailer's counters, every sampled block (ALLOC or
 * INHERIT) with its size, stack and whether a FREE named it, and for every stack the modules its
 * frames fall in.
 *
 * While loading it also enforces what every profile must satisfy, whatever the program did:
 * the reader reaches the end without an error; stack and module ids are assigned in order and
 * every ALLOC names a stack written before it; no ALLOC or INHERIT reuses the address of a block
 * still live in the file; every FREE names a live block; every block address is 16-aligned.
 * A violation fails the test (harness.h) with the profile's path, which is kept for inspection.
 */
#ifndef LEEK_TEST_RUNNER_H
#define LEEK_TEST_RUNNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "leek/format.h"
#include "u64map.h"
#include "record.h"

#define JEMALLOC_PATH "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"

struct block {
	uint64_t size, stack;
	bool inherited, freed;
};

struct stack {
	uint32_t nframes;
	uint64_t *frames; /* return addresses, innermost first */
	char *modules; /* "\n"-separated paths of the modules its frames fall in, each once */
};

struct module {
	uint64_t id, base;
	uint32_t nseg;
	struct lk_module_seg seg[LK_MAX_SEGMENTS];
	char *path;
	bool loaded;
};

struct error { /* an ERROR record's fields */
	uint64_t kind, addr, block_addr, block_size, block, alloc_stack, free_stack, stack, tid;
};

struct profile {
	char *path;
	struct lk_file_header h;
	uint32_t segment;   /* a rotated segment's number (LEEK_MAX_SIZE); 0 otherwise */
	uint64_t origin_ns; /* what the segments of one process share */
	char *exe;
	bool trailer;
	uint64_t ntag[LK_REC_MAX_KNOWN + 1]; /* records of each tag */
	uint64_t counters[LK_CNT_MAX + 1];   /* the trailer's */
	struct block *blocks; /* in the order the reader delivered their ALLOC or INHERIT */
	size_t nblocks;
	struct lk_u64map index; /* block number -> its place in blocks, + 1 */
	struct stack *stacks; /* stacks[id - 1] */
	size_t nstacks;
	struct module *modules;
	size_t nmodules;
	uint64_t stackless; /* ALLOC records with stack id 0 */
	uint64_t free_stacks; /* FREEs with the stack that freed the block (FREE_STACK records) */
	struct error errors[8]; /* the first ERROR records */
	size_t nerrors;
};

struct run_opts {
	const char *preload;   /* NULL: libleek; "": no LD_PRELOAD; anything else: used as is */
	const char *env[8];    /* extra "NAME=value" entries */
	const char *output;    /* LEEK_OUTPUT; NULL: DIR/leek.%p.lk */
	unsigned timeout;      /* seconds; 0: 30 */
	uint64_t limit_as;     /* RLIMIT_AS of the program, bytes; 0: as the test's */
	uint64_t limit_fsize;  /* RLIMIT_FSIZE of the program (its stdout and stderr too); 0: same */
	bool in_dir;           /* start the program in DIR (for a relative LEEK_OUTPUT) */
	const char *exe;       /* the file to run; NULL: argv[0] in PROG_DIR */
	/* Threads that may be storing a record while the exit writes the trailer (a program that
	 * exits while its threads allocate): the trailer's samples and frees may each differ from
	 * the file's ALLOC and FREE records by that many (docs/design.md, "Threads"). */
	unsigned in_flight;
	/* Samples that may go without a stack beyond the 1% every profile allows: a sample taken
	 * while another thread forks goes without one rather than wait (src/preload/stack.c), so a
	 * program that forks while its threads sample sets one per fork and thread. */
	unsigned stackless_extra;
};

struct run {
	char dir[256];
	pid_t pid;
	int status; /* from waitpid */
	char *out, *err;
	struct profile *prof;
	size_t nprof;
	bool exact; /* LEEK_PERIOD=1 was set */
	unsigned in_flight; /* run_opts' */
	unsigned stackless_extra; /* run_opts' */
};

/* argv[0] is the program's name in the build directory (PROG_DIR); the list ends with NULL. */
void run_prog(struct run *r, const struct run_opts *o, const char *const *argv);
void run_cleanup(struct run *r); /* removes the directory; only after a passing test */

/* Fails the test unless the program exited with status 0; shows its stderr. */
void expect_exit0(const struct run *r);

/* The common end of a run that should exit 0: nprof profiles, one per process, each with its
 * trailer and passing check_counters. */
void expect_clean(const struct run *r, size_t nprof, uint64_t allowed);

/* The profile of the process run_prog started; fails the test if there is none. */
const struct profile *main_profile(const struct run *r);

/* The one profile written by process pid, or NULL. */
const struct profile *prof_by_pid(const struct run *r, pid_t pid);

/* Blocks of this size in p: ALLOC records, INHERIT records, and those of both that were freed. */
void prof_count_size(const struct profile *p, uint64_t size, uint64_t *allocs, uint64_t *inherits,
		     uint64_t *frees);

/* Does stack id (1-based) have a frame in a module whose path contains needle? */
bool stack_in_module(const struct profile *p, uint64_t id, const char *needle);

/* Checks every "tally PID SIZE ALLOCS INHERITS FREES" line of the program's stdout (tally.h)
 * against the profiles; returns how many lines it checked. Exact mode only. */
unsigned check_tallies(const struct run *r);

/* What every profile of a finished run must also satisfy: a trailer if it should have one, and
 * trailer counters that agree with the records (samples, frees) and report no losses except
 * those in allowed (a bit mask of 1 << LK_CNT_*). Where records were allowed to be dropped
 * (records_dropped, file_limit), the trailer may count more samples and frees than the file
 * holds, never fewer. */
void check_counters(const struct run *r, const struct profile *p, uint64_t allowed);

/* The number of lines of s (a final line without '\n' counts). */
unsigned count_lines(const char *s);

#endif /* LEEK_TEST_RUNNER_H */
