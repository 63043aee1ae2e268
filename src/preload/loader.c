/* loader.c: keeps fork from copying the dynamic loader's lock while somebody holds it.
 *
 * dl_iterate_phdr takes the loader's write lock. glibc (2.36) does not reset that lock in the child
 * of fork, so if any thread of the parent is inside dl_iterate_phdr at the moment of the fork, the
 * child can never call it again, and leek calls it at samples (libunwind, its look at the
 * loader): the child's first such sample would hang where the program alone would not. So every
 * dl_iterate_phdr in the process, leek's own and the program's (this file exports the name and
 * forwards it), is counted in `in_loader`, and fork's prepare handler raises `forking` and waits
 * until the count is down to the forking thread's own calls.
 *
 * Nobody waits without bound: a thread that finds a fork pending waits for it a little (a fork
 * takes well under a millisecond), then goes on. It must, because it may be a thread that already
 * holds the loader lock (inside a program's dl_iterate_phdr callback) and that the fork is waiting
 * for. leek's sample then goes without a stack (counted as unwind_failed); the program's call
 * proceeds as it would have without leek.
 *
 * Not covered: dlopen and dlclose also hold that lock for a moment. dlopen is not interposed,
 * because it finds libraries through its caller's RUNPATH, and a wrapper would become the caller.
 * dlclose is, only to tell modules.c that the next sample must look at the loader (an unloaded
 * library may leave its addresses to another): the lock it holds is not counted here, because
 * the destructors it runs may wait on other threads for as long as they like.
 *
 * Never: keep a thread that enters the loader waiting for a fork without bound (it may hold the
 * loader lock that the fork is waiting for); change what the program's dl_iterate_phdr or dlclose
 * returns.
 */
#include <dlfcn.h>
#include <link.h>
#include <sched.h>

#include "preload.h"

static int in_loader, forking;
static __thread int mine; /* this thread's share of in_loader */
static int (*real_iterate)(int (*)(struct dl_phdr_info *, size_t, void *), void *);

bool lk_loader_enter(bool insist)
{
	for (int tries = 0; tries < 2000; tries++) {
		__atomic_fetch_add(&in_loader, 1, __ATOMIC_SEQ_CST);
		if (!__atomic_load_n(&forking, __ATOMIC_SEQ_CST)) {
			mine++;
			return true;
		}
		__atomic_fetch_sub(&in_loader, 1, __ATOMIC_RELEASE);
		sched_yield();
	}
	if (!insist)
		return false;
	__atomic_fetch_add(&in_loader, 1, __ATOMIC_SEQ_CST);
	mine++;
	return true;
}

void lk_loader_exit(void)
{
	mine--;
	__atomic_fetch_sub(&in_loader, 1, __ATOMIC_RELEASE);
}

void lk_loader_atfork(int phase)
{
	if (phase == LK_FORK_PREPARE) {
		__atomic_store_n(&forking, 1, __ATOMIC_SEQ_CST);
		while (__atomic_load_n(&in_loader, __ATOMIC_SEQ_CST) > mine)
			sched_yield();
	} else if (phase == LK_FORK_PARENT) {
		__atomic_store_n(&forking, 0, __ATOMIC_SEQ_CST);
	} else {
		in_loader = mine;
		forking = 0;
	}
}

LK_EXPORT int dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data)
{
	if (!real_iterate)
		*(void **)&real_iterate = dlsym(RTLD_NEXT, "dl_iterate_phdr");
	lk_loader_enter(true);
	int r = real_iterate(cb, data);
	lk_loader_exit();
	return r;
}

LK_EXPORT int dlclose(void *handle)
{
	static int (*real_dlclose)(void *);

	if (!real_dlclose)
		*(void **)&real_dlclose = dlsym(RTLD_NEXT, "dlclose");
	int r = real_dlclose(handle);
	lk_modules_moved();
	return r;
}
