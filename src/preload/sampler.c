/* sampler.c: decides which allocations are sampled, and takes the samples.
 *
 * Each thread counts down the bytes left until its next sample (lk_tls.bytes_left). The distance
 * is drawn from an exponential distribution with mean LEEK_PERIOD, so every byte has the same
 * chance of being sampled and an allocation of s bytes is sampled with probability
 * 1 - exp(-s/T) (docs/sampling.md). The countdown starts at 0, so a thread's first allocation
 * comes here, and that is where the thread (and, the first time, the process: lifecycle.c) is
 * initialised.
 * While a thread is in here its countdown is UINT64_MAX: whatever allocates underneath us
 * (libunwind, dlsym, a signal handler) goes straight to the real allocator, unsampled.
 *
 * Never: allocate through libc, leave errno or the floating-point environment changed, hold lk_lock
 * while unwinding or while calling into the dynamic linker, or fail an allocation that the real
 * allocator would have served.
 */
#include <errno.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "preload.h"
#include "probes.h"
#include "record.h"
#include "rng.h"

__thread struct lk_thread lk_tls __attribute__((tls_model("initial-exec")));

static bool enabled;             /* a profile is being written */
static bool on = true;           /* not switched off (LEEK_START=off, `leek ctl PID off`) */
static bool running;             /* enabled and on: the one flag a sample's gate reads */
static uint64_t seed, thread_seq, forks;
static struct lk_block *deferred; /* frees that arrived while their thread held lk_lock */

_Static_assert(sizeof(((struct lk_thread *)0)->rng) == sizeof(struct lk_rng), "rng state");

static uint64_t next_interval(struct lk_thread *t)
{
	if (lk_cfg.period <= 1)
		return 0; /* exact mode: every call takes the slow path, even malloc(0) */
	/* lk_rng_interval leaves the MXCSR alone: its common case is integer only, and its rare
	 * floating-point path (about 2% of draws) saves and restores it (rng.h, tests/preload/fpenv.c). */
	return lk_rng_interval((struct lk_rng *)t->rng, lk_cfg.period);
}

static void thread_init(struct lk_thread *t)
{
	uint64_t stream = __atomic_fetch_add(&thread_seq, 1, __ATOMIC_RELAXED);

	t->tid = (uint32_t)gettid();
	t->errno_at = &errno;
	lk_rng_seed((struct lk_rng *)t->rng, seed, stream);
	t->state = !enabled ? LK_T_OFF : running ? LK_T_ACTIVE : LK_T_DORMANT;
	t->bytes_left = t->state == LK_T_ACTIVE    ? next_interval(t)
			: t->state == LK_T_DORMANT ? lk_rng_interval((struct lk_rng *)t->rng,
								     lk_cfg.dormant_period)
						   : UINT64_MAX;
}

/* A dormant thread's look, when its countdown of LEEK_DORMANT_PERIOD runs out, or an active
 * thread's first sample after the process was switched off: the RSS record if one is due, and
 * with it `leek ctl`'s command (writer-control.c); then the thread follows the process, on or
 * off. This allocation is not sampled either way. */
static LK_COLD LK_NOINLINE void dormant(struct lk_thread *t)
{
	int *err = t->errno_at, saved = *err; /* an initialised thread's: thread_init */
	uint64_t now = lk_now_ns();

	t->in_slow = 1;
	t->bytes_left = UINT64_MAX;
	if (lk_writer_rss_due(now)) {
		lk_lock();
		if (lk_writer_ready())
			lk_writer_rss_maybe(now);
		lk_unlock();
	}
	if (__atomic_load_n(&running, __ATOMIC_RELAXED)) {
		t->state = LK_T_ACTIVE;
		t->bytes_left = next_interval(t);
	} else {
		t->state = LK_T_DORMANT;
		t->bytes_left = lk_rng_interval((struct lk_rng *)t->rng, lk_cfg.dormant_period);
	}
	t->in_slow = 0;
	*err = saved;
}

/* Frees pushed by signal handlers; caller holds lk_lock. */
static bool free_locked(struct lk_block *b, struct lk_trec *r, uint32_t tid, uint64_t now);

static void drain_deferred(struct lk_trec *r, uint32_t tid, uint64_t now)
{
	if (lk_likely(!__atomic_load_n(&deferred, __ATOMIC_RELAXED)))
		return; /* nearly always: no atomic exchange at every sample and free */
	struct lk_block *b = __atomic_exchange_n(&deferred, NULL, __ATOMIC_ACQUIRE);

	while (b) {
		struct lk_block *next = (struct lk_block *)(uintptr_t)b->time_ns;
		if (!free_locked(b, r, tid, now)) /* freed twice in handlers: no stack to report */
			lk_counters[LK_CNT_BAD_FREE]++;
		b = next;
	}
}

/* The block at p leaves the profile (a FREE record) if it was a sample; it stays allocated. Caller
 * holds lk_lock. */
static LK_INLINE void end_sample(struct lk_block *b, struct lk_trec *r, uint32_t tid, uint64_t now)
{
	if (b->magic == LK_BLOCK_LIVE && b->id) {
		lk_probe_free(b);
		lk_writer_free(r, tid, now, b);
		if (r)
			r->frees++;
		else
			lk_counters[LK_CNT_FREES]++;
	}
}

/* end_sample for a block that a realloc (whose stack is `stack`) ends: with LEEK_FREE_STACKS, a
 * FREE_STACK in the main stream that names the realloc's stack. Caller holds lk_lock. */
static LK_COLD void end_sample_by(struct lk_block *b, struct lk_trec *r, uint32_t tid, uint64_t now,
				  uint32_t stack)
{
	if (lk_cfg.free_stacks && b->magic == LK_BLOCK_LIVE && b->id) {
		lk_probe_free(b);
		lk_writer_free_stack(tid, now, b, lk_stack_file_id(stack));
		lk_counters[LK_CNT_FREES]++;
	}
	end_sample(b, r, tid, now); /* nothing left to do if the one above was stored */
}

/* The block of a sample, the file ready (caller holds lk_lock): old (a block of the arena being
 * realloc'ed, by a call whose stack is `stack`) if the arena can resize it in place, which ends
 * old's own sample, else a new one: in guard mode the slot opened for it (*slot, then
 * LK_GUARD_NONE: used) if there is one; NULL if the arena has none, or in guard mode for a caller
 * that opened no slot (slot NULL: exact mode's paths, whose samples a slot could take go to
 * exact_guard, so that no mprotect is made under lk_lock). */
static LK_INLINE struct lk_block *sample_block(void *old, size_t size, size_t *usable,
					       size_t align, struct lk_trec *r, uint32_t tid,
					       uint64_t now, uint32_t stack, uint32_t *slot)
{
	if (old && lk_arena_block(old) && lk_arena_resize(old, *usable)) {
		struct lk_block *b = (struct lk_block *)old - 1;
		end_sample_by(b, r, tid, now, stack); /* its new sample starts in record_sample */
		return b;
	}
	if (lk_unlikely(lk_guard.span)) { /* guard mode: the slot opened before lk_lock, if any */
		if (!slot) /* exact mode's paths: a block a slot could take is take_sample's */
			return lk_guard_fits(size, align) ? NULL : lk_arena_take(*usable, align);
		if (*slot != LK_GUARD_NONE) {
			struct lk_block *b = lk_guard_use(*slot, size, align, usable);
			*slot = LK_GUARD_NONE;
			return b;
		}
	}
	return lk_arena_take(*usable, align);
}

/* The sample in block b (caller holds lk_lock): its header and its ALLOC record, with its stack's
 * STACK record first if this file lacks it; leek:sample if the profile has it (b->id). */
static LK_INLINE void record_sample(struct lk_block *b, size_t size, size_t usable, uint32_t stack,
				    struct lk_trec *r, uint32_t tid, uint64_t now)
{
	/* The whole header in one store (the arena left usable as asked, and old may have been
	 * quiet): bit fields stored one by one would each read the word first, and wait for a
	 * header the cache does not hold yet. */
	*b = (struct lk_block){ .time_ns = now, .size = size, .stack = stack, .usable = usable,
				.magic = LK_BLOCK_LIVE };
	uint32_t fid = lk_stack_file_id(stack);
	lk_writer_alloc(r, tid, now, b, size, fid);
	lk_probe_sample(b, fid);
	if (r)
		r->samples++;
	else
		lk_counters[LK_CNT_SAMPLES]++;
	lk_writer_rss_maybe(now);
}

/* Guard mode, after lk_lock: the slot opened for a sample that did not use it closed again, and
 * the pages of guarded blocks freed meanwhile (drain_deferred) closed (guard.c: no mprotect under
 * lk_lock). */
static LK_COLD LK_NOINLINE void guard_after(uint32_t slot)
{
	if (slot != LK_GUARD_NONE)
		lk_guard_unopen(slot, true);
	lk_guard_settled();
}

/* old: a block of the arena being realloc'ed, resized in place if the arena can (then the sample
 * is old itself, and the caller copies nothing). */
static LK_HOT LK_NOINLINE void *take_sample(struct lk_thread *t, size_t size, size_t align,
					     bool zero, void *old, const void *frame)
{
	uint64_t buf[LK_CAPTURE_FRAMES];
	const uint64_t *frames = buf;
	int *err = t->errno_at, saved = *err; /* an active thread's: thread_init */
	void *p = NULL;

	t->in_slow = 1;
	t->bytes_left = UINT64_MAX;
	uint64_t hash = 0;
	uint32_t known, stack = 0;
	void *ticket;
	uint32_t n = lk_stack_capture(buf, (uint32_t)lk_cfg.max_frames, frame, &hash, &frames,
				      &known, &ticket);
	size_t usable = lk_real_usable_fast(size, align);
	struct lk_trec *r = lk_trec_get(t);
	uint64_t now = lk_now_ns();
	uint32_t slot = lk_unlikely(lk_guard.span) ? lk_guard_open(size, align) : LK_GUARD_NONE;

	lk_lock();
	drain_deferred(r, t->tid, now);
	/* lk_writer_ready() before the arena: a forked child's file opens there, with an INHERIT
	 * record for every live block, which must not include the one allocated below. */
	struct lk_block *b = NULL;
	if (old && lk_cfg.free_stacks) /* old's FREE_STACK may name it (sample_block) */
		stack = known ? known : lk_stack_intern(frames, n, hash);
	if (!lk_writer_ready()) {
		enabled = running = false;
	} else if (!(b = sample_block(old, size, &usable, align, r, t->tid, now, stack, &slot))) {
		if (usable < lk_arena_span / 2) /* not a request that no heap could serve */
			lk_counters[LK_CNT_ARENA_FULL]++;
	} else {
		p = b + 1;
		if (!stack)
			stack = known ? known : lk_stack_intern(frames, n, hash);
		record_sample(b, size, usable, stack, r, t->tid, now);
	}
	lk_unlock();
	if (lk_unlikely(lk_guard.span))
		guard_after(slot);
	lk_stack_learned(ticket, stack);
	if (p && zero)
		memset(p, 0, usable);
	if (enabled) {
		t->bytes_left = next_interval(t);
	} else {
		t->state = LK_T_OFF;
	}
	t->in_slow = 0;
	*err = saved;
	return p;
}

/* Guard mode's sample of a kept walk in exact_take_body, of a block a slot could take: the slot
 * opened before lk_lock, the sample taken under it with the walk's stack, into the slot or, if
 * none could be had, the arena; NULL (take_sample then) if it cannot be taken here. */
static LK_COLD LK_NOINLINE struct lk_block *exact_guard(struct lk_thread *t, struct lk_trec *r,
							size_t size, size_t align, uint32_t stack,
							size_t *usable)
{
	struct lk_block *b = NULL;
	uint32_t slot = lk_guard_open(size, align);
	lk_lock();
	uint64_t now = lk_now_ns();
	if (!__atomic_load_n(&deferred, __ATOMIC_RELAXED) && lk_writer_ready()) {
		if (slot != LK_GUARD_NONE) {
			b = lk_guard_use(slot, size, align, usable);
			slot = LK_GUARD_NONE;
		} else {
			b = lk_arena_take(*usable, align);
		}
		if (b)
			record_sample(b, size, *usable, stack, r, t->tid, now);
	}
	lk_unlock();
	guard_after(slot);
	return b;
}

/* Exact mode's common sample: take_sample's steps without what it does not need, for the stack of
 * a kept walk (lk_stack_kept), the file open and no frees deferred. NULL when any of that is not
 * so, with nothing done: take_sample does it all then. Apart from take_sample, whose frame holds a
 * walk's buffers (3.4 KiB, put out of the first-level cache at every sample) and whose values the
 * compiler kept on the stack beside the walk: a sample here takes fewer instructions, and far
 * fewer first-level misses (bench/exact-model.sh; docs/performance.md, "Exact mode's common
 * sample apart"). */
static LK_INLINE void *exact_take_body(struct lk_thread *t, struct lk_trec *r, bool single,
				       size_t size, size_t align, bool zero, void *old,
				       const void *frame)
{
	int *err = t->errno_at, saved = *err;
	struct lk_block *b = NULL;

	t->in_slow = 1; /* bytes_left stays 0: a signal handler's malloc goes to sample() */
	if (lk_likely(lk_stack_kept_ready())) {
		bool cut = false;
		size_t usable = lk_real_usable_known(size, align);
		uint32_t stack = lk_stack_kept(frame, &cut, r, single);
		/* The allocator is asked outside lk_lock, and only for a sample that will be taken
		 * here: mimalloc's answer is a block it allocates and frees. */
		if (lk_unlikely(stack && !usable))
			usable = lk_real_usable(size, align);
		if (lk_unlikely(lk_guard.span) && stack && lk_guard_fits(size, align)) {
			b = exact_guard(t, r, size, align, stack, &usable); /* takes lk_lock itself */
			goto taken;
		}
		lk_lock();
		if (lk_likely(stack)) {
			uint64_t now = lk_now_ns();
			if (lk_likely(!__atomic_load_n(&deferred, __ATOMIC_RELAXED) &&
				      lk_writer_ready()) &&
			    (b = sample_block(old, size, &usable, align, r, t->tid, now, stack,
						      NULL)))
				record_sample(b, size, usable, stack, r, t->tid, now);
		}
		lk_unlock();
	taken:
		if (b && cut)
			lk_stack_count_cut();
		if (b && zero)
			memset(b + 1, 0, usable);
	}
	t->in_slow = 0;
	*err = saved;
	return b ? b + 1 : NULL;
}

/* exact_take_body twice: a process with one thread has no records, and takes no slot of kept
 * walks (the branches on both, folded away, were 14 instructions a sample of sqlite3's exact run:
 * bench/exact-model.sh). exact_take_rec is any other thread's, r its record or NULL. */
static LK_HOT LK_NOINLINE void *exact_take_single(struct lk_thread *t, size_t size, size_t align,
						  bool zero, void *old, const void *frame)
{
	return exact_take_body(t, NULL, true, size, align, zero, old, frame);
}

static LK_HOT LK_NOINLINE void *exact_take_rec(struct lk_thread *t, struct lk_trec *r, size_t size,
					       size_t align, bool zero, void *old,
					       const void *frame)
{
	return exact_take_body(t, r, false, size, align, zero, old, frame);
}

/* Exact mode's common sample in a process with threads, on a thread with a record of its own
 * (threads.c): exact_take's steps with no lock, the block one that this thread freed lately, its
 * ALLOC in this thread's body (writer-segment.c), its count in the record. NULL, with nothing
 * done, when any of that cannot be (a walk not kept, a stack this file has not had yet, no slot of
 * the class freed lately here, a body full, frees deferred): exact_take then takes the sample
 * under lk_lock. So a pair of exact mode on each of two threads costs what it costs on one
 * (bench/exact-threads.sh; docs/performance.md, "Threads"). */
static LK_HOT LK_NOINLINE void *exact_own(struct lk_thread *t, struct lk_trec *r, size_t size,
					  size_t align, bool zero, const void *frame)
{
	int *err = t->errno_at, saved = *err;
	struct lk_block *b = NULL;
	size_t usable;

	t->in_slow = 1;
	if (lk_likely(align <= 16 && !__atomic_load_n(&deferred, __ATOMIC_RELAXED) &&
		      !lk_guard.span && lk_stack_kept_ready())) { /* guard mode: under lk_lock */
		bool cut = false;
		uint32_t stack = lk_stack_kept(frame, &cut, r, false);
		uint32_t fid = stack ? lk_stack_file_id_known(stack) : 0;
		usable = lk_real_usable_known(size, align);
		if (fid && !usable)
			usable = lk_real_usable(size, align); /* a large block: no lock held */
		if (fid && !(b = lk_arena_take_own(r, usable)) &&
		    usable + sizeof(*b) <= LK_ARENA_SLOT_MAX) {
			lk_lock();
			bool filled = lk_arena_fill_own(r, usable);
			lk_unlock();
			b = filled ? lk_arena_take_own(r, usable) : NULL;
		}
		if (b) {
			uint64_t now = lk_now_ns();
			*b = (struct lk_block){ .time_ns = now, .size = size, .stack = stack,
						.usable = usable, .magic = LK_BLOCK_LIVE };
			if (lk_likely(lk_seg_alloc(r, now, b, size, fid))) {
				lk_probe_sample(b, fid);
				r->samples++;
				if (lk_unlikely(lk_writer_rss_due(now)))
					lk_writer_rss_unlocked(now);
				if (cut)
					lk_stack_count_cut();
				if (zero)
					memset(b + 1, 0, usable);
			} else {
				lk_arena_free_own(r, b); /* its slot came from there: it has room */
				b = NULL;
			}
		}
	}
	t->in_slow = 0;
	*err = saved;
	return b ? b + 1 : NULL;
}

/* A kept walk's sample on a thread of a process with threads: with no lock on the thread's own
 * record if it has one (exact_own), else under lk_lock (exact_take_rec); NULL when the walk is
 * not kept or the sample cannot be taken there. */
static LK_INLINE void *take_threads(struct lk_thread *t, size_t size, size_t align, bool zero,
				    void *old, const void *frame)
{
	struct lk_trec *r = lk_trec_get(t);
	void *p = r && !old ? exact_own(t, r, size, align, zero, frame) : NULL;

	return p ? p : exact_take_rec(t, r, size, align, zero, old, frame);
}

/* The slow path of every allocating hook. Returns a sampled block, or NULL when the caller should
 * forward to the real allocator. */
static LK_HOT LK_INLINE void *sample(struct lk_thread *t, size_t size, size_t align, bool zero,
				      void *old, const void *frame)
{
	if (lk_likely(size < t->bytes_left)) {
		t->bytes_left -= size;
		return NULL;
	}
	/* A thread is active only once init is done (thread_init), and its gate holds in_slow too:
	 * one compare lets the common case past every check below. */
	if (lk_unlikely(t->gate != LK_T_GO || !running)) {
		if (!lk_init_done()) {
			lk_init();
			if (lk_booting) /* dlsym's calloc, before lk_real exists */
				return lk_arena_boot_alloc(size);
		}
		if (t->in_slow)
			return NULL;
		if (t->state == LK_T_NEW) {
			thread_init(t);
			if (size < t->bytes_left) {
				t->bytes_left -= size;
				return NULL;
			}
		}
		if (t->state != LK_T_ACTIVE || !running) {
			if (enabled && t->state != LK_T_OFF) { /* switched off, or dormant */
				dormant(t);
				return NULL;
			}
			t->state = LK_T_OFF;
			t->bytes_left = UINT64_MAX;
			return NULL;
		}
	}
	/* A sample whose walk is kept takes exact mode's path, in either mode (with no lock on a
	 * thread with a record of its own): take_sample's frame, with a walk's buffers, and its
	 * capture cost a sampled 1 MiB pair more than exact mode's (bench/exact-threads.sh). The
	 * countdown is drawn once the sample is taken, inline (the rare path of a draw is a call:
	 * rng.h); meanwhile a signal handler's malloc finds in_slow. */
	void *p = lk_likely(lk_single_threaded()) /* a call of its own, with no record */
			  ? exact_take_single(t, size, align, zero, old, frame)
			  : take_threads(t, size, align, zero, old, frame);
	if (lk_unlikely(!p))
		return take_sample(t, size, align, zero, old, frame);
	if (lk_cfg.period > 1)
		t->bytes_left = lk_rng_interval((struct lk_rng *)t->rng, lk_cfg.period);
	return p;
}

LK_HOT LK_INLINE void *lk_sample(struct lk_thread *t, size_t size, size_t align, bool zero,
				 const void *frame)
{
	return sample(t, size, align, zero, NULL, frame);
}

/* False, with nothing done, when b is not a live block's header: a bad free (errors.c). */
static LK_INLINE bool free_locked(struct lk_block *b, struct lk_trec *r, uint32_t tid, uint64_t now)
{
	void *p = b + 1;

	if (lk_unlikely(lk_arena_block(p) != b))
		return false;
	end_sample(b, r, tid, now);
	lk_arena_free(p);
	return true;
}

/* The free of a sampled block by a thread with a record of its own, in a process with threads:
 * its FREE in the thread's body and its slot on the thread's own list, with no lock (the list
 * full or the block a run of its own: given back under lk_lock, its record written already).
 * False, with nothing done, when frees are deferred or the body has no room: free_locked then. */
static LK_HOT bool free_own(struct lk_thread *t, struct lk_trec *r, struct lk_block *b)
{
	if (lk_arena_block(b + 1) != b || b->magic != LK_BLOCK_LIVE ||
	    __atomic_load_n(&deferred, __ATOMIC_RELAXED))
		return false;
	int *err = t->errno_at, saved = *err;
	bool sampled = b->id != 0, done;

	t->in_slow = 1;
	done = lk_seg_free(r, lk_now_ns(), b);
	if (done) {
		if (sampled) /* before the slot is given back: b is still its header */
			lk_probe_free(b);
		r->frees += sampled;
		if (!lk_arena_free_own(r, b)) {
			lk_lock();
			lk_arena_free_spill(r, b);
			lk_unlock();
		}
	}
	t->in_slow = 0;
	*err = saved;
	return done;
}

/* A free under lk_lock, its FREE in r's body (NULL: the main stream). The countdown is left as it
 * is: a signal handler's malloc here counts down as anywhere else, and one that would sample
 * finds in_slow and is forwarded (sample()). */
static LK_INLINE bool free_under_lock(struct lk_thread *t, struct lk_block *b, struct lk_trec *r)
{
	int *err = lk_likely(t->errno_at != NULL) ? t->errno_at : &errno, saved = *err;
	uint64_t now = lk_now_ns();
	uint32_t tid = t->tid ? t->tid : (uint32_t)gettid();

	t->in_slow = 1;
	lk_lock();
	drain_deferred(r, tid, now);
	bool done = free_locked(b, r, tid, now);
	lk_unlock();
	t->in_slow = 0;
	*err = saved;
	return done;
}

/* lk_free_sampled in a process with threads: with no lock on the thread's own record (free_own),
 * else under lk_lock, its FREE in the thread's body if it has one. */
static LK_NOINLINE bool free_threads(struct lk_thread *t, struct lk_block *b)
{
	struct lk_trec *r = lk_trec_get(t);

	return (r && free_own(t, r, b)) || free_under_lock(t, b, r);
}

/* A free with its stack (LEEK_FREE_STACKS): the stack captured with no lock held, as a sample's
 * is (take_sample), then interned, its STACK written if this file lacks it, and the FREE_STACK
 * stored in the main stream, under lk_lock. Only for a block that is a sample: a quiet block's
 * free has no record, and its stack is not taken. The countdown is UINT64_MAX meanwhile, as in
 * take_sample: what the unwinder allocates is not sampled. frame: as lk_stack_capture's. */
static LK_COLD LK_NOINLINE bool free_with_stack(struct lk_thread *t, struct lk_block *b,
						const void *frame)
{
	uint64_t buf[LK_CAPTURE_FRAMES], hash = 0;
	const uint64_t *frames = buf;
	int *err = lk_likely(t->errno_at != NULL) ? t->errno_at : &errno, saved = *err;
	uint64_t left = t->bytes_left;
	uint32_t tid = t->tid ? t->tid : (uint32_t)gettid(), known = 0, stack = 0, n;
	void *ticket = NULL, *p = b + 1;
	bool done = false;

	t->in_slow = 1;
	t->bytes_left = UINT64_MAX;
	n = lk_stack_capture(buf, (uint32_t)lk_cfg.max_frames, frame, &hash, &frames, &known,
			     &ticket);
	uint64_t now = lk_now_ns();
	lk_lock();
	drain_deferred(NULL, tid, now);
	if (lk_arena_block(p) == b) {
		if (b->magic == LK_BLOCK_LIVE && b->id && lk_writer_ready()) {
			stack = known ? known : lk_stack_intern(frames, n, hash);
			lk_probe_free(b);
			lk_writer_free_stack(tid, now, b, lk_stack_file_id(stack));
			lk_counters[LK_CNT_FREES]++;
		}
		end_sample(b, NULL, tid, now); /* a FREE if the one above was not stored */
		if (!stack && b->magic == LK_BLOCK_LIVE)
			stack = known ? known : lk_stack_intern(frames, n, hash);
		/* The freed header keeps its free stack, bit 63 set, for a double free's report
		 * (arena-find.c); id is 0 by now, and nothing reads a freed header's id. */
		b->id = stack ? 1ull << 63 | stack : 0;
		lk_arena_free(p);
		done = true;
	}
	lk_unlock();
	if (lk_unlikely(lk_guard_owns(p)) && done)
		lk_guard_close(p); /* its page closed before the free returns, lk_lock given back */
	else
		lk_guard_settled();
	lk_stack_learned(ticket, stack);
	t->bytes_left = left;
	t->in_slow = 0;
	*err = saved;
	return done;
}

LK_HOT void lk_free_sampled(void *p)
{
	struct lk_thread *t = &lk_tls;
	struct lk_block *b = (struct lk_block *)p - 1;

	if (lk_arena_is_boot(p))
		return; /* boot blocks are never reused */
	if (t->in_slow) {
		/* A signal handler freeing while this thread holds lk_lock: push, free later. */
		if (lk_arena_block(p) != b) {
			__atomic_fetch_add(&lk_counters[LK_CNT_BAD_FREE], 1, __ATOMIC_RELAXED);
			return;
		}
		struct lk_block *head = __atomic_load_n(&deferred, __ATOMIC_RELAXED);
		do
			b->time_ns = (uintptr_t)head;
		while (!__atomic_compare_exchange_n(&deferred, &head, b, true, __ATOMIC_RELEASE,
						    __ATOMIC_RELAXED));
		__atomic_fetch_add(&lk_counters[LK_CNT_DEFERRED_FREES], 1, __ATOMIC_RELAXED);
		return;
	}
	/* Not once the profile is closed (enabled: the exit's destructors free, and nothing would
	 * be written); b's header read only once it is known to be one. */
	bool done;
	/* A guarded block's free always takes its stack: a use after free's report names it. */
	if ((lk_unlikely(lk_cfg.free_stacks) || lk_unlikely(lk_guard_owns(p))) && enabled &&
	    lk_arena_block(p) == b && b->magic == LK_BLOCK_LIVE)
		done = free_with_stack(t, b, __builtin_frame_address(0));
	else if (lk_unlikely(!lk_single_threaded()))
		done = free_threads(t, b);
	else
		done = free_under_lock(t, b, NULL); /* no record: the branches on one fold away */
	if (lk_unlikely(!done))
		lk_error_bad_free(p, false, __builtin_frame_address(0));
}

/* A block of the arena realloc'ed to a size that is not sampled stays where it is, quiet (live, no
 * longer a sample), if the arena can resize it in place: a growing buffer is then neither copied
 * out to the real allocator nor back into the arena at its next sample. Only from QUIET_MIN
 * bytes, where copying costs more than leek's slow path, which every later realloc or free of a
 * quiet block takes (glibc grows blocks this large with mremap instead of copying them). A smaller
 * block moves out to the real allocator and is back on the fast path. */
#define QUIET_MIN (128u << 10)

static bool keep_quiet(struct lk_thread *t, void *p, size_t size, const void *frame)
{
	if (size < QUIET_MIN)
		return false;
	int saved = errno;
	size_t usable = lk_real_usable(size, 0);
	uint64_t left = t->bytes_left;
	uint32_t tid = t->tid ? t->tid : (uint32_t)gettid();
	bool kept = false;
	/* With LEEK_FREE_STACKS the sample ends with the realloc's stack (end_sample_by), taken
	 * before lk_lock as a sample's is. */
	uint64_t buf[LK_CAPTURE_FRAMES], hash = 0;
	const uint64_t *frames = buf;
	uint32_t known = 0, n = 0, stack = 0;
	void *ticket = NULL;

	t->in_slow = 1;
	t->bytes_left = UINT64_MAX;
	if (lk_cfg.free_stacks)
		n = lk_stack_capture(buf, (uint32_t)lk_cfg.max_frames, frame, &hash, &frames,
				     &known, &ticket);
	uint64_t now = lk_now_ns();
	lk_lock();
	drain_deferred(t->rec, tid, now);
	struct lk_block *b = lk_arena_block(p);
	if (b && lk_writer_ready() && lk_arena_resize(p, usable)) {
		if (lk_cfg.free_stacks)
			stack = known ? known : lk_stack_intern(frames, n, hash);
		end_sample_by(b, t->rec, tid, now, stack);
		b->magic = LK_BLOCK_QUIET;
		b->size = size;
		kept = true;
	}
	lk_unlock();
	lk_guard_settled();
	lk_stack_learned(ticket, stack);
	t->bytes_left = left;
	t->in_slow = 0;
	errno = saved;
	return kept;
}

LK_COLD void *lk_realloc_slow(void *p, size_t size)
{
	struct lk_thread *t = &lk_tls;
	void *q;

	if (!p) {
		q = lk_sample(t, size, 0, false, __builtin_frame_address(0));
		return q ? q : lk_real.realloc(NULL, size);
	}
	if (size == 0 && lk_real.realloc_zero_frees && !lk_arena_is_boot(p)) {
		if (!lk_arena_owns(p))
			return lk_real.realloc(p, 0);
		lk_free_sampled(p);
		return NULL;
	}
	if (!lk_arena_owns(p)) { /* unsampled block, countdown ran out */
		if (!lk_real.malloc_usable_size) {
			/* The old block's length is unknown, so it cannot be copied into the arena:
			 * this sample is skipped, and the countdown starts afresh (0 would force the
			 * next allocation to be sampled whatever its size). */
			if (t->state == LK_T_ACTIVE)
				t->bytes_left = next_interval(t);
			return lk_real.realloc(p, size);
		}
		q = lk_sample(t, size, 0, false, __builtin_frame_address(0));
		if (!q)
			return lk_real.realloc(p, size);
		size_t old = lk_real.malloc_usable_size(p);
		memcpy(q, p, old < size ? old : size);
		lk_real.free(p);
		return q;
	}
	struct lk_block *b = lk_arena_block(p);
	if (!b) {
		lk_error_bad_free(p, true, __builtin_frame_address(0));
		errno = ENOMEM; /* LEEK_ABORT_ON_ERROR=0: the realloc fails, p untouched */
		return NULL;
	}
	q = sample(t, size, 0, false, p, __builtin_frame_address(0));
	if (q == p || (!q && keep_quiet(t, p, size, __builtin_frame_address(0))))
		return p; /* resized in place */
	if (!q) {
		/* The new block comes from the real realloc of a fresh block, so that a failure
		 * and its errno are what the program's realloc would have given: jemalloc's
		 * realloc leaves errno alone beyond PTRDIFF_MAX, where its malloc sets ENOMEM. */
		void *fresh = lk_real.malloc(1);
		if (!fresh)
			return NULL;
		q = lk_real.realloc(fresh, size);
		if (!q) {
			int e = errno;
			lk_real.free(fresh);
			errno = e;
			return NULL; /* p is untouched, as realloc requires */
		}
	}
	memcpy(q, p, b->usable < size ? b->usable : size);
	lk_free_sampled(p);
	return q;
}

/* At start-up (lifecycle.c): the process's seed, LEEK_SEED's or a random one. */
void lk_sampler_seed(void)
{
	seed = lk_cfg.seed;
	if (!lk_cfg.seed_set && getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != sizeof(seed))
		seed = lk_now_ns() ^ ((uint64_t)getpid() << 32);
	lk_cfg.seed = seed;
}

bool lk_sampler_start(void)
{
	lk_lock();
	on = !lk_cfg.start_off; /* before the file opens: a dormant one begins with an OFF */
	enabled = lk_writer_ready();
	running = enabled && on;
	lk_unlock();
	return enabled;
}

void lk_sampler_stop(void)
{
	lk_lock();
	drain_deferred(lk_tls.rec, lk_tls.tid, lk_now_ns());
	lk_writer_close();
	enabled = running = false;
	lk_unlock();
	lk_guard_settled();
}

bool lk_sampler_switch(bool want)
{
	if (want == on)
		return false;
	on = want;
	__atomic_store_n(&running, enabled && on, __ATOMIC_RELAXED);
	return true;
}

bool lk_sampler_is_on(void)
{
	return on;
}

void lk_sampler_atfork(int phase)
{
	if (phase == LK_FORK_PREPARE) {
		forks++;
	} else if (phase == LK_FORK_CHILD) {
		deferred = NULL;
		/* A stream of its own, or the child would repeat its parent's sampling decisions;
		 * derived from the parent's seed and fork count, so LEEK_SEED still makes runs
		 * repeatable. */
		uint64_t x = seed ^ forks;
		seed = lk_splitmix64(&x);
		thread_seq = 1;
		lk_rng_seed((struct lk_rng *)lk_tls.rng, seed, 0);
		lk_cfg.seed = seed;
		lk_tls.tid = (uint32_t)gettid();
		lk_trecs_atfork_child();
	}
}
