/* guard-fault.c: guard mode's start-up and what it does at a fault in its pages (the slots:
 * guard.c).
 *
 * The SIGSEGV handler is signals.c's on_fault, kept in front of the program's own handlers in
 * guard mode. A fault in the guard run comes here: lk_guard_fault writes an ERROR record
 * (overflow, underflow, or a use after free, read or write from the page-fault error code) and
 * prints the report, naming the profile; then on_fault gives the fault to the program as it would
 * have had it: its handler, or the default action, a crash (docs/design.md, "Guard mode").
 *
 * Never: allocate; take lk_lock when this thread holds it (in_slow); call anything but
 * async-signal-safe code and leek's own (the unwinder, as the sampler runs it under a signal
 * handler's malloc); touch SIGSEGV's action (signals.c's).
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#include "preload.h"
#include "record.h"

void lk_guard_init(void)
{
	if (!lk_cfg.guard)
		return;
	int saved = errno;
	lk_lock();
	bool ok = lk_guard_setup((uint32_t)lk_cfg.guard, lk_cfg.guard_left);
	lk_unlock();
	if (!ok)
		lk_log("cannot reserve the pages of LEEK_GUARD; guard mode is off");
	errno = saved; /* the handler: lk_signals_init, once the sampler runs */
}

/* ---- the fault ---- */

static void put(char *buf, size_t *n, size_t cap, const char *s)
{
	while (*s && *n < cap)
		buf[(*n)++] = *s++;
}

static void put_hex(char *buf, size_t *n, size_t cap, uint64_t v)
{
	char t[19], *p = t + sizeof(t) - 1;

	*p = 0;
	do
		*--p = "0123456789abcdef"[v & 15];
	while (v >>= 4);
	put(buf, n, cap, "0x");
	put(buf, n, cap, p);
}

static void put_u64(char *buf, size_t *n, size_t cap, uint64_t v)
{
	char t[LK_U64_CHARS];

	put(buf, n, cap, lk_fmt_u64(t, v));
}

static const char *const fault_names[] = {
	[LK_ERR_OVERFLOW] = "heap-buffer-overflow",
	[LK_ERR_UNDERFLOW] = "heap-buffer-underflow",
	[LK_ERR_UAF_READ] = "heap-use-after-free read",
	[LK_ERR_UAF_WRITE] = "heap-use-after-free write",
	[LK_ERR_UAF_ACCESS] = "heap-use-after-free",
};

/* The report, in one write(2); path: the profile that has the record, "" if none has. */
static void report_fault(const struct lk_error_info *e, const char *path)
{
	char buf[1024];
	size_t n = 0, cap = sizeof(buf);

	if (lk_cfg.quiet)
		return;
	put(buf, &n, cap, "leek: ERROR: ");
	put(buf, &n, cap, fault_names[e->kind]);
	put(buf, &n, cap, " at ");
	put_hex(buf, &n, cap, e->addr);
	put(buf, &n, cap, " in thread ");
	put_u64(buf, &n, cap, e->tid);
	put(buf, &n, cap, "\nleek:   a guarded block of ");
	put_u64(buf, &n, cap, e->block_size);
	put(buf, &n, cap, " bytes at ");
	put_hex(buf, &n, cap, e->block_addr);
	put(buf, &n, cap, e->kind >= LK_ERR_UAF_READ ? ", freed\n" : "\n");
	if (*path) {
		put(buf, &n, cap, "leek:   stacks (the access, the allocation");
		put(buf, &n, cap, e->free_stack ? ", the free" : "");
		put(buf, &n, cap, ") are in the profile: leek report errors ");
		put(buf, &n, cap, path);
		if (n == cap)
			n--; /* cut: the newline still ends it */
		put(buf, &n, cap, "\n");
	} else {
		put(buf, &n, cap, "leek:   no profile has its record (none is open, or the fault "
				  "was inside leek)\n");
	}
	for (size_t off = 0; off < n;) {
		ssize_t k = write(STDERR_FILENO, buf + off, n - off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		off += (size_t)k;
	}
}

/* The stack from the faulting instruction: the capture's frames from the interrupted one on (the
 * handler's and the signal trampoline's left out), that one's address + 1, since it is where the
 * fault happened, not a return address, and every frame is looked up at its address - 1
 * (format.h, STACK). Into buf; its length. */
static uint32_t from_fault(uint64_t *buf, const uint64_t *frames, uint32_t n, const void *uc,
			   uint64_t *hash)
{
#if defined(__x86_64__)
	uint64_t ip = (uint64_t)((const ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP];
	uint32_t i = 0, k = 0;

	while (i < n && frames[i] != ip)
		i++;
	if (i == n) /* not found: the frame where it faulted first, then what was taken */
		i = 0, buf[k++] = ip + 1;
	else
		buf[k++] = ip + 1, i++;
	for (; i < n && k < LK_MAX_FRAMES; i++)
		buf[k++] = frames[i];
	lk_stack_hash(buf, k, hash);
	return k;
#else
	(void)uc;
	if (frames != buf)
		memmove(buf, frames, n * sizeof(*buf));
	lk_stack_hash(buf, n, hash);
	return n;
#endif
}

/* The path is cut to this for the report (a longer one is cut, and the record is still there). */
#define REPORT_PATH 512

LK_COLD LK_NOINLINE void lk_guard_fault(const void *addr, void *uc)
{
	uintptr_t a = (uintptr_t)addr;
	struct lk_thread *t = &lk_tls;
	struct lk_error_info e = { .addr = a };
	uint32_t stack = 0, free_stack = 0, at = 0;
	uint64_t id = 0;
	char path[REPORT_PATH] = "";

#if defined(__x86_64__)
	const ucontext_t *u = uc;
	uint64_t err = (uint64_t)u->uc_mcontext.gregs[REG_ERR];
	bool known = true, write = err & 2; /* the page-fault error code: bit 1, a write */
#else
	bool known = false, write = false;
#endif
	e.tid = t->tid ? t->tid : (uint64_t)gettid();
	/* The slots are read with no lock (guard.c); the record is written under lk_lock, which a
	 * thread inside leek (in_slow) may hold already: reported without the record then. */
	bool locked = !t->in_slow && lk_init_done();
	if (locked)
		lk_lock();
	bool ours = lk_guard_classify(a, write, known, &e, &stack, &free_stack, &id);
	if (ours && locked && lk_writer_ready()) {
		uint64_t buf[LK_CAPTURE_FRAMES], hash = 0, left = t->bytes_left;
		const uint64_t *frames = buf;
		uint32_t known_id = 0, n;
		void *ticket = NULL;
		lk_unlock(); /* the capture takes no leek lock */
		t->in_slow = 1;
		t->bytes_left = UINT64_MAX;
		n = lk_stack_capture(buf, (uint32_t)lk_cfg.max_frames, __builtin_frame_address(0),
				     &hash, &frames, &known_id, &ticket);
		n = from_fault(buf, frames, n, uc, &hash);
		frames = buf;
		lk_lock();
		at = known_id ? known_id : lk_stack_intern(frames, n, hash);
		e.stack = lk_stack_file_id(at);
		e.alloc_stack = lk_stack_file_id(stack);
		e.free_stack = lk_stack_file_id(free_stack);
		lk_writer_error(lk_now_ns(), &e, id);
		lk_writer_path(path, sizeof(path));
		lk_unlock();
		lk_stack_learned(ticket, at);
		t->bytes_left = left;
		t->in_slow = 0;
	} else if (locked) {
		lk_unlock();
	}
	if (ours)
		report_fault(&e, path);
}
