/* stack-table.c: each distinct stack stored once, by number, and written once to each file.
 *
 * A capture (stack.c) hashes its frames with no lock held (lk_stack_hash); interning runs under
 * lk_lock and gives the stack its number, which a block's header keeps in 20 bits. The frames go
 * into a pool and the stacks into an open-addressing table, all in memory mapped here and grown
 * by doubling. A stack is written to each profile file once, the first time a record of that file
 * names it: file ids run from 1 in the order stacks are written, which is what lets a forked child
 * (or a file begun again after it was cut) start a file of its own (lk_stack_new_file).
 *
 * Never: allocate through libc; grow without bound (the table stops at MAX_STACKS and MAX_POOL,
 * and counts what it drops); change errno; write a stack to a file twice.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

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
	bool files_whole;   /* files is reserved for MAX_STACKS at once, and never moves */
} stacks;

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

/* The hash here, outside lk_lock, and its slot on its way into the cache: a slot in a table that
 * is being replaced is a prefetch of nothing, never a fault. */
LK_HOT void lk_stack_hash(const uint64_t *frames, uint32_t n, uint64_t *hash)
{
	*hash = hash_frames(frames, n);
	uint64_t *slots = __atomic_load_n(&stacks.slots, __ATOMIC_RELAXED);
	uint32_t scap = __atomic_load_n(&stacks.slots_cap, __ATOMIC_RELAXED);
	if (slots)
		__builtin_prefetch(&slots[*hash & (scap - 1)]);
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
	for (uint32_t id = 1; id <= stacks.count; id++) {
		uint32_t j = (uint32_t)stacks.ents[id].hash & (cap - 1);
		while (slots[j])
			j = (j + 1) & (cap - 1);
		slots[j] = slot_of_stack(stacks.ents[id].hash, id);
	}
	if (stacks.slots)
		munmap(stacks.slots, (size_t)stacks.slots_cap * 8);
	stacks.slots = slots;
	stacks.slots_cap = cap;
	return true;
}

LK_HOT uint32_t lk_stack_intern(const uint64_t *frames, uint32_t n, uint64_t h)
{
	uint32_t id = 0;

	if (n == 0) {
		lk_counters[LK_CNT_UNWIND_FAILED]++;
		return 0;
	}
	if (stacks.slots_cap) {
		uint32_t mask = stacks.slots_cap - 1;
		uint64_t v;
		for (uint32_t j = (uint32_t)h & mask; (v = stacks.slots[j]); j = (j + 1) & mask) {
			if (v >> 32 != h >> 32)
				continue;
			struct entry *e = &stacks.ents[(uint32_t)v];
			if (e->hash == h && e->n == n &&
			    !memcmp(stacks.pool + e->off, frames, n * 8))
				return (uint32_t)v;
		}
	}
	int saved = errno; /* a new stack: the tables may grow (mmap, mremap) */
	if (!stacks.files) {
		/* files whole at once (8 MiB of address space, its pages touched as stacks come),
		 * so that exact mode's sample reads it with no lock (lk_stack_file_id_known); grown
		 * by doubling like the rest if the address space is that short. */
		size_t whole = (size_t)MAX_STACKS * 8;
		void *f = mmap(NULL, whole, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (f != MAP_FAILED) {
			stacks.files = f;
			stacks.files_bytes = whole;
			__atomic_store_n(&stacks.files_whole, true, __ATOMIC_RELEASE);
		}
	}
	size_t ents_bytes = (size_t)stacks.ents_cap * sizeof(struct entry);
	size_t pool_bytes = stacks.pool_cap * 8;
	if (stacks.count + 1 >= MAX_STACKS || stacks.pool_len + n > MAX_POOL ||
	    !grow((void **)&stacks.ents, &ents_bytes, (stacks.count + 2) * sizeof(struct entry)) ||
	    !grow((void **)&stacks.pool, &pool_bytes, (stacks.pool_len + n) * 8) ||
	    !grow((void **)&stacks.files, &stacks.files_bytes, (stacks.count + 2) * 8) ||
	    ((stacks.count + 1) * 2 >= stacks.slots_cap &&
	     !rehash(stacks.slots_cap ? stacks.slots_cap * 2 : 4096))) {
		lk_counters[LK_CNT_INTERN_FULL]++;
		errno = saved;
		return 0;
	}
	stacks.ents_cap = (uint32_t)(ents_bytes / sizeof(struct entry));
	stacks.pool_cap = pool_bytes / 8;
	id = ++stacks.count;
	stacks.ents[id] = (struct entry){ .hash = h, .off = stacks.pool_len, .n = n };
	memcpy(stacks.pool + stacks.pool_len, frames, n * 8);
	stacks.pool_len += n;
	uint32_t j = (uint32_t)h & (stacks.slots_cap - 1);
	while (stacks.slots[j])
		j = (j + 1) & (stacks.slots_cap - 1);
	stacks.slots[j] = slot_of_stack(h, id);
	errno = saved;
	return id;
}

/* A stack written to this file for the first time: its STACK record. */
static LK_COLD uint32_t file_id_new(uint32_t id)
{
	const struct entry *e = &stacks.ents[id];
	uint8_t rec[LK_STACK_MAX];
	uint64_t f = (uint64_t)stacks.gen << 32 | ++stacks.next_file_id;

	stacks.files[id] = f;
	lk_writer_put(rec, lk_rec_stack(rec, (uint32_t)f, stacks.pool + e->off, e->n));
	return (uint32_t)f;
}

/* lk_stack_file_id for a thread that holds no lock (exact mode's sample in a process with
 * threads: sampler.c's exact_own): the stack's id if this file has its record, else 0, and the
 * caller takes lk_lock to write it. `files` never moves once it is whole (files_whole), so a read
 * of it races with nothing but a store of one of its words. */
LK_HOT LK_INLINE uint32_t lk_stack_file_id_known(uint32_t id)
{
	if (!__atomic_load_n(&stacks.files_whole, __ATOMIC_ACQUIRE))
		return 0;
	uint64_t f = __atomic_load_n(&stacks.files[id], __ATOMIC_RELAXED);
	return f >> 32 == __atomic_load_n(&stacks.gen, __ATOMIC_RELAXED) ? (uint32_t)f : 0;
}

LK_HOT LK_INLINE uint32_t lk_stack_file_id(uint32_t id)
{
	if (id == 0 || id > stacks.count)
		return 0;
	uint64_t f = stacks.files[id];
	if (f >> 32 != stacks.gen || (uint32_t)f == 0)
		return file_id_new(id);
	return (uint32_t)f;
}

void lk_stack_new_file(void)
{
	stacks.gen++;
	stacks.next_file_id = 0;
}
