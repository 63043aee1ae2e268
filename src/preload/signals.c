/* signals.c: leek's handlers of the faults its own memory raises, kept in front of the program's.
 *
 * Two signals are kept, each only when leek has memory that raises it:
 * - SIGBUS, while profiling. A store into the profile's window raises it once the file is cut short
 *   under it (truncate, logrotate's copytruncate; writer.c): lk_writer_fault puts anonymous memory
 *   in the window's place and the store completes.
 * - SIGSEGV, in guard mode only (LEEK_GUARD; without it SIGSEGV is never touched): a fault in the
 *   guard run is an overflow, underflow or use after free (guard.c); lk_guard_fault records and
 *   reports it, and then the program gets it as it would have got the fault (record, then chain:
 *   the program crashes as it would have, through its own handler if it has one).
 * Any other fault, and every sent signal, is the program's, and gets what it would have got
 * without leek: the program's handler, called as the kernel would have called it (its sa_mask and
 * SA_NODEFER are the kernel action's own, SA_SIGINFO picks the arguments, the siginfo and
 * ucontext are the kernel's, untouched, SA_RESETHAND is done here), or its default action, a core
 * dump, by putting SIG_DFL back and letting the fault happen again (or raising it again, if it was
 * sent). The path to the program's handler is a few loads and a call, for the JVM, whose null
 * checks and safepoint polls are SIGSEGVs.
 *
 * To stay in front, the names through which a program sets a signal's action are interposed
 * (sigaction, signal and its aliases, sysv_signal, sigset): for a kept signal they keep the
 * program's action here, show it back when asked, and make the kernel action on_fault with the
 * program's mask and flags. The kernel delivers a fault that is blocked as SIG_DFL, so sigprocmask
 * and pthread_sigmask never block a kept signal: a thread that blocks every signal (the common
 * sigwait design of servers) keeps it unblocked, sees it blocked when it asks, and an asynchronous
 * one (kill) that arrives while it believes the signal blocked waits until it unblocks it. Nor
 * does another signal's handler: sigaction of any signal takes the kept signals out of the
 * sa_mask the kernel gets, and puts them back in the one it shows (a handler whose sa_mask is
 * every signal, which faults on a guarded page, is still reported).
 *
 * Not covered, as documented in docs/design.md ("Threat model"): the mask a thread reads inside
 * such a handler (without the kept signal the handler's sa_mask held), the sa_mask of an action
 * set before leek keeps the signal, temporary masks (sigsuspend, ppoll), a
 * thread's view of the mask it inherited from a thread that believed the signal blocked, actions
 * set with raw system calls (Go's runtime: it replaces on_fault and forwards the faults that are
 * not in Go code, C code's, to the handler it found, which is on_fault; a fault in Go code it
 * handles itself, unseen by leek), and the disposition an exec'd program inherits when the
 * program ignored the signal (the kernel resets a handled signal to SIG_DFL at exec, an ignored
 * one stays ignored).
 *
 * Never: block or wait inside the handler, call anything in it that is not async-signal-safe
 * (lk_guard_fault is leek's own, written for it), change a signal that is not kept, keep SIGSEGV
 * outside guard mode, or change what the program reads back.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "preload.h"

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef int (*sigmask_fn)(int, const sigset_t *, sigset_t *);
typedef __sighandler_t (*signal_fn)(int, __sighandler_t);

extern int __sigaction(int, const struct sigaction *, struct sigaction *); /* glibc's, not ours */
__sighandler_t bsd_signal(int sig, __sighandler_t h); /* declared only for XPG4.2 and older */

static struct {
	sigmask_fn sigprocmask, pthread_sigmask;
	signal_fn signal, bsd_signal, ssignal, sysv_signal, __sysv_signal, sigset;
} next;

/* The kept signals: K_BUS while profiling, K_SEGV in guard mode. */
enum { K_BUS, K_SEGV, K_N };
static const int kept_sig[K_N] = { SIGBUS, SIGSEGV };

/* The program's action for each kept signal, in two slots so that the handler reads a whole one
 * while sigaction writes the other (prog_at: the one in force). */
static struct sigaction prog[K_N][2];
static int prog_at[K_N];
static bool installed[K_N]; /* on_fault is the kernel action: prog holds the program's */
static bool any_installed;  /* installed[K_BUS] || installed[K_SEGV]: the mask's one test */
static uint8_t masked[NSIG]; /* bit k: the program's sa_mask for that signal holds kept_sig[k],
			      * which the kernel action's does not (lock held to change) */
static int lock_word;       /* sigaction's updates of prog, taken with every signal blocked */

static __thread uint8_t view_blocked; /* bit k: the program believes kept_sig[k] blocked here */
static __thread uint8_t held; /* bit k: an asynchronous kept_sig[k] arrived meanwhile: later */

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

/* sig's index if leek keeps it now, else -1. */
static int kept(int sig)
{
	int k = sig == SIGBUS ? K_BUS : sig == SIGSEGV ? K_SEGV : -1;

	return k >= 0 && __atomic_load_n(&installed[k], __ATOMIC_ACQUIRE) ? k : -1;
}

static void on_fault(int sig, siginfo_t *si, void *uc);

/* The kernel action for the program's action a of kept signal k: on_fault with a's mask and
 * flags (but SA_RESETHAND, which would take on_fault away). */
static void install(int k, const struct sigaction *a)
{
	struct sigaction act = { .sa_sigaction = on_fault };

	act.sa_mask = a->sa_mask;
	if (a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN)
		act.sa_flags = a->sa_flags & (SA_ONSTACK | SA_NODEFER | SA_RESTART);
	act.sa_flags |= SA_SIGINFO;
	__sigaction(kept_sig[k], &act, NULL);
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

/* Sets the program's action for kept signal k to a (if a), and gives the one before it (if
 * old). */
static void set_prog(int k, const struct sigaction *a, struct sigaction *old)
{
	int at = __atomic_load_n(&prog_at[k], __ATOMIC_RELAXED);

	if (old)
		*old = prog[k][at];
	if (a) {
		prog[k][!at] = *a;
		__atomic_store_n(&prog_at[k], !at, __ATOMIC_RELEASE);
		install(k, a);
	}
}

/* Keeps kept_sig[k] from now on: the action in force becomes the program's. lock held. */
static void keep(int k)
{
	struct sigaction cur;

	if (installed[k] || __sigaction(kept_sig[k], NULL, &cur) != 0)
		return;
	prog[k][prog_at[k]] = cur;
	install(k, &cur);
	__atomic_store_n(&installed[k], true, __ATOMIC_RELEASE);
	__atomic_store_n(&any_installed, true, __ATOMIC_RELEASE);
}

void lk_signals_init(void)
{
	sigset_t saved;

	NEXT(pthread_sigmask);
	NEXT(sigprocmask);
	lock(&saved);
	keep(K_BUS);
	if (__atomic_load_n(&lk_guard.span, __ATOMIC_ACQUIRE))
		keep(K_SEGV);
	unlock(&saved);
}

/* The program's own answer to kept signal k: its handler, or its default action. */
static void deliver(int k, int sig, siginfo_t *si, void *uc)
{
	struct sigaction *p = &prog[k][__atomic_load_n(&prog_at[k], __ATOMIC_ACQUIRE)];
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
		set_prog(k, &dfl, NULL); /* in its handler: no sigaction of this thread is under way */
	}
	if (p->sa_flags & SA_SIGINFO)
		p->sa_sigaction(sig, si, uc);
	else
		h(sig);
}

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	int saved = errno, k = sig == SIGSEGV ? K_SEGV : K_BUS;

	if (si->si_code > 0) {
		if (k == K_BUS && lk_writer_fault(si->si_addr)) {
			errno = saved;
			return;
		}
		/* Recorded and reported, then the program's answer below, as for its own faults. The
		 * test is inline, so that the program's faults (a JVM's) pay two loads for it. */
		if (k == K_SEGV && lk_guard_owns(si->si_addr))
			lk_guard_fault(si->si_addr, uc);
	}
	if (si->si_code <= 0 && (view_blocked & 1u << k))
		held |= 1u << k; /* the program believes it blocked: it comes when it is unblocked */
	else
		deliver(k, sig, si, uc);
	errno = saved;
}

/* sigaction of a signal that is not kept, once one is: the kept signals out of the sa_mask the
 * kernel gets, and back in the one shown. */
static int other_action(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct sigaction copy;
	sigset_t saved;
	uint8_t in = 0;

	if (sig <= 0 || sig >= NSIG)
		return __sigaction(sig, act, old); /* its EINVAL */
	if (act) {
		copy = *act;
		for (int k = 0; k < K_N; k++)
			if (__atomic_load_n(&installed[k], __ATOMIC_ACQUIRE) &&
			    sigismember(&copy.sa_mask, kept_sig[k]) == 1) {
				in |= 1u << k;
				sigdelset(&copy.sa_mask, kept_sig[k]);
			}
	}
	lock(&saved);
	uint8_t was = masked[sig];
	int r = __sigaction(sig, act ? &copy : NULL, old);
	if (r == 0) {
		for (int k = 0; k < K_N; k++)
			if (old && (was & 1u << k))
				sigaddset(&old->sa_mask, kept_sig[k]);
		if (act)
			masked[sig] = in;
	}
	unlock(&saved);
	return r;
}

LK_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	sigset_t saved;
	int k = kept(sig);

	if (k < 0)
		return __atomic_load_n(&any_installed, __ATOMIC_ACQUIRE)
			       ? other_action(sig, act, old)
			       : __sigaction(sig, act, old);
	lock(&saved);
	set_prog(k, act, old);
	unlock(&saved);
	return 0;
}

/* signal() and its relatives for a kept signal, as glibc builds them on sigaction. */
static __sighandler_t set_handler(int sig, __sighandler_t h, int flags, bool mask_self)
{
	struct sigaction a = { .sa_handler = h, .sa_flags = flags }, old;

	if (h == SIG_ERR) {
		errno = EINVAL;
		return SIG_ERR;
	}
	sigemptyset(&a.sa_mask);
	if (mask_self)
		sigaddset(&a.sa_mask, sig);
	sigaction(sig, &a, &old);
	return old.sa_handler;
}

LK_EXPORT __sighandler_t signal(int sig, __sighandler_t h)
{
	return kept(sig) >= 0 ? set_handler(sig, h, SA_RESTART, true) : NEXT(signal)(sig, h);
}

LK_EXPORT __sighandler_t bsd_signal(int sig, __sighandler_t h)
{
	return kept(sig) >= 0 ? set_handler(sig, h, SA_RESTART, true) : NEXT(bsd_signal)(sig, h);
}

LK_EXPORT __sighandler_t ssignal(int sig, __sighandler_t h)
{
	return kept(sig) >= 0 ? set_handler(sig, h, SA_RESTART, true) : NEXT(ssignal)(sig, h);
}

LK_EXPORT __sighandler_t sysv_signal(int sig, __sighandler_t h)
{
	return kept(sig) >= 0 ? set_handler(sig, h, SA_RESETHAND | SA_NODEFER, false)
			      : NEXT(sysv_signal)(sig, h);
}

LK_EXPORT __sighandler_t __sysv_signal(int sig, __sighandler_t h)
{
	return kept(sig) >= 0 ? set_handler(sig, h, SA_RESETHAND | SA_NODEFER, false)
			      : NEXT(__sysv_signal)(sig, h);
}

static int mask(sigmask_fn real, int how, const sigset_t *set, sigset_t *old);

/* sigset(2): SIG_HOLD blocks the signal; a handler is set with an empty mask and unblocks it;
 * the answer is SIG_HOLD if it was blocked, else the action before. */
LK_EXPORT __sighandler_t sigset(int sig, __sighandler_t h)
{
	sigset_t one, before;

	if (kept(sig) < 0)
		return NEXT(sigset)(sig, h);
	sigemptyset(&one);
	sigaddset(&one, sig);
	if (h == SIG_HOLD) {
		struct sigaction cur;
		mask(NEXT(pthread_sigmask), SIG_BLOCK, &one, &before);
		sigaction(sig, NULL, &cur);
		return sigismember(&before, sig) ? SIG_HOLD : cur.sa_handler;
	}
	__sighandler_t was = set_handler(sig, h, 0, false);
	if (was == SIG_ERR)
		return SIG_ERR;
	mask(NEXT(pthread_sigmask), SIG_UNBLOCK, &one, &before);
	return sigismember(&before, sig) ? SIG_HOLD : was;
}

/* A mask change with the kept signals left unblocked in the kernel, and blocked in the thread's
 * view. */
static int mask(sigmask_fn real, int how, const sigset_t *set, sigset_t *old)
{
	sigset_t copy;
	uint8_t was = view_blocked, in = 0, touched = 0;

	if (!__atomic_load_n(&any_installed, __ATOMIC_ACQUIRE))
		return real(how, set, old);
	if (set) {
		copy = *set; /* old may be set itself */
		for (int k = 0; k < K_N; k++) {
			if (!__atomic_load_n(&installed[k], __ATOMIC_ACQUIRE))
				continue;
			touched |= 1u << k;
			if (sigismember(&copy, kept_sig[k]) == 1)
				in |= 1u << k;
			sigdelset(&copy, kept_sig[k]);
		}
	}
	int r = real(how, set ? &copy : NULL, old);
	if (r != 0)
		return r;
	for (int k = 0; k < K_N; k++)
		if (old && (was & 1u << k))
			sigaddset(old, kept_sig[k]);
	if (set && how == SIG_SETMASK)
		view_blocked = (uint8_t)((view_blocked & ~touched) | in);
	else if (set && how == SIG_BLOCK)
		view_blocked |= in;
	else if (set && how == SIG_UNBLOCK)
		view_blocked &= (uint8_t)~in;
	for (int k = 0; k < K_N; k++)
		if ((held & 1u << k) && !(view_blocked & 1u << k)) {
			held &= (uint8_t)~(1u << k);
			raise(kept_sig[k]);
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
