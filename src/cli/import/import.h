/* import.h: `leek import`'s pipeline, for foreign malloc traces (glibc mtrace, FreeBSD kdump).
 *
 *   lines.c     the input, one line at a time (never the whole file), with the first lines kept
 *               for detect.c and then handed out again
 *   detect.c    which format the first lines are in
 *   mtrace.c    one line of glibc's mtrace output to a record
 *   kdump.c     one line of FreeBSD's `kdump` output to a record
 *   callers.c   the callers of records, interned, and parsed into module and offset
 *   binaries.c  --binary files: their load addresses, and callers symbolized through symbols/
 *   match.c     allocations matched with frees by address: the live set, warnings
 *   out-text.c, out-json.c   the report
 *   convert.c   --convert: a leek profile (docs/format.md) in exact mode
 *
 * Memory is bounded by the live set, the distinct callers and the warnings kept (at most
 * LK_IMPORT_WARNINGS_KEPT), never by the length of the trace. Library-style: nothing here prints
 * but the outputs and the -v trace (to the FILE given); errors are negative errnos.
 */
#ifndef LEEK_IMPORT_H
#define LEEK_IMPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "leek/format.h"
#include "u64map.h"

/* The value of hexadecimal digit c, or -1: what the traces' addresses and sizes are written in. */
static inline int lk_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* ---- lines.c ---- */

/* The longest line taken whole: a real record is under 300 bytes, a caller with a long C++ name
 * a few KiB; anything longer is malformed (and read past, not kept). */
#define LK_IMPORT_LINE_MAX (64 * 1024)
/* Lines detect.c looks at: the first non-empty ones, as `file` would. */
#define LK_IMPORT_DETECT_LINES 16

struct lk_lines {
	FILE *f;
	char *buf;            /* LK_IMPORT_LINE_MAX + 2 bytes */
	uint64_t lineno;      /* of the line last handed out */
	uint64_t file_lineno; /* of the line last read from the file: the count of lines */
	bool too_long;        /* the line last handed out was cut at LK_IMPORT_LINE_MAX */
	char *kept[LK_IMPORT_DETECT_LINES]; /* lines read ahead for detect.c, handed out again */
	uint64_t kept_lineno[LK_IMPORT_DETECT_LINES];
	bool kept_long[LK_IMPORT_DETECT_LINES];
	size_t nkept, next_kept;
};

int lk_lines_init(struct lk_lines *l, FILE *f);
void lk_lines_done(struct lk_lines *l);
/* The next line, without its newline, NUL-terminated, in l's buffer until the next call: 1, 0 at
 * the end, or a negative errno (a read error). */
int lk_lines_next(struct lk_lines *l, const char **line, size_t *len);
/* Reads ahead up to LK_IMPORT_DETECT_LINES non-empty lines, which lk_lines_next() then hands
 * out first; *ret points at them. Returns how many, or a negative errno. */
int lk_lines_peek(struct lk_lines *l, const char *const **ret);

/* ---- the records (mtrace.c, kdump.c) ---- */

enum lk_import_format { LK_IMPORT_AUTO, LK_IMPORT_MTRACE, LK_IMPORT_KDUMP };

enum lk_import_op {
	LK_OP_ALLOC,        /* addr size: addr 0 is a failed allocation */
	LK_OP_FREE,         /* addr */
	LK_OP_REALLOC,      /* old -> addr size (kdump): addr 0 failed, old 0 is a malloc */
	LK_OP_REALLOC_FROM, /* mtrace '<' old: the first half of a realloc that moved or resized */
	LK_OP_REALLOC_TO,   /* mtrace '>' addr size: its second half */
	LK_OP_REALLOC_FAIL, /* mtrace '!' old size: realloc returned NULL, old stays */
	LK_OP_MARK,         /* mtrace "= Start", "= End"; kdump malloc_init() */
};

struct lk_import_rec {
	enum lk_import_op op;
	uint64_t addr, old, size;
	uint64_t ts_ns;     /* kdump's timestamp column, ns; UINT64_MAX: none */
	uint64_t pid, tid;  /* kdump: the process and (-H) thread; 0: none */
	const char *caller; /* mtrace's "@ CALLER", in the line; NULL: none */
	size_t caller_len;
	const char *mark; /* LK_OP_MARK: "Start", "End", "malloc_init" */
};

/* Each parses one line: 1 with *rec filled, 0 for a line that is no malloc record (kdump: a
 * system call, an rtld record, a hex dump line; both: an empty line), or -EINVAL with *why
 * saying what is wrong (a static string). */
int lk_mtrace_parse(const char *line, size_t len, struct lk_import_rec *rec, const char **why);
int lk_kdump_parse(const char *line, size_t len, struct lk_import_rec *rec, const char **why);

/* detect.c: the format of these first lines; -EINVAL if neither fits them. No line at all is
 * mtrace (an empty trace). */
int lk_import_detect(const char *const *lines, size_t n, enum lk_import_format *ret);
const char *lk_import_format_name(enum lk_import_format f);

/* ---- callers.c ---- */

/* A caller as mtrace writes it (malloc/mtrace-impl.c, tr_where): "MODULE:(SYM+OFF)[0xREL]",
 * "MODULE:[0xREL]" (REL = caller - the module's dli_fbase), or "[0xABS]" when dladdr knew no
 * module (and in glibc before 2.26, where the bracket held the absolute address). */
struct lk_import_caller {
	char *text;          /* cut into module and symbol by NULs */
	char *orig;          /* as in the trace (in text's allocation) */
	size_t len;          /* of orig */
	const char *module;  /* in text's copy, NUL-terminated; NULL: none ("[0xABS]") */
	const char *symbol;  /* the (SYM+OFF) part's SYM; NULL: none */
	uint64_t sym_offset; /* its OFF, negative ones as two's complement */
	uint64_t addr;       /* the bracket's address; 0 if the caller has none */
	bool has_addr;
	/* Filled by binaries.c when a --binary matches. */
	int binary;                  /* index into the binaries, -1: none */
	uint64_t vaddr;              /* the address in that binary's file (its p_vaddr terms) */
	const char *function, *file; /* symbolized; NULL: unknown */
	uint32_t line;
};

struct lk_import_callers {
	struct lk_u64map by_hash;   /* hash of text -> index + 1 (collisions: the next key) */
	struct lk_import_caller *c; /* index 0 is unused: caller id 0 is "none" */
	size_t n, cap;
};

void lk_import_callers_init(struct lk_import_callers *cs);
void lk_import_callers_done(struct lk_import_callers *cs);
/* The id (from 1) of this caller's text, added if new: 0 on success or -ENOMEM. */
int lk_import_callers_intern(struct lk_import_callers *cs, const char *text, size_t len,
                             uint64_t *ret_id);

/* ---- binaries.c ---- */

struct lk_symbolizer;

struct lk_import_binary {
	char *path;           /* as given */
	const char *name;     /* its file name */
	bool exec;            /* ET_EXEC: loaded at its link addresses */
	uint64_t first_vaddr; /* the lowest PT_LOAD's p_vaddr, page-aligned down: dli_fbase
	                       * is the load bias plus this */
	uint64_t end_vaddr;   /* the end of the highest PT_LOAD */
	uint32_t nseg;
	uint64_t seg_start[16], seg_len[16];
	uint8_t build_id[64];
	uint32_t build_id_len;
};

struct lk_import_binaries {
	struct lk_import_binary *b;
	size_t n;
	struct lk_symbolizer *sym; /* NULL when there is no binary */
};

/* Reads each --binary's ELF headers and registers it with a new symbolizer. 0, or a negative
 * errno with *bad the path that failed (-ENOEXEC: not a 64-bit ELF file). */
int lk_import_binaries_open(struct lk_import_binaries *bs, char *const *paths, size_t n,
                            const char **bad);
void lk_import_binaries_done(struct lk_import_binaries *bs);
/* Matches a caller with a binary (by module file name, or for an absolute address by the
 * ET_EXEC binary whose segments hold it) and symbolizes it; leaves binary -1 if none matches.
 * 0 or -ENOMEM. */
int lk_import_binaries_resolve(struct lk_import_binaries *bs, struct lk_import_caller *c);

/* ---- match.c ---- */

/* Warnings kept one by one for the report; beyond them only counted. A damaged trace can hold
 * one on every line: the count says how many, the first ones where. */
#define LK_IMPORT_WARNINGS_KEPT 1000
/* Addresses freed that are remembered, to tell a double free from a free of an address never
 * allocated: the map's table takes 24 bytes a slot, at most twice this many slots, so at most
 * 12 MiB. An allocator reuses its addresses, so in a real trace this covers far more frees than
 * it holds. Past it the map starts again, and a double free of an address forgotten that way is
 * reported as a free of an address never allocated. */
#define LK_IMPORT_FREED_MAX (256u << 10)

enum lk_import_warn {
	LK_WARN_DOUBLE_FREE,     /* a free of an address freed before and not allocated since */
	LK_WARN_FREE_UNKNOWN,    /* a free of an address never allocated in the trace */
	LK_WARN_REALLOC_UNKNOWN, /* a realloc of an address that is not live */
	LK_WARN_ALLOC_LIVE,      /* an allocation at an address already live: its free is missing */
	_LK_WARN_MAX,
};

struct lk_import_live {
	uint64_t addr, size, line, ts_ns, caller, block; /* caller: id, 0 none; block: convert.c */
};

struct lk_import_warning {
	enum lk_import_warn kind;
	uint64_t addr, line, ts_ns, caller;
	uint64_t first_line; /* DOUBLE_FREE: the first free's line; ALLOC_LIVE: the live one's */
};

struct lk_import_sink; /* convert.c */

struct lk_import_match {
	struct lk_u64map live; /* addr -> index into slots */
	struct lk_import_live *slots;
	uint64_t *free_slots; /* slots not in use, a stack */
	size_t nslots, nfree, cap;
	struct lk_u64map freed; /* addr -> line of its free, while not allocated again */
	struct lk_import_callers callers;
	uint64_t pending_realloc; /* mtrace '<' without its '>' yet: its line, 0 none */

	/* What the trace held. */
	uint64_t lines, records, skipped, malformed, allocs, frees, reallocs, failed;
	uint64_t leaked_objects, leaked_bytes; /* after lk_import_match_finish() */
	uint64_t live_bytes, peak_bytes, peak_objects;
	uint64_t warn_count[_LK_WARN_MAX];
	struct lk_import_warning *warnings; /* the first LK_IMPORT_WARNINGS_KEPT */
	size_t nwarnings;
	bool has_ts, has_caller;

	int verbose; /* -v: frees and reallocs matched, warnings; -vv: every record */
	FILE *trace; /* where -v goes */
	struct lk_import_sink *sink; /* --convert; NULL: none */
};

int lk_import_match_init(struct lk_import_match *m);
void lk_import_match_done(struct lk_import_match *m);
/* One record of line `line`: 0, -ENOMEM, or a sink's error. */
int lk_import_match_add(struct lk_import_match *m, const struct lk_import_rec *rec, uint64_t line);
/* The blocks still live, sorted by address (as glibc's mtrace script prints them), and the
 * totals: *ret is malloc'ed (NULL for none). 0 or -ENOMEM. */
int lk_import_match_finish(struct lk_import_match *m, struct lk_import_live **ret, size_t *n);
const char *lk_import_warn_name(enum lk_import_warn w); /* "double_free", ... (docs/json.md) */

/* ---- out-text.c, out-json.c ---- */

struct lk_import_result {
	const char *input; /* the file's name, "-" for stdin */
	enum lk_import_format format;
	const struct lk_import_match *m;
	const struct lk_import_live *leaks;
	size_t nleaks;
	const struct lk_import_binaries *bins;
};

void lk_import_text(FILE *f, const struct lk_import_result *r);
void lk_import_json(FILE *f, const struct lk_import_result *r);
/* "./mt:[0x11ae]", or "leak_here at /tmp/mt.c:6" when symbolized: into buf, returned. */
const char *lk_import_caller_format(const struct lk_import_caller *c, char *buf, size_t size);

/* ---- convert.c ---- */

struct lk_import_sink {
	FILE *f;
	const struct lk_import_callers *callers;
	const struct lk_import_binaries *bins;
	bool header_written;
	uint64_t blocks, prev_free, last_ns, first_ns, tid;
	uint64_t pid;
	const char *exe;
	struct lk_u64map module_ids; /* hash of module name -> module id */
	char **module_names;         /* by id - 1 */
	size_t nmodules;
	uint64_t *stack_of; /* by caller id: its STACK's id, 0 not written yet */
	size_t stack_cap;
	uint64_t nstacks;
	uint64_t counters[LK_CNT_MAX + 1];
};

int lk_import_sink_init(struct lk_import_sink *s, FILE *f, const struct lk_import_callers *cs,
                        const struct lk_import_binaries *bs, const char *exe);
void lk_import_sink_done(struct lk_import_sink *s);
/* A block allocated (its number is set here), and one freed, at ts_ns (UINT64_MAX: unknown). */
int lk_import_sink_alloc(struct lk_import_sink *s, struct lk_import_live *b, uint64_t tid);
int lk_import_sink_free(struct lk_import_sink *s, const struct lk_import_live *b, uint64_t ts_ns,
                        uint64_t tid);
/* The TRAILER; then flush errors show. */
int lk_import_sink_end(struct lk_import_sink *s);

#endif /* LEEK_IMPORT_H */
