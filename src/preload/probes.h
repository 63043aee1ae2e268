/* probes.h: leek's USDT probes, leek:sample and leek:free (sys/sdt.h), for perf, bpftrace and any
 * other tool that reads a library's .note.stapsdt (docs/design.md, "USDT probes").
 *
 *   leek:sample (address, size, weight, stack id)  a sampled block that the profile records: the
 *       address the program got, the bytes it asked for, the bytes the sample stands for
 *       (size / p(size), as the reader weighs it: docs/sampling.md; size itself in exact mode) and
 *       the stack's id in the profile (its STACK record's)
 *   leek:free (address, size)                      a sampled block leaves the profile: freed, or
 *       realloc'ed (in place or not) by a call that ends its sample
 *
 * Each probe is guarded by its SDT semaphore, a counter that perf and bpftrace raise while they
 * listen: nobody listening costs a compare and a branch not taken, the probe's nop and the
 * arguments sit in a cold block, and the weight's expm1 runs only for a listener. Only on the slow
 * paths (sampler.c): an unsampled malloc or free never reaches them.
 *
 * Never: fire on a fast path, change errno or the MXCSR (lk_probe_weight), or allocate. Built
 * without sys/sdt.h, or with -Dusdt=disabled (LEEK_NO_USDT), every probe is nothing at all.
 */
#ifndef LEEK_PROBES_H
#define LEEK_PROBES_H

#include "preload.h"

#ifndef LEEK_NO_USDT
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

#pragma GCC visibility push(hidden)
/* The semaphores (probes.c), in .probes as dtrace -G puts them; a tool finds them by the address
 * in the probe's note, so they need no export. */
extern volatile unsigned short leek_sample_semaphore, leek_free_semaphore;

/* The bytes a sample of `size` bytes stands for: size / p(size), p = 1 - exp(-size/period). */
uint64_t lk_probe_weight(uint64_t size);
#pragma GCC visibility pop

/* leek:sample of the block b if the profile has its ALLOC (b->id, lk_writer_alloc), and leek:free
 * of b, whose sample ends: its FREE is being written. */
#define lk_probe_sample(b, stack_file_id)                                                          \
	do {                                                                                       \
		if (__builtin_expect(leek_sample_semaphore, 0) && (b)->id)                         \
			STAP_PROBE4(leek, sample, (uintptr_t)((b) + 1), (uint64_t)(b)->size,       \
				    lk_probe_weight((b)->size), (uint32_t)(stack_file_id));        \
	} while (0)
#define lk_probe_free(b)                                                                           \
	do {                                                                                       \
		if (__builtin_expect(leek_free_semaphore, 0))                                      \
			STAP_PROBE2(leek, free, (uintptr_t)((b) + 1), (uint64_t)(b)->size);        \
	} while (0)
#else
#define lk_probe_sample(b, stack_file_id) ((void)0)
#define lk_probe_free(b) ((void)0)
#endif

#endif
