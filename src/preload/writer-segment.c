/* writer-segment.c: a thread's own stretch of the profile, in a process with threads.
 *
 * A thread with a record of its own (threads.c) stores its ALLOC and FREE records into a body
 * that a SEGMENT record of the main stream reserved for it (format.h, docs/format.md "Thread
 * segments"): with no lock, into a mapping of the file that only it writes, coded against its own
 * state (its last block, its last FREE's block, its last time). A record is in the page cache once
 * its tag is stored, as in the main stream, so a crash loses nothing stored. The body is mapped on
 * its own, page-aligned (the SEGMENT record's skip), so that the main stream's window can move on
 * while the thread fills it.
 *
 * Bodies grow from SEG_FIRST to SEG_LAST a thread: a thread that allocates a few times leaves a
 * few KiB of zeros, and one that allocates all the time reserves a body once a MiB of records,
 * 130 000 pairs of exact mode (one SEGMENT record, a file grow, an open, an mmap and a munmap;
 * each body's pages fault in anew, which is why SEG_LAST is the format's largest: docs/design.md,
 * "Threads"). The next body is reserved when a record does not fit, or when the file began again
 * (a fork's child, a file cut short): the old one ends with SEG_END, which tells
 * a reader that follows the file that the body is whole.
 *
 * Block numbers carry the file's generation above bit LK_ID_GEN_SHIFT (writer-open.c), so that
 * a block numbered in a file that has since begun again is never named in the new one: its code
 * against this body's blocks is then too large for a fixed record, and the slow path drops it.
 *
 * A thread that stops allocating would leave its body open, and a reader that follows the file
 * waiting before it, for as long as it sleeps: lk_seg_seal, run by whichever thread grows the file,
 * ends such a body for it once the file has left it SEAL_BEHIND bytes behind.
 *
 * Never: store into a body from any thread but its own, except lk_seg_seal's SEG_END once the
 * thread can store nothing more there (a fork's child drops its bodies unwritten: they are the
 * parent's file's); let a record cross its body's end; number more blocks than its SEGMENT
 * reserved; take lk_lock in lk_seg_alloc or lk_seg_free (their callers do when they return false).
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload.h"
#include "record.h"
#include "writer.h"

#define SEG_FIRST (16u << 10)
#define SEG_LAST (1024u << 10)
#define PAGE 4096u
#define SEAL_BEHIND (4u << 20) /* the file past a body's end at which lk_seg_seal ends it */
/* The fewest zeros before a body: so skip is always a two-byte varint, whose length does not
 * depend on its own value. */
#define SKIP_MIN 128u
_Static_assert(SEG_LAST <= LK_SEG_MAX && PAGE + SKIP_MIN < LK_SEG_SKIP_MAX, "segment bounds");

/* Claims the bytes [off, end) of the body for a record, then looks at the room: lk_seg_seal
 * takes the room away and then waits until no claim is open, so a record is either stored whole
 * before the body ends or not stored in it at all. The claim is a plain store to the thread's own
 * line; lk_seg_seal's membarrier stands for the CPU's fence between it and the load of the room. */
static inline bool seg_claim(struct lk_trec *r, uint32_t off, uint32_t end, uint32_t need)
{
	__atomic_store_n(&r->seg_claim, end, __ATOMIC_RELAXED);
	/* The claim stored before the room is loaded, and nothing else held back: a compiler
	 * barrier on these two words alone. */
	__asm__ volatile("" : "+m"(r->seg_claim), "+m"(r->seg_room));
	if (lk_likely(off + need <= __atomic_load_n(&r->seg_room, __ATOMIC_RELAXED)))
		return true;
	__atomic_store_n(&r->seg_claim, off, __ATOMIC_RELAXED);
	return false;
}

/* The record (in a word, as writer.c's store_small takes it; or n bytes at rec) at the body's
 * end, committed as the main stream's are (writer.h); false if it does not fit. */
static inline bool seg_store_small(struct lk_trec *r, uint64_t word, unsigned n)
{
	uint32_t off = r->seg_off;

	if (lk_unlikely(!seg_claim(r, off, off + n, 8)))
		return false;
	lk_commit_word(r->seg + off, word);
	__atomic_store_n(&r->seg_off, off + n, __ATOMIC_RELEASE);
	return true;
}

static bool seg_store(struct lk_trec *r, const uint8_t *rec, size_t n)
{
	uint32_t off = r->seg_off;

	if (!seg_claim(r, off, off + (uint32_t)n, n < 8 ? 8 : (uint32_t)n))
		return false;
	lk_commit(r->seg + off, rec, n);
	__atomic_store_n(&r->seg_off, off + (uint32_t)n, __ATOMIC_RELEASE);
	return true;
}

static LK_COLD bool seg_alloc_slow(struct lk_trec *r, uint64_t now, struct lk_block *b,
				   uint64_t size, uint32_t stack)
{
	uint8_t rec[LK_ALLOC_MAX];
	uint64_t dt = now > r->last_ns ? now - r->last_ns : 0;

	if (r->blocks >= r->blocks_end || !seg_store(r, rec, lk_rec_alloc(rec, dt, size, stack)))
		return false;
	r->last_ns += dt;
	b->id = ++r->blocks;
	return true;
}

LK_HOT LK_INLINE bool lk_seg_alloc(struct lk_trec *r, uint64_t now, struct lk_block *b,
				   uint64_t size, uint32_t stack)
{
	if (lk_likely(now <= r->last_ns && size < (1u << 16) && stack < (1u << 16) &&
		      r->blocks < r->blocks_end) &&
	    seg_store_small(r, lk_rec_alloc_fixed_word(size, stack), LK_ALLOC_FIXED_SIZE)) {
		b->id = ++r->blocks;
		return true;
	}
	return seg_alloc_slow(r, now, b, size, stack);
}

static LK_COLD bool seg_free_slow(struct lk_trec *r, uint64_t now, struct lk_block *b)
{
	uint8_t rec[LK_FREE_MAX];
	uint64_t dt = now > r->last_ns ? now - r->last_ns : 0, prev = r->prev_free;

	if (!r->seg_room)
		return false; /* no body yet, or none since the file began again: r->blocks is not
			       * this file's */
	if (!b->id || (b->id ^ r->blocks) >> LK_ID_GEN_SHIFT) {
		b->id = 0; /* in no record of this file */
		return true;
	}
	if (!seg_store(r, rec, lk_rec_free(rec, dt, r->blocks, &prev, b->id)))
		return false;
	r->last_ns += dt;
	r->prev_free = prev;
	b->id = 0;
	return true;
}

LK_HOT LK_INLINE bool lk_seg_free(struct lk_trec *r, uint64_t now, struct lk_block *b)
{
	uint64_t code = lk_free_code(r->blocks, r->prev_free, b->id);

	if (lk_likely(b->id && now <= r->last_ns && code < (1u << 16)) &&
	    seg_store_small(r, lk_rec_free_fixed_word(code), LK_FREE_FIXED_SIZE)) {
		r->prev_free = b->id;
		b->id = 0;
		return true;
	}
	return seg_free_slow(r, now, b);
}

void lk_seg_end(struct lk_trec *r)
{
	r->seal_wait = 0;
	if (!r->seg)
		return;
	if (r->seg_off < r->seg_len)
		__atomic_store_n(r->seg + r->seg_off, (uint8_t)LK_REC_SEG_END, __ATOMIC_RELEASE);
	munmap(r->seg, r->seg_len);
	r->seg = NULL;
	r->seg_room = 0;
}

void lk_seg_drop(struct lk_trec *r)
{
	if (r->seg)
		munmap(r->seg, r->seg_len);
	r->seg = NULL;
	r->seg_room = 0;
	r->seal_wait = 0;
}

bool lk_seg_begin(struct lk_trec *r, uint64_t now)
{
	uint8_t rec[LK_SEGMENT_MAX];

	lk_seg_end(r);
	/* Not opened or begun again here: a sample readies the file before it takes its block, which
	 * a file begun now would inherit as well as allocate (writer.c's put_event). */
	if (writer.state != W_OPEN || writer.use_pwrite)
		return false;
	uint32_t len = r->next_len ? r->next_len : SEG_FIRST;
	uint64_t blocks = len / 4; /* no ALLOC is shorter than 4 bytes */
	uint64_t dt = now > writer.last_ns ? now - writer.last_ns : 0;
	size_t n = lk_rec_segment(rec, dt, r->tid, blocks, SKIP_MIN, len);
	uint64_t body = (writer.off + n + SKIP_MIN + PAGE - 1) & ~(uint64_t)(PAGE - 1);
	n = lk_rec_segment(rec, dt, r->tid, blocks, body - writer.off - n, len);
	/* The body is in the file before the record that names it is stored: a reader never finds
	 * a SEGMENT cut by the file's end. */
	if ((body + len > writer.len && lk_window_grow(body + len) < 0) ||
	    writer.state != W_OPEN || !lk_writer_store(rec, n))
		return false;
	writer.off = body + len;
	writer.last_ns += dt;
	r->blocks = r->prev_free = writer.blocks;
	r->blocks_end = writer.blocks + blocks;
	writer.blocks += blocks;
	r->last_ns = writer.last_ns;
	r->next_len = len * 2 < SEG_LAST ? len * 2 : SEG_LAST;
	int fd = lk_window_fd();
	if (fd < 0)
		return false; /* its body stays zeros: a segment with no records */
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)body);
	lk_window_fd_put(fd);
	if (p == MAP_FAILED)
		return false;
	r->seg = p;
	r->seg_len = len;
	r->seg_off = r->seg_claim = 0;
	r->seg_at = body;
	r->seg_room = len - 1; /* the last byte for SEG_END */
	lk_seg_seal();
	return true;
}

/* 0: not registered yet (nor in a fork's child, whose process is new to membarrier); 1: registered;
 * -1: membarrier is missing or forbidden (a seccomp filter), and no body is ever sealed. */
static int membar;

static bool membar_ready(void)
{
	if (membar == 0)
		membar = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0
				 ? 1
				 : -1;
	return membar > 0;
}

void lk_seg_atfork_child(void)
{
	membar = 0;
}

/* A reader that follows the file stops before a body until the body is whole (docs/format.md,
 * "Reading a profile being written"), and a thread that stopped allocating (a pool's idle
 * worker, a server's I/O thread between bursts) leaves its body open for as long as it sleeps:
 * `leek run` then reads and compresses everything after it only once the program has exited. So
 * a body that the file has left SEAL_BEHIND bytes behind is ended here, by whichever thread holds
 * lk_lock as the file grows. Its thread may be storing a record in that instant, with no lock:
 * the room goes first, then a membarrier makes sure that any claim made before its thread saw the
 * room go is seen here (seg_claim), and a body whose claim is open waits for the next call. */
static void seal(bool all)
{
	uint32_t n = lk_trecs_seen();
	struct lk_trec *mine = lk_tls.rec;
	bool fresh = false;
	int saved = errno;

	if (writer.closing || membar < 0)
		return;
	for (uint32_t i = 0; i < n; i++) {
		struct lk_trec *r = &lk_trecs[i];
		if (r == mine || !r->used || !r->seg || r->seal_wait || !r->seg_room ||
		    (!all && writer.off < r->seg_at + r->seg_len + SEAL_BEHIND))
			continue;
		if (!fresh && !membar_ready())
			goto out;
		__atomic_store_n(&r->seg_room, 0, __ATOMIC_RELAXED);
		r->seal_wait = 1;
		fresh = true;
	}
	if (fresh && syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) < 0) {
		membar = -1; /* the threads whose room went end their bodies at their next record */
		goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct lk_trec *r = &lk_trecs[i];
		if (!r->seal_wait || !r->seg)
			continue;
		uint32_t off = __atomic_load_n(&r->seg_off, __ATOMIC_ACQUIRE);
		if (__atomic_load_n(&r->seg_claim, __ATOMIC_ACQUIRE) != off)
			continue;
		/* No claim is open and the room is gone: its thread stores nothing there any more,
		 * so the body ends as its own thread would end it, and the next one is small. */
		lk_seg_end(r);
		r->next_len = SEG_FIRST;
	}
out:
	errno = saved;
}

void lk_seg_seal(void)
{
	seal(false);
}

/* `leek ctl`'s SYNC (writer-control.c): every body ends now, however near the file's end, so that
 * a reader that follows the file reads up to its last record without waiting for it to grow. The
 * calling thread's own body is ended as its thread would end it: it is in the slow path, under
 * lk_lock, with no record of its own half stored. A body whose thread is storing a record in this
 * instant ends at the next seal. */
void lk_seg_sync(void)
{
	struct lk_trec *mine = lk_tls.rec;

	if (writer.closing)
		return;
	if (mine && mine->seg) {
		lk_seg_end(mine);
		mine->next_len = SEG_FIRST;
	}
	seal(true);
}

/* Every body in anonymous memory from now on (under lk_lock), before the file they were in begins
 * again or gets its trailer: a thread that stores into its body meanwhile stores into nothing, and
 * its next record begins a body (in the new file), or finds the file closed. A record that a
 * thread was storing in that instant may or may not be in the file, and counted or not in the
 * trailer. */
void lk_seg_abandon_all(void)
{
	for (uint32_t i = 0; i < LK_TRECS; i++) {
		struct lk_trec *r = &lk_trecs[i];
		if (!r->used || !r->seg)
			continue;
		mmap(r->seg, r->seg_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		     -1, 0);
		__atomic_store_n(&r->seg_room, 0, __ATOMIC_RELAXED);
	}
}

/* SIGBUS at addr (signals.c, in the handler): true if it is in a body, which then gets anonymous
 * memory in place of the file's pages, as the window does (writer-window.c). Async-signal-safe. */
bool lk_seg_fault(const void *addr)
{
	for (uint32_t i = 0; i < LK_TRECS; i++) {
		struct lk_trec *r = &lk_trecs[i];
		uint8_t *seg = __atomic_load_n(&r->seg, __ATOMIC_RELAXED);
		if (!seg || (uintptr_t)addr - (uintptr_t)seg >= r->seg_len)
			continue;
		if (mmap(seg, r->seg_len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
			return false;
		r->seg_room = 0;
		return true;
	}
	return false;
}
