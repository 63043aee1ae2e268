/* build-profile.h: builds profiles in memory for the tests, with record.h's encoders (the writer's
 * own), so a test reads exactly the bytes libleek would write.
 *
 * Tests speak of blocks by address, as a program does; the builder numbers them as the writer
 * does (format.h): pb_alloc() gives the block at addr the next number, pb_free() frees the last
 * block allocated at addr, even if it was freed already (a damaged file's double FREE).
 *
 * Test-only: aborts on out-of-memory, never frees on failure paths (the harness forks).
 */
#ifndef LEEK_TEST_BUILD_PROFILE_H
#define LEEK_TEST_BUILD_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record.h"

struct pb_block {
	uint64_t addr, block; /* block 0: an empty entry */
};

struct pbuf {
	uint8_t *p;
	size_t len, cap;
	uint64_t blocks, prev_free, tid; /* the writer's state: ALLOC and INHERIT records, the last
					  * FREE's block, the thread of the last ALLOC or FREE */
	bool thread;                     /* a THREAD record was written: tid holds */
	struct pb_block *map;            /* addr -> its last block: open addressing */
	size_t map_size, map_used;
};

void pb_put(struct pbuf *b, const void *data, size_t n); /* data may be NULL if n is 0 */
void pb_zeros(struct pbuf *b, size_t n);

/* Appends one encoded record: pass an encoder call writing into rec, e.g.
 * PB_REC(b, lk_rec_pair(rec, LK_REC_RSS, 1, 4096)). Evaluates to the record's offset. */
#define PB_REC(b, call)                                                                            \
	({                                                                                         \
		static uint8_t rec[LK_MODULE_MAX];                                                 \
		size_t _off = (b)->len, _n = (call);                                               \
		pb_put((b), rec, _n);                                                              \
		_off;                                                                              \
	})

/* A new block at addr, as an ALLOC or INHERIT about to be appended: its number. */
uint64_t pb_new_block(struct pbuf *b, uint64_t addr);
/* The last block allocated at addr; aborts if none was (a test's mistake). */
uint64_t pb_block_at(struct pbuf *b, uint64_t addr);

/* ALLOC and FREE as libleek writes them: a THREAD record first if tid is not the thread of the
 * previous one. Return the ALLOC's or FREE's offset. */
void pb_thread(struct pbuf *b, uint64_t tid);
size_t pb_alloc(struct pbuf *b, uint64_t dt, uint64_t tid, uint64_t addr, uint64_t size,
		uint64_t stack);
size_t pb_free(struct pbuf *b, uint64_t dt, uint64_t tid, uint64_t addr);
/* FREE_STACK (version 7): a FREE and the stack that freed the block. */
size_t pb_free_stack(struct pbuf *b, uint64_t dt, uint64_t tid, uint64_t addr, uint64_t stack);
/* INHERIT of a block at addr, numbered like an ALLOC. */
size_t pb_inherit(struct pbuf *b, uint64_t addr, uint64_t size, uint64_t stack,
		  uint64_t alloc_monotonic_ns);

/* A thread segment (version 6, format.h): pb_segment() appends a SEGMENT record of thread tid at
 * dt, which reserves `blocks` block numbers, then `skip` zero bytes and a body of `length` zero
 * bytes; the main stream goes on after it. pb_seg_*() then write the thread's records into the
 * body, at any point of the building, as its thread would: each dt counts from the body's
 * record before (the first from the SEGMENT's time), ALLOCs take the reserved numbers in order
 * (on past them, for a test of a body that allocates more than it reserved), and a FREE codes its
 * block against the body's own last ALLOC and FREE. Each returns the record's offset; a record
 * that does not fit the body aborts (a test's mistake). */
struct pb_seg {
	size_t at, body, length, pos; /* offsets of the SEGMENT and its body; bytes written in it */
	uint64_t tid, first, blocks;  /* the number of its first ALLOC; numbers reserved */
	uint64_t last, prev;          /* the body's last ALLOC's and FREE's blocks (first - 1 first) */
};

size_t pb_segment(struct pbuf *b, struct pb_seg *s, uint64_t dt, uint64_t tid, uint64_t blocks,
		  uint64_t skip, uint64_t length);
size_t pb_seg_alloc(struct pbuf *b, struct pb_seg *s, uint64_t dt, uint64_t addr, uint64_t size,
		    uint64_t stack);
size_t pb_seg_free(struct pbuf *b, struct pb_seg *s, uint64_t dt, uint64_t addr);
/* ALLOC_FIXED and FREE_FIXED: dt 0, and fields below 2^16. */
size_t pb_seg_alloc_fixed(struct pbuf *b, struct pb_seg *s, uint64_t addr, uint64_t size,
			  uint64_t stack);
size_t pb_seg_free_fixed(struct pbuf *b, struct pb_seg *s, uint64_t addr);
size_t pb_seg_end(struct pbuf *b, struct pb_seg *s); /* SEG_END */
/* n raw bytes into the body: a record broken on purpose. */
size_t pb_seg_put(struct pbuf *b, struct pb_seg *s, const void *data, size_t n);

/* A version 6 profile as libleek's writer would leave it for a program of `threads` threads
 * (tids 101, 102, ...) and its main thread (tid 1), `events` ALLOCs and FREEs drawn from seed: each
 * thread allocates and frees blocks (any thread's) in thread segments of `body` bytes (a new one
 * when its segment is full or has used the blocks it reserved, the old one ended by SEG_END);
 * each thread's last segment is ended or left with zeros after its records, as by a thread that
 * exited; the main thread's ALLOCs and FREEs, RSS records, and each STACK as it is first named,
 * go into the main stream. The clock ticks now and then, so that most
 * records tie, as with exact mode's coarse clock. A TRAILER ends it unless `crash`. Every ALLOC
 * and FREE is described in ev[] (events of them, if ev is not NULL), in the order written. Returns
 * the number of records, bodies' included, that a reader hands out. */
struct pb_event {
	size_t offset;
	uint8_t tag;              /* LK_REC_ALLOC or LK_REC_FREE, as a reader hands it out */
	uint64_t tid, block, time, size, stack;
};

size_t pb_threads(struct pbuf *b, uint64_t seed, size_t events, unsigned threads, size_t body,
		  bool crash, struct pb_event *ev);

/* STACK id of n made-up frames (n at most 40): 0x400000 + id * 0x40 + k * 0x1000 for frame k, so
 * that no two ids share a frame. Returns its offset. */
size_t pb_made_up_stack(struct pbuf *b, uint64_t id, uint32_t n);

struct pb_header {
	uint16_t version; /* 0: LK_FORMAT_VERSION */
	uint32_t flags, pid, ppid;
	uint64_t period, start_realtime_ns, start_monotonic_ns, session, seed;
	const char *exe, *cmdline;
	size_t cmdline_len;
};

void pb_header(struct pbuf *b, const struct pb_header *ph);
/* A minimal valid header: pid 1, period 512 KiB, exe "/x", no command line. */
void pb_simple_header(struct pbuf *b);

#define PB_MAX_RECORDS 64
#define PB_CMDLINE "prog\0-x\0a b"
#define PB_FRAMES1 { 0x555555555123, 0x7f0000012345, 0x555555555000 }

/* The round-trip profile: one of every record (tests/unit/test-format.c checks each field),
 * and the offset of each record, then the profile's length. */
struct pb_sample {
	struct pbuf b;
	size_t header_size, nrec, off[PB_MAX_RECORDS];
};

void pb_build_sample(struct pb_sample *s);

/* A profile that claims many live blocks in few bytes, for the tests of the memory budget
 * (tests/report/test-memory.c) and bench/budget.sh: an exact-mode header, one stack, a THREAD
 * record, then n ALLOCs of 16 bytes at that stack, never freed, and no trailer (a crash). Each
 * ALLOC is 4 bytes, the first at the offset pb_live() returns; zstd makes a few kilobytes of
 * millions of them, which a reader must hold as that many live blocks. */
size_t pb_live(struct pbuf *b, size_t n);

#endif /* LEEK_TEST_BUILD_PROFILE_H */
