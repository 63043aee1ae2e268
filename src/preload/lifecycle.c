/* lifecycle.c: the process's life as leek follows it: start, fork, exit.
 *
 * The first call into leek (the constructor, or an allocation before it: a preloaded library's
 * own constructor, dlsym's calloc) starts it, once per process (lk_init): the LEEK_* variables,
 * the arena, the real allocator, the clock, the unwinder, the profile's file and its SIGBUS
 * handler. A thread that allocates while another is starting leek waits for it; the starting
 * thread's own allocations (dlsym's calloc) come from the arena's boot area (sampler.c).
 *
 * fork's handlers keep every lock of leek's out of the child's way: the prepare handler takes them
 * (the loader's count, the modules' mutex, lk_lock, guard mode's glock), the parent gives them
 * back, and the child starts them fresh, with a file of its own at its next event (writer-open.c),
 * a sampling stream of its own (sampler.c) and the guarded slots that other threads were opening
 * or closing put away (guard.c). At a clean exit the destructor writes the trailer; _exit and
 * _Exit, which skip destructors, write it first. LEEK_INHERIT=0 takes libleek out of LD_PRELOAD,
 * so that the programs it execs run unprofiled.
 *
 * Never: allocate through libc, change errno, fail the program's start (a leek that cannot run
 * says so in one line and forwards everything), or touch the parent's file from a vfork child,
 * which shares its memory (lk_writer_owned).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload.h"

int lk_init_state;
__thread uint8_t lk_booting;

/* LEEK_INHERIT=0: cut libleek out of LD_PRELOAD in place, so exec'd children run unprofiled.
 * (setenv would allocate.) */
static void scrub_ld_preload(void)
{
	extern char **environ;

	for (char **e = environ; e && *e; e++) {
		if (strncmp(*e, "LD_PRELOAD=", 11))
			continue;
		char *s = *e + 11, *w = s;
		bool first = true;
		while (*s) {
			s += strspn(s, ": ");
			size_t n = strcspn(s, ": ");
			if (n && !memmem(s, n, "libleek", 7)) {
				if (!first)
					*w++ = ':';
				memmove(w, s, n);
				w += n;
				first = false;
			}
			s += n;
		}
		*w = 0;
	}
}

static void atfork_prepare(void)
{
	lk_sampler_atfork(LK_FORK_PREPARE);
	lk_loader_atfork(LK_FORK_PREPARE);
	lk_modules_atfork(LK_FORK_PREPARE);
	lk_lock_atfork(LK_FORK_PREPARE);
	lk_guard_atfork(LK_FORK_PREPARE);
}

static void atfork_parent(void)
{
	lk_guard_atfork(LK_FORK_PARENT);
	lk_lock_atfork(LK_FORK_PARENT);
	lk_modules_atfork(LK_FORK_PARENT);
	lk_loader_atfork(LK_FORK_PARENT);
	lk_sampler_atfork(LK_FORK_PARENT);
}

static void atfork_child(void)
{
	lk_lock_atfork(LK_FORK_CHILD);
	lk_guard_atfork(LK_FORK_CHILD);
	lk_modules_atfork(LK_FORK_CHILD);
	lk_stack_atfork_child();
	lk_loader_atfork(LK_FORK_CHILD);
	lk_writer_atfork_child();
	lk_sampler_atfork(LK_FORK_CHILD);
}

/* One line when an address-space limit made the arena smaller than LEEK_ARENA_SIZE. */
static void say_arena_limit(void)
{
	struct lk_arena_stats st;
	struct lk_line l = LK_LINE_INIT;

	lk_arena_get_stats(&st);
	if (!st.as_limit || st.first_reserved >= lk_cfg.arena_size)
		return;
	lk_line_str(&l, "an address-space limit of ");
	lk_line_u64(&l, st.as_limit >> 20);
	lk_line_str(&l, " MiB (ulimit -v): the arena of sampled blocks reserves ");
	lk_line_u64(&l, st.first_reserved >> 20);
	lk_line_str(&l, " MiB of it, and more only as they need");
	lk_line_print(&l);
}

static void init_process(void)
{
	lk_config_load();
	/* Not profiling (a secure program, or no profile can be written as asked): the arena's boot
	 * area alone, for dlsym's calloc below, and the real allocator. */
	bool profile = !lk_cfg.secure && !lk_cfg.off;
	int r = lk_arena_init(profile ? lk_cfg.arena_size : 0, lk_cfg.arena_retain,
			      lk_cfg.period > 1);
	if (lk_real_init() < 0) {
		lk_log("cannot find the real malloc (dlsym failed); leek cannot run");
		_exit(127);
	}
	if (!profile)
		return;
	if (r < 0) {
		lk_log("cannot reserve address space for the arena; running unprofiled");
		return;
	}
	say_arena_limit();
	lk_clock_init();
	lk_lock_init();
	lk_sampler_seed();
	if (!lk_cfg.inherit)
		scrub_ld_preload();
	lk_stack_init();
	lk_guard_init();
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	if (lk_sampler_start()) {
		lk_signals_init();
		lk_modules_refresh(true);
	}
}

void lk_init(void)
{
	int expected = LK_INIT_NONE;

	if (lk_init_done())
		return;
	if (__atomic_compare_exchange_n(&lk_init_state, &expected, LK_INIT_RUNNING, false,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		int saved = errno;
		lk_booting = 1;
		lk_tls.in_slow = 1;
		lk_tls.bytes_left = UINT64_MAX;
		init_process();
		lk_tls.in_slow = 0;
		lk_tls.bytes_left = 0;
		lk_booting = 0;
		__atomic_store_n(&lk_init_state, LK_INIT_DONE, __ATOMIC_RELEASE);
		errno = saved;
		return;
	}
	if (lk_booting)
		return;
	while (!lk_init_done())
		sched_yield();
}

/* At a clean exit: the trailer. Destructors of libraries loaded after us run before this one. */
__attribute__((destructor)) static void lk_fini(void)
{
	if (!lk_init_done() || lk_tls.in_slow)
		return; /* in_slow: _exit from a handler that interrupted us, lk_lock may be ours */
	int saved = errno;
	uint64_t left = lk_tls.bytes_left;
	lk_tls.bytes_left = UINT64_MAX;
	lk_tls.in_slow = 1;
	lk_sampler_stop();
	lk_tls.in_slow = 0;
	lk_tls.bytes_left = left;
	errno = saved;
}

/* Initialise at load time too, so that a program that never allocates still gets a profile
 * with its header and modules. */
__attribute__((constructor)) static void lk_ctor(void)
{
	lk_init();
	/* Again: a first malloc from .preinit_array found environ still unset (config.c). */
	if (lk_init_done() && !lk_cfg.inherit)
		scrub_ld_preload();
}

/* _exit skips destructors, and shells and forked workers leave through it: write the trailer
 * first. A vfork child shares our memory and must not touch the parent's file: it has another
 * pid. exit_group is what glibc's _exit does. */
LK_EXPORT void _exit(int status)
{
	if (lk_writer_owned())
		lk_fini();
	for (;;)
		syscall(SYS_exit_group, status);
}

LK_EXPORT void _Exit(int status)
{
	_exit(status);
}
