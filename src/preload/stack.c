/* stack.c: unwinding (libunwind, and rules cached from it) and stack interning.
 *
 * lk_stack_capture runs with no leek lock held, because libunwind calls dl_iterate_phdr, which
 * takes the loader's lock: a thread inside dlopen holds that lock and may be waiting for lk_lock in
 * malloc (docs/design.md, "Locks"). Interning runs under lk_lock. Each distinct stack is stored
 * once, in memory mapped here (never malloc), and written to each profile file once, the first time
 * a record of that file names it; file ids run from 1 in the order stacks are written, which is
 * what lets a forked child start a file of its own.
 *
 * Never: unwind under lk_lock; allocate through libc; grow without bound (the table stops at
 * MAX_STACKS and counts what it drops); read outside the current thread's stack in a cached walk.
 */
#define UNW_LOCAL_ONLY
#include <emmintrin.h>
#include <errno.h>
#include <fcntl.h>
#include <libunwind.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload.h"
#include "record.h"

#define MAX_STACKS (1u << 20) /* ids fit struct lk_block's 20 bits */
#define MAX_POOL ((size_t)1 << 27) /* frames: 1 GiB */

struct entry {
	uint64_t hash;
	uint64_t off;       /* first frame in pool */
	uint32_t n;         /* frames */
	uint32_t unused;
};

static struct {
	struct entry *ents; /* by stack number, from 1 */
	uint64_t *slots;    /* open addressing, at most half full: a stack's number in the low half,
			     * its hash's high half above it (a probe that cannot match reads no
			     * entry); 0 = empty */
	uint64_t *pool;
	uint64_t *files;    /* by stack number: its id in the current file, in the low half, and
			     * the file's generation above it (lk_stack_file_id); apart from the
			     * entries, so that a sample's lookup reads a line of 8 stacks' */
	uint32_t count, ents_cap, slots_cap;
	size_t pool_len, pool_cap, files_bytes;
	uint32_t gen, next_file_id;
} S;

static uintptr_t self_lo, self_hi; /* libleek's own code: frames there are not the program's */

/* ---- the unwind-rule cache ----
 *
 * libunwind interprets DWARF call-frame information, and even with its per-thread trace cache a
 * capture costs about 280 ns. This file learns, from libunwind's own walks, one rule per return
 * address: where the caller's frame is and where its return address and %rbp were saved. A
 * frame-pointer frame (CFA = %rbp + 16) is walked by the chain, a frame without one by a fixed
 * offset from %rsp, which is what DWARF says for every call site of a function that uses no
 * alloca. Once the addresses of a program's hot stacks are known, a capture is one hash probe
 * and two loads a frame (docs/performance.md). An address libunwind could not unwind, a signal
 * trampoline, and every unknown address send the capture back to libunwind; the walk reads only
 * inside [%rsp, top of this thread's stack as libunwind last found it], so a stale rule can cost
 * a wrong stack but never a fault. Rules are forgotten when a library is unloaded (its addresses
 * may be reused by the next one).
 *
 * Readers take no lock. A slot is {ip, rule}, published ip first, then rule, and written once:
 * forgetting or growing builds a new table, and the old one's pages are given back to the kernel
 * but stay mapped, so a reader still in it sees zeros, which is a miss, never another slot's rule.
 * Writers (learning, forgetting, growing) hold `learning`, a try-lock: a thread that finds it
 * taken learns nothing this time. */
enum {
	RULE_FP = 1,   /* CFA = rbp + 16; caller's rbp at [rbp] */
	RULE_SP = 2,   /* CFA = rsp + off; caller's rbp unchanged, or at [CFA - rbp_off] */
	RULE_END = 3,  /* the outermost frame: the stack ends here */
	RULE_SLOW = 4, /* libunwind every time (signal frames, frames it could not step) */
};
#define RULE(kind, off, rbp_off) ((uint64_t)(kind) | (uint64_t)(off) << 8 | (uint64_t)(rbp_off) << 36)
#define RULE_KIND(r) ((unsigned)(r)&0xff)
#define RULE_OFF(r) (((r) >> 8) & 0xfffffff)
#define RULE_RBP(r) ((r) >> 36)
#define RULES_MIN 4096u
#define RULES_MAX (1u << 20)

struct rule_slot {
	uint64_t ip, rule;
};
struct rules {
	uint64_t mask, used;
	struct rule_slot slot[];
};

static struct rules *rules; /* current table; replaced whole, never freed (see rules_replace) */
static int learning;        /* writers' try-lock */
static int alt_busy;        /* the unwinder's stack's try-lock (run_unwinder) */
static unsigned long long rules_gen = ~0ull; /* the loader's generation the rules are for */
static __thread uintptr_t stack_top; /* this thread's outermost CFA, as libunwind last saw it */

static inline uint32_t rule_hash(uint64_t ip, uint64_t mask)
{
	return (uint32_t)((ip * 0x9e3779b97f4a7c15ull) >> 40) & (uint32_t)mask;
}

/* The rule for ip, or 0. The table is read as words (w: ip at an even index, its rule after it,
 * mask2 = mask * 2), so that a probe is one scaled load: the same slot as rule_hash's. */
static inline uint64_t rule_find(const uint64_t *w, uint64_t mask2, uint64_t ip)
{
	for (uint64_t j = (ip * 0x9e3779b97f4a7c15ull) >> 39 & mask2;; j = (j + 2) & mask2) {
		uint64_t k = __atomic_load_n(&w[j], __ATOMIC_ACQUIRE);
		if (k == ip)
			return __atomic_load_n(&w[j + 1], __ATOMIC_ACQUIRE);
		if (k == 0)
			return 0;
	}
}

/* A new table with the old one's rules (keep) or none; the old one's pages go back to the kernel
 * but stay mapped, so a reader still inside it reads zeros: a miss. Caller holds `learning`. */
static struct rules *rules_replace(struct rules *old, uint64_t cap, bool keep)
{
	struct rules *t = mmap(NULL, sizeof(*t) + cap * sizeof(struct rule_slot),
			       PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (t == MAP_FAILED)
		return NULL;
	t->mask = cap - 1;
	for (uint64_t i = 0; keep && old && i <= old->mask; i++) {
		if (!old->slot[i].ip || !old->slot[i].rule)
			continue;
		uint64_t j = rule_hash(old->slot[i].ip, t->mask);
		while (t->slot[j].ip)
			j = (j + 1) & t->mask;
		t->slot[j] = old->slot[i];
		t->used++;
	}
	__atomic_store_n(&rules, t, __ATOMIC_RELEASE);
	if (old)
		madvise(old, sizeof(*old) + (old->mask + 1) * sizeof(struct rule_slot), MADV_DONTNEED);
	return t;
}

static void rule_add(uint64_t ip, uint64_t rule)
{
	struct rules *t = rules;

	if (!t || (t->used + 1) * 4 > (t->mask + 1) * 3) {
		if (t && t->mask + 1 >= RULES_MAX)
			return; /* full: the addresses it lacks stay libunwind's */
		if (!(t = rules_replace(t, t ? (t->mask + 1) * 2 : RULES_MIN, true)))
			return;
	}
	uint64_t j = rule_hash(ip, t->mask);
	for (; t->slot[j].ip; j = (j + 1) & t->mask)
		if (t->slot[j].ip == ip)
			return;
	__atomic_store_n(&t->slot[j].ip, ip, __ATOMIC_RELEASE);
	__atomic_store_n(&t->slot[j].rule, rule, __ATOMIC_RELEASE);
	t->used++;
}

static bool learn_begin(void)
{
	return !__atomic_exchange_n(&learning, 1, __ATOMIC_ACQUIRE);
}

static void learn_end(void)
{
	__atomic_store_n(&learning, 0, __ATOMIC_RELEASE);
}

/* Whether the rules may be used for a walk now: the loader's generation (objects loaded plus
 * unloaded) has not moved since they were learned, or they could be forgotten now. A library that
 * was unloaded may have left its addresses to the next one; a library loaded where JIT code was
 * brings unwind information to addresses whose rule said there was none. */
static bool rules_current(unsigned long long gen)
{
	if (__atomic_load_n(&rules_gen, __ATOMIC_ACQUIRE) == gen)
		return true;
	if (!learn_begin())
		return false; /* a learner is inside; this walk goes without the rules */
	if (rules_gen != gen) {
		if (rules)
			rules_replace(rules, rules->mask + 1, false);
		__atomic_store_n(&rules_gen, gen, __ATOMIC_RELEASE);
	}
	learn_end();
	return true;
}

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

/* A walk's outcome. WALK_ON only between frames: one step taken, the walk goes on. */
enum walk { WALK_DONE, WALK_MISS, WALK_SLOW, WALK_NEW, WALK_LEARN, WALK_ON };

/* A frame-pointer frame's two words [a, a + 16) lie in [lo, hi), aligned. */
static inline bool readable(uintptr_t a, uintptr_t lo, uintptr_t hi)
{
	return a >= lo && a < hi && hi - a >= 16 && !(a & 7);
}

/* The rule for the frame at cursor c, whose caller is at next (already stepped). */
static uint64_t derive(uintptr_t ip, uintptr_t sp, uintptr_t bp, unw_cursor_t *next)
{
	unw_word_t nip, cfa, nbp;
	unw_save_loc_t loc;

	if (unw_get_reg(next, UNW_REG_IP, &nip) || unw_get_reg(next, UNW_REG_SP, &cfa) ||
	    unw_get_reg(next, UNW_X86_64_RBP, &nbp) || unw_get_save_loc(next, UNW_X86_64_RBP, &loc))
		return RULE(RULE_SLOW, 0, 0);
	/* libunwind took the caller's %rbp from [bp] and its return address from [bp + 8]: a
	 * frame-pointer frame, whatever it says the caller's %rsp is (for code without unwind
	 * information, V8's builtins in node for one, its fallback says bp, where the CFA is bp + 16). */
	unw_save_loc_t ra;
	if (loc.type == UNW_SLT_MEMORY && loc.u.addr == bp && bp >= sp && bp - sp < (1u << 28) &&
	    !(bp & 7) && !unw_get_save_loc(next, UNW_REG_IP, &ra) && ra.type == UNW_SLT_MEMORY &&
	    ra.u.addr == bp + 8)
		return RULE(RULE_FP, 0, 0);
	if (cfa <= sp || cfa - sp >= (1u << 28) || ((cfa | sp) & 7) || ((uintptr_t *)cfa)[-1] != nip)
		return RULE(RULE_SLOW, 0, 0);
	if (bp + 16 == cfa && ((uintptr_t *)bp)[0] == nbp)
		return RULE(RULE_FP, 0, 0);
	if (loc.type == UNW_SLT_MEMORY && loc.u.addr >= sp && loc.u.addr < cfa &&
	    !(loc.u.addr & 7) && *(uintptr_t *)loc.u.addr == nbp)
		return RULE(RULE_SP, cfa - sp, cfa - loc.u.addr);
	if (nbp == bp)
		return RULE(RULE_SP, cfa - sp, 0);
	return RULE(RULE_SLOW, 0, 0);
}

/* One libunwind step from the frame at c: its rule. A frame that a signal interrupted (after)
 * is not at a call, so its address is no return address and gets no rule of its own. Code
 * without unwind information (JIT code: V8's, for one) is stepped by libunwind's fallback, the
 * frame-pointer chain, checking every address it reads with system calls (mincore, a write to a
 * pipe, a signal mask around each lookup: about 300 for one walk through node); where that step
 * was the frame-pointer rule, the address gets it, and the cached walk takes it again with no
 * system call, reading only inside the thread's stack, as it does every rule. Any other guess
 * (the end of the stack, say) held for this walk only. */
static uint64_t step_rule(unw_cursor_t *c, unw_cursor_t *next, uintptr_t ip, uintptr_t sp,
			  uintptr_t bp, int *step, bool *is_signal)
{
	unw_proc_info_t pi;
	bool signal = *is_signal = unw_is_signal_frame(c) > 0;
	bool described = unw_get_proc_info(c, &pi) == 0 && pi.start_ip <= ip && ip < pi.end_ip;

	*next = *c;
	*step = unw_step(next);
	if (*step < 0 || signal)
		return RULE(RULE_SLOW, 0, 0);
	if (!described) {
		uint64_t r = *step > 0 ? derive(ip, sp, bp, next) : 0;
		return RULE_KIND(r) == RULE_FP ? r : RULE(RULE_SLOW, 0, 0);
	}
	return *step == 0 ? RULE(RULE_END, 0, 0) : derive(ip, sp, bp, next);
}

/* libunwind's walk from the top, step by step, teaching the cache what it finds. For a thread
 * whose stack top is not known yet, or a walk that left the known stack. */
static int walk_learn(unw_context_t *uc, uint64_t *buf, int max)
{
	unw_cursor_t c, next;
	unw_word_t ip, sp, bp;
	bool learn = learn_begin(), after_signal = false;
	int n = 0, s;

	if (unw_init_local(&c, uc) < 0)
		goto out;
	while (n < max) {
		if (unw_get_reg(&c, UNW_REG_IP, &ip) || unw_get_reg(&c, UNW_REG_SP, &sp) ||
		    unw_get_reg(&c, UNW_X86_64_RBP, &bp) || ip == 0)
			break;
		buf[n++] = ip;
		bool signal;
		uint64_t rule = step_rule(&c, &next, ip, sp, bp, &s, &signal);
		if (learn && !after_signal)
			rule_add(ip, rule);
		if (s == 0)
			stack_top = sp;
		if (s <= 0)
			break;
		after_signal = signal;
		c = next;
	}
out:
	if (learn)
		learn_end();
	return n;
}

/* The frame at (ip, sp, bp) has no rule: one libunwind step from a context that holds these
 * registers (the others are the capture's own; a rule only involves these three). */
static uint64_t learn_frame(const unw_context_t *uc, uintptr_t ip, uintptr_t sp, uintptr_t bp)
{
	unw_context_t at = *uc;
	unw_cursor_t c, next;
	bool signal;
	int s;

	at.uc_mcontext.gregs[REG_RIP] = (greg_t)ip;
	at.uc_mcontext.gregs[REG_RSP] = (greg_t)sp;
	at.uc_mcontext.gregs[REG_RBP] = (greg_t)bp;
	if (unw_init_local(&c, &at) < 0)
		return RULE(RULE_SLOW, 0, 0);
	uint64_t rule = step_rule(&c, &next, ip, sp, bp, &s, &signal);
	if (learn_begin()) {
		rule_add(ip, rule);
		learn_end();
	}
	return rule;
}

/* libunwind's work (a walk from the top, or one step to learn a rule) runs on a stack of its
 * own: a DWARF lookup and the dynamic linker's lazy binding of libunwind take 8 to 11 KiB, more
 * than a thread with a 16 KiB stack has left at depth (tests/preload/smallstack.c crashed on
 * its guard page 15 times in 30). The cursor only reads the program's stack, from the context
 * captured on it, so it can run anywhere. One stack for the process, taken with a try-lock: a
 * thread that finds it taken works in place, as it would have without it. It is never waited
 * for, since its holder may be waiting for the loader lock that the waiter holds. */
#define ALT_STACK_SIZE ((size_t)256 << 10)

void lk_on_stack(void *top, void (*fn)(void *), void *arg);
__asm__(".text\n"
	".globl lk_on_stack\n"
	".hidden lk_on_stack\n"
	".type lk_on_stack, @function\n"
	"lk_on_stack:\n" /* rdi: the new stack's top (16-aligned), rsi: fn, rdx: arg */
	"	.cfi_startproc\n"
	"	push %rbp\n"
	"	.cfi_def_cfa_offset 16\n"
	"	.cfi_offset %rbp, -16\n"
	"	mov %rsp, %rbp\n"
	"	.cfi_def_cfa_register %rbp\n"
	"	mov %rdi, %rsp\n"
	"	mov %rdx, %rdi\n"
	"	call *%rsi\n"
	"	mov %rbp, %rsp\n"
	"	pop %rbp\n"
	"	.cfi_def_cfa %rsp, 8\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size lk_on_stack, .-lk_on_stack\n");

static uint8_t *alt_stack; /* ALT_STACK_SIZE, the lowest page a guard; NULL until first used */

struct unwind_job {
	const unw_context_t *uc;
	uint64_t *buf;
	int max, n;             /* walk: frames wanted, frames found */
	uintptr_t ip, sp, bp;   /* step: the frame */
	uint64_t rule;          /* step: its rule */
	bool walk;
};

static void unwind_job_run(void *arg)
{
	struct unwind_job *j = arg;

	if (j->walk)
		j->n = walk_learn((unw_context_t *)j->uc, j->buf, j->max);
	else
		j->rule = learn_frame(j->uc, j->ip, j->sp, j->bp);
}

static void run_unwinder(struct unwind_job *j)
{
	if (__atomic_exchange_n(&alt_busy, 1, __ATOMIC_ACQUIRE)) {
		unwind_job_run(j);
		return;
	}
	if (!alt_stack) {
		uint8_t *p = mmap(NULL, ALT_STACK_SIZE, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
		if (p != MAP_FAILED && mprotect(p, 4096, PROT_NONE) == 0)
			alt_stack = p;
		else if (p != MAP_FAILED)
			munmap(p, ALT_STACK_SIZE);
	}
	if (alt_stack)
		lk_on_stack(alt_stack + ALT_STACK_SIZE, unwind_job_run, j);
	else
		unwind_job_run(j);
	__atomic_store_n(&alt_busy, 0, __ATOMIC_RELEASE);
}

/* Where a walk is: the frame at (ip, sp, bp), frame k of the stack (buf[k] = ip). */
struct cursor {
	uintptr_t ip, sp, bp;
	int k;
};

/* ---- the previous walk ----
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
 * the stack top. With the same rule table (a new one whenever rules are forgotten, rules_replace)
 * and the same stack top, a step from the same state by the same rule reads the same addresses,
 * and equal words there give the same caller: the shortcut cannot change a stack
 * (tests/preload/unwind.c: twin callers, and two callers that put one frame-pointer frame at the
 * same %rsp with a different %rbp). Every word it reads lies between the meeting frame's %rsp
 * and the stack top, as the walk's own reads do.
 *
 * The last walks live in slots chosen by thread id and taken with a try-lock, so that a thread
 * that exits leaves nothing behind and two threads sharing a slot cost a shortcut, never a wrong
 * frame. Thread-local storage would come out of every thread's stack (glibc places static TLS
 * there). */
#define MEMO_FRAMES 64
#define MEMO_SLOTS 64
#define MEMO_WALKS 32     /* walks kept a thread (32: a find's candidates are a 32-bit mask) */

struct memo_frame {
	uintptr_t ip, sp, bp; /* the frame's state */
	uint64_t rule;        /* ip's */
};

/* A kept walk as a find reads it: one cache line (docs/performance.md, "The kept walks' keys").
 * The words the walk read (its checks: memo_key_fill) are not kept, only where they are, in words
 * from the first frame's %rsp, and one sum of what they held and of what the walk was taken
 * under (sum_step). A find reads them only for a first frame at the same depth below this
 * thread's stack top: where the walk read them, if the top is the same, and below the top. */
#define KEY_OFFS 22
#define KEY_WALK 0x3f /* wf: the walk in w[] */
enum { KEY_BP = 0x40, KEY_CUT = 0x80 };
struct __attribute__((aligned(64))) memo_key {
	uint64_t sum;         /* of the rules, the thread, its stack top, f[0]'s ip, %rsp and %rbp
			       * (KEY_BP), and the words (sum_step) */
	uint32_t depth;       /* the stack top then, less f[0]'s %rsp: a find reads the words of a
			       * key of its own depth only, where the walk read them if the top is
			       * the same, and below the top in any case */
	uint32_t id;          /* its stack's number, once interned (lk_stack_learned); 0 */
	uint16_t early;       /* the sum's top 16 bits after 4 words (memo_holds) */
	uint8_t nw;           /* words: more than KEY_OFFS, and the offsets are the walk's */
	uint8_t wf;           /* the walk's index (KEY_WALK); KEY_BP: the first frame's %rbp counts;
			       * KEY_CUT: the stack was cut at LEEK_MAX_FRAMES, a loss counted at
			       * each use */
	uint16_t off[KEY_OFFS]; /* in words from f[0]'s %rsp, ascending */
};
_Static_assert(sizeof(struct memo_key) == 64, "a key is one cache line");
_Static_assert(MEMO_WALKS + 2 <= KEY_WALK + 1, "a walk's index fits wf");

/* One walk: its frames and what they were taken under, for the next walk to follow
 * (walk_cached), and the offsets of a key too wide for its line. */
struct memo_walk {
	uintptr_t hi;          /* that thread's stack top then */
	const struct rules *t; /* the rules it went by */
	uint32_t tid;          /* whose */
	bool whole;            /* f holds all of it, and its last frame is where the stack ends */
	int8_t pos;            /* the cache position that holds it, or -1 */
	uint32_t n;            /* frames in f: the walk's first ones */
	struct memo_frame f[MEMO_FRAMES + 1]; /* + the end: a frame with %rsp UINTPTR_MAX */
	uint16_t offs[2 * MEMO_FRAMES];       /* a return address a frame, a %rbp an FP one */
};

struct memo {
	int busy;                 /* try-lock */
	uint8_t last;             /* the walk to follow: the last one taken or found */
	uint8_t spare;            /* the walk the next one records into */
	uint8_t used;             /* walks handed out so far: w[0, used) */
	int8_t pending;           /* the cache position of the walk whose id is to be learned, or -1 */
	uint8_t hand;             /* the position the next walk kept takes (first in, first out) */
	uint8_t at[MEMO_WALKS];   /* the cache: at each position a walk's index + 1, or 0 */
	/* At each position, the tag of its walk's first frame (memo_tag): the line a find reads
	 * first, every time, so the one most likely to be in the cache. */
	uint16_t tags[MEMO_WALKS] __attribute__((aligned(64)));
	struct memo_key key[MEMO_WALKS]; /* at each position, its walk's key */
	struct memo_walk w[MEMO_WALKS + 2]; /* the cache's, the last if it is not cached, a spare */
};

static const struct memo_frame memo_none = { .sp = UINTPTR_MAX }; /* a walk of no frames */

static struct memo memos[MEMO_SLOTS] __attribute__((aligned(64)));

/* Moves c to its caller by rule r (WALK_ON), or says why not: WALK_DONE where the stack ends (r
 * is RULE_END), else the walk to take instead. The walk reads only inside [sp, hi): hi is the
 * thread's stack top. */
static inline enum walk step_by(uint64_t r, struct cursor *c, uintptr_t hi)
{
	uintptr_t cfa, ra;

	if (lk_likely(RULE_KIND(r) == RULE_SP)) { /* most frames of distribution code */
		/* off and rbp_off are multiples of 8 with 0 < rbp_off <= off (derive), so both
		 * words read lie in [sp, cfa): only the top needs a check. */
		cfa = c->sp + RULE_OFF(r);
		if (cfa > hi)
			return WALK_MISS;
		ra = ((uintptr_t *)cfa)[-1];
		if (RULE_RBP(r))
			c->bp = *(uintptr_t *)(cfa - RULE_RBP(r));
	} else if (RULE_KIND(r) == RULE_FP) {
		cfa = c->bp + 16;
		if (!readable(c->bp, c->sp, hi))
			return WALK_MISS;
		ra = ((uintptr_t *)c->bp)[1];
		c->bp = ((uintptr_t *)c->bp)[0];
	} else {
		return RULE_KIND(r) == RULE_END ? WALK_DONE : WALK_SLOW;
	}
	c->ip = ra;
	c->sp = cfa;
	return WALK_ON;
}

/* The cached walk from c, up to max frames: WALK_DONE with c->k frames in buf, or what to do
 * instead. At a frame without a rule it stops there: WALK_LEARN if the generation the rules were
 * checked against is a fresh one, so that the caller takes one libunwind step and goes on from
 * the cache; otherwise WALK_NEW, and the caller looks at the loader first (a return address never
 * seen may be in a library loaded since). With mo (the thread's memo, taken), it follows the
 * last walk where it meets it, and a walk that gets to its end is the one to follow next. */
static LK_HOT enum walk walk_cached(struct cursor *c, uint64_t *buf, int max, bool fresh,
				    struct memo *mo)
{
	const struct rules *t = __atomic_load_n(&rules, __ATOMIC_ACQUIRE);
	struct cursor at = *c; /* locals, which buf's stores cannot alias */
	uintptr_t hi = stack_top;
	enum walk w = WALK_DONE;

	if (!t || (at.k == 0 && at.sp >= hi)) /* a thread not walked yet, or a stack elsewhere */
		return WALK_MISS;
	const uint64_t *words = (const uint64_t *)t->slot, mask2 = t->mask << 1;
	const struct memo_frame *old = &memo_none;
	struct memo_frame *rec = NULL;
	uint32_t m = 0, j = 0;
	int nrec = 0;
	bool ended = false;
	if (mo) { /* this thread's, with the same rules, on the same stack */
		const struct memo_walk *lw = &mo->w[mo->last];
		m = lw->tid == lk_tls.tid && lw->t == t && lw->hi == hi ? lw->n : 0;
		old = m ? lw->f : &memo_none;
		rec = mo->w[mo->spare].f;
		nrec = MEMO_FRAMES;
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
			const struct memo_frame *f = old + j;
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
			if (j == last && (j + 1 < m || mo->w[mo->last].whole)) { /* max, or the end */
				ended = j + 1 == m;
				at.k++;
				break;
			}
		}
		/* The same address as the last walk's frame at this depth (the allocator's own
		 * wrappers, nearly always): its rule, without a lookup that the step must wait for. */
		uint64_t r = (uint32_t)at.k < m && old[at.k].ip == at.ip
				     ? old[at.k].rule
				     : rule_find(words, mask2, at.ip);
		buf[at.k] = at.ip;
		if (at.k < nrec)
			rec[at.k] = (struct memo_frame){ .ip = at.ip, .sp = at.sp, .bp = at.bp,
							 .rule = r };
		w = step_by(r, &at, hi); /* no rule (0) gets WALK_SLOW: below */
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
	if (mo && w == WALK_DONE) { /* the walk to follow next (memo_keep) */
		struct memo_walk *nw = &mo->w[mo->spare];
		nw->n = at.k < MEMO_FRAMES ? (uint32_t)at.k : MEMO_FRAMES;
		nw->f[nw->n].sp = UINTPTR_MAX;
		nw->whole = ended && at.k <= MEMO_FRAMES;
		nw->tid = lk_tls.tid;
		nw->hi = hi;
		nw->t = t;
	}
	*c = at;
	return w;
}

void lk_stack_atfork_child(void)
{
	learning = 0; /* their holders did not come along */
	alt_busy = 0;
	for (int i = 0; i < MEMO_SLOTS; i++) /* read first: a write would copy each slot's page */
		if (memos[i].busy)
			memos[i].busy = 0;
}

/* This thread's memo slot, taken for a capture (no lk_lock held); NULL if another thread has it
 * now (a walk without the shortcuts). busy is set under lk_lock, so that exact mode's common
 * sample, which holds lk_lock anyway, reads it with no atomic of its own (memo_take_locked). */
static struct memo *memo_take(void)
{
	struct memo *mo = &memos[lk_tls.tid & (MEMO_SLOTS - 1)];

	if (lk_single_threaded())
		return mo; /* no other thread to share it with, and never a signal handler (in_slow) */
	lk_lock();
	bool got = !__atomic_load_n(&mo->busy, __ATOMIC_ACQUIRE); /* memo_put stores it unlocked */
	if (got)
		__atomic_store_n(&mo->busy, 1, __ATOMIC_RELAXED);
	lk_unlock();
	return got ? mo : NULL;
}

/* This thread's memo slot for the length of a critical section of lk_lock, which the caller holds;
 * NULL if a capture has it. */
static struct memo *memo_take_locked(void)
{
	struct memo *mo = &memos[lk_tls.tid & (MEMO_SLOTS - 1)];

	/* never 1 while the process has one thread: memo_take */
	return __atomic_load_n(&mo->busy, __ATOMIC_ACQUIRE) ? NULL : mo;
}

static void memo_put(struct memo *mo)
{
	if (mo->busy)
		__atomic_store_n(&mo->busy, 0, __ATOMIC_RELEASE);
}

/* ---- the walks kept ----
 *
 * Most of a thread's samples come from a few call paths: sqlite3's exact-mode run of 20 000 rows
 * takes 0.6 million samples from 381 (first frame, stack) pairs, and the last 22 distinct ones
 * hold the next sample's 99.8% of the time. Its first frames are few too, but they name the path
 * less well than that: nearly every allocation comes through sqlite3MemMalloc, at one of a dozen
 * depths, and the commonest of those frames leads to 15 stacks. So each thread keeps its last 32
 * walks, whatever their first frames, with their stacks' numbers; a walk kept is found among the
 * ones that began at the same frame (by a tag of the first frame), and one whose every
 * word read is still what it was (as the previous walk's shortcut requires, above) is this
 * capture's: no step is taken, and the stack is not hashed or looked up. A new walk takes the
 * place of the oldest kept: first in, first out holds as many as least recently used does here
 * (99.87% at 32; tracing sqlite3's run, docs/performance.md), with no store at each find. One
 * walk kept a first frame, as before, held 48%: its other paths put each other out. */
static inline uint16_t memo_tag(uintptr_t sp, uintptr_t ip)
{
	return (uint16_t)(((sp ^ ip * 0x9e3779b97f4a7c15ull) * 0xc4ceb9fe1a85ec53ull) >> 48);
}

/* The positions whose tags are tag: the 32 tags compared at once (SSE2, x86-64's own). Another
 * first frame's walk passes with a chance of one in 65 536, and costs a sum. */
static inline uint32_t memo_candidates(const struct memo *mo, uint16_t tag)
{
	const __m128i *v = (const __m128i *)mo->tags, t = _mm_set1_epi16((short)tag);
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
 * differ and do not matter (see the previous walk, above), and a walk of such code checks no %rbp
 * at all. Every word lies in [f[0].sp, hi), as the walk's own reads did.
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
 * first and their sum's top 16 bits compared: a walk of another path from the same first frame parts
 * from this one within four words most often (sqlite3's: a third of the finds meets one). */
static inline bool memo_holds(const struct memo_key *key, const uint16_t *off, uintptr_t sp0,
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
	for (const uint16_t *end = off + nw; off < end; off += 2) { /* nw is even: memo_key_fill */
		a = sum_step(a, p[off[0]]);
		b = sum_step(b, p[off[1]]);
	}
	return sum_end(a, b) == key->sum;
}

struct memo_word {
	uintptr_t at;
	uint64_t want;
};

/* The next word of a key being filled: into the lanes in turn, as memo_holds reads them, and the
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
static bool memo_key_fill(struct memo_key *key, struct memo_walk *w, uint8_t wi, bool cut)
{
	const struct memo_frame *f = w->f;
	struct memo_word ck[2 * MEMO_FRAMES];
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
		ck[k++] = (struct memo_word){ cfa - 8, f[i + 1].ip };
		if (fp && from) {
			ck[k++] = (struct memo_word){ from, f[i].bp };
		} else if (fp) { /* the first reload is at a frame-pointer frame, so only once */
			bp_top = true;
			bp_want = f[i].bp;
		}
		if (off)
			from = cfa - off;
	}
	for (uint32_t i = 1; i < k; i++) /* nearly in order already: by frame */
		for (uint32_t j = i; j > 0 && ck[j - 1].at > ck[j].at; j--) {
			struct memo_word x = ck[j];
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
	if (nw & 1) { /* the last word again, so that memo_holds sums pairs with no branch for a
		       * last one alone (it mispredicted: keys of both kinds meet in turn) */
		w->offs[nw] = w->offs[nw - 1];
		key_add(&a, &b, &nw, &early, ck[k - 1].want);
	}
	*key = (struct memo_key){ .sum = sum_end(a, b), .depth = (uint32_t)(w->hi - sp0),
				  .early = early, .nw = (uint8_t)nw,
				  .wf = (uint8_t)(wi | (bp_top ? KEY_BP : 0) | (cut ? KEY_CUT : 0)) };
	if (nw <= KEY_OFFS)
		memcpy(key->off, w->offs, nw * sizeof(key->off[0]));
	return true;
}

/* The kept walk that this capture, from top, would take again: its key, or NULL. Only the keys'
 * lines are read (and the walk's offsets, for a key of more than KEY_OFFS words), and the words
 * of the stack: those the walk read, none above this thread's stack top. */
static LK_INLINE struct memo_key *memo_find_inline(struct memo *mo, const struct cursor *top)
{
	uint64_t depth = stack_top - top->sp, a = 0;

	for (uint32_t m = memo_candidates(mo, memo_tag(top->sp, top->ip)); m; m &= m - 1) {
		struct memo_key *key = &mo->key[__builtin_ctz(m)];
		if (key->depth != depth || !key->id) /* its words lie in [sp, sp + depth) */
			continue;
		const uint16_t *off = key->nw > KEY_OFFS ? mo->w[key->wf & KEY_WALK].offs : key->off;
		if (!a)
			a = sum_seed(__atomic_load_n(&rules, __ATOMIC_ACQUIRE), lk_tls.tid, stack_top,
				     top->ip, top->sp);
		if (memo_holds(key, off, top->sp, a, sum_seed_bp(key->wf & KEY_BP, top->bp)))
			return key;
	}
	return NULL;
}

/* memo_find_inline out of line, for the capture; exact mode's common sample has it inline
 * (lk_stack_kept), in a frame that has saved the registers it needs already. */
static LK_NOINLINE struct memo_key *memo_find(struct memo *mo, const struct cursor *top)
{
	return memo_find_inline(mo, top);
}

/* A walk the cache does not hold and that is not mo->last nor `not`: the spare for the next
 * walk. */
static uint8_t memo_free_walk(struct memo *mo, uint8_t not)
{
	while (mo->used < MEMO_WALKS + 2) { /* one never handed out */
		uint8_t i = mo->used++;
		if (i != mo->last && i != not)
			return i;
	}
	for (uint8_t i = 0;; i++) /* there is one: MEMO_WALKS positions, the last and `not` */
		if (mo->w[i].pos < 0 && i != mo->last && i != not)
			return i;
}

/* The walk just recorded in the spare (walk_cached) becomes the last, and if it is whole it takes
 * the oldest kept walk's position, until its stack's number is learned (lk_stack_learned). */
static void memo_keep(struct memo *mo, const struct cursor *top, bool cut)
{
	uint8_t nw = mo->spare, old_last = mo->last;
	struct memo_walk *w = &mo->w[nw];
	struct memo_key key;

	w->pos = -1;
	mo->last = nw;
	mo->pending = -1;
	if (w->whole && w->n && memo_key_fill(&key, w, nw, cut)) {
		uint8_t pos = mo->hand, gone = mo->at[pos];
		mo->hand = (uint8_t)((pos + 1) % MEMO_WALKS);
		if (gone) /* never the spare, which the cache does not hold */
			mo->w[gone - 1].pos = -1;
		w->pos = (int8_t)pos;
		mo->key[pos] = key;
		mo->tags[pos] = memo_tag(top->sp, top->ip);
		mo->at[pos] = (uint8_t)(nw + 1);
		mo->pending = (int8_t)pos;
		if (gone) {
			mo->spare = gone - 1;
			return;
		}
	}
	mo->spare = mo->w[old_last].pos < 0 && old_last != nw ? old_last : memo_free_walk(mo, nw);
}

LK_HOT void lk_stack_learned(void *ticket, uint32_t id)
{
	struct memo *mo = ticket;

	if (!mo)
		return;
	if (mo->pending >= 0 && id)
		mo->key[mo->pending].id = id;
	mo->pending = -1;
	memo_put(mo);
}

/* The executable segment that holds the address at: [*lo, *hi). */
static void text_of(const void *at, uintptr_t *lo, uintptr_t *hi)
{
	struct dl_phdr_info info;

	if (!lk_object_of(at, &info))
		return;
	for (int i = 0; i < info.dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info.dlpi_phdr[i];
		uintptr_t start = info.dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) &&
		    (uintptr_t)at - start < ph->p_memsz) {
			*lo = start;
			*hi = start + ph->p_memsz;
		}
	}
}

/* libunwind checks an address it is unsure of by writing a byte from it into a pipe of its own
 * (x86_64/Ginit.c), and opens that pipe at its first use: descriptors 3 and 4 in a fresh
 * process. A program would find its first file on 5 instead of 3, and a daemon that closed every
 * descriptor and opened its own files on 3 and 4 would have libunwind read a byte of its input
 * and write bytes of memory into its file (or, after a failed read, close them and reopen the
 * pipe there; tests/preload/daemon.c). unwind-io.c points libunwind's pipe2, read, write and
 * syscall at functions that need no descriptor at all; where it cannot, a pipe that libunwind asks for (its
 * call returns into its code) is moved here above the descriptors programs use, as the
 * profile's is. Anyone else's call is the system call, untouched. */
static uintptr_t unwind_lo, unwind_hi; /* libunwind's code; set before its first pipe2 */

LK_EXPORT int pipe2(int fds[2], int flags)
{
	uintptr_t from = (uintptr_t)__builtin_return_address(0);
	int r = (int)syscall(SYS_pipe2, fds, flags);

	if (r == 0 && from - unwind_lo < unwind_hi - unwind_lo) {
		int saved = errno;
		for (int i = 0; i < 2; i++)
			fds[i] = lk_fd_raise(fds[i], flags & O_CLOEXEC);
		errno = saved;
	}
	return r;
}

/* One walk from the top now, on the thread that starts leek. libunwind is bound lazily (only
 * libleek is linked -z now), and the first call through each of its PLT slots runs the dynamic
 * linker's resolver, which saves the whole vector register state on the stack. Samples run
 * libunwind on the unwinder's own stack (run_unwinder), except a thread that finds that stack
 * taken, which works in place: binding the slots a walk uses here, once for the process, keeps
 * that case from binding them on a small thread stack. About 57 000 instructions at start-up.
 * Paths no walk here takes (signal frames, code without unwind information) may still bind
 * later. The rules it learns are dropped at the first capture (rules_gen). */
static __attribute__((noinline)) void warm_up(void)
{
	uint64_t buf[LK_CAPTURE_FRAMES];
	unw_context_t uc;

	get_context(&uc);
	walk_learn(&uc, buf, LK_CAPTURE_FRAMES);
}

int lk_stack_init(void)
{
	/* No register-state cache: libunwind guards its global one with a lock that it holds while
	 * calling dl_iterate_phdr, and a program's dl_iterate_phdr callback that allocates holds the
	 * loader lock while it waits for that one (tests/preload/dlopen.c). The per-IP trace cache
	 * behind unw_backtrace is per thread and stays on: measured, no slower. */
	text_of((const void *)(uintptr_t)lk_stack_init, &self_lo, &self_hi);
	text_of((const void *)(uintptr_t)unw_init_local, &unwind_lo, &unwind_hi);
	lk_unwind_io_init((const void *)(uintptr_t)unw_init_local);
	unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_NONE); /* libunwind's pipe opens */
	warm_up();
	return 0;
}

/* A multiply and an add a frame, in four lanes so that the multiplies do not wait on one another,
 * then the lanes and one mix for the table's low bits. The table compares whole stacks, so a
 * collision costs a probe, never a wrong id. */
static uint64_t hash_frames(const uint64_t *f, uint32_t n)
{
	const uint64_t K = 0xff51afd7ed558ccdull;
	uint64_t a = 0x9e3779b97f4a7c15ull ^ n, b = 0x6a09e667f3bcc909ull,
		 c = 0xbb67ae8584caa73bull, d = 0x3c6ef372fe94f82bull;
	uint32_t i = 0;

	for (; i + 4 <= n; i += 4) {
		a = (a + f[i]) * K;
		b = (b + f[i + 1]) * K;
		c = (c + f[i + 2]) * K;
		d = (d + f[i + 3]) * K;
	}
	for (; i < n; i++)
		a = (a + f[i]) * K;
	uint64_t h = ((a * K + b) * K + c) * K + d;
	h ^= h >> 32;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 29;
	return h; /* all of it: its low bits pick the table's slot */
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
		w = rules_current(gen) ? walk_cached(c, buf, cap, true, NULL) : WALK_SLOW;
	}
	while (w == WALK_LEARN) {
		/* A frame without a rule: one libunwind step learns it, from a context that holds
		 * the frame's three registers (learn_frame), and the walk goes on from the cache. */
		if (!have_uc) {
			get_context(&uc);
			have_uc = true;
		}
		struct unwind_job j = { .uc = &uc, .ip = c->ip, .sp = c->sp, .bp = c->bp };
		run_unwinder(&j);
		w = step_by(j.rule, c, stack_top);
		c->k++;
		if (w == WALK_ON)
			w = walk_cached(c, buf, cap, true, NULL);
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
	run_unwinder(&j);
	return j.n;
}

/* A kept walk found for this capture: it becomes the one to follow. Its stack's number, and in
 * *cut whether that stack was cut at LEEK_MAX_FRAMES (a loss the caller counts once the sample is
 * taken: lk_stack_count_cut). */
static inline uint32_t kept_taken(struct memo *mo, const struct memo_key *kept, bool *cut)
{
	mo->last = kept->wf & KEY_WALK;
	memo_put(mo);
	*cut = kept->wf & KEY_CUT;
	return kept->id;
}

LK_HOT void lk_stack_count_cut(void)
{
	__atomic_fetch_add(&lk_counters[LK_CNT_STACK_TRUNCATED], 1, __ATOMIC_RELAXED);
}

/* lk_stack_capture's first case alone, for exact mode's common sample (sampler.c), in two halves.
 * lk_stack_kept_ready, with no lock held: false when the capture has more to do first (rules to
 * forget, a fork pending at a look); a look at the loader that is due is taken here, as the
 * capture takes it. lk_stack_kept, under lk_lock: the number of the stack of a kept walk that
 * this capture would find, or 0 when it finds none. No frame is read but the hook's and the words
 * of the kept walk's checks; nothing else changes but the walk to follow. *cut: the stack was cut
 * at LEEK_MAX_FRAMES, not counted here (a sample that then goes to the capture would count it
 * twice). */
LK_HOT bool lk_stack_kept_ready(void)
{
	bool look;
	unsigned long long gen = lk_modules_gen(&look);

	if (lk_unlikely(look)) { /* one sample in LK_MODULES_LOOK_EVERY */
		if (!lk_loader_enter(false))
			return false;
		gen = lk_modules_refresh(false);
		lk_loader_exit();
	}
	return __atomic_load_n(&rules_gen, __ATOMIC_ACQUIRE) == gen;
}

LK_HOT uint32_t lk_stack_kept(const void *frame, bool *cut)
{
	const uintptr_t *fp = frame;
	const struct cursor top = { .ip = fp[1], .sp = (uintptr_t)(fp + 2), .bp = fp[0] };
	struct memo *mo = memo_take_locked();
	struct memo_key *kept = mo ? memo_find_inline(mo, &top) : NULL;

	return kept ? kept_taken(mo, kept, cut) : 0;
}

LK_HOT uint32_t lk_stack_capture(uint64_t *buf, uint32_t max, const void *frame, uint64_t *hash,
				 const uint64_t **frames, uint32_t *known, void **ticket)
{
	struct memo *mo = NULL;

	int cap = (int)(max + 8 < LK_CAPTURE_FRAMES ? max + 8 : LK_CAPTURE_FRAMES), n = 0, i = 0;
	/* The cached walk starts at the caller of the hook's frame, from that frame's saved %rbp
	 * and return address (libleek is built with frame pointers, and __builtin_frame_address
	 * gives a function one in any case): no register state to save, which cost a sample 6% of
	 * its time, and none of libleek's own frames to walk (docs/performance.md). */
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
	if (rules_current(gen)) {
		struct memo_key *kept = (mo = memo_take()) ? memo_find(mo, &top) : NULL;
		if (kept) {
			bool cut;
			if (entered)
				lk_loader_exit();
			*known = kept_taken(mo, kept, &cut);
			if (cut)
				lk_stack_count_cut();
			*frames = buf;
			*hash = 0;
			return 0;
		}
		w = walk_cached(&c, buf, cap, fresh, mo);
		if (mo && w != WALK_DONE) {
			memo_put(mo);
			mo = NULL;
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
		__atomic_fetch_add(&lk_counters[LK_CNT_STACK_TRUNCATED], 1, __ATOMIC_RELAXED);
	if (mo) { /* this walk is kept, its stack's number learned after the interning */
		memo_keep(mo, &top, cut);
		*ticket = mo;
	}
	/* The hash here, outside lk_lock, and its slot on its way into the cache: a slot in a table
	 * that is being replaced is a prefetch of nothing, never a fault. */
	*hash = hash_frames(*frames, k);
	uint64_t *slots = __atomic_load_n(&S.slots, __ATOMIC_RELAXED);
	uint32_t scap = __atomic_load_n(&S.slots_cap, __ATOMIC_RELAXED);
	if (slots)
		__builtin_prefetch(&slots[*hash & (scap - 1)]);
	return k;
}

/* Grows a mapping to at least `need` bytes (doubling); false when the kernel says no. */
static bool grow(void **p, size_t *cap_bytes, size_t need)
{
	size_t cap = *cap_bytes ? *cap_bytes : 65536;
	while (cap < need)
		cap *= 2;
	if (cap == *cap_bytes)
		return true;
	void *q = *p ? mremap(*p, *cap_bytes, cap, MREMAP_MAYMOVE)
		     : mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (q == MAP_FAILED)
		return false;
	*p = q;
	*cap_bytes = cap;
	return true;
}

/* A slot's value: the stack's number, and its hash's high half to tell most others apart. */
static inline uint64_t slot_of_stack(uint64_t hash, uint32_t id)
{
	return (hash >> 32) << 32 | id;
}

static bool rehash(uint32_t cap)
{
	uint64_t *slots = mmap(NULL, (size_t)cap * 8, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (slots == MAP_FAILED)
		return false;
	for (uint32_t id = 1; id <= S.count; id++) {
		uint32_t j = (uint32_t)S.ents[id].hash & (cap - 1);
		while (slots[j])
			j = (j + 1) & (cap - 1);
		slots[j] = slot_of_stack(S.ents[id].hash, id);
	}
	if (S.slots)
		munmap(S.slots, (size_t)S.slots_cap * 8);
	S.slots = slots;
	S.slots_cap = cap;
	return true;
}

LK_HOT uint32_t lk_stack_intern(const uint64_t *frames, uint32_t n, uint64_t h)
{
	uint32_t id = 0;

	if (n == 0) {
		lk_counters[LK_CNT_UNWIND_FAILED]++;
		return 0;
	}
	if (S.slots_cap) {
		uint32_t mask = S.slots_cap - 1;
		uint64_t v;
		for (uint32_t j = (uint32_t)h & mask; (v = S.slots[j]); j = (j + 1) & mask) {
			if (v >> 32 != h >> 32)
				continue;
			struct entry *e = &S.ents[(uint32_t)v];
			if (e->hash == h && e->n == n && !memcmp(S.pool + e->off, frames, n * 8))
				return (uint32_t)v;
		}
	}
	int saved = errno; /* a new stack: the tables may grow (mmap, mremap) */
	size_t ents_bytes = (size_t)S.ents_cap * sizeof(struct entry);
	size_t pool_bytes = S.pool_cap * 8;
	if (S.count + 1 >= MAX_STACKS || S.pool_len + n > MAX_POOL ||
	    !grow((void **)&S.ents, &ents_bytes, (S.count + 2) * sizeof(struct entry)) ||
	    !grow((void **)&S.pool, &pool_bytes, (S.pool_len + n) * 8) ||
	    !grow((void **)&S.files, &S.files_bytes, (S.count + 2) * 8) ||
	    ((S.count + 1) * 2 >= S.slots_cap && !rehash(S.slots_cap ? S.slots_cap * 2 : 4096))) {
		lk_counters[LK_CNT_INTERN_FULL]++;
		errno = saved;
		return 0;
	}
	S.ents_cap = (uint32_t)(ents_bytes / sizeof(struct entry));
	S.pool_cap = pool_bytes / 8;
	id = ++S.count;
	S.ents[id] = (struct entry){ .hash = h, .off = S.pool_len, .n = n };
	memcpy(S.pool + S.pool_len, frames, n * 8);
	S.pool_len += n;
	uint32_t j = (uint32_t)h & (S.slots_cap - 1);
	while (S.slots[j])
		j = (j + 1) & (S.slots_cap - 1);
	S.slots[j] = slot_of_stack(h, id);
	errno = saved;
	return id;
}

/* A stack written to this file for the first time: its STACK record. */
static LK_COLD uint32_t file_id_new(uint32_t id)
{
	const struct entry *e = &S.ents[id];
	uint8_t rec[LK_STACK_MAX];
	uint64_t f = (uint64_t)S.gen << 32 | ++S.next_file_id;

	S.files[id] = f;
	lk_writer_put(rec, lk_rec_stack(rec, (uint32_t)f, S.pool + e->off, e->n));
	return (uint32_t)f;
}

LK_HOT LK_INLINE uint32_t lk_stack_file_id(uint32_t id)
{
	if (id == 0 || id > S.count)
		return 0;
	uint64_t f = S.files[id];
	if (f >> 32 != S.gen || (uint32_t)f == 0)
		return file_id_new(id);
	return (uint32_t)f;
}

void lk_stack_new_file(void)
{
	S.gen++;
	S.next_file_id = 0;
}
