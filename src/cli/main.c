/* main.c: `leek`, a table of commands (as in perf): each lives in its own cmd-*.c.
 *
 * main() picks the command and returns its status; it holds no state of its own. Adding a
 * command is one row in the table and one file. Usage text lives in the table beside the command,
 * so `leek help CMD` and a usage error can never disagree. What every command does the same way
 * (operands after its options, the end of its output, --max-memory) is here too.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "commands.h"
#include "options.h"
#include "util.h"

#ifndef LEEK_VERSION
#define LEEK_VERSION "unknown"
#endif

struct lk_command {
	const char *name;
	int (*fn)(int argc, char *argv[]);
	const char *summary;
	const char *usage;
};

static const struct lk_command commands[] = {
	{ "run", lk_cmd_run, "run a program and profile its heap",
	  "usage: leek run [OPTIONS] [--] COMMAND [ARGS...]\n"
	  "\n"
	  "Runs COMMAND with libleek.so preloaded, prints a summary of each profile it wrote, and\n"
	  "compresses each one into FILE.zst (zstd, mode 0600; the raw FILE is removed). While\n"
	  "COMMAND runs, leek reads and compresses its profile as it grows, on a CPU that nothing\n"
	  "else wants (SCHED_IDLE), so that little is left to do after the exit. A profile is the\n"
	  "run's if its header carries the run's session and the file belongs to you: another\n"
	  "user's file that carries it is ignored, with a warning. The summary symbolizes with\n"
	  "local files only: leek unsets DEBUGINFOD_URLS for itself (COMMAND still sees it).\n"
	  "\n"
	  "  -p, --period BYTES  mean bytes between samples (K, M, G suffixes); 1 records every\n"
	  "                      allocation (default: LEEK_PERIOD, else 512K)\n"
	  "  -o, --output PATH   profile path; %p is the pid, %e the program's name, %% a percent\n"
	  "                      sign (default: leek.%e.%p.lk in the current directory)\n"
	  "      --seed N        seed of the sampler, for a reproducible run\n"
	  "      --no-children   do not profile the programs COMMAND executes\n"
	  "      --free-stacks   record the stack that frees each sampled block, for\n"
	  "                      `leek report frees` (LEEK_FREE_STACKS=1)\n"
	  "      --max-size SIZE rotate the profile at SIZE of records (LEEK_MAX_SIZE, at least\n"
	  "                      64K): FILE, FILE.seg1, FILE.seg2...; each segment begins with the\n"
	  "                      live set, so the newest alone gives the live view (the summary's)\n"
	  "      --max-age TIME  rotate when a segment is TIME old (LEEK_MAX_AGE: 90s, 15m, 6h, 7d)\n"
	  "      --keep N        segments kept on disk, the newest included (LEEK_KEEP, default 4)\n"
	  "      --guard[=N]     guard mode: up to N (default 64) sampled blocks at once between\n"
	  "                      PROT_NONE pages, to catch overflows and uses after free where\n"
	  "                      they happen: `leek report errors` (LEEK_GUARD=N)\n"
	  "      --no-compress   leave the profiles raw (FILE, not FILE.zst), e.g. to read one while\n"
	  "                      its program still runs; `leek compress` can do it later\n"
	  "      --no-follow     read and compress the profiles only after COMMAND exits\n"
	  "      --push URL      send the profiles to Grafana Pyroscope at URL as they grow:\n"
	  "                      `leek push --session` beside COMMAND, which sends a last\n"
	  "                      interval of each profile once COMMAND has ended; --push-name,\n"
	  "                      --push-label, --push-every, --push-tenant, --push-auth-file,\n"
	  "                      --push-auth-env, --push-cacert, --push-timeout and --push-queue\n"
	  "                      are push's options of those names (`leek help push`)\n"
	  "      --max-memory SIZE\n"
	  "                      the most memory the profiles' contents may make the summary\n"
	  "                      take, as `leek report --max-memory` (K, M, G suffixes)\n"
	  "\n"
	  "Exits with COMMAND's status, or 128+N if signal N killed it; 2 if leek cannot profile\n"
	  "COMMAND (statically linked, setuid, another architecture), 126/127 if it cannot be run\n"
	  "or found. A profile that cannot be compressed stays raw, with a warning, and does not\n"
	  "change the status; neither does a closed pipe on leek's output (leek ignores SIGPIPE,\n"
	  "COMMAND does not). LEEK_LIBRARY overrides where libleek.so is looked for.\n" },
	{ "dump", lk_cmd_dump, "check a profile and print it as text",
	  "usage: leek dump [--summary] [--chain] FILE...\n"
	  "\n"
	  "Validates each profile, raw or compressed (zstd or gzip), and prints its header and\n"
	  "every record, one per line (offsets are in the uncompressed profile). Each file is\n"
	  "printed as it is written: a rotated profile's segment alone, unless --chain.\n"
	  "\n"
	  "  -s, --summary  print only a summary: counts, live samples at the end, the estimated\n"
	  "                 live bytes, max RSS, duration and the loss counters\n"
	  "      --chain    print every segment of a rotated profile's chain (FILE, FILE.seg1, ...\n"
	  "                 of one process, found as `leek report` finds them), oldest kept first,\n"
	  "                 each whole under its own FILE line (--summary: file:), and a chain once\n"
	  "                 however many of its segments are named; the segments are not joined\n"
	  "                 (`leek report` reads them as one timeline)\n"
	  "      --max-memory SIZE\n"
	  "                 the most memory a profile's contents may make --summary take, as\n"
	  "                 `leek report --max-memory` (K, M, G suffixes)\n"
	  "\n"
	  "Exits 0 if every file is a valid profile (a missing trailer is only a warning), 2 if\n"
	  "one is unreadable, corrupt, not a leek profile or needs more than --max-memory, 1 on a\n"
	  "usage error.\n" },
	{ "report", lk_cmd_report, "show a profile's heap by allocation site, or as a call tree",
	  "usage: leek report [VIEW] [OPTIONS] FILE...\n"
	  "\n"
	  "Symbolizes each profile, raw or compressed (zstd or gzip; libdw, modules found by\n"
	  "build-id; only regular files are opened, whatever path a profile or a module names),\n"
	  "and ranks its allocation sites: a stack's first frame outside leek, the allocator,\n"
	  "operator new, the C++ and Rust standard libraries, the wrappers of GLib, CPython,\n"
	  "SQLite and xmalloc, and the wrappers the stacks reveal (docs/design.md, \"Choosing a\n"
	  "site\"). Bytes are the bytes the program asked for;\n"
	  "every estimate comes with its samples and a 95% interval, and ~ marks one from too few\n"
	  "samples to be more than an order of magnitude.\n"
	  "\n"
	  "Views (the first argument, or --view):\n"
	  "  leaks     (default) live at the end, or at a crashed process's last record\n"
	  "  peak      live at the estimated high-water mark of the heap, and when that was\n"
	  "  inuse     live at --at TIME\n"
	  "  alloc     allocated in all, freed or not (churn)\n"
	  "  old       live at the end and allocated more than --age DURATION before it\n"
	  "  growth    per site: growing, plateau, flat or unknown, with a confidence\n"
	  "  timeline  the heap estimate and RSS over time, as a chart\n"
	  "  tree      a call tree of every stack, with each frame's total and self (live at\n"
	  "            the end, or --value): top-down, callers above their callees\n"
	  "\n"
	  "  -n, --top N          the N largest sites (default 20; in JSON all; in HTML 200;\n"
	  "                       0 = all)\n"
	  "      --min-share PCT  hide sites (tree: nodes) below PCT percent of the view's total\n"
	  "                       (tree: default 0.5 in text, 0 in JSON)\n"
	  "      --focus REGEX    keep only stacks with a frame whose function or module matches\n"
	  "      --ignore REGEX   drop the stacks with a frame whose function or module matches\n"
	  "      --alloc-fn REGEX\n"
	  "                       a function of the program's that only allocates for its caller,\n"
	  "                       skipped like malloc when choosing a site (REGEX: POSIX extended;\n"
	  "                       --focus, --ignore and --alloc-fn can be repeated). A pattern\n"
	  "                       MODULE+0xOFFSET, as a frame without a symbol is named\n"
	  "                       (libsqlite3.so.0+0xa7503), is that address of the module whose\n"
	  "                       file name (or path, with a /) is MODULE, not a regex\n"
	  "      --no-auto-wrappers\n"
	  "                       skip only the listed allocator frames, not also the wrappers\n"
	  "                       the stacks reveal: a frame above the allocator in 10% of the\n"
	  "                       samples or more, under 5 callers or more, none with 90% of them\n"
	  "                       (docs/design.md); the report names each one it skipped\n"
	  "      --at TIME        inuse: seconds since the start (suffixes ns, us, ms, s, m, h),\n"
	  "                       or a mark's name (`leek ctl PID mark NAME`)\n"
	  "      --age DURATION   old: the minimum age (same suffixes); in exact mode times are\n"
	  "                       known to one kernel tick, usually 4 ms\n"
	  "      --from MOMENT, --to MOMENT\n"
	  "                       leaks, inuse, alloc (and their trees): only the blocks\n"
	  "                       allocated after --from (a time or a mark); leaks live at --to\n"
	  "                       (default: the end), inuse at --at, alloc up to --to\n"
	  "  -s, -v, --stacks     print the full symbolized stack under each site\n"
	  "      --value FIGURE   tree: what it adds up: leaks (default), peak, inuse (with --at),\n"
	  "                       alloc, old (with --age), or pprof's inuse_space, inuse_objects,\n"
	  "                       alloc_space, alloc_objects\n"
	  "      --objects        tree: count objects instead of bytes\n"
	  "      --inverted       tree: bottom-up, the innermost frames (where the allocator was\n"
	  "                       called) at the root and their callers below\n"
	  "      --merge          one report for all the files (a process tree), sites summed\n"
	  "  -f, --format FMT     text (default), json (docs/json.md) or html: one page that\n"
	  "                       works offline, with the summary, a chart of the heap over\n"
	  "                       time, flame graphs (of any moment: click the chart) and the\n"
	  "                       sites' and growth tables (the top 200 sites unless --top)\n"
	  "  -o, --output FILE    write the report to FILE (replaced only by a whole report)\n"
	  "      --debug-dir DIR  look for debug files in DIR first (can be repeated)\n"
	  "      --debuginfod     let libdw fetch debug files from DEBUGINFOD_URLS (off by\n"
	  "                       default: a report never waits on the network unasked)\n"
	  "      --ascii          draw the timeline and the tree with ASCII characters only\n"
	  "      --max-memory SIZE\n"
	  "                       the most memory the profiles' contents (live blocks, stacks,\n"
	  "                       modules, sites) may make leek take; a profile that needs more\n"
	  "                       is refused, with the offset where it got there (K, M, G\n"
	  "                       suffixes; default: half the RAM, or half the cgroup's memory\n"
	  "                       limit, RLIMIT_AS or RLIMIT_DATA if lower)\n"
	  "      --segment-only   a rotated profile's file alone; by default any of its segments\n"
	  "                       reads the whole chain beside it (FILE, FILE.seg1, ... of one\n"
	  "                       process) as one timeline, and naming several reads it once\n"
	  "\n"
	  "\n"
	  "Several files are reported one after the other unless --merge. Exits 0, or 2 if a\n"
	  "profile is unreadable, corrupt, not a leek profile or needs more than --max-memory\n"
	  "(the others are still reported), 1 on a usage error.\n"
	  "\n"
	  "usage: leek report frees [--last N] [OPTIONS] FILE...\n"
	  "\n"
	  "The frees of sampled blocks: the last N (default 20), oldest first, each with its\n"
	  "size, lifetime, allocation site and free site, then every (allocation stack, free\n"
	  "stack) pair by estimated bytes freed, with its objects and lifetimes (-n: the top N\n"
	  "pairs; -s: whole stacks; -f json: docs/json.md, \"leek-frees\"). A free has a free\n"
	  "stack only in a profile recorded with `leek run --free-stacks` (LEEK_FREE_STACKS=1).\n"
	  "\n"
	  "usage: leek report errors [OPTIONS] FILE...\n"
	  "\n"
	  "The memory errors libleek caught, in the order they happened: double and invalid\n"
	  "frees and reallocs of blocks in its arena (every block in exact mode, LEEK_PERIOD=1),\n"
	  "each with the address against its block and the whole stacks of the call, of the\n"
	  "allocation and, where recorded, of the free (-f json: docs/json.md, \"leek-errors\").\n"
	  "A process stops at its first error unless LEEK_ABORT_ON_ERROR=0.\n" },
	{ "export", lk_cmd_export, "write profiles for pprof, flame graphs (folded stacks) or a page",
	  "usage: leek export [OPTIONS] FILE...\n"
	  "\n"
	  "Reads and symbolizes each profile as `leek report` does, and writes its stacks with\n"
	  "their estimates (the report's numbers, rounded to integers) for other tools. The\n"
	  "output holds the symbols: it reads on a machine without the program's files.\n"
	  "\n"
	  "Formats (--format):\n"
	  "  pprof   (default) gzipped profile.proto, for `go tool pprof` and the tools that read\n"
	  "          it: sample types alloc_objects, alloc_space, inuse_objects, inuse_space (the\n"
	  "          default), one sample per stack, inlined functions in each location's lines,\n"
	  "          the modules as mappings with their build-ids. Written to FILE.pb.gz\n"
	  "  folded  one line per distinct stack, `root;...;leaf VALUE`, for flamegraph.pl,\n"
	  "          inferno and speedscope; to stdout. A ';', a control byte, a backslash or a\n"
	  "          byte outside UTF-8 in a name is written \\xNN\n"
	  "  html    the page of `leek report --format html`, the view --at names (the end,\n"
	  "          peak, or inuse at a time); to stdout\n"
	  "\n"
	  "  -f, --format FMT     pprof (default), folded or html\n"
	  "  -o, --output OUT     write to OUT (- for stdout); with several outputs, a directory\n"
	  "                       that gets one each\n"
	  "      --at WHEN        in-use values live at the end (default), at the peak (peak), or\n"
	  "                       at a time since the start (as `report inuse --at`: 1.5, 250ms)\n"
	  "      --value V        folded: inuse_space (default), alloc_space, inuse_objects or\n"
	  "                       alloc_objects\n"
	  "      --base BASE      pprof: a diff, FILE minus BASE, as `go tool pprof -diff_base`\n"
	  "                       reads one (BASE's samples negated, labelled pprof::base);\n"
	  "                       can be repeated\n"
	  "      --merge          one output for all the files (a process tree)\n"
	  "      --focus REGEX    keep only stacks with a frame whose function or module matches\n"
	  "      --ignore REGEX   drop the stacks with a frame whose function or module matches\n"
	  "      --debug-dir DIR  look for debug files in DIR first (can be repeated)\n"
	  "      --debuginfod     let libdw fetch debug files from DEBUGINFOD_URLS\n"
	  "      --max-memory SIZE\n"
	  "                       the most memory the profiles' contents may make leek take, as\n"
	  "                       `leek report --max-memory` (K, M, G suffixes)\n"
	  "      --segment-only   a rotated profile's file alone, not its chain (`leek report`)\n"
	  "\n"
	  "Outputs: one per FILE, or one for all with --merge. An output named after FILE is\n"
	  "FILE without .zst or .gz, plus .pb.gz, .folded or .html, beside FILE or in -o DIR; a\n"
	  "merged output of several files is named by -o. Files are written 0600 under a\n"
	  "temporary name, then renamed (an existing OUT is replaced), and \"FILE -> OUT\"\n"
	  "printed. Exits 0, or 2 if a profile is unreadable, corrupt, not a leek profile or needs\n"
	  "more than --max-memory (its output is not written; the others are), 1 on a usage\n"
	  "error.\n" },
	{ "diff", lk_cmd_diff, "compare two profiles, or two moments of one, site by site",
	  "usage: leek diff [OPTIONS] BASE NEW\n"
	  "       leek diff [OPTIONS] --base FILE [--base FILE...] NEW...\n"
	  "       leek diff [OPTIONS] --from T1 [--to T2] FILE...\n"
	  "\n"
	  "Shows, for each allocation site (matched by function, file, line and module, so across\n"
	  "processes and runs), the change in live bytes and in bytes allocated from BASE to NEW,\n"
	  "with a 95% interval, ranked by the size of the change. A '*' marks a change beyond the\n"
	  "sampling noise of the two estimates: over all the sites compared, at most 5% of the\n"
	  "changes marked are expected to be noise, and when nothing changed, a site is marked in\n"
	  "at most 5% of diffs (docs/sampling.md section 12). In exact mode every change is real.\n"
	  "Several files on a side are merged, as `leek report --merge` does. The sites are the\n"
	  "report's; the wrappers they skip are found in the stacks of both sides together, so\n"
	  "that both skip the same ones (those `leek report --merge` of every file finds).\n"
	  "\n"
	  "With --from and --to, the two sides are two moments of the same profiles (their files\n"
	  "merged): live bytes at T1 and at T2, their change tested on the blocks that came and\n"
	  "left in between, and the bytes allocated in between.\n"
	  "\n"
	  "      --at WHEN        live bytes at the end (end, the default), at each profile's\n"
	  "                       peak (peak), or TIME after each profile's start (as `leek\n"
	  "                       report inuse --at`)\n"
	  "      --base FILE      a file of the base side (can be repeated); the operands are\n"
	  "                       then the new side\n"
	  "      --from T1        the first moment (default: the start), seconds since the\n"
	  "                       start (suffixes ns, us, ms, s, m, h)\n"
	  "      --to T2          the second moment (default: the end)\n"
	  "      --by FIGURE      rank by the change in live bytes (live, the default) or in\n"
	  "                       bytes allocated (alloc; two profiles only)\n"
	  "  -n, --top N          the N largest changes (default 20; in JSON all; in HTML 200;\n"
	  "                       0 = all)\n"
	  "      --min-share PCT  hide changes below PCT percent of the larger side's total\n"
	  "      --focus REGEX, --ignore REGEX, --alloc-fn REGEX, --no-auto-wrappers, -s,\n"
	  "      --debug-dir DIR, --debuginfod, --max-memory SIZE, --segment-only\n"
	  "                       as for `leek report`\n"
	  "  -f, --format FMT     text (default), json (docs/json.md, \"leek diff\") or html: one\n"
	  "                       page that works offline, with both sides' summaries, a flame\n"
	  "                       graph of the change (red grew, blue shrank) and the sites'\n"
	  "                       changes, sortable\n"
	  "  -o, --output FILE    write the diff to FILE (replaced only by a whole diff)\n"
	  "\n"
	  "Exits 0 whatever changed (scripts read \"significant\" in the JSON), 2 if a profile is\n"
	  "unreadable, corrupt, not a leek profile or needs more than --max-memory (nothing is\n"
	  "printed then), 1 on a usage error.\n" },
	{ "import", lk_cmd_import, "find leaks in a glibc mtrace or FreeBSD kdump malloc trace",
	  "usage: leek import [OPTIONS] [FILE|-]\n"
	  "\n"
	  "Reads a malloc trace that another tool wrote, FILE or standard input, a line at a time,\n"
	  "and matches each allocation with its free by address, as glibc's mtrace script does:\n"
	  "what is left at the end has leaked. Formats: glibc's mtrace (MALLOC_TRACE=FILE, and on\n"
	  "glibc 2.34 and later LD_PRELOAD=libc_malloc_debug.so.0, with the program calling\n"
	  "mtrace()), and FreeBSD kdump's text of malloc's utrace records (kdump -u, with or\n"
	  "without -T and -H). Each leak is listed by address, with its size, its caller (mtrace)\n"
	  "and the line (and kdump's time) of its allocation; then the warnings: a double free, a\n"
	  "free of an address never allocated, a realloc of an address not allocated, an\n"
	  "allocation at an address already live. A malformed line is reported with its number and\n"
	  "skipped; kdump's other records are skipped and counted.\n"
	  "\n"
	  "  -f, --format FMT     the input's format, mtrace or kdump (default: told from the\n"
	  "                       first 16 non-empty lines), or the report's, text (default) or\n"
	  "                       json (docs/json.md, \"leek import\"); give it twice for both\n"
	  "      --binary FILE    the program, or a library, the trace's callers are in: they\n"
	  "                       are symbolized to function and file:line as `leek report`\n"
	  "                       symbolizes (matched by file name; can be repeated)\n"
	  "      --convert        also write the trace as a leek profile in exact mode, one\n"
	  "                       frame a caller, to -o FILE (mode 0600), for `leek report`,\n"
	  "                       `export` and `diff`; the report still goes to stdout\n"
	  "  -o, --output FILE    the profile with --convert; else the report (replaced only\n"
	  "                       by a whole one)\n"
	  "  -v, --verbose        show the matching on stderr as it happens: each free and\n"
	  "                       realloc with the allocation it ends, each warning; -vv also\n"
	  "                       each allocation and each record skipped\n"
	  "\n"
	  "Memory follows the blocks live at once, not the trace's length. Exits 1 if the trace\n"
	  "leaks (as glibc's mtrace script) or on a usage error, 0 if it does not leak, 2 if the\n"
	  "trace or a --binary cannot be read, the trace is in neither format, or an output\n"
	  "cannot be written.\n" },
	{ "push", lk_cmd_push, "send a running process's heap profile to Grafana Pyroscope",
	  "usage: leek push --pyroscope URL [OPTIONS] FILE|PID|--session ID\n"
	  "\n"
	  "Follows a profile being written (FILE, or PID's, found as `leek watch` finds it; or\n"
	  "every profile of a `leek run` session, children that start later included) and POSTs\n"
	  "it to Pyroscope's ingest API (URL/ingest) every --every: a pprof with inuse_space and\n"
	  "inuse_objects at the interval's end, and alloc_space and alloc_objects of the interval\n"
	  "alone (deltas). A last interval goes when the process ends or push gets SIGINT,\n"
	  "SIGTERM or SIGHUP. Sending never holds up the profiled process: push is another\n"
	  "process, and the network is waited on by a thread of its own (docs/push.md).\n"
	  "\n"
	  "      --pyroscope URL     the server (http:// or https://), e.g. http://host:4040\n"
	  "      --name APP          the service name (default: the executable's name)\n"
	  "      --label KEY=VALUE   a label of every series, besides executable, pid and host\n"
	  "                          (repeat, up to 32)\n"
	  "      --every TIME        the interval (default 15s, Pyroscope's clients'; 1s at least:\n"
	  "                          from and until are whole seconds)\n"
	  "      --tenant ID         the X-Scope-OrgID header (a multi-tenant Pyroscope)\n"
	  "      --auth-file FILE    credentials from FILE's first line: USER:PASSWORD is basic\n"
	  "                          authentication, anything else a bearer token\n"
	  "      --auth-env VAR      the same from the environment variable VAR\n"
	  "      --cacert FILE       the CA certificates for https (default: the system's)\n"
	  "      --timeout TIME      one request, whole (default 10s)\n"
	  "      --backoff TIME      the first retry's wait, doubled at each (default 1s)\n"
	  "      --backoff-max TIME  the longest wait between retries (default 1m)\n"
	  "      --queue N           intervals waiting at most, all profiles together; past it the\n"
	  "                          oldest is dropped and counted (default 240: an hour at 15s)\n"
	  "      --flush-timeout TIME  at the end, how long what waits may still take (default 10s)\n"
	  "      --session ID        every profile of `leek run`'s session ID (LEEK_SESSION), until\n"
	  "                          push is stopped: processes that start later are followed too\n"
	  "      --output PATTERN    where the session's profiles are (default leek.%e.%p.lk, as\n"
	  "                          `leek run -o`)\n"
	  "      --quiet             no status line when sending fails or drops (the last one stays)\n"
	  "\n"
	  "A token never goes on the command line. Prints a status line on stderr when a request\n"
	  "fails or an interval is dropped, and the counts at the end. Exits 0 once every interval\n"
	  "was accepted, 3 if one was dropped or rejected (or could not be made), 1 on a usage\n"
	  "error, 2 if the profile cannot be found or read.\n" },
	{ "watch", lk_cmd_watch, "report on a running process's profile as it runs, and at its end",
	  "usage: leek watch [OPTIONS] FILE|PID\n"
	  "\n"
	  "Follows a raw profile that its process still writes: FILE, or the one process PID\n"
	  "writes, found from its LEEK_OUTPUT and directory. It reads the file and /proc and\n"
	  "writes only its questions to the process (see below), which cost it two pwrites.\n"
	  "It prints, by allocation site with 95% intervals and each site's growth verdict:\n"
	  "  every --every        the live sampled blocks allocated --age or more before (old)\n"
	  "  on SIGHUP            every live site (all)\n"
	  "  on SIGUSR1           the old sites; their blocks are then known, and later old\n"
	  "                       reports leave them out and say how much they left out\n"
	  "  on SIGUSR2           the last --frees frees of sampled blocks: size, allocation\n"
	  "                       time, lifetime, allocation stack and, in a profile written\n"
	  "                       with LEEK_FREE_STACKS=1 (leek run --free-stacks), free stack\n"
	  "  with --high-water    the sites at each new high of the heap estimate above MIN,\n"
	  "                       once it is 10% above the last one reported\n"
	  "  at the end           every live site, when the process exits or dies (the file read\n"
	  "                       whole), or when watch gets SIGINT or SIGTERM\n"
	  "A report shows the records written before it: watch asks the process how far its file\n"
	  "is whole (`leek ctl PID sync`) before each report and every --max-lag, and the process\n"
	  "answers at its next sample, within LEEK_RSS_INTERVAL_MS (100 ms) of it. Without an\n"
	  "answer (--max-lag 0, a file watch may not write, a process that has stopped\n"
	  "allocating), only what the file's size proves written: up to one growth step of the\n"
	  "file behind (64 KiB while it is under 1 MiB, then 1 MiB; docs/design.md).\n"
	  "\n"
	  "      --every DURATION     old sites this often (default 10m)\n"
	  "      --age DURATION       how old a block must be to be old (default 5m)\n"
	  "      --high-water[=MIN]   high-water reports, above MIN bytes (default 0; K, M, G)\n"
	  "      --frees N            frees listed on SIGUSR2 (default 32)\n"
	  "      --poll DURATION      how often the file and the process are looked at (default\n"
	  "                           1s)\n"
	  "      --wait DURATION      how long to wait for PID's profile to appear (default 10s)\n"
	  "      --from MARK|TIME     the blocks allocated at or before the mark (`leek ctl PID\n"
	  "                           mark NAME`) or time since the start are known from the\n"
	  "                           start, as after SIGUSR1: old reports leave them out\n"
	  "      --max-lag DURATION   ask the process how far its file is whole at least this\n"
	  "                           often (default 5s; 0: never, watch then writes nothing)\n"
	  "  -f, --format FMT         text (default) or json: one object a report, on one line\n"
	  "                           (docs/json.md, \"leek watch\")\n"
	  "  -n, --top N, -s, --focus REGEX, --ignore REGEX, --alloc-fn REGEX, --no-auto-wrappers,\n"
	  "      --min-share PCT, --debug-dir DIR, --debuginfod, --max-memory SIZE, --ascii\n"
	  "                           as for `leek report`\n"
	  "\n"
	  "Exits 0 when the process exited cleanly (its profile has a trailer), 3 when it ended\n"
	  "without one (a crash, a kill, an exec), 4 when watch was stopped by SIGINT or SIGTERM,\n"
	  "2 if the profile cannot be found or read, 1 on a usage error.\n" },
	{ "top", lk_cmd_top, "a live full-screen view of a running process's profile, like top",
	  "usage: leek top [OPTIONS] FILE|PID\n"
	  "\n"
	  "Shows, refreshed every --interval, the live sites of a profile that its process still\n"
	  "writes (FILE, or PID's, found as `leek watch` finds it): live bytes, their change since\n"
	  "the view opened, bytes allocated, growth verdict and slope, and the heap estimate and\n"
	  "RSS over the run as sparklines. When the process ends, the last view (of the whole\n"
	  "file) stays until q.\n"
	  "\n"
	  "Keys: l, a, g sort by live, allocated or growth; up/down (k/j) select a site; s or\n"
	  "Enter shows its stack; q quits.\n"
	  "\n"
	  "      --interval DURATION  how often the view is read again (default 2s)\n"
	  "      --wait DURATION      how long to wait for PID's profile to appear (default 10s)\n"
	  "      --max-lag DURATION   ask the process how far its file is whole this often, so\n"
	  "                           that a view is at most about two of it behind (default\n"
	  "                           2s, the refresh; 0: never, top then writes nothing; see\n"
	  "                           `leek help watch`)\n"
	  "      --ascii              ASCII sparklines, whatever the locale\n"
	  "      --focus REGEX, --ignore REGEX, --alloc-fn REGEX, --no-auto-wrappers,\n"
	  "      --debug-dir DIR, --debuginfod, --max-memory SIZE\n"
	  "                           as for `leek report`\n"
	  "\n"
	  "Exits 0 on q, 2 if the profile cannot be found or read, 1 on a usage error or without\n"
	  "a terminal.\n" },
	{ "compress", lk_cmd_compress, "zstd-compress profiles (as `leek run` does unless --no-compress)",
	  "usage: leek compress FILE...\n"
	  "\n"
	  "Compresses each raw profile into FILE.zst beside it (zstd, mode 0600; FILE.1.zst, ...\n"
	  "if that exists: no file is overwritten), written under a temporary name, fsync'ed and\n"
	  "renamed, then removes FILE. Every command reads a compressed profile (zstd, or gzip as leek\n"
	  "wrote before) as it reads a raw one; `zstd -d` gives back the raw file. Refuses a file\n"
	  "that is not a leek profile, is already compressed, or is still being written (the\n"
	  "process named in its header holds it open). Prints \"FILE -> FILE.zst (SIZE -> SIZE)\"\n"
	  "for each.\n"
	  "\n"
	  "Exits 0 if every file was compressed, 2 if one was refused or could not be (the others\n"
	  "are still compressed; a refused file is left as it was), 1 on a usage error.\n" },
	{ "ctl", lk_cmd_ctl, "switch a running process's profiling on or off, or mark a moment",
	  "usage: leek ctl PID|FILE on|off|mark NAME|sync [--timeout TIME]\n"
	  "\n"
	  "  on              sample again (a process started with LEEK_START=off, or switched off)\n"
	  "  off             dormant: nothing is recorded but the frees of blocks sampled before,\n"
	  "                  every hook stays in place, and the cost is the interposer's floor\n"
	  "  mark NAME       a named moment in the profile (1 to 40 printable bytes, no spaces)\n"
	  "  sync            have the process say how far its file is whole (the offset), so that\n"
	  "                  a reader that follows it need not wait for the file to grow; `leek\n"
	  "                  watch` and `leek top` send it themselves (--max-lag)\n"
	  "  -t, --timeout TIME  how long to wait for the process to carry it out (default 5s)\n"
	  "\n"
	  "PID's profile is the raw profile it writes (found through /proc/PID/maps); FILE names\n"
	  "one. The command goes into the control block of the profile's header, which the process\n"
	  "reads when it allocates, with an RSS record (every LEEK_RSS_INTERVAL_MS, 100 ms): so it\n"
	  "takes effect within that interval of the process's next sample, or of its next look\n"
	  "while dormant (every LEEK_DORMANT_PERIOD bytes a thread allocates). The profile gets a\n"
	  "CTL record at that moment (`leek dump` shows it); reports show the time spent off, and\n"
	  "the marks (docs/design.md, \"On and off\").\n"
	  "\n"
	  "Prints \"PID: COMMAND, carried out in SECONDS s\" (sync adds \": the file is whole up to\n"
	  "offset N\"). Exits 0 when carried out, 3 when not within --timeout (the command stays\n"
	  "and is carried out at the process's next look) or replaced by another `leek ctl`'s, 2\n"
	  "if no profile takes it (not running, not yours, a libleek without control block), 1 on\n"
	  "a usage error.\n" },
	{ "help", lk_cmd_help, "show help for a command; `leek help env` lists LEEK_* variables",
	  "usage: leek help [COMMAND | env]\n" },
};

static const struct lk_command *find_command(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

/* The default of --max-memory on this machine, and what it is made of (budget.h). */
static void print_max_memory_default(FILE *f)
{
	struct lk_budget_machine m;
	char def[32], v[4][32];
	const uint64_t *of[] = { &m.ram, &m.cgroup, &m.rlimit_as, &m.rlimit_data };

	lk_budget_machine_read(&m);
	for (size_t i = 0; i < 4; i++)
		if (*of[i] == UINT64_MAX)
			snprintf(v[i], sizeof(v[i]), "none");
		else
			lk_budget_format(v[i], sizeof(v[i]), *of[i]);
	fprintf(f, "\n--max-memory's default here: %s, half the least of the memory (%s), the\n"
		"cgroup's memory limit (%s), RLIMIT_AS (%s) and RLIMIT_DATA (%s).\n",
		lk_budget_format(def, sizeof(def), lk_budget_default(&m)), v[0], v[1], v[2], v[3]);
}

int lk_cmd_usage(FILE *f, const char *command, int status)
{
	const struct lk_command *c = command ? find_command(command) : NULL;

	if (c) {
		fputs(c->usage, f);
		if (strstr(c->usage, "--max-memory"))
			print_max_memory_default(f);
		return status;
	}
	fputs("usage: leek [--version] [--help] COMMAND [ARGS...]\n\nCommands:\n", f);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fputs("\nExit status: 0 success; 1 usage error; 2 a profile is unreadable, corrupt or\n"
	      "not a leek profile, or a program leek cannot profile. `leek run` exits with the\n"
	      "program's status, `leek watch` with how the process ended. See `leek help\n"
	      "COMMAND`.\n",
	      f);
	return status;
}

/* At least 1 MiB, so that a size without its suffix ("512" for 512M) is refused rather than
 * taken for bytes, which no profile can be read in. */
#define MAX_MEMORY_MIN (1ull << 20)

int lk_cmd_need_operands(int argc, const char *command, const char *what)
{
	if (optind < argc)
		return 0;
	lk_msg("%s: no %s given", command, what);
	return lk_cmd_usage(stderr, command, LK_EXIT_USAGE);
}

int lk_cmd_end_output(const char *command, const char *what, int status)
{
	int r = fflush(stdout) != 0 ? -errno : ferror(stdout) ? -EIO : 0;

	if (r < 0) {
		lk_error(r, "%s: cannot write the %s", command, what);
		return LK_EXIT_FILE;
	}
	return status;
}

int lk_cmd_max_memory(const char *command, const char *arg)
{
	uint64_t v;

	if (lk_parse_size(arg, &v) < 0) {
		lk_msg("%s: --max-memory: '%s' is not a size in bytes (e.g. 512M, 4G)", command, arg);
		return LK_EXIT_USAGE;
	}
	if (v < MAX_MEMORY_MIN) {
		lk_msg("%s: --max-memory: '%s' is less than 1M (a suffix missing? e.g. 512M, 4G)",
		       command, arg);
		return LK_EXIT_USAGE;
	}
	lk_budget_set_limit(v);
	return 0;
}

/* Prints a paragraph indented by 4, wrapped at 80 columns. */
static void print_wrapped(const char *s)
{
	size_t col = 4;

	fputs("    ", stdout);
	while (*s) {
		size_t n = strcspn(s, " ");
		if (col > 4 && col + 1 + n > 80) {
			fputs("\n    ", stdout);
			col = 4;
		} else if (col > 4) {
			putchar(' ');
			col++;
		}
		fwrite(s, 1, n, stdout);
		col += n;
		s += n + strspn(s + n, " ");
	}
	putchar('\n');
}

static void print_env(void)
{
	fputs("The LEEK_* variables libleek.so reads (`leek run` sets some of them):\n\n", stdout);
#define ENV_HELP(field, env, type, def, why)                                                       \
	printf("  %s (%s, default %s)\n", env, #type, *def ? def : "none");                        \
	print_wrapped(why);
	LK_OPTIONS(ENV_HELP)
#undef ENV_HELP
}

int lk_cmd_help(int argc, char *argv[])
{
	if (argc < 2)
		return lk_cmd_usage(stdout, NULL, LK_EXIT_OK);
	if (strcmp(argv[1], "env") == 0) {
		print_env();
		return LK_EXIT_OK;
	}
	if (!find_command(argv[1])) {
		lk_msg("help: unknown command '%s'", argv[1]);
		return lk_cmd_usage(stderr, NULL, LK_EXIT_USAGE);
	}
	return lk_cmd_usage(stdout, argv[1], LK_EXIT_OK);
}

int main(int argc, char *argv[])
{
	const struct lk_command *c;

	if (argc < 2)
		return lk_cmd_usage(stderr, NULL, LK_EXIT_USAGE);
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
		puts("leek " LEEK_VERSION);
		return LK_EXIT_OK;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
		return lk_cmd_usage(stdout, NULL, LK_EXIT_OK);
	c = find_command(argv[1]);
	if (!c) {
		lk_msg("unknown command '%s' (see 'leek help')", argv[1]);
		return LK_EXIT_USAGE;
	}
	return c->fn(argc - 1, argv + 1);
}
