/* stack.c: unwinding (libunwind) and stack interning.
 *
 * lk_stack_capture runs with no leek lock held, because libunwind calls dl_iterate_phdr, which
 * takes the loader's lock: a thread inside dlopen holds that lock and may be waiting for lk_lock in
 * malloc (docs/design.md, "Locks"). Interning runs under lk_lock. Each distinct stack is stored
 * once, in memory mapped here (never malloc), and written to each profile file once, the first time
 * a record of that file names it; file ids run from 1 in the order stacks are written, which is
 * what lets a forked child start a file of its own.
 *
 * Never: unwind under lk_lock; allocate through libc; grow without bound (the table stops at
 * MAX_STACKS and counts what it drops).
 */
#define UNW_LOCAL_ONLY
#include <errno.h>
#include <libunwind.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>

#include "preload.h"
#include "record.h"

#define MAX_STACKS (1u << 22)
#define MAX_POOL ((size_t)1 << 27) /* frames: 1 GiB */

struct entry {
	uint64_t hash;
	uint64_t off;       /* first frame in pool */
	uint32_t n;         /* frames */
	uint32_t file_id;   /* id in the current file, valid if file_gen matches */
	uint32_t file_gen;
	uint32_t unused;
};

static struct {
	struct entry *ents; /* by stack number, from 1 */
	uint32_t *slots;    /* open addressing: stack numbers, 0 = empty */
	uint64_t *pool;
	uint32_t count, ents_cap, slots_cap;
	size_t pool_len, pool_cap;
	uint32_t gen, next_file_id;
} S;

static uintptr_t self_lo, self_hi; /* libleek's own code: frames there are not the program's */

static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
	uintptr_t me = (uintptr_t)data;

	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && me - lo < ph->p_memsz) {
			self_lo = lo;
			self_hi = lo + ph->p_memsz;
			return 1;
		}
	}
	return 0;
}

int lk_stack_init(void)
{
	/* No register-state cache: libunwind guards its global one with a lock that it holds while
	 * calling dl_iterate_phdr, and a program's dl_iterate_phdr callback that allocates holds the
	 * loader lock while it waits for that one (tests/preload/dlopen.c). The per-IP trace cache
	 * behind unw_backtrace is per thread and stays on: measured, no slower. */
	unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_NONE);
	dl_iterate_phdr(find_self, (void *)(uintptr_t)lk_stack_init);
	return 0;
}

uint32_t lk_stack_capture(uint64_t *frames, uint32_t max)
{
	void *buf[LK_MAX_FRAMES + 8];
	int n = unw_backtrace(buf, (int)(max + 8 < LK_MAX_FRAMES + 8 ? max + 8 : LK_MAX_FRAMES + 8));
	int i = 0;
	uint32_t k = 0;

	while (i < n && (uintptr_t)buf[i] - self_lo < self_hi - self_lo)
		i++;
	for (; i < n && k < max; i++)
		frames[k++] = (uintptr_t)buf[i];
	if (i < n || n == LK_MAX_FRAMES + 8)
		__atomic_fetch_add(&lk_counters[LK_CNT_STACK_TRUNCATED], 1, __ATOMIC_RELAXED);
	return k;
}

static uint64_t hash_frames(const uint64_t *f, uint32_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n;

	for (uint32_t i = 0; i < n; i++) {
		h ^= f[i];
		h *= 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	return h | 1;
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

static bool rehash(uint32_t cap)
{
	uint32_t *slots = mmap(NULL, (size_t)cap * 4, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (slots == MAP_FAILED)
		return false;
	for (uint32_t id = 1; id <= S.count; id++) {
		uint32_t j = (uint32_t)S.ents[id].hash & (cap - 1);
		while (slots[j])
			j = (j + 1) & (cap - 1);
		slots[j] = id;
	}
	if (S.slots)
		munmap(S.slots, (size_t)S.slots_cap * 4);
	S.slots = slots;
	S.slots_cap = cap;
	return true;
}

uint32_t lk_stack_intern(const uint64_t *frames, uint32_t n)
{
	int saved = errno;
	uint32_t id = 0;

	if (n == 0) {
		lk_counters[LK_CNT_UNWIND_FAILED]++;
		return 0;
	}
	uint64_t h = hash_frames(frames, n);
	if (S.slots_cap) {
		for (uint32_t j = (uint32_t)h & (S.slots_cap - 1); S.slots[j]; j = (j + 1) & (S.slots_cap - 1)) {
			struct entry *e = &S.ents[S.slots[j]];
			if (e->hash == h && e->n == n && !memcmp(S.pool + e->off, frames, n * 8))
				return S.slots[j];
		}
	}
	size_t ents_bytes = (size_t)S.ents_cap * sizeof(struct entry);
	size_t pool_bytes = S.pool_cap * 8;
	if (S.count + 1 >= MAX_STACKS || S.pool_len + n > MAX_POOL ||
	    !grow((void **)&S.ents, &ents_bytes, (S.count + 2) * sizeof(struct entry)) ||
	    !grow((void **)&S.pool, &pool_bytes, (S.pool_len + n) * 8) ||
	    ((S.count + 1) * 4 >= S.slots_cap * 3 && !rehash(S.slots_cap ? S.slots_cap * 2 : 4096))) {
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
	S.slots[j] = id;
	errno = saved;
	return id;
}

uint32_t lk_stack_file_id(uint32_t id)
{
	if (id == 0 || id > S.count)
		return 0;
	struct entry *e = &S.ents[id];
	if (e->file_gen != S.gen || e->file_id == 0) {
		uint8_t rec[LK_STACK_MAX];
		e->file_id = ++S.next_file_id;
		e->file_gen = S.gen;
		lk_writer_put(rec, lk_rec_stack(rec, e->file_id, S.pool + e->off, e->n));
	}
	return e->file_id;
}

void lk_stack_new_file(void)
{
	S.gen++;
	S.next_file_id = 0;
}
