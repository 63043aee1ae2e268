/* writer.h: the profile writer's state, shared by its three files and nobody else.
 *
 * writer.c is the record stream (what a record is stored as, and where), writer-window.c the
 * window into the file and the file's growth, writer-open.c the file's creation, naming and
 * header. The rest of libleek sees preload.h's lk_writer_* functions only. Everything here runs
 * under lk_lock, but for what lk_writer_fault and lk_writer_atfork_child reach (the window's
 * unmapping and the state), which must stay async-signal-safe.
 *
 * Never: declare here what another part of libleek uses (that goes in preload.h); move the state
 * that records are coded against (blocks, prev_free, tid, last_ns) but when a record is stored or
 * a file begins.
 */
#ifndef LEEK_WRITER_H
#define LEEK_WRITER_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "preload.h"

#pragma GCC visibility push(hidden)

/* A record stored at d, the main stream's or a thread's body (docs/format.md): its payload first,
 * then its tag, which commits it; a reader that sees the tag sees the payload. */
static inline void lk_commit(uint8_t *d, const uint8_t *rec, size_t n)
{
	memcpy(d + 1, rec + 1, n - 1);
	__atomic_store_n(d, rec[0], __ATOMIC_RELEASE);
}

/* The same for a record held in a word, its tag in the low byte: all 8 bytes, those past the
 * record zeros (as the file is past its last record), so the room must be 8 bytes. */
static inline void lk_commit_word(uint8_t *d, uint64_t word)
{
	uint64_t payload = word & ~(uint64_t)0xff;

	memcpy(d, &payload, 8); /* its first byte stays 0 */
	__atomic_store_n(d, (uint8_t)word, __ATOMIC_RELEASE);
}

#define CHUNK ((uint64_t)1 << 20) /* the window, and the file's step once it is large */

/* W_FULL: the file reached RLIMIT_FSIZE; only lk_writer_close writes, into FINAL_ROOM
 * (writer-window.c). W_CUT: the file was cut short under the window; lk_writer_ready begins it
 * again. */
enum { W_UNOPENED, W_OPEN, W_FULL, W_CUT, W_DEAD, W_CLOSED };

struct writer {
	int state, fd;
	bool forked, use_pwrite, closing;
	uint32_t pid;
	uint64_t off, len;              /* bytes written; bytes allocated to the file */
	uint8_t *win;                   /* mapped window [win_off, win_off + CHUNK) */
	uint64_t win_off;
	uint64_t room;                  /* where the window's stores must stop: the end of the window
					 * or of the file, the nearer; 0 without a window
					 * (lk_window_set_room) */
	uint64_t last_ns, next_rss_ns, losses_written; /* next_rss_ns 0: at the next sample */
	uint64_t blocks;                /* the last block numbered: ALLOC and INHERIT records stored
					 * and blocks reserved by SEGMENT records, above the file's
					 * generation (LK_ID_GEN_SHIFT) */
	uint16_t gen;                   /* files begun by this process (and its parents) */
	uint64_t prev_free;             /* the block of the file's last FREE; 0 at first */
	uint32_t tid;                   /* of the file's last ALLOC or FREE; 0 (no thread): none */
	uint32_t ctl_off;               /* the control block's offset in the file (control.c) */
	uint32_t ctl_seen;              /* the last command's seq carried out in this file */
	uint32_t segment;               /* the file's segment number: 0, then 1, 2... at each
					 * rotation (writer-rotate.c) */
	uint64_t origin_ns;             /* segment 0's start_realtime_ns: the rotation block's */
	uint64_t start_ns;              /* the file's start_monotonic_ns (LEEK_MAX_AGE) */
	uint64_t ckpt_end;              /* where the file's checkpoint ended (LEEK_MAX_SIZE counts
					 * the records after it) */
	dev_t dev;
	ino_t ino;
	char path[LK_MAX_PATH];
};
extern struct writer writer;

/* ---- writer.c: the record stream ---- */
void lk_writer_die(void); /* no profile from now on: the file cannot grow or could not open */
/* Stores rec at the end of the file (lk_writer_put), and says whether it did: false if dropped. */
bool lk_writer_store(const uint8_t *rec, size_t len);

/* ---- writer-window.c: the window into the file, and its growth ---- */
/* A descriptor of the file, found again by its path (a negative errno if it is gone or another
 * file now): leek holds none between uses. Given back with lk_window_fd_put. */
int lk_window_fd(void);
void lk_window_fd_put(int fd);
void lk_window_set_room(void); /* writer.room after a change to the window or the file's length */
void lk_window_unmap(void);    /* no window from now on; async-signal-safe */
/* The file allocated up to at least end (-EFBIG past the size limit; -ESTALE, and W_CUT, if it
 * was cut short), and the window moved to hold off: 0 or a negative errno. */
int lk_window_grow(uint64_t end);
int lk_window_map(uint64_t off);

/* ---- writer-open.c: the file's creation, naming and header ---- */
/* The first event of a process (or of a forked child) opens its file; the first after a cut
 * begins it again. One line if it cannot, and the program runs unprofiled from then on. */
void lk_writer_open_now(void);

/* The steps of a file's beginning, for writer-rotate.c. lk_writer_start: the empty file fd made
 * the writer's, its header stored (a rotation block in it if writer.segment); 0 or a negative
 * errno, with nothing else changed but the writer's state, which the caller puts back. The
 * checkpoint: every module, an INHERIT for every live block, a dormant file's OFF. */
int lk_writer_start(int fd, uint32_t flags);
void lk_writer_checkpoint(bool inherit);
int lk_writer_open_unnamed(const char *path);
int lk_writer_name(int fd, size_t base); /* writer.path, or writer.path.N: 0 or -errno */

/* ---- writer-rotate.c: rotation by size and age (LEEK_MAX_SIZE, LEEK_MAX_AGE, LEEK_KEEP) ---- */
void lk_rotate_file_opened(void);      /* a process's segment 0 is named: remember it */
void lk_rotate_maybe(uint64_t now_ns); /* with each RSS record: a new segment if one is due */
/* Whether the records after the file's checkpoint have reached LEEK_MAX_SIZE: the file's growth
 * then makes the next sample's RSS record due, where the rotation happens. A checkpoint larger
 * than LEEK_MAX_SIZE (a live set of millions of blocks) does not rotate again at once. */
static inline bool lk_rotate_size_due(void)
{
	return lk_cfg.max_size && writer.off - writer.ckpt_end >= lk_cfg.max_size &&
	       !writer.closing;
}

/* Whether this process holds a file (open, full or cut short), as opposed to none yet, or none
 * any more. */
static inline bool lk_writer_has_file(void)
{
	return writer.state == W_OPEN || writer.state == W_FULL || writer.state == W_CUT;
}

/* Whether records can be written: the file opened first if this process has none yet, and, if
 * begin_again, begun again if it was cut short (a point between two records of a sample). */
static inline bool lk_writer_begin(bool begin_again)
{
	if (writer.state == W_UNOPENED || (writer.state == W_CUT && begin_again))
		lk_writer_open_now();
	return writer.state == W_OPEN;
}

#pragma GCC visibility pop

#endif /* LEEK_WRITER_H */
