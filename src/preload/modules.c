/* modules.c: the loaded ELF objects, with their build-ids, written as MODULE and UNLOAD records.
 *
 * Symbolization happens offline (leek report), so the profile must say which file was mapped where,
 * and which build of it. A look at the loader asks dl_iterate_phdr for its adds/subs counters (one
 * callback, then stop: a tenth of a sample, most of it the loader's lock; bench/callgrind-real.sh);
 * only when they moved does it walk every object. A sample looks when a library may have come or
 * gone: when its stack holds a return address that the unwinder has no rule for yet (stack.c: code
 * that no earlier sample ran, such as a library loaded since), after a dlclose (loader.c), and
 * every LK_MODULES_LOOK_EVERY-th sample, for what neither shows (glibc's own unloading of iconv
 * modules, JIT code replaced by a library). The walk fills this file's table under its own mutex,
 * taken with trylock: a program's dl_iterate_phdr callback that allocates must never wait for us
 * while we wait for the loader lock it holds. The records are then written under lk_lock, never
 * while the loader lock is held by us.
 *
 * It also says which loaded object, and which of its executable segments, holds an address
 * (lk_object_of, lk_object_text: real.c, stack.c and unwind-io.c ask).
 *
 * Never: allocate (paths go to a fixed pool), call dl_iterate_phdr under lk_lock, block on the
 * table mutex from the sample path.
 */
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "preload.h"
#include "record.h"

#define MAX_MODULES 1024
#define POOL_SIZE (256u << 10)

struct module {
	uint64_t base;
	const void *phdr;  /* with base and the path: which object this is */
	uint32_t path_off, path_len;
	uint32_t id;       /* 0 = slot free */
	uint8_t seen, emitted, build_id_len, nseg;
	uint8_t build_id[LK_MAX_BUILD_ID];
	struct lk_module_seg seg[LK_MAX_SEGMENTS];
};

static pthread_mutex_t mods_lock = PTHREAD_MUTEX_INITIALIZER;
static struct module mods[MAX_MODULES];
static unsigned nmods; /* slots ever used: the loops stop here, so the pages of the table that
			* no module needs are never touched (the whole table is 352 KiB of RSS) */
static char pool[POOL_SIZE];
static uint32_t pool_len, next_id;
static unsigned long long seen_adds = ~0ull, seen_subs = ~0ull;
static unsigned long long last_gen = ~0ull; /* adds + subs at the last look; ~0: none yet */
/* This thread's samples since its last look: a count of each thread's own, as one count that
 * every thread stored to moved between the cores at each sample of exact mode on threads. */
static __thread unsigned samples_since;
static int moved;                            /* dlclose ran since the last look */
static char exe[LK_MAX_PATH];

struct counts {
	unsigned long long adds, subs;
};

static int first_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct counts *c = data;

	c->adds = info->dlpi_adds;
	c->subs = info->dlpi_subs;
	return 1;
}

static void read_build_id(struct module *m, const struct dl_phdr_info *info)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		const uint8_t *end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
			const uint8_t *name = p + sizeof(*n);
			const uint8_t *desc = name + ((n->n_namesz + 3) & ~3u);
			if (desc + n->n_descsz > end)
				break;
			if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && !memcmp(name, "GNU", 4) &&
			    n->n_descsz <= LK_MAX_BUILD_ID) {
				memcpy(m->build_id, desc, n->n_descsz);
				m->build_id_len = (uint8_t)n->n_descsz;
				return;
			}
			p = desc + ((n->n_descsz + 3) & ~3u);
		}
	}
}

static int walk_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	const char *name = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : exe;
	size_t len = strlen(name);
	struct module *free_slot = NULL;

	for (unsigned i = 0; i < nmods; i++) {
		struct module *m = &mods[i];
		if (!m->id) {
			free_slot = free_slot ? free_slot : m;
			continue;
		}
		if (m->base == info->dlpi_addr && m->phdr == info->dlpi_phdr && m->path_len == len &&
		    !memcmp(pool + m->path_off, name, len)) {
			m->seen = 1;
			return 0;
		}
	}
	if (!free_slot && nmods < MAX_MODULES)
		free_slot = &mods[nmods++];
	if (!free_slot || pool_len + len > POOL_SIZE) {
		lk_counters[LK_CNT_MODULES_DROPPED]++;
		return 0;
	}
	struct module *m = free_slot;
	memset(m, 0, sizeof(*m));
	m->base = info->dlpi_addr;
	m->phdr = info->dlpi_phdr;
	m->path_off = pool_len;
	m->path_len = (uint32_t)len;
	memcpy(pool + pool_len, name, len);
	pool_len += (uint32_t)len;
	for (int i = 0; i < info->dlpi_phnum && m->nseg < LK_MAX_SEGMENTS; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD)
			m->seg[m->nseg++] = (struct lk_module_seg){ ph->p_vaddr, ph->p_memsz };
	}
	read_build_id(m, info);
	m->id = ++next_id;
	m->seen = 1;
	return 0;
}

static void emit(struct module *m, uint64_t now)
{
	uint8_t rec[LK_MODULE_MAX];
	struct lk_module_info info = { .id = m->id, .base = m->base, .nseg = m->nseg,
				       .build_id_len = m->build_id_len, .path_len = m->path_len,
				       .path = pool + m->path_off };

	memcpy(info.seg, m->seg, sizeof(info.seg));
	memcpy(info.build_id, m->build_id, sizeof(info.build_id));
	lk_writer_put(rec, lk_rec_module(rec, lk_writer_dt(now), &info));
	m->emitted = 1;
}

/* Writes the modules this file lacks, in id order (readers require ids to increase). */
static void emit_pending(uint64_t now)
{
	for (uint32_t last = 0;;) {
		struct module *next = NULL;
		for (unsigned i = 0; i < nmods; i++)
			if (mods[i].id > last && !mods[i].emitted && (!next || mods[i].id < next->id))
				next = &mods[i];
		if (!next)
			return;
		emit(next, now);
		last = next->id;
	}
}

void lk_modules_moved(void)
{
	__atomic_store_n(&moved, 1, __ATOMIC_RELEASE);
}

LK_HOT unsigned long long lk_modules_gen(bool *look)
{
	unsigned long long gen = __atomic_load_n(&last_gen, __ATOMIC_ACQUIRE);
	unsigned k = ++samples_since;

	*look = gen == ~0ull || __atomic_load_n(&moved, __ATOMIC_ACQUIRE) ||
		k >= LK_MODULES_LOOK_EVERY;
	return gen;
}

unsigned long long lk_modules_refresh(bool force)
{
	struct counts c = { 0, 0 };

	samples_since = 0;
	__atomic_store_n(&moved, 0, __ATOMIC_RELEASE); /* before the look: a later dlclose shows */
	dl_iterate_phdr(first_cb, &c);
	__atomic_store_n(&last_gen, c.adds + c.subs, __ATOMIC_RELEASE);
	if (!force && c.adds == __atomic_load_n(&seen_adds, __ATOMIC_RELAXED) &&
	    c.subs == __atomic_load_n(&seen_subs, __ATOMIC_RELAXED))
		return c.adds + c.subs;
	if (pthread_mutex_trylock(&mods_lock))
		return c.adds + c.subs; /* another thread is at it: its next refresh has our frames */
	if (!exe[0])
		lk_proc_exe(exe, sizeof(exe));
	for (unsigned i = 0; i < nmods; i++)
		mods[i].seen = 0;
	dl_iterate_phdr(walk_cb, NULL);

	uint64_t now = lk_now_ns();
	lk_lock();
	/* A forked child's file opens at its first record, and opening writes every module. Open it
	 * here, before any record below is built: opened from inside emit(), it would write all the
	 * modules and then the one emit() was building, below the last id (and with a stale dt). */
	lk_writer_ready();
	for (unsigned i = 0; i < nmods; i++) {
		struct module *m = &mods[i];
		if (m->id && !m->seen) {
			uint8_t rec[LK_FREE_MAX];
			if (m->emitted)
				lk_writer_put(rec, lk_rec_pair(rec, LK_REC_UNLOAD, lk_writer_dt(now), m->id));
			m->id = 0;
		}
	}
	emit_pending(now);
	lk_unlock();
	__atomic_store_n(&seen_adds, c.adds, __ATOMIC_RELAXED);
	__atomic_store_n(&seen_subs, c.subs, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&mods_lock);
	return c.adds + c.subs;
}

/* A new file (a forked child's): every module again. Caller holds lk_lock. */
void lk_modules_emit_all(void)
{
	for (unsigned i = 0; i < nmods; i++)
		mods[i].emitted = 0;
	emit_pending(lk_now_ns());
}

void lk_modules_atfork(int phase)
{
	if (phase == LK_FORK_PREPARE)
		pthread_mutex_lock(&mods_lock);
	else if (phase == LK_FORK_PARENT)
		pthread_mutex_unlock(&mods_lock);
	else
		pthread_mutex_init(&mods_lock, NULL);
}

/* ---- which loaded object holds an address ----
 *
 * Its program headers (one table per object) and its path. dladdr would also say, but it looks for
 * the nearest symbol as well, by a walk over every symbol of the object, which made start-up many
 * times longer (bench/callgrind-real.sh, its start-up line). This walks the program headers of the
 * loaded objects, a few hundred instructions. */
struct owner {
	uintptr_t addr;
	struct dl_phdr_info *info;
	bool found;
};

static int owner_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct owner *o = data;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && o->addr - lo < ph->p_memsz) {
			*o->info = *info;
			o->found = true;
			return 1;
		}
	}
	return 0;
}

bool lk_object_of(const void *addr, struct dl_phdr_info *info)
{
	struct owner o = { (uintptr_t)addr, info, false };

	dl_iterate_phdr(owner_cb, &o);
	return o.found;
}

/* The executable segment that holds the address at: [*lo, *hi); left alone if there is none. */
void lk_object_text(const void *at, uintptr_t *lo, uintptr_t *hi)
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
