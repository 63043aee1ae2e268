/* unwind-rules.c: the unwind-rule cache, learned from libunwind's own walks.
 *
 * libunwind interprets DWARF call-frame information at every step, which even with its per-thread
 * trace cache costs a capture many times what a few loads a frame do (docs/performance.md). This
 * file learns, from libunwind's own walks, one rule per return address: where the caller's frame
 * is and where its return address and %rbp were saved. A frame-pointer frame (CFA = %rbp + 16) is
 * walked by the chain, a frame without one by a fixed offset from %rsp, which is what DWARF says
 * for every call site of a function that uses no alloca. Once the addresses of a program's hot
 * stacks are known, a capture is one hash probe and two loads a frame (walk.c). An address
 * libunwind could not unwind, a signal trampoline, and every unknown address send the capture
 * back to libunwind; the walk reads only inside [%rsp, top of this thread's stack as libunwind
 * last found it], so a stale rule can cost a wrong stack but never a fault. Rules are forgotten
 * when a library is unloaded (its addresses may be reused by the next one).
 *
 * Readers take no lock. A slot is {ip, rule}, published ip first, then rule, and written once:
 * forgetting or growing builds a new table, and the old one's pages are given back to the kernel
 * but stay mapped, so a reader still in it sees zeros, which is a miss, never another slot's rule.
 * Writers (learning, forgetting, growing) hold `learning`, a try-lock: a thread that finds it
 * taken learns nothing this time.
 *
 * Never: wait for `learning`; run under lk_lock (libunwind calls dl_iterate_phdr, which takes the
 * loader's lock); allocate through libc; free a table (a reader may still be in it); grow past
 * RULES_MAX.
 */
#include <sys/mman.h>

#include "preload.h"
#include "unwind.h"

#define RULES_MIN 4096u
#define RULES_MAX (1u << 20)

struct rules *lk_rules;
static int learning;        /* writers' try-lock */
unsigned long long lk_rules_gen = ~0ull;
__thread uintptr_t lk_stack_top;

static inline uint32_t rule_hash(uint64_t ip, uint64_t mask)
{
	return (uint32_t)((ip * 0x9e3779b97f4a7c15ull) >> 40) & (uint32_t)mask;
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
	__atomic_store_n(&lk_rules, t, __ATOMIC_RELEASE);
	if (old)
		madvise(old, sizeof(*old) + (old->mask + 1) * sizeof(struct rule_slot), MADV_DONTNEED);
	return t;
}

static void rule_add(uint64_t ip, uint64_t rule)
{
	struct rules *t = lk_rules;

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
bool lk_rules_current(unsigned long long gen)
{
	if (__atomic_load_n(&lk_rules_gen, __ATOMIC_ACQUIRE) == gen)
		return true;
	if (!learn_begin())
		return false; /* a learner is inside; this walk goes without the rules */
	if (lk_rules_gen != gen) {
		if (lk_rules)
			rules_replace(lk_rules, lk_rules->mask + 1, false);
		__atomic_store_n(&lk_rules_gen, gen, __ATOMIC_RELEASE);
	}
	learn_end();
	return true;
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
int lk_rules_walk(unw_context_t *uc, uint64_t *buf, int max)
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
			lk_stack_top = sp;
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
uint64_t lk_rules_learn(const unw_context_t *uc, uintptr_t ip, uintptr_t sp, uintptr_t bp)
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

void lk_rules_atfork_child(void)
{
	learning = 0; /* its holder did not come along */
}
