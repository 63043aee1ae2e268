/* signals.c: leek's handler of the faults its own memory raises, kept in front of the program's.
 *
 * A store into the profile's window raises SIGBUS once the file is cut short under it (truncate,
 * logrotate's copytruncate; writer.c). Without a handler the program dies, so while profiling,
 * SIGBUS's kernel action is on_fault: it asks lk_writer_fault, which puts anonymous memory in the
 * window's place and lets the store complete. Any other SIGBUS is the program's, and gets what it
 * would have got without leek: the program's handler, called as the kernel would have called it
 * (its sa_mask and SA_NODEFER are the kernel action's own, SA_SIGINFO picks the arguments,
 * SA_RESETHAND is done here), or its default action, a core dump, by putting SIG_DFL back and
 * letting the fault happen again (or raising it again, if it was sent).
 *
 * To stay in front, the names through which a program sets a signal's action are interposed
 * (sigaction, signal and its aliases, sysv_signal, sigset): for SIGBUS they keep the program's
 * action here, show it back when asked, and make the kernel action on_fault with the program's
 * mask and flags. The kernel delivers a fault that is blocked as SIG_DFL, so sigprocmask and
 * pthread_sigmask never block SIGBUS: a thread that blocks every signal (the common sigwait
 * design of servers) keeps it unblocked, sees it blocked when it asks, and an asynchronous SIGBUS
 * (kill) that arrives while it believes SIGBUS blocked waits until it unblocks it.
 *
 * Not covered, as documented in docs/design.md ("Threat model"): SIGBUS blocked through another
 * signal's sa_mask while that handler allocates, temporary masks (sigsuspend, ppoll), a thread's
 * view of the mask it inherited from a thread that believed SIGBUS blocked, actions set with raw
 * system calls (Go's runtime forwards the faults it does not own to the handler it found, which is
 * this one), and the disposition an exec'd program inherits when the program ignored SIGBUS (the
 * kernel resets a handled signal to SIG_DFL at exec, an ignored one stays ignored).
 *
 * Guard mode's SIGSEGV handler (guard-fault.c) is installed once and not kept in front: FAULT_SIG
 * is the one signal handled here.
 *
 * Never: block or wait inside the handler, call anything in it that is not async-signal-safe,
 * change a signal other than SIGBUS, or change what the program reads back.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "preload.h"

#define FAULT_SIG SIGBUS

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef int (*sigmask_fn)(int, const sigset_t *, sigset_t *);
typedef __sighandler_t (*signal_fn)(int, __sighandler_t);

extern int __sigaction(int, const struct sigaction *, struct sigaction *); /* glibc's, not ours */
__sighandler_t bsd_signal(int sig, __sighandler_t h); /* declared only for XPG4.2 and older */

static struct {
	sigmask_fn sigprocmask, pthread_sigmask;
	signal_fn signal, bsd_signal, ssignal, sysv_signal, __sysv_signal, sigset;
} next;

/* The program's action for FAULT_SIG, in two slots so that the handler reads a whole one while
 * sigaction writes the other (prog_at: the one in force). */
static struct sigaction prog[2];
static int prog_at;
static bool installed; /* on_fault is the kernel action: prog holds the program's */
static int lock_word;  /* sigaction's updates of prog, taken with every signal blocked */

static __thread bool view_blocked; /* the program believes FAULT_SIG blocked on this thread */
static __thread bool held;         /* an asynchronous FAULT_SIG arrived meanwhile: raised later */

/* The next definition of name: glibc's, resolved once (dlsym may call calloc: sampler.c). */
static void *find(void **slot, const char *name)
{
	void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (!f) {
		f = dlsym(RTLD_NEXT, name);
		__atomic_store_n(slot, f, __ATOMIC_RELEASE);
	}
	return f;
}
#define NEXT(name) ((__typeof__(next.name))find((void **)&next.name, #name))

static void on_fault(int sig, siginfo_t *si, void *uc);

/* The kernel action for the program's action a: on_fault with a's mask and flags (but
 * SA_RESETHAND, which would take on_fault away). */
static void install(const struct sigaction *a)
{
	struct sigaction k = { .sa_sigaction = on_fault };

	k.sa_mask = a->sa_mask;
	if (a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN)
		k.sa_flags = a->sa_flags & (SA_ONSTACK | SA_NODEFER | SA_RESTART);
	k.sa_flags |= SA_SIGINFO;
	__sigaction(FAULT_SIG, &k, NULL);
}

static void lock(sigset_t *saved)
{
	sigset_t all;

	sigfillset(&all);
	NEXT(pthread_sigmask)(SIG_BLOCK, &all, saved);
	while (__atomic_exchange_n(&lock_word, 1, __ATOMIC_ACQUIRE))
		;
}

static void unlock(const sigset_t *saved)
{
	__atomic_store_n(&lock_word, 0, __ATOMIC_RELEASE);
	NEXT(pthread_sigmask)(SIG_SETMASK, saved, NULL);
}

/* Sets the program's action to a (if a), and gives the one before it (if old). */
static void set_prog(const struct sigaction *a, struct sigaction *old)
{
	int at = __atomic_load_n(&prog_at, __ATOMIC_RELAXED);

	if (old)
		*old = prog[at];
	if (a) {
		prog[!at] = *a;
		__atomic_store_n(&prog_at, !at, __ATOMIC_RELEASE);
		install(a);
	}
}

void lk_signals_init(void)
{
	struct sigaction cur;
	sigset_t saved;

	NEXT(pthread_sigmask);
	NEXT(sigprocmask);
	lock(&saved);
	if (!installed && __sigaction(FAULT_SIG, NULL, &cur) == 0) {
		prog[prog_at] = cur;
		install(&cur);
		installed = true;
	}
	unlock(&saved);
}

/* The program's own answer to a FAULT_SIG that is not leek's. */
static void deliver(int sig, siginfo_t *si, void *uc)
{
	struct sigaction *p = &prog[__atomic_load_n(&prog_at, __ATOMIC_ACQUIRE)];
	void (*h)(int) = p->sa_handler;
	bool sent = si->si_code <= 0; /* kill, tgkill, sigqueue: not a fault */

	if (h == SIG_IGN && sent)
		return;
	if (h == SIG_DFL || h == SIG_IGN) {
		/* Its default action (the kernel kills for an ignored fault too): the fault happens
		 * again when this returns, or the signal raised here is delivered then. */
		struct sigaction dfl = { .sa_handler = SIG_DFL };
		__sigaction(sig, &dfl, NULL);
		if (sent)
			raise(sig);
		return;
	}
	if (p->sa_flags & SA_RESETHAND) {
		struct sigaction dfl = { .sa_handler = SIG_DFL };
		set_prog(&dfl, NULL); /* in its handler: no sigaction of this thread is under way */
	}
	if (p->sa_flags & SA_SIGINFO)
		p->sa_sigaction(sig, si, uc);
	else
		h(sig);
}

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;

	if (si->si_code > 0 && lk_writer_fault(si->si_addr)) {
		errno = saved;
		return;
	}
	if (si->si_code <= 0 && view_blocked)
		held = true; /* the program believes it blocked: it comes when it is unblocked */
	else
		deliver(sig, si, uc);
	errno = saved;
}

LK_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	sigset_t saved;

	if (sig != FAULT_SIG || !__atomic_load_n(&installed, __ATOMIC_ACQUIRE))
		return __sigaction(sig, act, old);
	lock(&saved);
	set_prog(act, old);
	unlock(&saved);
	return 0;
}

/* signal() and its relatives for FAULT_SIG, as glibc builds them on sigaction. */
static __sighandler_t set_handler(__sighandler_t h, int flags, bool mask_self)
{
	struct sigaction a = { .sa_handler = h, .sa_flags = flags }, old;

	if (h == SIG_ERR) {
		errno = EINVAL;
		return SIG_ERR;
	}
	sigemptyset(&a.sa_mask);
	if (mask_self)
		sigaddset(&a.sa_mask, FAULT_SIG);
	sigaction(FAULT_SIG, &a, &old);
	return old.sa_handler;
}

static bool ours(int sig)
{
	return sig == FAULT_SIG && __atomic_load_n(&installed, __ATOMIC_ACQUIRE);
}

LK_EXPORT __sighandler_t signal(int sig, __sighandler_t h)
{
	return ours(sig) ? set_handler(h, SA_RESTART, true) : NEXT(signal)(sig, h);
}

LK_EXPORT __sighandler_t bsd_signal(int sig, __sighandler_t h)
{
	return ours(sig) ? set_handler(h, SA_RESTART, true) : NEXT(bsd_signal)(sig, h);
}

LK_EXPORT __sighandler_t ssignal(int sig, __sighandler_t h)
{
	return ours(sig) ? set_handler(h, SA_RESTART, true) : NEXT(ssignal)(sig, h);
}

LK_EXPORT __sighandler_t sysv_signal(int sig, __sighandler_t h)
{
	return ours(sig) ? set_handler(h, SA_RESETHAND | SA_NODEFER, false)
			 : NEXT(sysv_signal)(sig, h);
}

LK_EXPORT __sighandler_t __sysv_signal(int sig, __sighandler_t h)
{
	return ours(sig) ? set_handler(h, SA_RESETHAND | SA_NODEFER, false)
			 : NEXT(__sysv_signal)(sig, h);
}

static int mask(sigmask_fn real, int how, const sigset_t *set, sigset_t *old);

/* sigset(2): SIG_HOLD blocks the signal; a handler is set with an empty mask and unblocks it;
 * the answer is SIG_HOLD if it was blocked, else the action before. */
LK_EXPORT __sighandler_t sigset(int sig, __sighandler_t h)
{
	sigset_t one, before;

	if (!ours(sig))
		return NEXT(sigset)(sig, h);
	sigemptyset(&one);
	sigaddset(&one, sig);
	if (h == SIG_HOLD) {
		struct sigaction cur;
		mask(NEXT(pthread_sigmask), SIG_BLOCK, &one, &before);
		sigaction(sig, NULL, &cur);
		return sigismember(&before, sig) ? SIG_HOLD : cur.sa_handler;
	}
	__sighandler_t was = set_handler(h, 0, false);
	if (was == SIG_ERR)
		return SIG_ERR;
	mask(NEXT(pthread_sigmask), SIG_UNBLOCK, &one, &before);
	return sigismember(&before, sig) ? SIG_HOLD : was;
}

/* A mask change with FAULT_SIG left unblocked in the kernel, and blocked in the thread's view. */
static int mask(sigmask_fn real, int how, const sigset_t *set, sigset_t *old)
{
	sigset_t copy;
	bool was = view_blocked, in = false;

	if (!__atomic_load_n(&installed, __ATOMIC_ACQUIRE))
		return real(how, set, old);
	if (set) {
		copy = *set; /* old may be set itself */
		in = sigismember(&copy, FAULT_SIG) == 1;
		sigdelset(&copy, FAULT_SIG);
	}
	int r = real(how, set ? &copy : NULL, old);
	if (r != 0)
		return r;
	if (old && was)
		sigaddset(old, FAULT_SIG);
	if (set && how == SIG_SETMASK)
		view_blocked = in;
	else if (set && in)
		view_blocked = how == SIG_BLOCK;
	if (!view_blocked && held) {
		held = false;
		raise(FAULT_SIG);
	}
	return 0;
}

LK_EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	return mask(NEXT(sigprocmask), how, set, old);
}

LK_EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	return mask(NEXT(pthread_sigmask), how, set, old);
}
