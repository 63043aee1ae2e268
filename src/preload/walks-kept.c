/* walks-kept.c: each thread's last walks, found again by the words they read.
 *
 * Most of a thread's samples come from a few call paths, and a sample's first frame does not name
 * its path well: nearly every allocation of a program comes through the same few wrappers, at a
 * few depths, and each of those frames leads to several stacks. So each thread keeps its last
 * KEPT_WALKS walks, whatever their first frames, with their stacks' numbers; a walk kept is found
 * among the ones that began at the same frame (by a tag of the first frame), and one whose every
 * word read is still what it was (as the previous walk's shortcut requires: walk.c) is this
 * capture's: no step is taken, and the stack is not hashed or looked up. A new walk takes the
 * place of the oldest kept: first in, first out holds about as many as least recently used does,
 * with no store at each find, and one walk kept a first frame held far fewer, its other paths
 * putting each other out (tracing sqlite3's exact run: docs/performance.md, "Any 32 walks kept").
 *
 * The walks live in slots, which a capture and exact mode's common sample alike take with no
 * other lock held. A thread with a record of its own (threads.c) among the first KEPT_OWN has
 * that record's slot, and takes it with no lock: a record is one live thread's at a time, and
 * the atomic exchange of a try-lock, a full barrier behind all the stores of the sample before,
 * was a seventh of exact mode's common sample on redis-server with I/O threads (docs/
 * performance.md, "Exact mode against heaptrack"). Any other thread takes one of KEPT_SHARED slots by its id: with no
 * lock while the process has one thread, else with a try-lock; two threads that share one cost
 * each other a shortcut, never a wrong stack. A fork's child may inherit a slot half changed by a
 * thread that the fork left behind: the child begins a new epoch, and a slot of an older one is
 * emptied at its next take.
 *
 * Never: wait for a slot; read a word of the stack that is not one of the kept walk's checks, or
 * that lies above this thread's stack top; take a walk whose sum does not match; allocate.
 */
#include <emmintrin.h>
#include <string.h>

#include "preload.h"
#include "unwind.h"

#define KEPT_OWN 64    /* slots of the first records: threads that allocate at once, most often */
#define KEPT_SHARED 16 /* by thread id: a process with one thread, and threads past KEPT_OWN */

static struct kept_walks kept_own[KEPT_OWN] __attribute__((aligned(64)));
static struct kept_walks kept_shared[KEPT_SHARED] __attribute__((aligned(64)));
static uint32_t kept_epoch; /* a fork's child's: slots of another are emptied at their next take */

struct kept_walks *lk_kept_own(uint32_t i)
{
	return i < KEPT_OWN ? &kept_own[i] : NULL;
}

void lk_kept_atfork_child(void)
{
	kept_epoch++; /* no slot written: a write would copy its page */
	for (int i = 0; i < KEPT_SHARED; i++)
		if (kept_shared[i].busy)
			kept_shared[i].busy = 0;
}

/* kw as a zeroed slot is, but for the walks' frames that nothing reads before they are recorded
 * again: no walk is kept, and the walk to follow (w[0]) has no frames. */
static LK_NOINLINE void kept_empty(struct kept_walks *kw)
{
	memset(kw->key, 0, sizeof(kw->key));
	memset(kw->tags, 0, sizeof(kw->tags));
	memset(kw->at, 0, sizeof(kw->at));
	kw->last = kw->spare = kw->used = kw->hand = 0;
	kw->pending = -1;
	kw->w[0].n = 0; /* the walk to follow */
	kw->w[0].whole = false;
	kw->epoch = kept_epoch;
}

static inline struct kept_walks *kept_now(struct kept_walks *kw)
{
	if (lk_unlikely(kw->epoch != __atomic_load_n(&kept_epoch, __ATOMIC_RELAXED)))
		kept_empty(kw);
	return kw;
}

/* This thread's slot of kept walks, taken (no lock held): r's own, where r (this thread's own
 * record, or NULL) has one; else a shared one, which single says needs no lock (the process has
 * one thread, and a signal handler never comes here: in_slow); NULL if another thread has it now
 * (a walk without the shortcuts). Given back with lk_kept_put. */
static LK_INLINE struct kept_walks *kept_take(const struct lk_trec *r, bool single)
{
	struct kept_walks *kw = r ? r->kept : NULL;

	if (lk_likely(kw))
		return kept_now(kw);
	kw = &kept_shared[lk_tls.tid & (KEPT_SHARED - 1)];
	if (single || lk_single_threaded())
		return kept_now(kw);
	if (__atomic_load_n(&kw->busy, __ATOMIC_RELAXED) ||
	    __atomic_exchange_n(&kw->busy, 1, __ATOMIC_ACQUIRE))
		return NULL;
	return kept_now(kw);
}

struct kept_walks *lk_kept_take(void)
{
	const struct lk_thread *t = &lk_tls;

	return kept_take(t->rec_state == LK_REC_OWN ? t->rec : NULL, false);
}

static inline uint16_t kept_tag(uintptr_t sp, uintptr_t ip)
{
	return (uint16_t)(((sp ^ ip * 0x9e3779b97f4a7c15ull) * 0xc4ceb9fe1a85ec53ull) >> 48);
}

/* The positions whose tags are tag: the 32 tags compared at once (SSE2, x86-64's own). Another
 * first frame's walk passes with a chance of one in 65 536, and costs a sum. */
static inline uint32_t kept_candidates(const struct kept_walks *kw, uint16_t tag)
{
	const __m128i *v = (const __m128i *)kw->tags, t = _mm_set1_epi16((short)tag);
	__m128i lo = _mm_packs_epi16(_mm_cmpeq_epi16(_mm_load_si128(v), t),
				     _mm_cmpeq_epi16(_mm_load_si128(v + 1), t));
	__m128i hi = _mm_packs_epi16(_mm_cmpeq_epi16(_mm_load_si128(v + 2), t),
				     _mm_cmpeq_epi16(_mm_load_si128(v + 3), t));

	return (uint32_t)_mm_movemask_epi8(lo) | (uint32_t)_mm_movemask_epi8(hi) << 16;
}

/* What a walk kept must find again to be taken again: each return address (just below the
 * caller's %rsp) still there, and each frame-pointer step starting from the same %rbp, which is
 * this walk's: reloaded where a step reloads it (frame pointer: at CFA - 16; else at CFA - rbp_off,
 * if any), carried elsewhere. So the %rbp of a frame-pointer frame is the first frame's own, or the
 * word at the address of the last reload before it, which is fixed once the words before it hold.
 * Code without frame pointers keeps data in %rbp, and saves it in its frames: those words may
 * differ and do not matter (as for the previous walk: walk.c), and a walk of such code checks no
 * %rbp at all. Every word lies in [f[0].sp, hi), as the walk's own reads did.
 *
 * The words are summed, not kept: two lanes, each step x -> (x ^ word) * K, which for a given word
 * is a bijection of x, so that the sums of two walks whose words differ in one place always
 * differ, and differ by chance (one in 2^64) otherwise. The first lane starts from what the walk
 * was taken under (the rules, the thread, its stack top, the first frame's ip and %rsp), the
 * second from the first frame's %rbp where that counts (KEY_BP). */
#define SUM_K 0x9e3779b97f4a7c15ull
#define SUM_K2 0xc4ceb9fe1a85ec53ull
#define SUM_B0 0x6a09e667f3bcc909ull

static inline uint64_t sum_step(uint64_t x, uint64_t word)
{
	return (x ^ word) * SUM_K;
}

static inline uint64_t sum_seed(const struct rules *t, uint32_t tid, uintptr_t hi, uintptr_t ip0,
				uintptr_t sp0)
{
	return sum_step(sum_step(sum_step(sum_step(sum_step(0, (uintptr_t)t), tid), hi), ip0), sp0);
}

static inline uint64_t sum_seed_bp(bool counts, uintptr_t bp)
{
	return counts ? sum_step(SUM_B0, bp) : SUM_B0;
}

static inline uint64_t sum_end(uint64_t a, uint64_t b)
{
	return a + b * SUM_K2;
}

static inline uint16_t sum_early(uint64_t a, uint64_t b)
{
	return (uint16_t)(sum_end(a, b) >> 48);
}

/* Whether the words at key's offsets off from sp0 sum to its sum now. The first four are summed
 * first and their sum's top 16 bits compared: a walk of another path from the same first frame
 * parts from this one within four words most often (docs/performance.md, "The kept walks'
 * keys"). */
static inline bool key_holds(const struct walk_key *key, const uint16_t *off, uintptr_t sp0,
			      uint64_t a, uint64_t b)
{
	const uint64_t *p = (const uint64_t *)sp0;
	uint32_t nw = key->nw;

	if (nw >= 4) {
		a = sum_step(a, p[off[0]]);
		b = sum_step(b, p[off[1]]);
		a = sum_step(a, p[off[2]]);
		b = sum_step(b, p[off[3]]);
		if (sum_early(a, b) != key->early)
			return false;
		off += 4;
		nw -= 4;
	}
	for (const uint16_t *end = off + nw; off < end; off += 2) { /* nw is even: key_fill */
		a = sum_step(a, p[off[0]]);
		b = sum_step(b, p[off[1]]);
	}
	return sum_end(a, b) == key->sum;
}

struct key_word {
	uintptr_t at;
	uint64_t want;
};

/* The next word of a key being filled: into the lanes in turn, as key_holds reads them, and the
 * early sum taken after the fourth. */
static void key_add(uint64_t *a, uint64_t *b, uint32_t *nw, uint16_t *early, uint64_t want)
{
	if ((*nw)++ % 2 == 0)
		*a = sum_step(*a, want);
	else
		*b = sum_step(*b, want);
	if (*nw == 4)
		*early = sum_early(*a, *b);
}

/* Key for the walk w (index wi): its checks, in the order of their addresses, as offsets and a
 * sum. False if it cannot have one: a word not aligned, two reads of one word that disagree, or
 * one 512 KiB or more above the first frame. */
static bool key_fill(struct walk_key *key, struct kept_walk *w, uint8_t wi, bool cut)
{
	const struct walk_frame *f = w->f;
	struct key_word ck[2 * KEPT_FRAMES];
	uintptr_t from = 0, sp0 = f[0].sp; /* from: where the %rbp at frame i was reloaded */
	uint32_t k = 0, nw = 0;
	bool bp_top = false;
	uintptr_t bp_want = 0;

	if (w->hi - sp0 > UINT32_MAX)
		return false;
	for (uint32_t i = 0; i + 1 < w->n; i++) {
		uint64_t r = f[i].rule;
		bool fp = RULE_KIND(r) == RULE_FP;
		uintptr_t cfa = f[i + 1].sp, off = fp ? 16 : RULE_RBP(r);
		ck[k++] = (struct key_word){ cfa - 8, f[i + 1].ip };
		if (fp && from) {
			ck[k++] = (struct key_word){ from, f[i].bp };
		} else if (fp) { /* the first reload is at a frame-pointer frame, so only once */
			bp_top = true;
			bp_want = f[i].bp;
		}
		if (off)
			from = cfa - off;
	}
	for (uint32_t i = 1; i < k; i++) /* nearly in order already: by frame */
		for (uint32_t j = i; j > 0 && ck[j - 1].at > ck[j].at; j--) {
			struct key_word x = ck[j];
			ck[j] = ck[j - 1];
			ck[j - 1] = x;
		}
	uint64_t a = sum_seed(w->t, w->tid, w->hi, f[0].ip, sp0), b = sum_seed_bp(bp_top, bp_want);
	uint16_t early = 0;
	for (uint32_t i = 0; i < k; i++) {
		if (i && ck[i].at == ck[i - 1].at) {
			if (ck[i].want != ck[i - 1].want)
				return false;
			continue;
		}
		if (ck[i].at < sp0 || (ck[i].at - sp0) & 7 || (ck[i].at - sp0) / 8 > UINT16_MAX)
			return false;
		w->offs[nw] = (uint16_t)((ck[i].at - sp0) / 8);
		key_add(&a, &b, &nw, &early, ck[i].want);
	}
	if (nw & 1) { /* the last word again, so that key_holds sums pairs with no branch for a
		       * last one alone (it mispredicted: keys of both kinds meet in turn) */
		w->offs[nw] = w->offs[nw - 1];
		key_add(&a, &b, &nw, &early, ck[k - 1].want);
	}
	*key = (struct walk_key){ .sum = sum_end(a, b), .depth = (uint32_t)(w->hi - sp0),
				  .early = early, .nw = (uint8_t)nw,
				  .wf = (uint8_t)(wi | (bp_top ? KEY_BP : 0) | (cut ? KEY_CUT : 0)) };
	if (nw <= KEY_OFFS)
		memcpy(key->off, w->offs, nw * sizeof(key->off[0]));
	return true;
}

/* The kept walk that this capture, from top, would take again: its key, or NULL. Only the keys'
 * lines are read (and the walk's offsets, for a key of more than KEY_OFFS words), and the words
 * of the stack: those the walk read, none above this thread's stack top. */
static LK_INLINE struct walk_key *kept_find_inline(struct kept_walks *kw, const struct cursor *top)
{
	uint64_t depth = lk_stack_top - top->sp, a = 0;

	for (uint32_t m = kept_candidates(kw, kept_tag(top->sp, top->ip)); m; m &= m - 1) {
		struct walk_key *key = &kw->key[__builtin_ctz(m)];
		if (key->depth != depth || !key->id) /* its words lie in [sp, sp + depth) */
			continue;
		const uint16_t *off = key->nw > KEY_OFFS ? kw->w[key->wf & KEY_WALK].offs : key->off;
		if (!a)
			a = sum_seed(__atomic_load_n(&lk_rules, __ATOMIC_ACQUIRE), lk_tls.tid,
				     lk_stack_top, top->ip, top->sp);
		if (key_holds(key, off, top->sp, a, sum_seed_bp(key->wf & KEY_BP, top->bp)))
			return key;
	}
	return NULL;
}

/* kept_find_inline out of line, for the capture; exact mode's common sample has it inline
 * (lk_stack_kept), in a frame that has saved the registers it needs already. */
LK_NOINLINE struct walk_key *lk_kept_find(struct kept_walks *kw, const struct cursor *top)
{
	return kept_find_inline(kw, top);
}

/* A walk the cache does not hold and that is not kw->last nor `not`: the spare for the next
 * walk. */
static uint8_t kept_spare(struct kept_walks *kw, uint8_t not)
{
	while (kw->used < KEPT_WALKS + 2) { /* one never handed out */
		uint8_t i = kw->used++;
		if (i != kw->last && i != not)
			return i;
	}
	for (uint8_t i = 0;; i++) /* there is one: KEPT_WALKS positions, the last and `not` */
		if (kw->w[i].pos < 0 && i != kw->last && i != not)
			return i;
}

/* The walk just recorded in the spare (lk_walk_cached) becomes the last, and if it is whole it
 * takes the oldest kept walk's position, until its stack's number is learned (lk_stack_learned). */
void lk_kept_add(struct kept_walks *kw, const struct cursor *top, bool cut)
{
	uint8_t nw = kw->spare, old_last = kw->last;
	struct kept_walk *w = &kw->w[nw];
	struct walk_key key;

	w->pos = -1;
	kw->last = nw;
	kw->pending = -1;
	if (w->whole && w->n && key_fill(&key, w, nw, cut)) {
		uint8_t pos = kw->hand, gone = kw->at[pos];
		kw->hand = (uint8_t)((pos + 1) % KEPT_WALKS);
		if (gone) /* never the spare, which the cache does not hold */
			kw->w[gone - 1].pos = -1;
		w->pos = (int8_t)pos;
		kw->key[pos] = key;
		kw->tags[pos] = kept_tag(top->sp, top->ip);
		kw->at[pos] = (uint8_t)(nw + 1);
		kw->pending = (int8_t)pos;
		if (gone) {
			kw->spare = gone - 1;
			return;
		}
	}
	kw->spare = kw->w[old_last].pos < 0 && old_last != nw ? old_last : kept_spare(kw, nw);
}

LK_HOT void lk_stack_learned(void *ticket, uint32_t id)
{
	struct kept_walks *kw = ticket;

	if (!kw)
		return;
	if (kw->pending >= 0 && id)
		kw->key[kw->pending].id = id;
	kw->pending = -1;
	lk_kept_put(kw);
}

LK_HOT void lk_stack_count_cut(void)
{
	__atomic_fetch_add(&lk_counters[LK_CNT_STACK_TRUNCATED], 1, __ATOMIC_RELAXED);
}

/* lk_stack_capture's first case alone, for exact mode's common sample (sampler.c), in two halves,
 * with no lock held. lk_stack_kept_ready: false when the capture has more to do first (rules to
 * forget, a fork pending at a look); a look at the loader that is due is taken here, as the
 * capture takes it. lk_stack_kept: the number of the stack of a kept walk that
 * this capture would find, or 0 when it finds none. No frame is read but the hook's and the words
 * of the kept walk's checks; nothing else changes but the walk to follow. *cut: the stack was cut
 * at LEEK_MAX_FRAMES, not counted here (a sample that then goes to the capture would count it
 * twice). */
LK_HOT LK_INLINE bool lk_stack_kept_ready(void)
{
	bool look;
	unsigned long long gen = lk_modules_gen(&look);

	if (lk_unlikely(look)) { /* one sample in LK_MODULES_LOOK_EVERY */
		if (!lk_loader_enter(false))
			return false;
		gen = lk_modules_refresh(false);
		lk_loader_exit();
	}
	return __atomic_load_n(&lk_rules_gen, __ATOMIC_ACQUIRE) == gen;
}

LK_HOT LK_INLINE uint32_t lk_stack_kept(const void *frame, bool *cut, const struct lk_trec *r,
				       bool single)
{
	const uintptr_t *fp = frame;
	const struct cursor top = { .ip = fp[1], .sp = (uintptr_t)(fp + 2), .bp = fp[0] };
	struct kept_walks *kw = kept_take(r, single);
	struct walk_key *kept = kw ? kept_find_inline(kw, &top) : NULL;

	if (kept)
		return lk_kept_taken(kw, kept, cut);
	if (kw)
		lk_kept_put(kw);
	return 0;
}
