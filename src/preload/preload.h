/* preload.h: the internal interfaces between the parts of libleek.so.
 *
 * Nothing declared here is exported (exports.map lets only the libc names out). Every function
 * here may run inside malloc, so none of them may call malloc, stdio or anything else that
 * allocates; most run with the thread's reentrancy guard up (see sampler.c).
 *
 * One section a file, in the order of the pipeline: the start, the hooks and the sampler, the
 * stack, the arena, the writer, then what they all use. A part made of several files keeps what
 * only its own files share in a header of its own: unwind.h (the stack), arena.h, writer.h.
 *
 * Glossary: real = the next allocator (glibc, jemalloc, ...); arena = leek's own address range
 * for sampled blocks; slow path = everything that is not the few-instruction forwarding call.
 */
#ifndef LEEK_PRELOAD_H
#define LEEK_PRELOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "leek/format.h"

/* Everything below is internal: hidden, so the hot path reaches it without the GOT. */
#pragma GCC visibility push(hidden)

#define LK_EXPORT __attribute__((visibility("default")))
/* leek's descriptors (the profile, libunwind's pipe) stay clear of the low ones programs use */
#define LK_FD_FLOOR 200
#define LK_COLD __attribute__((noinline, cold))
/* Exact mode's path through a sample and its free: kept together in .text.hot, a few pages
 * beside each other instead of spread through the library (docs/performance.md). */
#define LK_HOT __attribute__((hot))
#define LK_NOINLINE __attribute__((noinline))
/* A hot function of one file that the sample's path in another inlines, with link-time
 * optimization (which left lk_writer_alloc a call: docs/performance.md). Its declaration here has
 * no inline, so its file still defines it for a build without that optimization. */
#define LK_INLINE __attribute__((always_inline)) inline
/* Samples between two looks at the loader when nothing else calls for one (modules.c): a look
 * costs about a tenth of a sample, so one in 64 adds little to each (bench/callgrind-real.sh), and
 * it bounds how long an unloading that no dlclose showed can go unseen. */
#define LK_MODULES_LOOK_EVERY 64
#define lk_likely(x) __builtin_expect(!!(x), 1)
#define lk_unlikely(x) __builtin_expect(!!(x), 0)

/* ---- config.c: LEEK_* variables, parsed once ---- */
struct lk_config {
	uint64_t period, seed, max_frames, arena_size, arena_retain, rss_interval_ns, session;
	uint64_t dormant_period; /* LEEK_DORMANT_PERIOD: a dormant thread's mean countdown */
	bool seed_set, inherit, quiet, precise_time, abort_on_error;
	uint64_t guard;  /* LEEK_GUARD: guarded samples at once; 0: guard mode off */
	bool guard_left; /* LEEK_GUARD_ALIGN=left */
	bool free_stacks; /* LEEK_FREE_STACKS: a sampled block's FREE names the stack that freed it */
	bool start_off; /* LEEK_START=off: dormant until `leek ctl PID on` */
	uint64_t max_size, max_age_ns, keep; /* rotation (writer-rotate.c); 0: never by that */
	bool secure; /* secure-execution mode (AT_SECURE): LEEK_* ignored, nothing profiled */
	bool off;    /* no profile can be written as asked (LEEK_OUTPUT too long): unprofiled */
	char output[LK_MAX_PATH];
};
extern struct lk_config lk_cfg;
#define LK_ROTATE_MIN_SIZE (64u << 10) /* LEEK_MAX_SIZE's least: one step of the file's growth */
#define LK_ROTATE_KEEP_MAX 256         /* LEEK_KEEP's most: the table of segments kept */
void lk_config_load(void);

/* ---- lifecycle.c: the process's start, forks and exit ---- */
enum { LK_INIT_NONE, LK_INIT_RUNNING, LK_INIT_DONE };
extern int lk_init_state;
extern __thread uint8_t lk_booting; /* this thread is running lk_init */
void lk_init(void);                 /* once per process; safe to call again */
static inline bool lk_init_done(void)
{
	return __atomic_load_n(&lk_init_state, __ATOMIC_ACQUIRE) == LK_INIT_DONE;
}

/* ---- real.c: the next allocator ---- */
struct lk_real {
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void *(*reallocarray)(void *, size_t, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	size_t (*malloc_usable_size)(void *);
	void (*free_sized)(void *, size_t);
	void (*free_aligned_sized)(void *, size_t, size_t);
	size_t (*nallocx)(size_t, int); /* jemalloc/tcmalloc: exact usable size of a request */
	bool realloc_zero_frees;        /* realloc(p, 0) frees p and returns NULL (glibc) */
	bool is_glibc;
	bool glibc_sizes;               /* is_glibc and no nallocx: lk_real_usable_fast's sum */
};
extern struct lk_real lk_real;
int lk_real_init(void);
size_t lk_real_usable(size_t size, size_t align);
/* nallocx's answers for requests of up to LK_NALLOCX_SMALL bytes with no alignment, by size (0: not
 * asked yet; real.c). */
#define LK_NALLOCX_SMALL 4096u
extern uint32_t lk_nallocx_small[LK_NALLOCX_SMALL + 1];
#define LK_GLIBC_MMAP_MIN (128u << 10) /* glibc's default mmap threshold: larger blocks are mapped */
/* glibc's chunk for a request of size bytes (malloc.c's request2size): the size and 8 bytes of
 * header rounded up to 16, 32 at least. */
static inline size_t lk_glibc_chunk(size_t size)
{
	return size + 8 + 15 < 32 ? 32 : (size + 8 + 15) & ~(size_t)15;
}
/* lk_real_usable's common cases, inline and with no call: glibc's heap chunk, below the mmap
 * threshold, whose usable size is the chunk but its header (real.c: glibc_usable), and nallocx's
 * answer for a small size, once it has been asked; 0 when the allocator must be asked (no usable
 * size is 0: a request of 0 bytes gets a block of some size). */
static inline size_t lk_real_usable_known(size_t size, size_t align)
{
	if (lk_real.glibc_sizes && size < LK_GLIBC_MMAP_MIN)
		return lk_glibc_chunk(size) - 8;
	if (align <= 16 && size <= LK_NALLOCX_SMALL)
		return __atomic_load_n(&lk_nallocx_small[size], __ATOMIC_RELAXED);
	return 0;
}

static inline size_t lk_real_usable_fast(size_t size, size_t align)
{
	size_t u = lk_real_usable_known(size, align);

	return u ? u : lk_real_usable(size, align);
}

/* ---- hooks.c: the exported malloc family (exports.map); nothing of it is internal ---- */

/* ---- sampler.c: per-thread state, the samples and their frees ---- */
struct lk_thread {
	uint64_t bytes_left; /* countdown; 0 = take the slow path; UINT64_MAX = never sample */
	uint32_t tid;
	union {
		struct {
			uint8_t state;   /* enum lk_thread_state */
			uint8_t in_slow; /* reentrancy guard: inside leek's slow path */
		};
		uint16_t gate; /* LK_T_GO: state LK_T_ACTIVE, in_slow 0, in one compare */
	};
	uint64_t rng[4];     /* struct lk_rng, kept flat so this header needs no rng.h */
	int *errno_at;       /* &errno, from the first slow path on: the same for the thread's life,
			      * and no call to __errno_location at each sample and free */
	struct lk_trec *rec; /* its own record, once the process has threads (threads.c); NULL */
	uint8_t rec_state;   /* enum lk_rec_state */
};
enum lk_rec_state { LK_REC_NONE = 0, LK_REC_OWN, LK_REC_NEVER };
/* LK_T_DORMANT: the process is switched off (or was, at this thread's last look); the countdown
 * runs to its next look for `leek ctl`'s command (sampler.c: dormant). */
enum lk_thread_state { LK_T_NEW = 0, LK_T_ACTIVE, LK_T_OFF, LK_T_DORMANT };
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "lk_thread's gate reads state as its low byte"
#endif
#define LK_T_GO ((uint16_t)LK_T_ACTIVE) /* gate: active, and not inside the slow path */
extern __thread struct lk_thread lk_tls __attribute__((tls_model("initial-exec")));

/* NULL: forward. frame: __builtin_frame_address(0) in the hook's slow half, whose caller's frame
 * is where the stack's walk starts (libleek's own frames below it are not walked). */
void *lk_sample(struct lk_thread *t, size_t size, size_t align, bool zero, const void *frame);
void *lk_realloc_slow(void *p, size_t size);
void lk_free_sampled(void *p);
/* The process's part (lifecycle.c): its seed chosen, sampling started if the profile can be
 * written (false: the program runs unprofiled), stopped at exit with the trailer written (the
 * caller's in_slow up), and each phase of a fork. */
void lk_sampler_seed(void);
bool lk_sampler_start(void);
void lk_sampler_stop(void);
void lk_sampler_atfork(int phase);
/* On (sampling) or off (dormant: LEEK_START=off, `leek ctl PID off`), caller holding lk_lock
 * (writer-control.c); true if that changed it. Each thread follows at its next sample or
 * dormant look. */
bool lk_sampler_switch(bool on);
bool lk_sampler_is_on(void);

/* ---- threads.c: each thread's own record, once the process has threads ---- */
/* A thread of a process with threads fills a stretch of the profile of its own (a SEGMENT:
 * writer-segment.c), hands out its own freed slots again (arena.c) and counts its own samples,
 * with no lock and no store to a line that another thread writes (docs/design.md, "Threads").
 * Everything here but the counts is its thread's alone, except under lk_lock while the file
 * begins again (writer-open.c) and in a fork's child. */
#define LK_ARENA_CLASSES 20 /* the arena's slab classes (arena.h) */
#define LK_ARENA_SLOT_MAX 2048u /* their largest slot, header included (arena.h's SLAB_MAX) */
struct lk_recent {
	struct lk_block *head; /* freed slots, still marked in use: a list through time_ns */
	uint64_t n;            /* at most LK_ARENA_RECENT */
};
struct kept_walks;
struct __attribute__((aligned(64))) lk_trec {
	uint8_t *seg;            /* the body's mapping (writer-segment.c); NULL: none */
	uint32_t seg_off;        /* where the next record goes */
	uint32_t seg_claim;      /* seg_off, or where the record being stored ends (lk_seg_seal) */
	uint32_t seg_room;       /* a record of n bytes fits while seg_off + max(n, 8) <= seg_room; 0:
				  * the next record begins a segment */
	uint32_t seg_len, next_len;
	uint64_t last_ns;        /* the time of the body's last record */
	uint64_t blocks, blocks_end; /* the body's last block, the last it may number */
	uint64_t prev_free;      /* the block of the body's last FREE */
	uint64_t samples, frees; /* LK_CNT_SAMPLES and LK_CNT_FREES of this thread */
	int64_t live;            /* blocks this thread took from (+) or gave to (-) its own slots */
	struct lk_recent recent[LK_ARENA_CLASSES]; /* its freed slots, by class (arena.c) */
	struct lk_block *run;    /* a freed block of a run of its own, kept for its next (arena.c) */
	uint64_t seg_at;         /* the body's offset in the file */
	struct kept_walks *kept; /* its thread's slot of kept walks, with no lock (walks-kept.c); NULL:
				  * one by thread id, under a try-lock */
	uint32_t tid;
	uint8_t used;
	uint8_t seal_wait;       /* lk_seg_seal took its room: it ends the body once no record is
				  * being stored (under lk_lock) */
};
#define LK_TRECS 1024 /* threads with a record at once; a thread past them takes lk_lock */
/* The largest run a thread keeps, freed, for its next block of the same pages (4 MiB): as glibc's
 * arena of a thread keeps up to its trim threshold, which large blocks raise to 64 MiB. */
#define LK_ARENA_OWN_RUN 1024u
extern struct lk_trec lk_trecs[LK_TRECS];
/* The slot of kept walks that the record lk_trecs[i] keeps for its threads, or NULL past the
 * first ones (walks-kept.c). */
struct kept_walks *lk_kept_own(uint32_t i);
/* This thread's record, made at its first sample in a process with threads (caller not holding
 * lk_lock); NULL while the process has one thread, or if none is left. */
struct lk_trec *lk_trec_get(struct lk_thread *t);
/* LOSS and TRAILER's counts: lk_counters with every thread's samples and frees added. Under
 * lk_lock. */
void lk_counters_sum(uint64_t out[LK_CNT_MAX + 1]);
void lk_trecs_new_file(void); /* the file begins again: its counts from zero; lk_lock */
void lk_trecs_atfork_child(void); /* the child's one thread keeps its record; the rest go */
uint32_t lk_trecs_seen(void); /* records ever taken: lk_trecs[0, n) is all a walk looks at */

/* ---- writer-segment.c: a thread's own stretch of the profile ---- */
/* ALLOC of b (numbered in b->id) and FREE of b in r's body, with no lock: false if the record
 * does not fit there (or r has no body), and nothing done; the caller then takes lk_lock and
 * begins a body (lk_seg_begin) or writes to the main stream. lk_seg_free is true, and writes
 * nothing, for a block in no record of this file. */
bool lk_seg_alloc(struct lk_trec *r, uint64_t now_ns, struct lk_block *b, uint64_t size,
		  uint32_t stack);
bool lk_seg_free(struct lk_trec *r, uint64_t now_ns, struct lk_block *b);
bool lk_seg_begin(struct lk_trec *r, uint64_t now_ns); /* r's next body; lk_lock */
void lk_seg_end(struct lk_trec *r);  /* r's body ended (SEG_END) and unmapped; lk_lock */
void lk_seg_drop(struct lk_trec *r); /* unmapped, unwritten: a fork's child */
void lk_seg_abandon_all(void);       /* before the file begins again; lk_lock */
/* The bodies of other threads that the file has left far behind, ended with SEG_END by this
 * thread, so that a reader following the file goes on past them; lk_lock. */
void lk_seg_seal(void);
void lk_seg_sync(void); /* every body ends: `leek ctl`'s SYNC */
void lk_seg_atfork_child(void);
bool lk_seg_fault(const void *addr); /* SIGBUS in a body: repaired (async-signal-safe) */
/* Block numbers carry their file's generation from this bit up (writer-segment.c). */
#define LK_ID_GEN_SHIFT 48

/* ---- stack.c: a sample's stack, captured (unwind.h: the files it uses) ---- */
/* The stack from the caller of frame (a frame of libleek's that is still live: see lk_sample),
 * no lock held: its frames (at most max, in *frames, which points into buf), and its hash for
 * lk_stack_intern (computed outside lk_lock). buf holds LK_CAPTURE_FRAMES; frames of libleek's
 * own that a walk from elsewhere (libunwind's) meets first are left out. It asks
 * lk_modules_gen() first, and looks at the loader when that says so; a capture that meets a
 * return address it has no rule for looks again before it goes on. A capture that finds its walk
 * kept sets *known to its stack's number and returns 0 frames: nothing to intern. */
#define LK_CAPTURE_FRAMES (LK_MAX_FRAMES + 8)
uint32_t lk_stack_capture(uint64_t *buf, uint32_t max, const void *frame, uint64_t *hash,
			  const uint64_t **frames, uint32_t *known, void **ticket);
int lk_stack_init(void);
void lk_stack_atfork_child(void);

/* ---- walks-kept.c: each thread's last walks, found again ---- */
/* lk_stack_capture's first case alone: the number of the stack of the kept walk that a capture
 * from frame would find (*known), or 0 when there is none or the capture has more to do; *cut,
 * whether it was cut at LEEK_MAX_FRAMES, for the caller to count (lk_stack_count_cut) once it
 * has taken the sample. */
bool lk_stack_kept_ready(void);                        /* no lock held */
/* r: this thread's own record (threads.c), or NULL; single: the process has one thread
 * (lk_single_threaded). Either may spare the slot's taking (walks-kept.c). */
uint32_t lk_stack_kept(const void *frame, bool *cut, const struct lk_trec *r,
		       bool single); /* no lock held */
void lk_stack_count_cut(void); /* a stack cut at LEEK_MAX_FRAMES: LK_CNT_STACK_TRUNCATED */
/* After a capture that set *ticket: the number lk_stack_intern gave its stack (0: none), or 0
 * when it was not interned. Always called, with lk_lock not held; a NULL ticket is nothing. */
void lk_stack_learned(void *ticket, uint32_t id);

/* ---- walk.c, unwind-rules.c, unwind-altstack.c: the stack's own (unwind.h only) ---- */

/* ---- unwind-io.c: libunwind's address checks go through no descriptor ---- */
int lk_unwind_io_init(const void *in_libunwind); /* before libunwind's first use */

/* ---- stack-table.c: each distinct stack stored once, and written once to each file ---- */
/* *hash: the hash of a capture's frames for lk_stack_intern, computed with no lock held; the
 * table's slot for it is prefetched. */
void lk_stack_hash(const uint64_t *frames, uint32_t n, uint64_t *hash);
uint32_t lk_stack_intern(const uint64_t *frames, uint32_t n, uint64_t hash); /* holds lk_lock */
uint32_t lk_stack_file_id(uint32_t stack); /* writes the stack if this file lacks it; lk_lock */
uint32_t lk_stack_file_id_known(uint32_t stack); /* its id if this file has it, or 0; no lock */
void lk_stack_new_file(void); /* every stack must be written again to a new file */

/* ---- arena.c: where sampled blocks live (arena.h: the files it uses) ---- */
struct lk_arena_stats {
	uint64_t reserved, committed, used_pages, free_pages, dirty_pages, live_blocks;
	uint64_t as_limit, first_reserved, max_reserved; /* RLIMIT_AS (0: none), arena-space.c */
	uint64_t retain; /* bytes of freed pages kept resident at most, now */
};
extern uintptr_t lk_arena_base, lk_arena_span; /* [base, base + span); span 0 before init */

static inline bool lk_arena_owns(const void *p)
{
	return (uintptr_t)p - lk_arena_base < lk_arena_span;
}

/* 32 bytes, right before every pointer handed out. An arena block is below 2^44 bytes (the arena
 * has fewer than 2^32 pages) and a stack id below 2^20 (stack-table.c's MAX_STACKS), so size and
 * stack, usable and magic, share a word each. */
struct lk_block {
	uint64_t id;            /* its ALLOC or INHERIT record's number in the profile (format.h);
				 * 0: in no record (never written, or freed) */
	uint64_t time_ns;       /* CLOCK_MONOTONIC at allocation */
	uint64_t size : 44;     /* bytes asked for */
	uint64_t stack : 20;    /* stack id */
	uint64_t usable : 44;   /* what malloc_usable_size answers; room is at least this */
	uint64_t magic : 20;    /* LK_BLOCK_LIVE while allocated */
};
_Static_assert(sizeof(struct lk_block) == 32, "the arena's size classes count 32 bytes a header");
#define LK_BLOCK_LIVE 0x1eecbu
#define LK_BLOCK_FREE 0xf4eedu
#define LK_BLOCK_QUIET 0x9a1e7u /* live, not a sample: realloc'ed in place off its sample */

/* give_back: a block that no retained run can hold first gives back as many retained pages as it
 * faults in (the sampling modes, where the arena sits beside the real allocator's heap); exact
 * mode's arena is the whole heap and keeps them, as a heap does (arena-runs.c, lk_run_take). */
int lk_arena_init(uint64_t size, uint64_t retain, bool give_back);
void *lk_arena_alloc(size_t usable, size_t align);       /* caller holds lk_lock */
struct lk_block *lk_arena_take(size_t usable, size_t align); /* the same, its header unwritten */
struct lk_block *lk_arena_block(const void *p);           /* NULL if p is not a live block */
size_t lk_arena_usable(const void *p); /* a live block's usable size by its header; no lock */
bool lk_arena_resize(void *p, size_t usable);             /* in place, or false; lk_lock */
void lk_arena_free(void *p);                              /* caller holds lk_lock */
/* A thread's own slots (threads.c), with no lock: a small block of the default alignment freed
 * lately by this thread, or NULL; and a live slab block given to them, or false (a block of a
 * run, or the class's list full: the caller frees it under lk_lock). */
struct lk_block *lk_arena_take_own(struct lk_trec *r, size_t usable);
bool lk_arena_free_own(struct lk_trec *r, struct lk_block *b);
void lk_arena_give_back(struct lk_trec *r); /* r's slots back to their slabs; lk_lock */
bool lk_arena_fill_own(struct lk_trec *r, size_t usable);        /* r's list refilled; lk_lock */
void lk_arena_free_spill(struct lk_trec *r, struct lk_block *b); /* its list full; lk_lock */
void *lk_arena_boot_alloc(size_t size);                   /* lock-free bump, before init */
#define LK_ARENA_BOOT_SIZE (256u << 10) /* the arena's first pages, its boot area (arena.c) */
static inline bool lk_arena_is_boot(const void *p)
{
	return (uintptr_t)p - lk_arena_base < LK_ARENA_BOOT_SIZE && lk_arena_span;
}
typedef void (*lk_block_visit_fn)(struct lk_block *b, void *user, void *ctx);
void lk_arena_foreach(lk_block_visit_fn fn, void *ctx);   /* caller holds lk_lock */
void lk_arena_get_stats(struct lk_arena_stats *s);
/* arena-find.c: the block an arena pointer that lk_arena_block refused falls in (errors.c). */
struct lk_arena_found {
	unsigned kind;         /* LK_ERR_DOUBLE_FREE (p began a block now freed) or _INVALID_FREE */
	uintptr_t block;       /* the address of the block p falls in (live or freed); 0: none */
	uint64_t size, id;     /* its size, and id while it is live (0 once freed) */
	uint32_t stack;        /* the stack that allocated it (lk_stack_intern's id), 0: none */
	uint32_t free_stack;   /* the stack that freed it, if LEEK_FREE_STACKS kept it; 0: none */
	bool live;
};
void lk_arena_find(const void *p, struct lk_arena_found *f); /* caller holds lk_lock */
void lk_guard_find(const void *p, struct lk_arena_found *f); /* the same, in the guard run */

/* ---- guard.c: guard mode (LEEK_GUARD): guarded samples in a run of the arena ---- */
struct lk_guard {
	uintptr_t base, span; /* the guard run: [base, base + span); span 0: guard mode off */
	bool left;            /* LEEK_GUARD_ALIGN=left */
};
extern struct lk_guard lk_guard;
static inline bool lk_guard_owns(const void *p)
{
	return (uintptr_t)p - lk_guard.base < lk_guard.span;
}
void lk_guard_init(void);                   /* start-up, once; lk_lock free (guard-fault.c) */
/* A fault at addr in the guard run (lk_guard_owns), from signals.c's SIGSEGV handler, uc its
 * ucontext: recorded and reported if a guarded block explains it; what follows is the caller's. */
void lk_guard_fault(const void *addr, void *uc);
bool lk_guard_setup(uint32_t n, bool left); /* its run and slots; lk_lock */
struct lk_error_info;
/* The error of a fault at a in the guard run, its block's stacks and number: false if no block
 * explains it. No lock needed (guard.c reads each slot's state word twice). */
bool lk_guard_classify(uintptr_t a, bool write, bool known, struct lk_error_info *e,
		       uint32_t *stack, uint32_t *free_stack, uint64_t *id);
/* A guarded sample in three steps, so that no mprotect is made under lk_lock: lk_guard_open before
 * it (a slot for size bytes at align, its page made read-write, or LK_GUARD_NONE), lk_guard_use
 * under it (the block; *usable set to its room), and lk_guard_unopen after it for a slot opened
 * and not used. */
#define LK_GUARD_NONE UINT32_MAX
uint32_t lk_guard_open(size_t size, size_t align);
bool lk_guard_fits(size_t size, size_t align); /* a block a slot can take: it fits a page */
struct lk_block *lk_guard_use(uint32_t slot, size_t size, size_t align, size_t *usable);
void lk_guard_unopen(uint32_t slot, bool open);
struct lk_block *lk_guard_block(const void *p);  /* lk_arena_block for the guard run; lk_lock */
/* A guarded block's free, under lk_lock: recorded, its slot on the closing queue; its page is
 * closed, and the slot quarantined, by lk_guard_settle, with no lock held (lk_guard_settled). */
void lk_guard_free(struct lk_block *b, uint32_t free_stack);
void lk_guard_settle(void);
void lk_guard_close(const void *p); /* settle, and p's page closed before the free returns */
extern int lk_guard_pending;
static inline void lk_guard_settled(void)
{
	if (lk_unlikely(__atomic_load_n(&lk_guard_pending, __ATOMIC_RELAXED)))
		lk_guard_settle();
}
void lk_guard_atfork(int phase); /* glock around fork; the child finishes what others began */
size_t lk_guard_usable(const struct lk_block *b);
void lk_guard_foreach(lk_block_visit_fn fn, void *ctx);     /* its live samples; lk_lock */

/* ---- errors.c: memory errors caught (docs/design.md, "Memory errors") ---- */
/* A free (realloc: a realloc) of p, an arena pointer that lk_arena_block refused: its ERROR record
 * and report, then abort() (LEEK_ABORT_ON_ERROR) or a return. No lock held; frame as
 * lk_stack_capture's. */
void lk_error_bad_free(void *p, bool realloc, const void *frame);

/* ---- arena-space.c: the arena's address range and page map ---- */
struct lk_space {
	uintptr_t base;   /* [base, base + pages pages): reserved, PROT_NONE until committed */
	void *map;        /* the page map, reserved for max_pages entries */
	uint32_t pages, first_pages, max_pages;
	uint64_t limit;   /* RLIMIT_AS at start-up; 0: none, and pages never grows */
};
/* pages wanted (at least min_pages); 0 or a negative errno. */
int lk_space_reserve(struct lk_space *s, uint64_t pages, uint64_t min_pages, size_t entry_size);
uint32_t lk_space_grow(struct lk_space *s, uint64_t need); /* pages added: 0, or at least need */

/* ---- arena-slabs.c: size classes, slabs and recent slots ---- */
#define LK_ARENA_RECENT 16u /* slots a size class keeps, freed, to hand out again first */
bool lk_arena_flush_recent(void); /* frees the slots kept to hand out again; false if none */

/* ---- arena-runs.c: runs of pages (arena.h only) ---- */

/* ---- arena-check.c: the arena's invariants ---- */
bool lk_arena_check(void); /* every invariant holds; for tests (caller holds lk_lock) */

/* ---- writer.c: the profile's record stream (writer.h: the files it uses) ---- */
void lk_writer_put(const uint8_t *rec, size_t len); /* caller holds lk_lock; rec[0] is the tag */
uint64_t lk_writer_dt(uint64_t now_ns); /* ns since the previous timed record */
/* ALLOC and FREE, with a THREAD record first when tid is not the file's current thread. ALLOC of
 * b (b->size set; `stack` its file's stack id) numbers it in b->id (0 if it was not stored); FREE
 * of b is written only if b has a number in this file, and clears it. */
/* size: b->size, which the caller has just stored (read back, it waited for the header's line). */
/* r: the thread's own record, whose body takes the record (NULL: the main stream). */
void lk_writer_alloc(struct lk_trec *r, uint32_t tid, uint64_t now_ns, struct lk_block *b,
		     uint64_t size, uint32_t stack);
void lk_writer_free(struct lk_trec *r, uint32_t tid, uint64_t now_ns, struct lk_block *b);
/* FREE_STACK of b (LEEK_FREE_STACKS), in the main stream: as lk_writer_free with no record of its
 * own, and `stack` its file's id of the stack that freed b (0: none). */
void lk_writer_free_stack(uint32_t tid, uint64_t now_ns, struct lk_block *b, uint32_t stack);
/* ERROR (format.h), in the main stream; e->block set from id, a live block's b->id (0: none). */
struct lk_error_info;
void lk_writer_error(uint64_t now_ns, struct lk_error_info *e, uint64_t id);
bool lk_writer_rss_due(uint64_t now_ns); /* lk_writer_rss_maybe would write: no lock needed */
void lk_writer_rss_maybe(uint64_t now_ns);     /* lk_lock held */
void lk_writer_rss_unlocked(uint64_t now_ns);  /* no lock held: takes it to write the record */
void lk_writer_close(void);         /* clean exit: trailer, truncate */
extern uint64_t lk_counters[LK_CNT_MAX + 1]; /* under lk_lock, or atomically added */

/* ---- writer-window.c: the window into the file, and its growth ---- */
bool lk_writer_fault(const void *addr); /* SIGBUS in the window: repaired (signals.c) */
/* fd moved to LK_FD_FLOOR or above (the old one closed), or fd itself if it cannot be. */
int lk_fd_raise(int fd, bool cloexec);

/* ---- writer-open.c: the file's creation, naming and header ---- */
bool lk_writer_ready(void);         /* a file is open, or can be opened */
bool lk_writer_owned(void);         /* open, and by this process (not a vfork child) */
/* The open file's path into buf, cut to size - 1 bytes; "" if none is open. lk_lock; signal-safe. */
void lk_writer_path(char *buf, size_t size);
void lk_writer_atfork_child(void);

/* ---- writer-control.c: `leek ctl`'s commands (the header's control block) ---- */
void lk_ctl_poll(uint64_t now_ns);       /* caller holds lk_lock: with each RSS record */
void lk_ctl_file_begun(uint64_t now_ns); /* caller holds lk_lock: a dormant file's first OFF */

/* ---- modules.c: loaded ELF objects ---- */
/* No lock held; takes lk_lock to write. Returns the loader's generation: the objects it has
 * loaded plus those it has unloaded (dlpi_adds + dlpi_subs): it moves at every load and unload. */
unsigned long long lk_modules_refresh(bool force);
/* The generation without asking the loader: the last look's answer. *look: a new look is due
 * (none yet, dlclose ran since, or this is the LK_MODULES_LOOK_EVERY-th sample); the caller then
 * calls lk_modules_refresh(), counted in loader.c. */
unsigned long long lk_modules_gen(bool *look);
void lk_modules_moved(void); /* dlclose (loader.c): the next lk_modules_gen() looks */
void lk_modules_emit_all(void);      /* caller holds lk_lock: a new file gets every module */
void lk_modules_atfork(int phase);
struct dl_phdr_info;
/* The loaded object that holds addr (its name and program headers stay valid while it is). */
bool lk_object_of(const void *addr, struct dl_phdr_info *info);
/* The executable segment of a loaded object that holds at: [*lo, *hi); unchanged if none. */
void lk_object_text(const void *at, uintptr_t *lo, uintptr_t *hi);

/* ---- signals.c: SIGBUS in the window repaired, guarded SIGSEGVs recorded, the program's
 * handlers and masks kept ---- */
/* Once profiling: on_fault becomes SIGBUS's kernel action, and SIGSEGV's in guard mode. */
void lk_signals_init(void);

/* ---- loader.c: no fork while a thread holds the loader lock ---- */
bool lk_loader_enter(bool insist); /* false: a fork is pending, go on without the loader */
void lk_loader_exit(void);
void lk_loader_atfork(int phase);

/* ---- lock.c: the one lock of the slow path ---- */
/* glibc 2.32: no thread created yet; glibc's, so not hidden like the rest of this header */
extern char __libc_single_threaded __attribute__((weak, visibility("default")));
extern int lk_lock_word;    /* 0 free, 1 held */
extern int lk_lock_sleepers; /* waiters asleep on lk_lock_word, or about to be (lock.c) */
extern bool lk_lock_elided; /* held while the process had one thread: not taken at all */
void lk_lock_wait(void);
void lk_lock_wake(void);

/* &__libc_single_threaded where glibc has it, or a byte that stays 0 (lk_lock_init): the weak
 * symbol's address tested once, not at each of the three reads a sample and its free make. */
extern const char *lk_single_at;

/* True while the process has never had a second thread: then nothing can run leek's slow path
 * beside this thread (a signal handler on it cannot either: in_slow). */
static inline bool lk_single_threaded(void)
{
	return *lk_single_at;
}

static inline void lk_lock(void)
{
	int c = 0;

	if (lk_single_threaded()) {
		lk_lock_elided = true;
		return;
	}
	if (!__atomic_compare_exchange_n(&lk_lock_word, &c, 1, false, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED))
		lk_lock_wait();
}

static inline void lk_unlock(void)
{
	if (lk_lock_elided) {
		lk_lock_elided = false;
		return;
	}
	__atomic_store_n(&lk_lock_word, 0, __ATOMIC_RELEASE);
	if (__atomic_load_n(&lk_lock_sleepers, __ATOMIC_RELAXED))
		lk_lock_wake();
}
void lk_lock_init(void); /* finds glibc's single-thread flag */
void lk_lock_atfork(int phase);
enum { LK_FORK_PREPARE, LK_FORK_PARENT, LK_FORK_CHILD };

/* ---- clock.c: the time of every record ---- */
uint64_t lk_now_ns(void); /* CLOCK_MONOTONIC, or its coarse reading: lk_coarse_time() */
/* Chooses the clock and finds the vDSO's clock_gettime; may call into the dynamic linker. */
void lk_clock_init(void);
/* Every time is read from CLOCK_MONOTONIC_COARSE (LK_HDR_COARSE_TIME): the last tick's time,
 * cheaper to read (7 ns against 27 on this machine's vDSO), and in exact mode the same for most
 * records, whose dt is then 0; LEEK_PRECISE_TIME=1 reads CLOCK_MONOTONIC itself. */
static inline bool lk_coarse_time(void)
{
	return !lk_cfg.precise_time;
}

/* ---- proc.c: what libleek reads from /proc/self ---- */
/* The file at path read into buf, at most size bytes (not terminated): the bytes read, or a
 * negative errno. */
int lk_proc_read(const char *path, char *buf, size_t size);
/* statm's field number field (0: the size of the mappings, 1: the resident set), in pages. */
bool lk_proc_statm(unsigned field, uint64_t *pages);
void lk_proc_exe(char *buf, size_t size); /* the executable's path, "" if it cannot be read */

/* ---- log.c: one line to stderr, unless LEEK_QUIET ---- */
struct lk_line {
	char buf[512];
	size_t n;
};
#define LK_LINE_INIT { .buf = "leek: ", .n = 6 }
/* v in decimal, at the end of buf (LK_U64_CHARS bytes): its first digit, NUL-terminated. No stdio
 * in libleek: this is its number formatter, for lines and for the profile's file name. */
#define LK_U64_CHARS 21
char *lk_fmt_u64(char *buf, uint64_t v);
void lk_line_str(struct lk_line *l, const char *s);
void lk_line_u64(struct lk_line *l, uint64_t v);
/* Quoted, cut (64 and 256 bytes), control bytes escaped: values from the environment, paths. */
void lk_line_value(struct lk_line *l, const char *s);
void lk_line_path(struct lk_line *l, const char *s);
void lk_line_print(struct lk_line *l);
void lk_log(const char *msg);

#pragma GCC visibility pop

#endif /* LEEK_PRELOAD_H */
