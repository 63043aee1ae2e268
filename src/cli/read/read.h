/* read.h: the validated, streaming reader of leek profiles (include/leek/format.h).
 *
 * Every byte of a profile is untrusted: the reader must never crash, hang, or let a length in
 * the file decide how much memory it takes. It reads through a fixed window (LK_READ_BUF bytes)
 * and hands out one decoded record at a time; the only state that grows is the set of loaded
 * modules, capped at LK_READ_MAX_LOADED. It never prints: a failure leaves a one-line message,
 * "offset N: what is wrong", for the caller to print after the file's name.
 *
 * A profile that starts with zstd's magic (28 b5 2f fd) or gzip's (1f 8b) is decompressed into
 * the window as it is read (read-z.h); every offset is then still one in the uncompressed
 * profile. A compressed stream cut short reads like a crashed profile: up to its last complete
 * record, without a trailer.
 *
 *   r = lk_reader_open(rd, path);            header validated, or < 0 and lk_reader_error(rd)
 *   while ((r = lk_reader_next(rd, &rec)) > 0)
 *           use rec;                          pointers in rec live until the next call
 *   r == 0: the end. lk_reader_has_trailer(rd) false means the writer stopped early (crash,
 *   kill, exec) and lk_reader_end_offset(rd) says where its last complete record ends.
 *
 * A raw profile that a program is still writing can be followed (lk_reader_follow()): the reader
 * then reads nothing at or past a limit that its caller moves on, and stops, as if at the end,
 * at the first record that the bytes before the limit may not hold whole. The caller knows which
 * bytes are written for good (docs/format.md, "Reading a profile being written"); the reader
 * cannot tell a record whose tag is stored from one whose other bytes are. A thread segment's
 * body is the exception: its thread writes it long after the file has grown past it, so the
 * reader reads it from the file itself, and goes past its SEGMENT record only once the body is
 * complete (read-segment.c).
 *
 * Version 6's thread segments (format.h's SEGMENT) are read into memory when their SEGMENT record
 * is read, and their records are handed out among the main stream's in one order by time
 * (read-merge.c; docs/format.md, "Thread segments"): a caller sees one sequence of records, with
 * times that never go backwards, but a body's records do not come in file order, and neither do
 * block numbers. At most LK_READ_SEG_OPEN_MAX bodies, LK_READ_SEG_BYTES_MAX bytes in all, are
 * held at once.
 *
 * Errors: -EMEDIUMTYPE not a leek profile, -EPROTONOSUPPORT another format version, -EBADMSG
 * corrupt or truncated, -ENOMEM, or the errno of open/read.
 */
#ifndef LEEK_READ_H
#define LEEK_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "leek/format.h"
#include "record.h"

#define LK_READ_BUF (64 * 1024)         /* the window over a file */
#define LK_READ_RECORD_MAX 8192         /* no known record is longer (record.h's LK_*_MAX) */
#define LK_READ_MAX_HEADER (1u << 20)   /* header_size limit: exe path plus a long command line */
#define LK_READ_MAX_COUNTERS 64         /* (counter, value) pairs in one LOSS or TRAILER */
#define LK_READ_MAX_LOADED 65536        /* modules loaded at once */
#define LK_READ_EXT LK_REC_EXT_FIRST    /* lk_record.tag of every extension record (0x80..0xff) */
#define LK_READ_SEG_OPEN_MAX 65536      /* thread segments whose records are held at once */
#define LK_READ_SEG_BYTES_MAX (256u << 20) /* and their bodies' bytes: 256 of the longest */
#define LK_READ_SEG_WAIT_MAX 256        /* segments a body's FREE may wait on in turn, each for the
					 * ALLOC of the next one's FREE's block (read-merge.c) */

/* The header in host byte order, with its strings. */
struct lk_profile_header {
	struct lk_file_header h;
	const char *exe;     /* h.exe_len bytes plus a NUL */
	const char *cmdline; /* h.cmdline_len bytes plus a NUL; arguments are separated by NULs */
	/* A rotated segment's (LK_HDR_ROTATED: the rotation block, format.h); else 0 and
	 * h.start_realtime_ns. */
	uint32_t segment;
	uint64_t origin_ns;
};

struct lk_counter_value {
	uint64_t id, value; /* id: enum lk_counter, or a number this reader does not know */
};

/* One record. time_ns is nanoseconds since the header's start_monotonic_ns: the sum of every dt
 * so far (records without a dt carry the time of the last one that had one). Every ALLOC, INHERIT
 * and FREE names its block by number and ALLOC and FREE carry their thread: the reader undoes the
 * file's coding of both (the count of ALLOC and INHERIT records, the previous FREE's block, the
 * last THREAD record; in a thread segment's body, the body's own). A record handed out after
 * one of a later time (a FREE that waited for its ALLOC) gets that time: time_ns never goes
 * backwards. offset is where the record is in the file, in a body too. Only the union's member
 * of the record's tag is defined: the others hold what earlier records left there. */
struct lk_record {
	enum lk_rec_tag tag; /* LK_REC_ALLOC..LK_REC_SEGMENT or LK_READ_EXT; ALLOC_FIXED,
			      * FREE_FIXED and FREE_STACK come as ALLOC and FREE (FREE_STACK's
			      * with free.stack), SEG_END never */
	uint64_t offset;     /* of the tag byte */
	uint64_t time_ns;
	union {
		struct {
			uint64_t tid, block, size, stack; /* block: this record's number */
		} alloc;
		struct {
			uint64_t tid, block; /* block: the ALLOC or INHERIT's number */
			uint64_t stack;      /* FREE_STACK's: the stack that freed it; 0 none */
		} free;
		struct {
			uint64_t tid;
		} thread;
		struct {
			uint64_t id;
			uint32_t nframes;
			const uint64_t *frames; /* decoded: absolute return addresses */
		} stack;
		struct {
			uint64_t id, base;
			uint32_t nseg, build_id_len, path_len;
			const struct lk_module_seg *seg;
			const uint8_t *build_id;
			const char *path; /* path_len bytes and a NUL; may hold NULs itself */
		} module;
		struct {
			uint64_t id;
		} unload;
		struct {
			uint64_t bytes;
		} rss;
		struct {                      /* LOSS and TRAILER */
			uint64_t end_realtime_ns; /* TRAILER only */
			uint32_t n;
			const struct lk_counter_value *v;
		} counters;
		struct {
			uint64_t block, size, stack, alloc_monotonic_ns;
		} inherit;
		struct {
			uint32_t kind;     /* enum lk_ctl_cmd: LK_CTL_ON, LK_CTL_OFF or LK_CTL_MARK */
			uint32_t name_len; /* a mark's; 0 for ON and OFF */
			char name[LK_CTL_NAME_MAX + 1]; /* a copy, NUL-terminated */
		} ctl;
		struct {
			uint64_t tid, kind; /* kind: enum lk_error_kind */
			uint64_t addr, block_addr, block_size, block;
			uint64_t alloc_stack, free_stack, stack; /* 0: none */
		} error;
		struct {
			uint8_t tag; /* 0x80..0xff */
			uint64_t len; /* payload bytes, skipped */
		} ext;
		struct {
			uint64_t tid;         /* the thread of every record in its body */
			uint64_t first_block; /* the number its body's first ALLOC gives its block */
			uint64_t blocks;      /* numbers reserved: first_block to first_block + blocks - 1 */
			uint64_t body_offset, length; /* where its body is in the file */
		} segment;
	};
};

struct lk_reader;

struct lk_reader *lk_reader_new(void); /* NULL when out of memory */
struct lk_reader *lk_reader_free(struct lk_reader *r); /* accepts NULL, returns NULL */
static inline void lk_reader_freep(struct lk_reader **r)
{
	lk_reader_free(*r);
}

/* Each reader reads one profile: open it once, from exactly one of these. */
int lk_reader_open(struct lk_reader *r, const char *path);
int lk_reader_open_fd(struct lk_reader *r, int fd); /* fd stays the caller's */
/* data is read in place (or inflated from): it must outlive the reader. */
int lk_reader_open_memory(struct lk_reader *r, const void *data, size_t size);

const struct lk_profile_header *lk_reader_header(const struct lk_reader *r);

/* 1 and *rec filled, 0 at the end, or < 0 (and the same error again on later calls). A record of
 * a thread segment's body comes when the merged order has it (read-merge.c), not in file order. */
int lk_reader_next(struct lk_reader *r, struct lk_record *rec);

/* lk_reader_next() up to n (>= 1) times, into rec[0], rec[1], ...: the same records, but it stops
 * after one that points into the reader (STACK, MODULE, LOSS, TRAILER), whose pointers live until
 * the next call. The number of records given (>= 1); or, if there is none, what lk_reader_next()
 * returned (0 or < 0). A failure after some records is the next call's. Cheaper a record than
 * lk_reader_next() for a run of a thread segment's records (read-merge.c). */
int lk_reader_next_many(struct lk_reader *r, struct lk_record *rec, unsigned n);

/* lk_reader_next() for a caller that needs only the time of each record (a first pass over a
 * profile): the same records, checked as much, with the same results, but only the time of the
 * record is given, in *time_ns. */
int lk_reader_skip(struct lk_reader *r, uint64_t *time_ns);

/* Follows a raw profile that is still being written: nothing at or past file offset `limit` is
 * read, and lk_reader_next() returns 0 ("nothing more for now") at the first record that starts
 * less than LK_READ_RECORD_MAX bytes before the limit (it may not be whole there), at a zero tag,
 * at an extension record, and at a SEGMENT record whose body is not complete yet (it ends
 * neither at SEG_END nor full of records; the body itself is read past the limit, from the file,
 * with pread). Called again with a higher limit, it goes on from there; with UINT64_MAX it reads
 * the rest as a whole file is read, to its end. Before opening (so that the header, too, is read
 * only below the limit) or between records; a compressed profile is never followed (-EINVAL). */
int lk_reader_follow(struct lk_reader *r, uint64_t limit);
/* And every record that starts before `whole` (at most the limit) is whole before it: libleek said
 * so (a SYNC's reply, src/cli/ctl.h), so the records there are read up to it, not only those
 * LK_READ_RECORD_MAX bytes before the limit. Never lowers what an earlier call said. */
void lk_reader_follow_whole(struct lk_reader *r, uint64_t whole);

/* ---- rotated profiles (read-chain.c; docs/format.md, "Reading a chain") ----
 *
 * The files of one rotated profile beside `path`, oldest first: NAME and NAME.segN[.M] that share
 * its session, pid and origin (segment 0's start). No chain (ret->n == 0, and 0 returned): path
 * is no profile on disk, or is one alone (segment 0 with no segment after it, or a renamed
 * segment). -EINVAL with a message in *err: two files are one segment, a segment between two kept
 * ones is missing, or a file named as a segment of the chain is another process's. */
struct lk_chain_files {
	char **paths;
	uint32_t *segments; /* of each: consecutive; segments[0] > 0 if older ones were deleted */
	size_t n;
	size_t named;       /* the index of path's segment */
};
int lk_chain_find(const char *path, struct lk_chain_files *ret, char **err);
void lk_chain_files_done(struct lk_chain_files *f);

/* Opens paths[0..n-1], consecutive segments from segment `first`, as one profile: the first
 * one's header, times since its start, and one series of stack, module and block numbers (the
 * header comment of read-chain.c). lk_reader_follow() before it applies to the newest segment.
 * lk_reader_end_offset() is one in the newest segment once its records are read. */
int lk_reader_open_chain(struct lk_reader *r, const char *const *paths, size_t n, uint32_t first);

struct lk_chain_stats {
	uint32_t first, segments; /* the first segment's number; how many were read */
	uint64_t matched;         /* INHERITs counted once, as the blocks they continue */
	uint64_t unmatched;       /* INHERITs of a later segment that continue no live block */
	uint64_t dropped;         /* blocks live at a segment's end that the next did not inherit */
};
/* All 0 for a reader of one file. */
void lk_reader_chain_stats(const struct lk_reader *r, struct lk_chain_stats *ret);

const char *lk_reader_error(const struct lk_reader *r); /* "" if there was none */
bool lk_reader_has_trailer(const struct lk_reader *r);
/* After the last complete record of the main stream read (a SEGMENT's: after its body). Every byte
 * before it has been read for good, bodies included, even while following. */
uint64_t lk_reader_end_offset(const struct lk_reader *r);

/* "ALLOC", ..., "SEG_END", "EXT", or NULL for a reserved tag. */
const char *lk_rec_tag_name(unsigned tag);
/* "arena_full", ..., "frees", or NULL for a counter this reader does not know. */
const char *lk_counter_name(uint64_t id);
/* "overflow", ..., "realloc-of-freed" (enum lk_error_kind), or "unknown". */
const char *lk_error_kind_name(uint64_t kind);

#endif /* LEEK_READ_H */
