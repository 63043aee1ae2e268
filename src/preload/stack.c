/* stack.c: a sample's stack, captured: from the walks kept, the cached walk, or libunwind.
 *
 * lk_stack_capture is the order of the attempts: a kept walk whose every word read is still there
 * (walks-kept.c) gives the stack's number at once; else the walk by the cached rules, following
 * the thread's previous walk (walk.c); at a return address without a rule, one libunwind step
 * learns it (unwind-rules.c) and the cached walk goes on; and where the rules cannot go (a signal
 * frame, a frame libunwind could not step), libunwind walks the whole stack, on a stack of its
 * own (unwind-altstack.c). The frames then go to the stack table (stack-table.c), hashed here,
 * outside lk_lock.
 *
 * The capture runs with no leek lock held, because libunwind calls dl_iterate_phdr, which takes
 * the loader's lock: a thread inside dlopen holds that lock and may be waiting for lk_lock in
 * malloc (docs/design.md, "Locks").
 *
 * Never: unwind under lk_lock; allocate through libc; leave the x87 control word changed; report
 * libleek's own frames as the program's.
 */
#include "preload.h"
#include "unwind.h"

static uintptr_t self_lo, self_hi; /* libleek's own code: frames there are not the program's */

/* unw_getcontext, keeping the x87 control word. libunwind's x86_64 getcontext saves the x87
 * environment with fnstenv, which then masks every x87 exception: a program that had unmasked
 * some (feenableexcept) lost that at a sample (tests/preload/fpenv.c). A macro, because a walk
 * must start in a frame that is still live: the context names the frame it was taken in. */
#define get_context(uc)                                                                            \
	do {                                                                                       \
		uint16_t cw_;                                                                      \
		__asm__ volatile("fnstcw %0" : "=m"(cw_));                                         \
		unw_getcontext(uc);                                                                \
		__asm__ volatile("fldcw %0" : : "m"(cw_));                                         \
	} while (0)

/* One walk from the top now, on the thread that starts leek. libunwind is bound lazily (only
 * libleek is linked -z now), and the first call through each of its PLT slots runs the dynamic
 * linker's resolver, which saves the whole vector register state on the stack. Samples run
 * libunwind on the unwinder's own stack (unwind-altstack.c), except a thread that finds that stack
 * taken, which works in place: binding the slots a walk uses here, once for the process, keeps
 * that case from binding them on a small thread stack (its cost: the start-up line of
 * bench/callgrind-real.sh). Paths no walk here takes (signal frames, code without unwind
 * information) may still bind later. The rules it learns are dropped at the first capture
 * (lk_rules_gen). */
static __attribute__((noinline)) void warm_up(void)
{
	uint64_t buf[LK_CAPTURE_FRAMES];
	unw_context_t uc;

	get_context(&uc);
	lk_rules_walk(&uc, buf, LK_CAPTURE_FRAMES);
}

int lk_stack_init(void)
{
	/* No register-state cache: libunwind guards its global one with a lock that it holds while
	 * calling dl_iterate_phdr, and a program's dl_iterate_phdr callback that allocates holds the
	 * loader lock while it waits for that one (tests/preload/dlopen.c). The per-IP trace cache
	 * behind unw_backtrace is per thread and stays on: no slower (docs/performance.md). */
	lk_object_text((const void *)(uintptr_t)lk_stack_init, &self_lo, &self_hi);
	lk_unwind_io_init((const void *)(uintptr_t)unw_init_local);
	unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_NONE); /* libunwind's pipe opens */
	warm_up();
	return 0;
}

/* What the cached walk could not do (w, from c; top is the capture's first frame): the loader
 * looked at again if that was not just done (fresh), rules learned by libunwind's steps, or
 * libunwind's whole walk. Returns the number of frames in buf. The caller counts itself in
 * loader.c (lk_loader_enter): everything here may call dl_iterate_phdr. */
static LK_COLD int capture_slow(struct cursor *c, const struct cursor *top, uint64_t *buf, int cap,
				bool fresh, enum walk w)
{
	unw_context_t uc;
	bool have_uc = false;

	if (!fresh) {
		/* New code on the stack, or libunwind's walk ahead, which may meet some: the
		 * modules first, and rules for the loader as it is now. */
		unsigned long long gen = lk_modules_refresh(false);
		*c = *top;
		w = lk_rules_current(gen) ? lk_walk_cached(c, buf, cap, true, NULL) : WALK_SLOW;
	}
	while (w == WALK_LEARN) {
		/* A frame without a rule: one libunwind step learns it, from a context that holds
		 * the frame's three registers (lk_rules_learn), and the walk goes on from the
		 * cache. */
		if (!have_uc) {
			get_context(&uc);
			have_uc = true;
		}
		struct unwind_job j = { .uc = &uc, .ip = c->ip, .sp = c->sp, .bp = c->bp };
		lk_unwind_run(&j);
		w = lk_walk_step(j.rule, c, lk_stack_top);
		c->k++;
		if (w == WALK_ON)
			w = lk_walk_cached(c, buf, cap, true, NULL);
	}
	switch (w) {
	case WALK_DONE:
	case WALK_LEARN: /* never after the loop above, nor WALK_ON */
	case WALK_ON:
		return c->k;
	case WALK_NEW: /* only from a walk that was not fresh, and walked again above */
	case WALK_MISS:
	case WALK_SLOW:
		break;
	}
	if (!have_uc)
		get_context(&uc);
	struct unwind_job j = { .uc = &uc, .buf = buf, .max = cap, .walk = true };
	lk_unwind_run(&j);
	return j.n;
}


LK_HOT uint32_t lk_stack_capture(uint64_t *buf, uint32_t max, const void *frame, uint64_t *hash,
				 const uint64_t **frames, uint32_t *known, void **ticket)
{
	struct kept_walks *kw = NULL;

	int cap = (int)(max + 8 < LK_CAPTURE_FRAMES ? max + 8 : LK_CAPTURE_FRAMES), n = 0, i = 0;
	/* The cached walk starts at the caller of the hook's frame, from that frame's saved %rbp
	 * and return address (libleek is built with frame pointers, and __builtin_frame_address
	 * gives a function one in any case): no register state to save, which cost a sample a
	 * noticeable share of its time, and none of libleek's own frames to walk
	 * (docs/performance.md). */
	const uintptr_t *fp = frame, ip0 = fp[1], sp0 = (uintptr_t)(fp + 2), bp0 = fp[0];
	const struct cursor top = { .ip = ip0, .sp = sp0, .bp = bp0 };
	/* Not a copy of top: a copy read top's words back as pairs, each pair two stores just
	 * made, which the store buffer cannot forward (perf's samples piled up there). */
	struct cursor c = { .ip = ip0, .sp = sp0, .bp = bp0 };
	enum walk w = WALK_SLOW;
	uint32_t k = 0;
	bool fresh, entered = false;

	*known = 0;
	*ticket = NULL;
	/* The loader's generation before the walk: every frame on this stack was there before
	 * this call began. A look at the loader, when one is due, and libunwind call
	 * dl_iterate_phdr, and only they are counted in loader.c (when a fork is pending, this
	 * sample goes without a stack rather than wait): the cached walk pays no atomic for it. */
	unsigned long long gen = lk_modules_gen(&fresh);
	if (fresh) {
		if (!(entered = lk_loader_enter(false)))
			goto out;
		gen = lk_modules_refresh(false);
	}
	if (lk_rules_current(gen)) {
		struct walk_key *kept = (kw = lk_kept_take()) ? lk_kept_find(kw, &top) : NULL;
		if (kept) {
			bool cut;
			if (entered)
				lk_loader_exit();
			*known = lk_kept_taken(kw, kept, &cut);
			if (cut)
				lk_stack_count_cut();
			*frames = buf;
			*hash = 0;
			return 0;
		}
		w = lk_walk_cached(&c, buf, cap, fresh, kw);
		if (kw && w != WALK_DONE) {
			lk_kept_put(kw);
			kw = NULL;
		}
	}
	if (w == WALK_DONE)
		n = c.k;
	else if (entered || (entered = lk_loader_enter(false)))
		n = capture_slow(&c, &top, buf, cap, fresh, w);
out:
	if (entered)
		lk_loader_exit();
	while (i < n && buf[i] - self_lo < self_hi - self_lo)
		i++;
	k = (uint32_t)(n - i) < max ? (uint32_t)(n - i) : max;
	*frames = buf + i; /* libleek's own frames left out */
	bool cut = i + (int)k < n || n == cap;
	if (cut)
		lk_stack_count_cut();
	if (kw) { /* this walk is kept, its stack's number learned after the interning */
		lk_kept_add(kw, &top, cut);
		*ticket = kw;
	}
	lk_stack_hash(*frames, k, hash); /* outside lk_lock, its slot on its way to the cache */
	return k;
}

void lk_stack_atfork_child(void)
{
	lk_rules_atfork_child();
	lk_unwind_atfork_child();
	lk_kept_atfork_child();
}
