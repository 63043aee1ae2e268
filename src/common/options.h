/* options.h: every LEEK_* environment variable, its type, default and reason, in one table.
 *
 * The launcher (`leek run`) talks to libleek.so only through these variables; the library parses
 * them once at start-up (src/preload/config.c), the CLI prints them in `leek help env`. Nothing
 * here allocates. Keep README.md's table of knobs in step with this one.
 *
 * X(field, ENV_NAME, type, default, reason)
 *   type: SIZE (bytes, optional K/M/G suffix), UINT, BOOL (0/1), STR.
 */
#ifndef LEEK_OPTIONS_H
#define LEEK_OPTIONS_H

#define LK_EXACT_ARENA_RETAIN (64ull << 20) /* LEEK_ARENA_RETAIN's default in exact mode */
#define LK_OUTPUT_DEFAULT "leek.%e.%p.lk"     /* LEEK_OUTPUT's, and the name in a directory */

#define LK_OPTIONS(X)                                                                              \
	X(period, "LEEK_PERIOD", SIZE, "524288",                                                   \
	  "mean bytes between samples; 1 records every allocation (exact mode). 512 KiB is the "   \
	  "default of jemalloc and Go: about 2 samples per MiB allocated, for a cost within 1% "   \
	  "on real programs (docs/performance.md, bench/callgrind-real.sh)")                       \
	X(seed, "LEEK_SEED", UINT, "",                                                             \
	  "seed of the sampler's random stream, for reproducible runs; empty means a fresh "        \
	  "random seed (written to the profile header)")                                            \
	X(output, "LEEK_OUTPUT", STR, LK_OUTPUT_DEFAULT,                                           \
	  "profile path; %p is the pid, %e the executable's name, %% a percent sign. A directory "  \
	  "(or a path ending in /) gets the default name inside it; /dev/null writes no profile. "  \
	  "An existing file is never overwritten: a .1, .2... suffix is added. The file is "        \
	  "created 0600: it holds the command line and every module's address")                    \
	X(inherit, "LEEK_INHERIT", BOOL, "1",                                                      \
	  "profile exec'd children too (they inherit LD_PRELOAD); 0 removes libleek from the "     \
	  "environment the program's children see")                                                \
	X(max_frames, "LEEK_MAX_FRAMES", UINT, "128",                                              \
	  "deepest stack recorded (at most 128); 128 covers deep C++ and Rust stacks, and a cut "  \
	  "stack is counted in the profile")                                                       \
	X(arena_size, "LEEK_ARENA_SIZE", SIZE, "64G",                                              \
	  "address space reserved for sampled blocks (not memory: pages are committed as used); "  \
	  "64 GiB is 0.05% of the 47-bit address space and holds the sampled part of any heap "    \
	  "that fits in this machine class. Under an address-space limit (ulimit -v) the arena "   \
	  "reserves a sixteenth of the room left and grows as its blocks need")                    \
	X(arena_retain, "LEEK_ARENA_RETAIN", SIZE, "2M",                                           \
	  "freed arena pages kept resident for reuse before they go back to the kernel (freeing "  \
	  "a block of 128 KiB to 32 MiB raises it to one and a half times that block). 2 MiB "     \
	  "holds a churning 1 MiB sampled block (257 pages with its header), so it is reused "     \
	  "without page faults; more trades peak RSS for fewer faults (bench/faults-real.sh). "    \
	  "When unset in exact mode (LEEK_PERIOD=1) it is 64M: there the arena holds the whole "   \
	  "heap and keeps freed runs as a heap does (docs/performance.md)")                        \
	X(rss_interval_ms, "LEEK_RSS_INTERVAL_MS", UINT, "100",                                    \
	  "least milliseconds between two RSS records (read at sample time, no thread): 10 per "    \
	  "second resolves a heap timeline without a syscall per sample")                           \
	X(precise_time, "LEEK_PRECISE_TIME", BOOL, "0",                                            \
	  "1 reads every record's time from CLOCK_MONOTONIC, to the nanosecond; 0 from its "        \
	  "coarse reading, the kernel's last tick (1 to 10 ms), which costs a quarter as much and "  \
	  "is read twice a sample: ages, lifetimes and timelines are read in seconds, and a "       \
	  "sampled 1 MiB pair then costs no more than exact mode's (docs/performance.md)")         \
	X(free_stacks, "LEEK_FREE_STACKS", BOOL, "0",                                              \
	  "1 records the stack of the call that frees each sampled block (`leek report frees`): "  \
	  "about 500 instructions a sampled free. Off by default: a sampled 1 MiB pair costs "     \
	  "1.41x as much with it, beyond issue 4's budget, and exact mode's pair 1.84x "           \
	  "(docs/design.md, \"Free stacks\"; bench/free-stacks.sh)")                                \
	X(abort_on_error, "LEEK_ABORT_ON_ERROR", BOOL, "1",                                        \
	  "1 aborts (SIGABRT) after reporting a double or invalid free of a block in leek's "     \
	  "arena, as glibc does at one it sees: the heap's state is the program's bug from there; " \
	  "0 ignores the free and goes on, for a profile past the first bug (docs/design.md, "     \
	  "\"Memory errors\")")                                                                    \
	X(guard, "LEEK_GUARD", UINT, "0",                                                          \
	  "guard mode: up to this many sampled blocks of at most a page at once each get a page "  \
	  "between two PROT_NONE pages, kept PROT_NONE once freed, so that an overflow or a use "  \
	  "after free faults where it happens (an ERROR record, `leek report errors`). 0 is off: "  \
	  "no page, no handler, nothing changes. At most 16384 (2N + 2 mappings, under the "       \
	  "kernel's 65530); `leek run --guard` sets 64 (docs/design.md, \"Guard mode\")")          \
	X(guard_align, "LEEK_GUARD_ALIGN", STR, "right",                                           \
	  "right puts a guarded block against the guard page after it (overflows); left against " \
	  "the one before it (underflows past its 32-byte header; one into the header is found "  \
	  "at its free)")                                                                          \
	X(session, "LEEK_SESSION", UINT, "0",                                                      \
	  "set by `leek run` so that it can find the profiles of its process tree")                 \
	X(start, "LEEK_START", STR, "on",                                                          \
	  "off starts the process dormant: every hook in place (sampled blocks may be live in the " \
	  "arena), nothing recorded until `leek ctl PID on`; on (or 1) samples from the start"     \
	  " (docs/design.md, \"On and off\")")                                                     \
	X(dormant_period, "LEEK_DORMANT_PERIOD", SIZE, "524288",                                   \
	  "mean bytes a dormant thread allocates between two looks for `leek ctl`'s command: as "  \
	  "many looks as the default period's samples, each a clock read and a compare, so a "     \
	  "dormant process costs the floor interposer's overhead (bench/micro.sh) and a thread "   \
	  "that allocates 100 MB/s looks 200 times a second")                                      \
	X(max_size, "LEEK_MAX_SIZE", SIZE, "0",                                                    \
	  "rotate the profile at this size (at least 64K; suffixes K, M, G): a new segment file "   \
	  "NAME.seg1, NAME.seg2... begins with a checkpoint of the live sampled set. 0, the "       \
	  "default, never rotates: a profile that is read after the run wants every record, and "   \
	  "rotation deletes records (docs/design.md, \"Bounded files\")")                           \
	X(max_age, "LEEK_MAX_AGE", DURATION, "0",                                                  \
	  "rotate the profile when its segment is this old (s, m, h or d; a bare number is "       \
	  "seconds). 0, the default, never rotates by age, for the reason of LEEK_MAX_SIZE")        \
	X(keep, "LEEK_KEEP", UINT, "4",                                                            \
	  "segments kept on disk, the one being written included (1 to 256); older ones are "      \
	  "deleted. 4 keeps three whole segments of history behind the live one, and bounds the "   \
	  "disk to about 4 x (LEEK_MAX_SIZE + 1 MiB) (docs/design.md, \"Bounded files\")")          \
	X(quiet, "LEEK_QUIET", BOOL, "0",                                                          \
	  "1 silences the one line libleek prints when it cannot write its profile")

#endif /* LEEK_OPTIONS_H */
