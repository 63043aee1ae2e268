/* unwind-altstack.c: libunwind's work runs on a stack of its own.
 *
 * libunwind's work (a walk from the top, or one step to learn a rule: unwind-rules.c) needs more
 * stack than a sample may find: a DWARF lookup and the dynamic linker's lazy binding of libunwind
 * take 8 to 11 KiB, more than a thread with a 16 KiB stack has left at depth
 * (tests/preload/smallstack.c crashed on its guard page without this). The cursor only reads the
 * program's stack, from the context captured on it, so it can run anywhere. One stack for the
 * process, ALT_STACK_SIZE with a guard page at its bottom, taken with a try-lock: a thread that
 * finds it taken works in place, as it would have without it. lk_on_stack is the trampoline: it
 * switches %rsp, calls, and switches back, with call-frame information that lets a walk (a
 * debugger's, or libunwind's own) go on from the new stack to the old one.
 *
 * Never: wait for the stack (its holder may be waiting for the loader lock that the waiter holds);
 * free it once made; run anything on it but an unwind_job.
 */
#include <sys/mman.h>

#include "preload.h"
#include "unwind.h"

#define ALT_STACK_SIZE ((size_t)256 << 10)

/* fn(arg) on the stack whose top is top. */
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
static int alt_busy;       /* its try-lock */

static void unwind_job_run(void *arg)
{
	struct unwind_job *j = arg;

	if (j->walk)
		j->n = lk_rules_walk((unw_context_t *)j->uc, j->buf, j->max);
	else
		j->rule = lk_rules_learn(j->uc, j->ip, j->sp, j->bp);
}

void lk_unwind_run(struct unwind_job *j)
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

void lk_unwind_atfork_child(void)
{
	alt_busy = 0; /* its holder did not come along */
}
