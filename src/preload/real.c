/* real.c: finds the next allocator and learns what the program would see from it.
 *
 * Every function comes from dlsym(RTLD_NEXT, ...), so leek works in front of glibc and in front of
 * jemalloc, tcmalloc or mimalloc preloaded after it. A function that does not come from the same
 * object as the real malloc (Debian's jemalloc exports no pvalloc or reallocarray, so RTLD_NEXT
 * finds glibc's) would hand the program memory from a second heap; those are rebuilt here from the
 * malloc library's own functions instead. dlsym may call calloc (glibc: dlerror's buffer): the
 * hooks serve that from the arena's boot area, because lk_real is not ready yet.
 *
 * Never: call any lk_real function before lk_real_init has filled it in, or keep a function whose
 * object differs from malloc's.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

#include "preload.h"

/* Until lk_real_init runs, the entries that a hook can reach without passing the countdown (free
 * and malloc_usable_size take no sample) start leek first. */
static void boot_free(void *p)
{
	lk_init();
	lk_real.free(p);
}

static size_t boot_usable(void *p)
{
	lk_init();
	return lk_real.malloc_usable_size ? lk_real.malloc_usable_size(p) : 0;
}

static void boot_free_sized(void *p, size_t size)
{
	lk_init();
	lk_real.free_sized(p, size);
}

static void boot_free_aligned_sized(void *p, size_t align, size_t size)
{
	lk_init();
	lk_real.free_aligned_sized(p, align, size);
}

struct lk_real lk_real = {
	.free = boot_free,
	.malloc_usable_size = boot_usable,
	.free_sized = boot_free_sized,
	.free_aligned_sized = boot_free_aligned_sized,
};

/* ---- stand-ins built from the real allocator's own functions ---- */

/* n * m in *size, or false with errno ENOMEM when it overflows, as calloc and reallocarray fail. */
static bool product(size_t n, size_t m, size_t *size)
{
	if (!__builtin_mul_overflow(n, m, size))
		return true;
	errno = ENOMEM;
	return false;
}

static void *via_memalign_calloc(size_t n, size_t m)
{
	size_t size;

	if (!product(n, m, &size))
		return NULL;
	void *p = lk_real.malloc(size);
	if (p)
		memset(p, 0, size);
	return p;
}

static void *via_realloc_reallocarray(void *p, size_t n, size_t m)
{
	size_t size;

	return product(n, m, &size) ? lk_real.realloc(p, size) : NULL;
}

static void *via_posix_memalign_memalign(size_t align, size_t size)
{
	void *p = NULL;
	int r;

	if (align < sizeof(void *))
		align = sizeof(void *);
	r = lk_real.posix_memalign(&p, align, size);
	if (r) {
		errno = r;
		return NULL;
	}
	return p;
}

static int via_memalign_posix_memalign(void **out, size_t align, size_t size)
{
	if (align % sizeof(void *) || align & (align - 1))
		return EINVAL;
	int saved = errno;
	void *p = lk_real.memalign(align, size);
	if (!p) {
		int r = errno;
		errno = saved;
		return r ? r : ENOMEM;
	}
	*out = p;
	return 0;
}

static void *via_memalign_aligned_alloc(size_t align, size_t size)
{
	return lk_real.memalign(align, size);
}

static void *via_memalign_valloc(size_t size)
{
	return lk_real.memalign((size_t)getpagesize(), size);
}

static void *via_memalign_pvalloc(size_t size)
{
	size_t page = (size_t)getpagesize();
	size_t rounded;

	if (__builtin_add_overflow(size, page - 1, &rounded)) {
		errno = ENOMEM;
		return NULL;
	}
	rounded &= ~(page - 1);
	return lk_real.memalign(page, rounded ? rounded : page);
}

static void via_free_free_sized(void *p, size_t size)
{
	lk_real.free(p);
}

static void via_free_free_aligned_sized(void *p, size_t align, size_t size)
{
	lk_real.free(p);
}

static const void *object_of(const void *addr, const char **name)
{
	struct dl_phdr_info info;

	if (!lk_object_of(addr, &info))
		return NULL;
	if (name)
		*name = info.dlpi_name;
	return info.dlpi_phdr;
}

/* dlsym(RTLD_NEXT, name), kept only if it lives in the same object as the real malloc. */
static void *next(const char *name, const void *malloc_obj)
{
	void *f = dlsym(RTLD_NEXT, name);

	if (!f || !malloc_obj)
		return f;
	return object_of(f, NULL) == malloc_obj ? f : NULL;
}

int lk_real_init(void)
{
	const char *path = NULL;

	void *f = dlsym(RTLD_NEXT, "free");
	lk_real.malloc = dlsym(RTLD_NEXT, "malloc");
	if (!lk_real.malloc || !f)
		return -ENOSYS;
	lk_real.free = f;
	const void *obj = object_of((void *)lk_real.malloc, &path);
	lk_real.is_glibc = obj && path && strstr(path, "/libc.so");
	if (!next("free", obj))
		return -ENOSYS;
#define FIND(name, fallback)                                                                       \
	do {                                                                                       \
		*(void **)&lk_real.name = next(#name, obj);                                        \
		if (!lk_real.name)                                                                 \
			lk_real.name = fallback;                                                   \
	} while (0)
	FIND(realloc, NULL);
	FIND(posix_memalign, NULL);
	FIND(memalign, lk_real.posix_memalign ? via_posix_memalign_memalign : NULL);
	if (!lk_real.realloc || !lk_real.memalign)
		return -ENOSYS;
	FIND(posix_memalign, via_memalign_posix_memalign);
	FIND(calloc, via_memalign_calloc);
	FIND(reallocarray, via_realloc_reallocarray);
	FIND(aligned_alloc, via_memalign_aligned_alloc);
	FIND(valloc, via_memalign_valloc);
	FIND(pvalloc, via_memalign_pvalloc);
	FIND(malloc_usable_size, NULL);
	FIND(free_sized, via_free_free_sized);
	FIND(free_aligned_sized, via_free_free_aligned_sized);
	FIND(nallocx, NULL);
#undef FIND
	lk_real.glibc_sizes = lk_real.is_glibc && !lk_real.nallocx;

	/* What does realloc(p, 0) do here? glibc frees p and returns NULL; jemalloc may not. */
	void *p = lk_real.malloc(1);
	if (p) {
		void *q = lk_real.realloc(p, 0);
		lk_real.realloc_zero_frees = !q;
		if (q)
			lk_real.free(q);
	}
	return 0;
}

/* glibc's chunk arithmetic (malloc.c, 2.26 to 2.40): request2size, and musable() for heap and
 * mmapped chunks. Requests from 128 KiB (glibc's default mmap threshold) are assumed mmapped.
 * glibc's own answer also depends on the heap's state, which no arithmetic can follow: it raises
 * its mmap threshold itself when a mapped block is freed (then a 128 KiB block comes from the heap:
 * 131 080 usable, where this says 135 152), and an aligned chunk keeps a remainder too small to
 * split (aligned_alloc(32, 1): 56 usable, where this says 24). A sampled block is always given at
 * least what this says, and malloc_usable_size of it says the same, so a program that uses its
 * usable size stays in bounds; it may see a few bytes more or less than glibc would have said
 * (tests/preload: the glibc usable-size checks leave these cases out). */
static size_t glibc_usable(size_t size, size_t align)
{
	size_t nb = lk_glibc_chunk(size);

	if (size >= LK_GLIBC_MMAP_MIN && align <= 16) {
		size_t page = (size_t)getpagesize();
		return ((nb + 8 + page - 1) & ~(page - 1)) - 16;
	}
	return nb - 8;
}

/* nallocx's answer depends on the request alone, and exact mode asks for every allocation: the
 * small sizes' answers are kept (lk_real_usable_fast reads them), which took jemalloc's nallocx (a
 * share of redis-server's time in exact mode: docs/performance.md, "Exact mode on redis-server")
 * off the common sample. Threads that race store the same answer. Only nallocx's: glibc's is
 * arithmetic, and another allocator's malloc_usable_size of a probe block is not known to be the
 * same at every call. */
uint32_t lk_nallocx_small[LK_NALLOCX_SMALL + 1];

/* What malloc_usable_size would answer for this request without leek. The sampled block is given at
 * least that much room, so a program that uses its usable size (redis does) stays in bounds. */
LK_HOT size_t lk_real_usable(size_t size, size_t align)
{
	if (lk_real.nallocx) {
		int flags = align > 16 ? __builtin_ctzl(align) : 0; /* MALLOCX_LG_ALIGN */
		size_t u = lk_real.nallocx(size ? size : 1, flags);
		if (u >= size) {
			if (!flags && size <= LK_NALLOCX_SMALL && u <= UINT32_MAX)
				__atomic_store_n(&lk_nallocx_small[size], (uint32_t)u, __ATOMIC_RELAXED);
			return u;
		}
	}
	if (lk_real.is_glibc && size < SIZE_MAX / 2)
		return glibc_usable(size, align);
	if (lk_real.malloc_usable_size) {
		/* Unknown allocator: ask it, once per sample, at every size. mimalloc rounds a block
		 * over 1 MiB up by as much as a fifth (1 MiB + 1 -> 1.5 MiB) and has no nallocx; a large
		 * probe may cost an mmap, but a sample of that size is rare (about 2 per MiB), and the
		 * program's own call would have paid the same. */
		void *p = align > 16 ? lk_real.memalign(align, size) : lk_real.malloc(size);
		if (p) {
			size_t u = lk_real.malloc_usable_size(p);
			lk_real.free(p);
			if (u >= size)
				return u;
		}
	}
	return size;
}
