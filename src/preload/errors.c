/* errors.c: memory errors that libleek catches, and what it does about them.
 *
 * A free (or realloc) of an arena pointer that is not a live block's start: the free of a sampled
 * block freed already, of a pointer inside a block, or of one where no block is. In exact mode
 * (LEEK_PERIOD=1) every block is in the arena, so every such free of the program's is caught;
 * at a sampling period, those of sampled blocks. For each one libleek
 *
 *   1. takes the stack of the call, with no leek lock held (as a sample's: stack.c);
 *   2. under lk_lock, finds the block the pointer falls in (arena-find.c) and writes an ERROR
 *      record (format.h) with the stacks that allocated it, freed it (when LEEK_FREE_STACKS kept
 *      that one) and freed it again, and counts it in bad_free;
 *   3. prints one report on stderr, in one write(2), built without stdio or malloc;
 *   4. does what glibc does at a double or invalid free that it sees: abort(), a SIGABRT that the
 *      program's handler may catch ("free(): double free detected in tcache 2", "free(): invalid
 *      pointer"). glibc does not see every one (a block freed twice from its fastbins, say), but
 *      a program that survives one survives by luck, with a heap whose state nobody knows; leek
 *      knows, and stops it where the bug is. LEEK_ABORT_ON_ERROR=0 goes on instead, with the free
 *      ignored, as leek did before it reported errors, for a run that wants its profile past the
 *      first bug (docs/design.md, "Memory errors").
 *
 * What it cannot catch: a second free of a block whose place a later allocation has taken already
 * (the arena hands the last freed slot out first, as glibc's tcache does) frees that later block;
 * a double free of a block that is not sampled goes to the real allocator; a free from a signal
 * handler that interrupted leek's own slow path is counted only (its stack cannot be taken there).
 *
 * Never: allocate, call stdio, hold lk_lock while the stack is taken, print under LEEK_QUIET=1
 * (a setuid program's stderr would learn its addresses), or change errno when it goes on.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "preload.h"
#include "record.h"

static const char *const kind_names[LK_ERR_MAX + 1] = {
	[LK_ERR_OVERFLOW] = "heap-buffer-overflow",
	[LK_ERR_UNDERFLOW] = "heap-buffer-underflow",
	[LK_ERR_UAF_READ] = "heap-use-after-free read",
	[LK_ERR_UAF_WRITE] = "heap-use-after-free write",
	[LK_ERR_UAF_ACCESS] = "heap-use-after-free",
	[LK_ERR_DOUBLE_FREE] = "double free",
	[LK_ERR_INVALID_FREE] = "invalid free",
	[LK_ERR_REALLOC_FREED] = "realloc of a freed block",
};

/* The report, put together on the stack: at most its size, cut there. */
struct report {
	char buf[4096];
	size_t n;
};

static void put_str(struct report *r, const char *s)
{
	size_t len = strlen(s), room = sizeof(r->buf) - r->n;

	if (len > room)
		len = room;
	memcpy(r->buf + r->n, s, len);
	r->n += len;
}

static void put_u64(struct report *r, uint64_t v)
{
	char buf[LK_U64_CHARS];

	put_str(r, lk_fmt_u64(buf, v));
}

static void put_hex(struct report *r, uint64_t v)
{
	char buf[19], *p = buf + sizeof(buf) - 1;

	*p = 0;
	do
		*--p = "0123456789abcdef"[v & 15];
	while (v >>= 4);
	*--p = 'x';
	*--p = '0';
	put_str(r, p);
}

/* The frames of a stack just taken, one a line, each with its object and offset where the loader
 * knows it (dl_iterate_phdr: not from a signal handler). */
static void put_frames(struct report *r, const uint64_t *frames, uint32_t n)
{
	for (uint32_t i = 0; i < n && i < 32; i++) {
		struct dl_phdr_info info;
		put_str(r, "leek:     #");
		put_u64(r, i);
		put_str(r, " ");
		put_hex(r, frames[i]);
		if (lk_object_of((const void *)(uintptr_t)frames[i], &info)) {
			const char *name = info.dlpi_name && *info.dlpi_name ? info.dlpi_name
									    : "(the executable)";
			put_str(r, " in ");
			put_str(r, name);
			put_str(r, "+");
			put_hex(r, frames[i] - info.dlpi_addr);
		}
		put_str(r, "\n");
	}
	if (n > 32)
		put_str(r, "leek:     ...\n");
}

static void print(struct report *r)
{
	size_t off = 0;

	if (lk_cfg.quiet)
		return;
	if (r->n == sizeof(r->buf))
		r->buf[r->n - 1] = '\n';
	while (off < r->n) {
		ssize_t k = write(STDERR_FILENO, r->buf + off, r->n - off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		off += (size_t)k;
	}
}

/* The report of a bad free; path: the profile that has the record, "" if none has. */
static void report_free(const struct lk_error_info *e, const struct lk_arena_found *f,
			const uint64_t *frames, uint32_t n, const char *path)
{
	struct report r = { .n = 0 };

	put_str(&r, "leek: ERROR: ");
	put_str(&r, kind_names[e->kind]);
	put_str(&r, " of ");
	put_hex(&r, e->addr);
	put_str(&r, " in thread ");
	put_u64(&r, e->tid);
	put_str(&r, "\n");
	if (f->block) {
		put_str(&r, "leek:   ");
		put_hex(&r, e->addr);
		put_str(&r, f->block == e->addr ? " is the start of " : " is inside ");
		put_str(&r, f->live ? "a live block of " : "a freed block of ");
		put_u64(&r, f->size);
		put_str(&r, " bytes at ");
		put_hex(&r, f->block);
		put_str(&r, "\n");
	} else {
		put_str(&r, "leek:   no block of leek's arena begins there or holds it\n");
	}
	if (n) {
		put_str(&r, "leek:   the call:\n");
		put_frames(&r, frames, n);
	}
	if (*path) {
		put_str(&r, "leek:   stacks (allocation");
		put_str(&r, f->free_stack ? ", free" : "");
		put_str(&r, ", this call) are in the profile: leek report errors ");
		put_str(&r, path);
		put_str(&r, "\n");
	} else {
		put_str(&r, "leek:   no profile has its record (none is open)\n");
	}
	put_str(&r, lk_cfg.abort_on_error ? "leek:   aborting, as glibc does at a bad free "
					    "(LEEK_ABORT_ON_ERROR=0 goes on)\n"
					  : "leek:   the free is ignored (LEEK_ABORT_ON_ERROR=0)\n");
	print(&r);
}

LK_COLD LK_NOINLINE void lk_error_bad_free(void *p, bool realloc, const void *frame)
{
	struct lk_thread *t = &lk_tls;
	int saved = errno;
	uint64_t buf[LK_CAPTURE_FRAMES], hash = 0, left = t->bytes_left;
	const uint64_t *frames = buf;
	uint32_t known = 0, stack = 0, n = 0;
	uint8_t in_slow = t->in_slow;
	void *ticket = NULL;
	bool ready = lk_init_done() && lk_writer_ready();
	struct lk_arena_found f;
	char path[1024] = ""; /* cut to fit: the report is one buffer */
	struct lk_error_info e = { .tid = t->tid ? t->tid : (uint64_t)gettid(),
				   .addr = (uintptr_t)p };

	t->in_slow = 1;
	t->bytes_left = UINT64_MAX;
	if (ready)
		n = lk_stack_capture(buf, (uint32_t)lk_cfg.max_frames, frame, &hash, &frames,
				     &known, &ticket);
	uint64_t now = lk_now_ns();
	lk_lock();
	lk_arena_find(p, &f);
	e.kind = f.kind ? f.kind : LK_ERR_INVALID_FREE;
	if (realloc && e.kind == LK_ERR_DOUBLE_FREE)
		e.kind = LK_ERR_REALLOC_FREED;
	e.block_addr = f.block;
	e.block_size = f.block ? f.size : 0;
	if (ready && lk_writer_ready()) {
		stack = known ? known : lk_stack_intern(frames, n, hash);
		e.stack = lk_stack_file_id(stack);
		e.alloc_stack = lk_stack_file_id(f.stack);
		e.free_stack = lk_stack_file_id(f.free_stack);
		lk_writer_error(now, &e, f.id);
		lk_writer_path(path, sizeof(path));
	}
	lk_counters[LK_CNT_BAD_FREE]++;
	lk_unlock();
	lk_stack_learned(ticket, stack);
	report_free(&e, &f, frames, n, path);
	t->bytes_left = left;
	t->in_slow = in_slow;
	if (lk_cfg.abort_on_error)
		abort();
	errno = saved;
}
