/* walk.c: the cached walk, by the rules, and the previous walk it follows.
 *
 * A walk is a chain of dependent loads: a frame's rule is found by its return address, which its
 * callee's step has just read. Consecutive samples of a thread mostly share their outer frames (a
 * request loop, an interpreter) and their innermost ones (the allocator's wrappers), so each
 * thread's last walk is kept: for every frame its state (ip, %rsp, %rbp) and its rule. Two
 * shortcuts follow from it:
 *
 * - A frame whose ip is the last walk's at the same depth takes that frame's rule, with no
 *   lookup for the step to wait on.
 * - A walk that reaches a frame of the last walk (same %rsp, same ip) goes on along it for as
 *   long as the return address each step read (just below the caller's %rsp) is still there.
 *   Those loads have addresses known in advance, so they do not wait on one another. %rbp may
 *   differ (code without frame pointers keeps data in it); it matters only to a frame-pointer
 *   step, which is taken by the rules when it does, and a step that reloads it reads it again.
 *
 * A walk's frames are a function of its first frame's state, the words it reads, the rules and
 * the stack top. With the same rule table (a new one whenever rules are forgotten: unwind-rules.c)
 * and the same stack top, a step from the same state by the same rule reads the same addresses,
 * and equal words there give the same caller: the shortcut cannot change a stack
 * (tests/preload/unwind.c: twin callers, and two callers that put one frame-pointer frame at the
 * same %rsp with a different %rbp). Every word it reads lies between the meeting frame's %rsp
 * and the stack top, as the walk's own reads do.
 *
 * The last walk lives in the thread's slot of kept walks (walks-kept.c), chosen by thread id and
 * taken with a try-lock, so that a thread that exits leaves nothing behind and two threads sharing
 * a slot cost a shortcut, never a wrong frame. Thread-local storage would come out of every
 * thread's stack (glibc places static TLS there).
 *
 * Never: read a word outside [the first frame's %rsp, the thread's stack top as libunwind last
 * found it); call libunwind, take a lock or allocate (the walk runs with no lock held, inside
 * malloc); write anything but the spare walk of the slot it was given.
 */
#include "preload.h"
#include "unwind.h"

static const struct walk_frame no_walk = { .sp = UINTPTR_MAX }; /* a walk of no frames */

/* The cached walk from c, up to max frames: WALK_DONE with c->k frames in buf, or what to do
 * instead. At a frame without a rule it stops there: WALK_LEARN if the generation the rules were
 * checked against is a fresh one, so that the caller takes one libunwind step and goes on from
 * the cache; otherwise WALK_NEW, and the caller looks at the loader first (a return address never
 * seen may be in a library loaded since). With kw (the thread's kept walks, taken), it follows the
 * last walk where it meets it, and a walk that gets to its end is the one to follow next. */
LK_HOT enum walk lk_walk_cached(struct cursor *c, uint64_t *buf, int max, bool fresh,
				struct kept_walks *kw)
{
	const struct rules *t = __atomic_load_n(&lk_rules, __ATOMIC_ACQUIRE);
	struct cursor at = *c; /* locals, which buf's stores cannot alias */
	uintptr_t hi = lk_stack_top;
	enum walk w = WALK_DONE;

	if (!t || (at.k == 0 && at.sp >= hi)) /* a thread not walked yet, or a stack elsewhere */
		return WALK_MISS;
	const uint64_t *words = (const uint64_t *)t->slot, mask2 = t->mask << 1;
	const struct walk_frame *old = &no_walk;
	struct walk_frame *rec = NULL;
	uint32_t m = 0, j = 0;
	int nrec = 0;
	bool ended = false;
	if (kw) { /* this thread's, with the same rules, on the same stack */
		const struct kept_walk *lw = &kw->w[kw->last];
		m = lw->tid == lk_tls.tid && lw->t == t && lw->hi == hi ? lw->n : 0;
		old = m ? lw->f : &no_walk;
		rec = kw->w[kw->spare].f;
		nrec = KEPT_FRAMES;
	}
	for (; at.k < max; at.k++) {
		while (old[j].sp < at.sp) /* the %rsp of a walk's frames only grows, to its end's */
			j++;
		if (old[j].sp == at.sp && old[j].ip == at.ip) {
			/* The last walk was at this frame: its callers are this walk's for as long
			 * as the return addresses its steps read are still there, up to its last
			 * frame or this walk's max. %rbp may differ (code without frame pointers
			 * keeps data in it): it matters only to a frame-pointer step, which is
			 * taken by the rules when it does, and a step that reloads it reads it. */
			uint32_t last = m - 1;
			if (last - j > (uint32_t)(max - 1 - at.k))
				last = j + (uint32_t)(max - 1 - at.k);
			const struct walk_frame *f = old + j;
			for (;; f++, at.k++) {
				buf[at.k] = f->ip;
				if (at.k < nrec) {
					rec[at.k] = *f;
					rec[at.k].bp = at.bp;
				}
				if (f == old + last)
					break;
				uint64_t r = f->rule;
				uintptr_t csp = f[1].sp; /* the caller's %rsp, this step's CFA */
				if (((const uintptr_t *)csp)[-1] != f[1].ip)
					break; /* a different caller from here: step by the rules */
				if (RULE_KIND(r) == RULE_FP) {
					if (at.bp != f->bp)
						break; /* this step goes by this walk's %rbp */
					at.bp = *(const uintptr_t *)at.bp;
				} else if (RULE_RBP(r)) {
					at.bp = *(const uintptr_t *)(csp - RULE_RBP(r));
				}
			}
			j = (uint32_t)(f - old);
			at.ip = f->ip;
			at.sp = f->sp;
			if (j == last && (j + 1 < m || kw->w[kw->last].whole)) { /* max, or the end */
				ended = j + 1 == m;
				at.k++;
				break;
			}
		}
		/* The same address as the last walk's frame at this depth (the allocator's own
		 * wrappers, nearly always): its rule, without a lookup that the step must wait for. */
		uint64_t r = (uint32_t)at.k < m && old[at.k].ip == at.ip
				     ? old[at.k].rule
				     : lk_rule_find(words, mask2, at.ip);
		buf[at.k] = at.ip;
		if (at.k < nrec)
			rec[at.k] = (struct walk_frame){ .ip = at.ip, .sp = at.sp, .bp = at.bp,
							 .rule = r };
		w = lk_walk_step(r, &at, hi); /* no rule (0) gets WALK_SLOW: below */
		if (lk_unlikely(w != WALK_ON)) {
			if (!r) {
				w = fresh ? WALK_LEARN : WALK_NEW; /* at this frame, which stays */
			} else {
				ended = w == WALK_DONE;
				at.k++;
			}
			break;
		}
	}
	if (w == WALK_ON) /* max frames */
		w = WALK_DONE;
	if (kw && w == WALK_DONE) { /* the walk to follow next (kept_add) */
		struct kept_walk *nw = &kw->w[kw->spare];
		nw->n = at.k < KEPT_FRAMES ? (uint32_t)at.k : KEPT_FRAMES;
		nw->f[nw->n].sp = UINTPTR_MAX;
		nw->whole = ended && at.k <= KEPT_FRAMES;
		nw->tid = lk_tls.tid;
		nw->hi = hi;
		nw->t = t;
	}
	*c = at;
	return w;
}
