/* format.h: the leek profile file, the one contract between libleek.so and the leek CLI.
 *
 * docs/format.md describes the same layout in prose, byte by byte; keep the two in step and bump
 * LK_FORMAT_VERSION on any change that a reader of the previous version could misread. This header
 * holds constants and plain structs only: no code, no allocation, nothing that needs a library.
 *
 * A profile is a fixed header, a variable tail of strings, then a stream of records. Every integer
 * in the header is little-endian. Every record is one tag byte followed by a payload of unsigned
 * LEB128 varints (and, where stated, raw bytes). A writer stores the payload first and the tag last,
 * so a process that dies mid-record leaves a zero tag behind it: a reader stops there and reports
 * the profile as ending at its last complete record.
 *
 *   +-----------------------+  offset 0
 *   | struct lk_file_header |  LK_HEADER_FIXED_SIZE bytes
 *   +-----------------------+
 *   | exe path              |  exe_len bytes, no NUL
 *   | command line          |  cmdline_len bytes, arguments separated by NUL
 *   | zero padding to 8     |
 *   +-----------------------+  offset header_size
 *   | record | record | ... |  until LK_REC_TRAILER, a zero tag, or the end of the file
 *   +-----------------------+
 *
 * Glossary: dt = nanoseconds since the previous timed record (the first one counts from
 * start_monotonic_ns); tid = the kernel thread id; size = the bytes the program asked for (not
 * the allocator's rounded size); block = a sampled block's number in the file: ALLOC and INHERIT
 * records are numbered 1, 2, 3, ... in file order, and a block's number is that of the record
 * that allocated it; block_code = a FREE's block, as the smaller of two codes (lk_free_code in
 * src/common/record.h): 2 * (blocks - block) + 1, its age among the blocks numbered before the
 * FREE, or 2 * zigzag(block - prev), its step from prev, the block of the file's previous FREE
 * (0 before the first).
 *
 * Version 4 (version 3 had the step alone): a FREE names its block by its age where that is the
 * smaller, as for a block freed soon after its allocation while older blocks are freed around
 * it (redis-server's exact profile: 24% smaller after gzip). Version 3 (version 2 had an address
 * in ALLOC, FREE and INHERIT): a FREE names its block by number, not by address, and nothing
 * carries an address. Where the allocator placed a block is what an exact-mode profile compressed
 * worst. A malloc/free pair of one site cost 7 bytes in exact mode, where dt is mostly 0
 * (LK_HDR_COARSE_TIME), and costs 8 in version 5's fixed records. Version 5 (version 4 had no fixed-width records): ALLOC_FIXED and
 * FREE_FIXED, an ALLOC or a FREE at dt 0 in fields of fixed width, which a writer puts together
 * with no varint to measure (exact mode's pair: 62 instructions fewer, and the file as small
 * after zstd; docs/format.md). Version 6 (version 5 had one stream): SEGMENT, a stretch of the file
 * that one thread of a multi-threaded process fills with its own ALLOC and FREE records, with no
 * lock and no store to a line that another thread writes (exact mode on 2 threads: 9x the cost of
 * one thread with a shared stream; docs/performance.md). Version 7 (version 6 had no free
 * stacks and could not be switched): FREE_STACK, a FREE that names the stack of the call that
 * freed the block (LEEK_FREE_STACKS); the control block at the header's end (LK_HDR_CTL), which
 * `leek ctl` writes and libleek reads, and CTL, the record of what it did: profiling switched off
 * or on, or a mark (a reader of version 6 would take an off period's silence for a quiet
 * program). Version 8 (version 7 had no errors): ERROR, a memory error that libleek caught (a
 * double or invalid free of an arena pointer, a guarded page's fault), with the stacks that tell
 * its story (docs/design.md, "Memory errors"). The reader reads versions 3 to 8.
 */
#ifndef LEEK_FORMAT_H
#define LEEK_FORMAT_H

#include <stdint.h>

#define LK_FORMAT_MAGIC "LEEKPROF" /* 8 bytes, no NUL */
#define LK_FORMAT_VERSION 8
#define LK_FORMAT_VERSION_MIN 3 /* the oldest a reader reads: only FREE's block differs */
#define LK_HEADER_FIXED_SIZE 88
#define LK_MAX_FRAMES 128       /* the most frames a stack record may hold */
#define LK_MAX_BUILD_ID 64      /* bytes */
#define LK_MAX_PATH 4096        /* bytes, module and exe paths */
#define LK_MAX_SEGMENTS 16      /* PT_LOAD segments per module record */
#define LK_VARINT_MAX 10        /* bytes of one LEB128 uint64 */
#define LK_GROW_MAX (1u << 20)  /* the most a profile's file grows at once, while it is written
				 * (docs/format.md, "Reading a profile being written") */
#define LK_SEG_MAX (1u << 20)   /* the longest body of a SEGMENT record */
#define LK_SEG_SKIP_MAX 65536   /* the most zero bytes between a SEGMENT record and its body */

/* Header flags. */
enum {
	LK_HDR_EXACT = 1u << 0,       /* period 1: every allocation is recorded, weights are 1 */
	LK_HDR_FORKED = 1u << 1,      /* written by a fork() child; ppid's profile is its parent */
	LK_HDR_CMDLINE_CUT = 1u << 2, /* the command line was longer than the header allows */
	LK_HDR_COARSE_TIME = 1u << 3, /* every time of the file is CLOCK_MONOTONIC_COARSE: the same
				       * clock, read at the kernel tick's resolution (1 to 10 ms,
				       * typically 4); libleek sets it in exact mode */
	LK_HDR_CONTINUED = 1u << 4,   /* the process's file was cut short under its writer (logrotate's
				       * copytruncate), which began it again: its INHERIT records are
				       * the blocks live then */
	LK_HDR_CTL = 1u << 5,         /* the header's last LK_CTL_SIZE bytes are the control block
				       * (struct lk_ctl_block; version 7) */
	LK_HDR_ROTATED = 1u << 6      /* a rotated segment (LEEK_MAX_SIZE, LEEK_MAX_AGE): the
				       * rotation block (struct lk_rot_block) comes just before the
				       * control block, and the INHERIT records are the blocks live at
				       * the end of the segment before */
};

/* The clock that every record time counts on (LK_HDR_COARSE_TIME: read at tick resolution). */
enum { LK_CLOCK_MONOTONIC = 1 };

/* Offset, size: all little-endian, naturally aligned, no implicit padding. */
struct lk_file_header {
	char magic[8];               /*  0  8  LK_FORMAT_MAGIC */
	uint16_t version;            /*  8  2  LK_FORMAT_VERSION */
	uint16_t fixed_size;         /* 10  2  LK_HEADER_FIXED_SIZE as written */
	uint32_t header_size;        /* 12  4  fixed part + strings + padding; records start here */
	uint32_t flags;              /* 16  4  LK_HDR_* */
	uint32_t pid;                /* 20  4 */
	uint32_t ppid;               /* 24  4 */
	uint32_t clock;              /* 28  4  LK_CLOCK_MONOTONIC */
	uint64_t period;             /* 32  8  mean sampling period in bytes; 1 = exact mode */
	uint64_t start_realtime_ns;  /* 40  8  CLOCK_REALTIME at start, ns since the epoch */
	uint64_t start_monotonic_ns; /* 48  8  CLOCK_MONOTONIC at start: record times count from it */
	uint64_t session;            /* 56  8  LEEK_SESSION: ties the files of one `leek run` */
	uint64_t seed;               /* 64  8  the seed the sampler used (LEEK_SEED or a random one) */
	uint32_t page_size;          /* 72  4 */
	uint32_t max_frames;         /* 76  4  stack depth limit in force */
	uint32_t exe_len;            /* 80  4 */
	uint32_t cmdline_len;        /* 84  4 */
};                               /* 88 */

_Static_assert(sizeof(struct lk_file_header) == LK_HEADER_FIXED_SIZE, "header layout");

/* The control block (version 7, LK_HDR_CTL): LK_CTL_SIZE bytes at header_size - LK_CTL_SIZE, the
 * one part of a profile that another process writes while libleek runs. `leek ctl` (holding an
 * exclusive flock(2) of the file against other `leek ctl`s) stores cmd, sent_realtime_ns and name,
 * then seq + 1; libleek reads the block at its RSS interval, at a sample or a dormant thread's
 * check (docs/design.md, "On and off"), carries out the command if seq is not ack, writes a CTL
 * record and stores ack = seq. libleek trusts nothing in it: a command or name it cannot take is
 * acknowledged and dropped. Integers little-endian. */
#define LK_CTL_SIZE 64
#define LK_CTL_NAME_MAX 40 /* a mark's name: bytes 0x21..0x7e, NUL-padded, at least one byte */
#define LK_CTL_MAGIC "LKCT"
struct lk_ctl_block {
	char magic[4];             /*  0  4  LK_CTL_MAGIC */
	uint32_t seq;              /*  4  4  commands sent; written last by `leek ctl` */
	uint32_t cmd;              /*  8  4  enum lk_ctl_cmd */
	uint32_t ack;              /* 12  4  the last seq that libleek carried out (or dropped) */
	uint64_t sent_realtime_ns; /* 16  8  when `leek ctl` sent it: CLOCK_REALTIME, ns */
	union {
		char name[LK_CTL_NAME_MAX]; /* 24 40  LK_CTL_MARK's name */
		uint64_t synced;            /* 24  8  LK_CTL_SYNC's reply, stored by libleek
					     * before ack: every byte of the file before it
					     * is a whole record (or the header) */
	};
};                                 /* 64 */
_Static_assert(sizeof(struct lk_ctl_block) == LK_CTL_SIZE, "control block layout");

/* The rotation block (LK_HDR_ROTATED, with LK_HDR_CTL): LK_ROT_SIZE bytes at header_size -
 * LK_CTL_SIZE - LK_ROT_SIZE, in a segment that libleek began when the one before reached
 * LEEK_MAX_SIZE or LEEK_MAX_AGE (docs/format.md, "Rotated segments"). The segments of one process
 * share session, pid and origin_realtime_ns; segment orders them (the first file, without the
 * flag, is segment 0, and its origin is its own start_realtime_ns). Written once, with the header;
 * a reader of version 7 that does not know the flag skips it with the rest of the header.
 * Integers little-endian. */
#define LK_ROT_SIZE 16
#define LK_ROT_MAGIC "LKRT"
struct lk_rot_block {
	char magic[4];               /*  0  4  LK_ROT_MAGIC */
	uint32_t segment;            /*  4  4  1, 2, ...: the segment before is segment - 1 */
	uint64_t origin_realtime_ns; /*  8  8  start_realtime_ns of segment 0 */
};                                   /* 16 */
_Static_assert(sizeof(struct lk_rot_block) == LK_ROT_SIZE, "rotation block layout");

/* A control block's command, and a CTL record's kind: the same numbers. LK_CTL_SYNC (`leek watch`
 * and `leek top`, `leek ctl PID sync`) changes nothing in the profile and writes no CTL record:
 * libleek ends the threads' open bodies and replies with the offset up to which the file is
 * whole (synced), so that a reader need not wait for the file to grow. */
enum lk_ctl_cmd { LK_CTL_ON = 1, LK_CTL_OFF = 2, LK_CTL_MARK = 3, LK_CTL_SYNC = 4 };

/* Record tags. Payload fields are varints unless marked [bytes]. Sizes count the tag; "typically"
 * is exact mode on x86-64, where dt is mostly 0 and a FREE mostly ends a block near the previous
 * FREE's. */
enum lk_rec_tag {
	LK_REC_END = 0,     /* never written: a zero tag marks where a crashed writer stopped */
	LK_REC_ALLOC = 1,   /* dt size stack                               4..31 B, typically 4..6 */
	LK_REC_FREE = 2,    /* dt block_code                               3..21 B, typically 3 or 4 */
	LK_REC_STACK = 3,   /* id nframes frame...                         see below */
	LK_REC_MODULE = 4,  /* dt id base nseg (start len)... idlen [id] pathlen [path] */
	LK_REC_UNLOAD = 5,  /* dt id                                       3..21 B */
	LK_REC_RSS = 6,     /* dt rss_bytes                                3..21 B, typically 8 */
	LK_REC_LOSS = 7,    /* dt n (counter value)...                     absolute counter values */
	LK_REC_INHERIT = 8, /* size stack alloc_monotonic_ns               4..31 B, typically 12 */
	LK_REC_TRAILER = 9, /* dt end_realtime_ns n (counter value)...     clean exit; nothing follows */
	LK_REC_THREAD = 10, /* tid                                         2..11 B, typically 4 */
	LK_REC_ALLOC_FIXED = 11, /* size:16 stack:16, dt 0 (version 5)      5 B */
	LK_REC_FREE_FIXED = 12,  /* block_code:16, dt 0 (version 5)         3 B */
	LK_REC_SEGMENT = 13,     /* dt tid blocks skip length, then [skip zero bytes] and the body
				  * [length bytes] (version 6)            6..51 B, and the body */
	LK_REC_SEG_END = 14,     /* in a segment's body: nothing follows in it (version 6)   1 B */
	LK_REC_FREE_STACK = 15,  /* dt block_code stack: a FREE and the stack that freed it
				  * (version 7)                          4..31 B, typically 5..7 */
	LK_REC_CTL = 16,         /* dt kind namelen [name] (version 7)      4..60 B */
	LK_REC_ERROR = 17,       /* dt tid kind addr block_addr block_size block alloc_stack
				  * free_stack stack (version 8)         11..101 B */
	LK_REC_MAX_KNOWN = 17,
	/* Tags 0x80..0xff are extensions: a varint payload length, then that many bytes. A reader
	 * skips the ones it does not know. Tags 18..0x7f are reserved and are an error. */
	LK_REC_EXT_FIRST = 0x80
};

/* THREAD: the ALLOC and FREE records after it, up to the next THREAD, were made by thread tid. A
 * writer writes one before the first ALLOC or FREE of a file and whenever the thread changes; an
 * ALLOC or FREE before any THREAD is corruption. THREAD has no dt: it takes the time of the last
 * timed record, like STACK and INHERIT. */

/* ALLOC_FIXED and FREE_FIXED: an ALLOC and a FREE whose dt is 0, their fields little-endian
 * integers of fixed width rather than varints: ALLOC_FIXED's size and stack in 2 bytes each,
 * FREE_FIXED's block_code in 2. They mean what an ALLOC and a FREE with those fields mean, and a
 * reader hands them on as ALLOC and FREE. A writer uses them where the fields fit (exact mode's
 * coarse clock makes dt 0 for nearly every record); before version 5 they are unknown tags. */

/* FREE_STACK (version 7): a FREE whose block is coded as a FREE's (block_code, against the same
 * state, which it moves on as a FREE does), followed by the id of the stack of the call that freed
 * it: frame 0 is the innermost caller of free (or realloc, free_sized, ...), as an ALLOC's stack
 * is of the allocation function; 0 when that stack could not be taken. A stack it names is
 * written before it, as for an ALLOC; ALLOC and FREE_STACK stacks share one id sequence. Only in
 * the main stream, never in a thread segment's body. A writer writes it instead of a FREE when
 * LEEK_FREE_STACKS is on (docs/design.md, "Free stacks"); a reader hands it on as a FREE with its
 * stack. */

/* SEGMENT (version 6): a thread's own stretch of the file. Its body, `length` bytes (at most
 * LK_SEG_MAX) that start `skip` zero bytes (at most LK_SEG_SKIP_MAX) after the record, holds only
 * ALLOC, FREE, ALLOC_FIXED, FREE_FIXED and SEG_END records, all of thread tid, stored by that
 * thread while the rest of the file goes on after the body (the main stream: every record that is
 * not in a body). A body's records end at SEG_END, at a zero tag (what a thread that stopped left)
 * or at the body's end; a record never crosses it. Their times run from the SEGMENT record's, each
 * dt from the body's record before. The SEGMENT reserves `blocks` block numbers (at most
 * `length`): with B the blocks numbered before it, the body's ALLOCs are blocks B+1, B+2, ... (at
 * most `blocks` of them), and the next record that numbers a block numbers B+blocks+1. A body's
 * FREE codes its block against the body's own state: `blocks` the body's last ALLOC (B before
 * the first), prev the body's previous FREE (B before the first). A reader delivers the main
 * stream's records and every body's in one order: by time, a body's record before a main record
 * of the same time and an earlier segment's before a later one's, except that a FREE waits for
 * the ALLOC of its block and an ALLOC for the STACK it names (docs/format.md, "Thread
 * segments"). */

/* CTL (version 7): what a `leek ctl` command did, at the time libleek carried it out. kind
 * LK_CTL_OFF: profiling is off from here (no ALLOC is written, FREEs of blocks sampled before
 * still are), LK_CTL_ON: on again, LK_CTL_MARK: a named moment, name being namelen bytes (1 to
 * LK_CTL_NAME_MAX, 0x21..0x7e); ON and OFF have namelen 0. A file whose process starts dormant
 * (LEEK_START=off) has an OFF before its first sample. An OFF while off or an ON while on is not
 * written. */

/* ERROR (version 8): a memory error libleek caught in thread tid, at the record's time. kind is
 * enum lk_error_kind; addr the address the program passed (a free) or touched (a fault);
 * block_addr and block_size the arena block it belongs to (0 and 0: none found), block its number
 * in the file (0: not known, as for a block freed already, whose number its FREE has ended);
 * alloc_stack the stack that allocated the block, free_stack the one that freed it (0: not known;
 * only LEEK_FREE_STACKS or a guarded block keeps it), stack the stack of the free or of the
 * faulting access (0: not taken). Every stack it names is written before it. Only in the main
 * stream. A process that aborts at its error (LEEK_ABORT_ON_ERROR) has it as its last record,
 * without a TRAILER. */
enum lk_error_kind {
	LK_ERR_OVERFLOW = 1,      /* an access past a guarded block's end */
	LK_ERR_UNDERFLOW = 2,     /* an access before a guarded block's start */
	LK_ERR_UAF_READ = 3,      /* a read of a freed guarded block */
	LK_ERR_UAF_WRITE = 4,     /* a write to a freed guarded block */
	LK_ERR_UAF_ACCESS = 5,    /* an access to a freed guarded block, read or write not known */
	LK_ERR_DOUBLE_FREE = 6,   /* free of a sampled block freed already */
	LK_ERR_INVALID_FREE = 7,  /* free or realloc of an arena pointer that no block begins at */
	LK_ERR_REALLOC_FREED = 8, /* realloc of a sampled block freed already */
	LK_ERR_MAX = 8
};

/* Blocks: ALLOC and INHERIT records are numbered from 1 in file order, and that number names the
 * block they allocate. FREE carries block_code (above): an odd code is the block's age,
 * block = blocks - (code >> 1), an even one its step, block = prev + unzigzag(code >> 1), where prev
 * is the block of the previous FREE in the file, 0 before the first (version 3: the step
 * zigzag(block - prev) alone). A FREE of block 0 or of a block not numbered yet is
 * corruption; each block is freed at most once. Addresses are not recorded. */

/* STACK: frame 0 is the innermost caller of the allocation function (libleek's own frames are
 * stripped). Every frame is a return address, so a symbolizer looks up frame - 1. Frames are
 * stored as zigzag-encoded differences: frame[0] - 0, then frame[i] - frame[i-1]. Stack ids
 * start at 1 and are assigned in order; id 0 means "no stack" (the unwinder failed). A stack is
 * written once per file, before the first record that names it. */

/* MODULE: a loaded ELF object. id is assigned in order from 1 and never reused in a file. base
 * is the load bias (dl_phdr_info.dlpi_addr); each segment is a PT_LOAD range relative to base
 * (start = p_vaddr, len = p_memsz). A module stays mapped until an UNLOAD names its id. A stack's
 * frames resolve against the modules mapped when the stack record was written. */

/* Loss and event counters, in LOSS and TRAILER records as (counter, value) pairs. A reader
 * shows unknown counters by number. */
enum lk_counter {
	LK_CNT_ARENA_FULL = 1,     /* sampled but the arena could not serve it: forwarded unsampled */
	LK_CNT_UNWIND_FAILED = 2,  /* sampled with no stack (stack id 0) */
	LK_CNT_STACK_TRUNCATED = 3,/* stacks cut at max_frames (not a loss of samples) */
	LK_CNT_INTERN_FULL = 4,    /* stack table full: sample recorded with stack id 0 */
	LK_CNT_RECORDS_DROPPED = 5,/* records that could not be written (disk full, file gone) */
	LK_CNT_BAD_FREE = 6,       /* free/realloc of an arena pointer that was not live: ignored */
	LK_CNT_MODULES_DROPPED = 7,/* modules beyond the module table */
	LK_CNT_DEFERRED_FREES = 8, /* frees of sampled blocks from signal handlers, done later */
	LK_CNT_SAMPLES = 9,        /* sampled allocations recorded */
	LK_CNT_FREES = 10,         /* sampled frees recorded */
	LK_CNT_FILE_LIMIT = 11,    /* records not written: the file reached RLIMIT_FSIZE */
	LK_CNT_FILE_CUT = 12,      /* times the file was cut short and begun again (LK_HDR_CONTINUED) */
	LK_CNT_CTL_DROPPED = 13,   /* `leek ctl` commands acknowledged but not carried out: an unknown
				    * command or a mark name that is not 1 to 40 bytes 0x21..0x7e */
	LK_CNT_ROTATE_FAILED = 14, /* rotations that could not begin their new segment (a full disk,
				    * no descriptor, a directory made read-only): the segment went on */
	LK_CNT_MAX = 14
};

#endif /* LEEK_FORMAT_H */
