/* probes.c: the semaphores of leek's USDT probes and the one argument that costs something to
 * compute (probes.h says what the probes are).
 *
 * Never: leave the program's MXCSR changed (its flags included), or call anything that allocates.
 */
#include "probes.h"

#ifndef LEEK_NO_USDT
#include <errno.h>
#include <math.h>

/* Raised by perf and bpftrace (the kernel's uprobe ref_ctr_offset) while they listen. */
__attribute__((section(".probes"), used)) volatile unsigned short leek_sample_semaphore;
__attribute__((section(".probes"), used)) volatile unsigned short leek_free_semaphore;

/* As the reader weighs a sample (docs/sampling.md): 1/p(size) allocations of size bytes, where
 * p(size) = 1 - exp(-size/T), computed as -expm1, which keeps its precision for size << T. Under
 * a protected MXCSR, as lk_rng_interval_rare is (rng.h): every exception masked while it runs,
 * the program's MXCSR, flags and all, put back. Only a listener pays for it (probes.h). */
LK_COLD uint64_t lk_probe_weight(uint64_t size)
{
	uint64_t period = lk_cfg.period;

	if (period <= 1 || !size)
		return size; /* exact mode: every allocation is its own sample */
	int saved = errno;
	unsigned csr = __builtin_ia32_stmxcsr();
	__builtin_ia32_ldmxcsr(csr | 0x1f80);
	double p = -expm1(-(double)size / (double)period);
	double w = p > 0 ? (double)size / p : (double)size;
	uint64_t v = w < 0x1p63 ? (uint64_t)(w + 0.5) : UINT64_MAX;
	__builtin_ia32_ldmxcsr(csr);
	errno = saved;
	return v;
}
#endif
