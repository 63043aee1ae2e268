/* hooks.c: the exported malloc-family names, each one screen or less.
 *
 * The fast path of an allocating hook is one thread-local countdown and one predictable branch in
 * front of a call to the real allocator; the fast path of free is one range check. Everything else
 * (the first call of a thread, the next sample, leek switched off) lands in sampler.c through the
 * same branch, because the countdown is 0 or UINT64_MAX in those states.
 *
 * Never: change what the program sees. Arguments the sampled path cannot honour exactly (an
 * alignment that is not a power of two, an overflowing size) go to the real allocator untouched,
 * so its errno and return value are the program's.
 */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "preload.h"

/* C23 names that glibc 2.36 does not declare yet. */
void free_sized(void *p, size_t size);
void free_aligned_sized(void *p, size_t align, size_t size);

static inline bool pow2(size_t a)
{
	return a && !(a & (a - 1));
}

/* The slow halves are separate cold functions, so that the fast halves tail-call them and need
 * no stack frame of their own. */
static LK_COLD void *malloc_slow(size_t size)
{
	void *p = lk_sample(&lk_tls, size, 0, false, __builtin_frame_address(0));

	return p ? p : lk_real.malloc(size);
}

static LK_COLD void *calloc_slow(size_t n, size_t m, size_t size)
{
	void *p = size == SIZE_MAX ? NULL
				   : lk_sample(&lk_tls, size, 0, true, __builtin_frame_address(0));

	return p ? p : lk_real.calloc(n, m);
}

LK_EXPORT void *malloc(size_t size)
{
	struct lk_thread *t = &lk_tls;
	uint64_t left = t->bytes_left;

	if (lk_likely(size < left)) {
		t->bytes_left = left - size;
		return lk_real.malloc(size);
	}
	return malloc_slow(size);
}

LK_EXPORT void free(void *p)
{
	if (lk_unlikely(lk_arena_owns(p))) {
		lk_free_sampled(p);
		return;
	}
	lk_real.free(p);
}

LK_EXPORT void *calloc(size_t n, size_t m)
{
	struct lk_thread *t = &lk_tls;
	uint64_t left = t->bytes_left;
	size_t size;

	if (lk_unlikely(__builtin_mul_overflow(n, m, &size)))
		size = SIZE_MAX; /* never sampled: the real calloc reports the overflow */
	if (lk_likely(size < left)) {
		t->bytes_left = left - size;
		return lk_real.calloc(n, m);
	}
	return calloc_slow(n, m, size);
}

LK_EXPORT void *realloc(void *p, size_t size)
{
	struct lk_thread *t = &lk_tls;
	uint64_t left = t->bytes_left;

	if (lk_unlikely(lk_arena_owns(p)))
		return lk_realloc_slow(p, size);
	if (lk_likely(size < left)) {
		t->bytes_left = left - size;
		return lk_real.realloc(p, size);
	}
	return lk_realloc_slow(p, size);
}

LK_EXPORT void *reallocarray(void *p, size_t n, size_t m)
{
	size_t size;

	if (__builtin_mul_overflow(n, m, &size)) {
		if (lk_arena_owns(p) || !lk_real.reallocarray) {
			errno = ENOMEM;
			return NULL;
		}
		return lk_real.reallocarray(p, n, m);
	}
	return realloc(p, size);
}

/* The aligned family: sampled only for power-of-two alignments, which every allocator honours the
 * same way; anything else keeps the real allocator's own answer (EINVAL, rounding, NULL). */
static inline void *aligned_sample(size_t align, size_t size)
{
	struct lk_thread *t = &lk_tls;
	uint64_t left = t->bytes_left;

	if (lk_likely(size < left)) {
		t->bytes_left = left - size;
		return NULL;
	}
	return pow2(align) ? lk_sample(t, size, align, false, __builtin_frame_address(0)) : NULL;
}

LK_EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
	void *p = align % sizeof(void *) ? NULL : aligned_sample(align, size);

	if (!p)
		return lk_real.posix_memalign(out, align, size);
	*out = p;
	return 0;
}

LK_EXPORT void *aligned_alloc(size_t align, size_t size)
{
	void *p = aligned_sample(align, size);

	return p ? p : lk_real.aligned_alloc(align, size);
}

LK_EXPORT void *memalign(size_t align, size_t size)
{
	void *p = aligned_sample(align, size);

	return p ? p : lk_real.memalign(align, size);
}

LK_EXPORT void *valloc(size_t size)
{
	void *p = aligned_sample((size_t)getpagesize(), size);

	return p ? p : lk_real.valloc(size);
}

LK_EXPORT void *pvalloc(size_t size)
{
	size_t page = (size_t)getpagesize();
	size_t rounded = (size + page - 1) & ~(page - 1);
	void *p = size > SIZE_MAX - page ? NULL : aligned_sample(page, rounded ? rounded : page);

	return p ? p : lk_real.pvalloc(size);
}

LK_EXPORT size_t malloc_usable_size(void *p)
{
	if (lk_unlikely(lk_arena_owns(p)))
		return lk_arena_usable(p);
	return lk_real.malloc_usable_size ? lk_real.malloc_usable_size(p) : 0;
}

LK_EXPORT void free_sized(void *p, size_t size)
{
	if (lk_unlikely(lk_arena_owns(p))) {
		lk_free_sampled(p);
		return;
	}
	lk_real.free_sized(p, size);
}

LK_EXPORT void free_aligned_sized(void *p, size_t align, size_t size)
{
	if (lk_unlikely(lk_arena_owns(p))) {
		lk_free_sampled(p);
		return;
	}
	lk_real.free_aligned_sized(p, align, size);
}
