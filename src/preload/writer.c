/* writer.c: the profile's record stream (docs/format.md): crash-safe, no syscall per record.
 *
 * Records are stored at the end of the file, into the window that writer-window.c maps: a
 * record's payload first, then its tag byte, which commits it. A store into a shared file mapping
 * is in the page cache at once, so a record is in the file as soon as its tag is stored, whatever
 * becomes of the process (SIGKILL, SIGSEGV). At a clean exit the file ends with a trailer and is
 * cut to its length.
 *
 * ALLOC and FREE are coded against the file's state (format.h): the thread of the previous one
 * (a THREAD record goes first when the thread changes), the blocks numbered so far (each ALLOC and
 * INHERIT numbers one, in struct lk_block's id) and the previous FREE's block. That state moves on
 * only once a record is stored, so a dropped record never leaves the next one coded against it,
 * and a block whose ALLOC was dropped has no number and gets no FREE.
 *
 * A record that cannot be stored is dropped and counted: the file is not open (writer-open.c), it
 * was cut short under the window (W_CUT, until the next sample begins it again), or it reached
 * RLIMIT_FSIZE (W_FULL: every record from then on is counted in file_limit, and the exit still
 * writes its trailer into the room kept for it).
 *
 * Never: allocate, print more than one line, raise a signal in the program, or store a record
 * anywhere but at the end of the file (`leek run` reads the profile as it grows). All functions
 * run under lk_lock.
 */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "preload.h"
#include "record.h"
#include "writer.h"

uint64_t lk_counters[LK_CNT_MAX + 1];

struct writer writer = { .fd = -1 };

void lk_writer_die(void)
{
	lk_window_unmap();
	writer.state = W_DEAD;
}

/* A record not written: counted by why. */
static void drop(void)
{
	lk_counters[writer.state == W_FULL ? LK_CNT_FILE_LIMIT : LK_CNT_RECORDS_DROPPED]++;
}

/* The file stops at its size limit: what it holds stays readable, and the exit's records still
 * go in (lk_writer_close). */
static void stop_full(void)
{
	struct lk_line l = LK_LINE_INIT;

	writer.state = W_FULL;
	lk_window_unmap();
	lk_line_str(&l, "the profile reached the file-size limit (ulimit -f) at ");
	lk_line_u64(&l, writer.off);
	lk_line_str(&l, " bytes; profiling stops, the program goes on");
	lk_line_print(&l);
}

/* put() when the record does not simply go into the open window: the file is not open yet (a
 * forked child opens at its first record), it needs growing or the window moving, or every record
 * is a pwrite. */
static LK_COLD bool put_slow(const uint8_t *rec, size_t len)
{
	int saved = errno, r = 0;
	bool grew = false;

	/* Not begun again here after a cut: the record may be one of several that belong together
	 * (a STACK and the ALLOC that names it), and the next sample begins the file at a record
	 * boundary. */
	if (writer.state != W_OPEN && !lk_writer_begin(false)) {
		drop();
		errno = saved;
		return false;
	}
	if (writer.off + len > writer.len) {
		r = lk_window_grow(writer.off + len);
		grew = r == 0;
	}
	if (r == 0 && writer.use_pwrite) {
		if (pwrite(writer.fd, rec, len, (off_t)writer.off) != (ssize_t)len &&
		    (lk_window_fd() < 0 ||
		     pwrite(writer.fd, rec, len, (off_t)writer.off) != (ssize_t)len))
			r = -EIO;
	} else if (r == 0 && (!writer.win || writer.off + len > writer.win_off + CHUNK)) {
		r = lk_window_map(writer.off);
	}
	if (r < 0) {
		if (r == -EFBIG)
			stop_full();
		else if (writer.state != W_CUT && !writer.use_pwrite) {
			lk_writer_die();
			lk_log("cannot grow the profile (disk full?); profiling stops, the program "
			       "goes on");
		}
		drop();
		errno = saved;
		return false;
	}
	if (!writer.use_pwrite)
		lk_commit(writer.win + (writer.off - writer.win_off), rec, len);
	writer.off += len;
	if (grew)
		lk_seg_seal(); /* other threads' bodies the file has left behind */
	errno = saved;
	return true;
}

/* Stores rec (one record, several whose first tag commits them all, or the header) at the end of
 * the file: its payload, then its first byte; false if it is dropped. Nearly every record is a few
 * bytes into the open window, copied inline, with no call and errno left alone. */
static bool put(const uint8_t *rec, size_t len)
{
	if (lk_unlikely(writer.state != W_OPEN || writer.off + len > writer.room || len > 64))
		return put_slow(rec, len); /* writer.room is 0 without a window, as with pwrite */
	uint8_t *d = writer.win + (writer.off - writer.win_off);
	for (size_t i = 1; i < len; i++)
		d[i] = rec[i];
	__atomic_store_n(d, rec[0], __ATOMIC_RELEASE); /* commit */
	writer.off += len;
	return true;
}

void lk_writer_put(const uint8_t *rec, size_t len)
{
	put(rec, len);
}

bool lk_writer_store(const uint8_t *rec, size_t len)
{
	return put(rec, len);
}

/* The time step from the file's previous timed record to now_ns: never negative, so that times
 * read from two clocks never go backwards in the file. */
static inline uint64_t since_last(uint64_t now_ns)
{
	return now_ns > writer.last_ns ? now_ns - writer.last_ns : 0;
}

/* ALLOC (tag LK_REC_ALLOC), FREE or FREE_STACK (stack: the freeing one) of b, preceded by a THREAD record if the file's previous ALLOC
 * or FREE was another thread's (or there was none). The two are stored as one: a crash leaves both
 * or neither. */
static LK_COLD void put_event(uint8_t tag, uint32_t tid, uint64_t now_ns, struct lk_block *b,
			     uint32_t stack)
{
	uint8_t rec[LK_THREAD_MAX + LK_ALLOC_MAX];
	uint64_t prev, dt;
	size_t n = 0;

	/* The file first: a forked child's opens here, starts with no thread, and numbers the
	 * blocks it inherited (inherit_block()) before b's number is read below; a file cut short
	 * begins again here the same way. Not for an ALLOC, whose block is live already and would be
	 * inherited too: every sample readies the file before it takes its block, so an ALLOC finds
	 * it open unless it was cut since, and then its block comes back as an INHERIT. */
	if (lk_unlikely(writer.state != W_OPEN)) {
		int saved = errno;
		bool open = lk_writer_begin(tag != LK_REC_ALLOC);
		errno = saved;
		if (!open) {
			drop();
			b->id = 0;
			return;
		}
	}
	if (!tid) /* a thread that never took the slow path, draining deferred frees at exit */
		tid = (uint32_t)gettid(); /* cannot fail: errno stays */
	if (tag != LK_REC_ALLOC && (!b->id || (b->id ^ writer.blocks) >> LK_ID_GEN_SHIFT)) {
		b->id = 0;
		return; /* its ALLOC was dropped, or is in a file that has since begun again */
	}
	prev = writer.prev_free;
	dt = since_last(now_ns);
	if (tid != writer.tid)
		n = lk_rec_thread(rec, tid);
	if (tag == LK_REC_ALLOC)
		n += lk_rec_alloc(rec + n, dt, b->size, stack);
	else if (tag == LK_REC_FREE_STACK)
		n += lk_rec_free_stack(rec + n, dt, writer.blocks, &prev, b->id, stack);
	else
		n += lk_rec_free(rec + n, dt, writer.blocks, &prev, b->id);
	b->id = 0;
	if (!put(rec, n))
		return;
	if (tag == LK_REC_ALLOC)
		b->id = ++writer.blocks;
	writer.tid = tid;
	writer.prev_free = prev;
	writer.last_ns += dt;
}

/* ---- the common event, in one store ----
 *
 * Most ALLOC and FREE records are the same thread's as the record before (tid 0 is none: that
 * goes through put_event, which finds it) and come at the time of the record before (dt 0: exact
 * mode's coarse clock ticks every few milliseconds), with a size and a stack id below 2^16, and
 * a freed block's code (its age or its step from the previous FREE's, lk_free_code) below 2^16.
 * Such a record is an ALLOC_FIXED or a FREE_FIXED (format.h), whose fields sit at fixed places:
 * it is put together in a register with two shifts, where varints would each need their length
 * found and the fields after them moved, at every malloc and free of exact mode, for a file about
 * as large after zstd (docs/format.md; bench/callgrind-fastpath.sh and docs/performance.md,
 * "Fixed-width records"). Anything else goes through put_event. */

/* The record rec (tag in its low byte, n bytes in all) at the end of the open window, if it is
 * open and has 8 bytes of room: its payload first, as a word whose bytes past the record are
 * zeros (as the file is past its last record), then its tag, which commits it. */
static inline bool store_small(uint64_t rec, unsigned n)
{
	if (lk_unlikely(writer.off + 8 > writer.room))
		return false; /* only a mapped window has room: the file is open, without pwrite */
	lk_commit_word(writer.win + (writer.off - writer.win_off), rec);
	writer.off += n;
	return true;
}

LK_HOT LK_INLINE void lk_writer_alloc(struct lk_trec *r, uint32_t tid, uint64_t now_ns,
				       struct lk_block *b, uint64_t size, uint32_t stack)
{
	if (r) { /* the thread's own body, begun again if the record does not fit */
		if (lk_seg_alloc(r, now_ns, b, size, stack) ||
		    (lk_seg_begin(r, now_ns) && lk_seg_alloc(r, now_ns, b, size, stack)))
			return;
	}
	if (lk_likely(tid == writer.tid && tid && now_ns <= writer.last_ns && size < (1u << 16) &&
		      stack < (1u << 16)) &&
	    store_small(lk_rec_alloc_fixed_word(size, stack), LK_ALLOC_FIXED_SIZE)) {
		b->id = ++writer.blocks;
		return;
	}
	put_event(LK_REC_ALLOC, tid, now_ns, b, stack);
}

LK_HOT LK_INLINE void lk_writer_free(struct lk_trec *r, uint32_t tid, uint64_t now_ns,
				      struct lk_block *b)
{
	if (r) {
		if (lk_seg_free(r, now_ns, b) ||
		    (lk_seg_begin(r, now_ns) && lk_seg_free(r, now_ns, b)))
			return;
	}
	uint64_t code = lk_free_code(writer.blocks, writer.prev_free, b->id);

	if (lk_likely(tid == writer.tid && tid && b->id && now_ns <= writer.last_ns &&
		      code < (1u << 16)) &&
	    store_small(lk_rec_free_fixed_word(code), LK_FREE_FIXED_SIZE)) {
		writer.prev_free = b->id;
		b->id = 0;
		return;
	}
	put_event(LK_REC_FREE, tid, now_ns, b, 0);
}

/* LEEK_FREE_STACKS' FREE: always in the main stream (format.h), so that the STACK it names,
 * written there just before, comes first for a reader; rare enough (one a sampled free) not to
 * need the fixed record or a thread's body. */
void lk_writer_free_stack(uint32_t tid, uint64_t now_ns, struct lk_block *b, uint32_t stack)
{
	put_event(LK_REC_FREE_STACK, tid, now_ns, b, stack);
}

/* ERROR: rare (a program's bug, and it aborts after the first by default), so put as it is. */
void lk_writer_error(uint64_t now_ns, struct lk_error_info *e, uint64_t id)
{
	uint8_t rec[LK_ERROR_MAX];

	e->block = id && !((id ^ writer.blocks) >> LK_ID_GEN_SHIFT)
			   ? id & ((1ull << LK_ID_GEN_SHIFT) - 1)
			   : 0;
	put(rec, lk_rec_error(rec, lk_writer_dt(now_ns), e));
}

uint64_t lk_writer_dt(uint64_t now_ns)
{
	uint64_t dt = since_last(now_ns);

	writer.last_ns += dt;
	return dt;
}

/* Takes the RSS record due at now_ns: false if it is not due, or another thread took it. With or
 * without lk_lock: a thread of lk_writer_rss_unlocked() and one under the lock never both write
 * the record of one interval. */
static bool rss_claim(uint64_t now_ns)
{
	uint64_t due = __atomic_load_n(&writer.next_rss_ns, __ATOMIC_RELAXED);
	uint64_t next = now_ns + lk_cfg.rss_interval_ns < now_ns ? UINT64_MAX
								 : now_ns + lk_cfg.rss_interval_ns;

	return now_ns >= due && __atomic_compare_exchange_n(&writer.next_rss_ns, &due, next, false,
							    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/* The RSS record (if the read of it worked) and, if they changed, the losses; lk_lock held. */
static LK_COLD void rss_put(uint64_t now_ns, bool have, uint64_t rss)
{
	uint8_t rec[LK_COUNTERS_MAX];
	uint64_t losses = 0;

	lk_rotate_maybe(now_ns); /* a new segment, if one is due (writer-rotate.c) */
	lk_ctl_poll(now_ns); /* `leek ctl`'s command, if one came (writer-control.c) */
	if (have)
		lk_writer_put(rec, lk_rec_pair(rec, LK_REC_RSS, lk_writer_dt(now_ns),
					       rss * (uint64_t)getpagesize()));
	for (int i = 1; i <= LK_CNT_MAX; i++)
		if (i != LK_CNT_SAMPLES && i != LK_CNT_FREES && i != LK_CNT_STACK_TRUNCATED &&
		    i != LK_CNT_DEFERRED_FREES)
			losses += lk_counters[i];
	if (losses != writer.losses_written) {
		uint64_t counts[LK_CNT_MAX + 1];
		writer.losses_written = losses;
		lk_counters_sum(counts);
		lk_writer_put(rec, lk_rec_counters(rec, LK_REC_LOSS, lk_writer_dt(now_ns), 0, counts));
	}
}

static LK_COLD void rss_write(uint64_t now_ns)
{
	uint64_t rss;
	bool have = lk_proc_statm(1, &rss);

	rss_put(now_ns, have, rss);
}

bool lk_writer_rss_due(uint64_t now_ns)
{
	return now_ns >= __atomic_load_n(&writer.next_rss_ns, __ATOMIC_RELAXED);
}

LK_HOT void lk_writer_rss_maybe(uint64_t now_ns)
{
	if (now_ns >= writer.next_rss_ns && rss_claim(now_ns))
		rss_write(now_ns); /* its buffers are not set up at every sample */
}

/* The read of /proc/self/statm takes the process's mm lock, behind any thread's page fault or
 * mmap: 10 to 30 us here, and more in a process whose threads fault. Under lk_lock it held up
 * every other thread's sample that needed the lock meanwhile (futex sleeps in a 2-thread exact
 * run, strace -k); here only the thread that claimed the record waits for it. */
void lk_writer_rss_unlocked(uint64_t now_ns)
{
	uint64_t rss;

	if (!rss_claim(now_ns))
		return;
	bool have = lk_proc_statm(1, &rss);
	lk_lock();
	rss_put(now_ns, have, rss);
	lk_unlock();
}

void lk_writer_close(void)
{
	uint8_t rec[LK_COUNTERS_MAX];
	uint64_t counts[LK_CNT_MAX + 1];
	struct timespec rt;

	writer.closing = true; /* the last records may use FINAL_ROOM */
	if (writer.state == W_CUT)
		lk_writer_begin(true); /* the trailer goes into a whole file */
	if (writer.state == W_FULL)
		writer.state = W_OPEN;
	if (writer.state != W_OPEN)
		return;
	uint64_t now = lk_now_ns();
	__atomic_store_n(&writer.next_rss_ns, 0, __ATOMIC_RELAXED);
	lk_writer_rss_maybe(now);
	clock_gettime(CLOCK_REALTIME, &rt);
	if (lk_tls.rec)
		lk_seg_end(lk_tls.rec);
	lk_seg_abandon_all(); /* threads that go on allocating store into nothing from now on */
	lk_counters_sum(counts);
	lk_writer_put(rec, lk_rec_counters(rec, LK_REC_TRAILER, lk_writer_dt(now),
					   (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec,
					   counts));
	if (writer.state != W_OPEN)
		return;
	lk_window_unmap();
	int fd = lk_window_fd();
	if (fd >= 0) {
		ftruncate(fd, (off_t)writer.off);
		close(fd);
	}
	writer.fd = -1;
	writer.state = W_CLOSED;
}
