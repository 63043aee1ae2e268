/* guard-fault.c: guard mode's start-up and its SIGSEGV handler (the slots: guard.c).
 *
 * A fault in the guard run is leek's: on_segv writes an ERROR record (overflow, underflow, or a
 * use after free, read or write from the page-fault error code), prints the report, and lets the
 * program crash as it would have: the handler that was in place when leek installed its own, or
 * the default action. Any other SIGSEGV goes to that handler untouched. The handler is installed
 * once, at start-up, only in guard mode; a program that installs its own SIGSEGV handler later
 * replaces it, and then guarded faults reach the program's handler as faults it did not expect
 * (they are lost to leek, and never reported as something else) (docs/design.md, "Guard mode").
 *
 * Never: allocate; take lk_lock in the handler when this thread holds it (in_slow); call in the
 * handler anything but async-signal-safe code and leek's own (the unwinder, as the sampler runs it
 * under a signal handler's malloc); change SIGSEGV's action outside guard mode.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#include "preload.h"
#include "record.h"

extern int __sigaction(int, const struct sigaction *, struct sigaction *); /* glibc's, not ours */

static struct sigaction prev_segv; /* the action in place when on_segv was installed */

static void on_segv(int sig, siginfo_t *si, void *uc);

void lk_guard_init(void)
{
	if (!lk_cfg.guard)
		return;
	int saved = errno;
	lk_lock();
	bool ok = lk_guard_setup((uint32_t)lk_cfg.guard, lk_cfg.guard_left);
	lk_unlock();
	if (!ok) {
		lk_log("cannot reserve the pages of LEEK_GUARD; guard mode is off");
		errno = saved;
		return;
	}
	struct sigaction sa = { .sa_sigaction = on_segv,
				.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER };
	sigemptyset(&sa.sa_mask);
	__sigaction(SIGSEGV, &sa, &prev_segv);
	errno = saved;
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

static void report_fault(const struct lk_error_info *e)
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
	put(buf, &n, cap, "leek:   stacks (the access, the allocation");
	put(buf, &n, cap, e->free_stack ? ", the free" : "");
	put(buf, &n, cap, ") are in the profile: leek report errors PROFILE\n");
	for (size_t off = 0; off < n;) {
		ssize_t k = write(STDERR_FILENO, buf + off, n - off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		off += (size_t)k;
	}
}

/* The program's answer to the fault: the action found at start-up, called as the kernel would,
 * or the default action by putting SIG_DFL back and letting the fault happen again. */
static void chain(int sig, siginfo_t *si, void *uc)
{
	const struct sigaction *p = &prev_segv;

	if (p->sa_handler == SIG_DFL || p->sa_handler == SIG_IGN) {
		struct sigaction dfl = { .sa_handler = SIG_DFL };
		__sigaction(sig, &dfl, NULL);
		if (si->si_code <= 0)
			raise(sig);
		return;
	}
	if (p->sa_flags & SA_SIGINFO)
		p->sa_sigaction(sig, si, uc);
	else
		p->sa_handler(sig);
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

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	uintptr_t a = (uintptr_t)si->si_addr;
	struct lk_thread *t = &lk_tls;
	struct lk_error_info e = { .addr = a };
	uint32_t stack = 0, free_stack = 0, at = 0;
	uint64_t id = 0;

	if (si->si_code <= 0 || a - lk_guard.base >= lk_guard.span) {
		chain(sig, si, uc);
		errno = saved;
		return;
	}
#if defined(__x86_64__)
	const ucontext_t *u = uc;
	uint64_t err = (uint64_t)u->uc_mcontext.gregs[REG_ERR];
	bool known = true, write = err & 2; /* the page-fault error code: bit 1, a write */
#else
	bool known = false, write = false;
#endif
	e.tid = t->tid ? t->tid : (uint64_t)gettid();
	/* The slots change under lk_lock; a thread that holds it (in_slow) faulted inside leek,
	 * where the state may be half-changed: reported without the record. */
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
		lk_unlock();
		lk_stack_learned(ticket, at);
		t->bytes_left = left;
		t->in_slow = 0;
	} else if (locked) {
		lk_unlock();
	}
	if (ours)
		report_fault(&e);
	chain(sig, si, uc);
	errno = saved;
}
