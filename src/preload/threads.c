/* threads.c: each thread's own record, once the process has threads.
 *
 * With one lock and one stream of records, exact mode on two threads cost 9 times its one-thread
 * cost a malloc+free pair: every record, every slot of the arena and every count moved between
 * the cores' caches. So a thread of a process with threads gets a record of its own (struct
 * lk_trec), where it keeps what a sample and its free change: its stretch of the profile
 * (writer-segment.c), its freed slots to hand out again (arena.c) and its counts. The common
 * sample and free of exact mode then take no lock (sampler.c), and store nothing that another
 * thread reads or writes but the block they hand over.
 *
 * The records live here, in a fixed table, not in the thread's TLS: a fork's child, a file begun
 * again and the SIGBUS handler find every thread's body through it, and TLS is gone once a thread
 * has exited. A thread takes one at its first sample after the process has had a second thread,
 * and gives it back at its exit, from a destructor of pthread_key_create: its body is ended, its
 * slots go back to their slabs and its counts to lk_counters, so that a thread that exits loses
 * nothing. A thread that leaves without destructors (a raw exit system call) keeps its record
 * taken; past LK_TRECS records, a thread works under lk_lock as in a process with one thread.
 *
 * Never: allocate (pthread_setspecific may, for a key past the first 32: its calloc comes back
 * here with in_slow up and goes to the real allocator); take a record for a thread of a process
 * that never had a second one (its samples are as cheap without, and its file stays one stream).
 */
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include "preload.h"

struct lk_trec lk_trecs[LK_TRECS];
static uint32_t trecs_seen; /* records ever taken: [0, trecs_seen) is what a walk looks at */
static pthread_key_t key;
static bool key_made, key_failed;

/* Under lk_lock: a record nobody holds, or NULL. */
static struct lk_trec *take(uint32_t tid)
{
	for (uint32_t i = 0; i < LK_TRECS; i++) {
		struct lk_trec *r = &lk_trecs[i];
		if (r->used)
			continue;
		*r = (struct lk_trec){ .used = 1, .tid = tid, .kept = lk_kept_own(i) };
		if (i >= trecs_seen)
			__atomic_store_n(&trecs_seen, i + 1, __ATOMIC_RELEASE);
		return r;
	}
	return NULL;
}

/* Under lk_lock: r's body ended, its slots and counts handed back, and r free again. */
static void give_back(struct lk_trec *r)
{
	lk_seg_end(r);
	lk_arena_give_back(r);
	lk_counters[LK_CNT_SAMPLES] += r->samples;
	lk_counters[LK_CNT_FREES] += r->frees;
	r->samples = r->frees = 0;
	r->used = 0;
}

/* The thread's exit (pthread's key destructor): nothing of its record is lost. Later destructors
 * that allocate find no record and take lk_lock. */
static void thread_exit(void *arg)
{
	struct lk_trec *r = arg;
	struct lk_thread *t = &lk_tls;
	uint8_t in_slow = t->in_slow;

	t->in_slow = 1;
	lk_lock();
	if (t->rec == r)
		give_back(r);
	lk_unlock();
	t->rec = NULL;
	t->rec_state = LK_REC_NEVER;
	t->in_slow = in_slow;
}

struct lk_trec *lk_trec_get(struct lk_thread *t)
{
	if (lk_likely(t->rec_state == LK_REC_OWN))
		return t->rec;
	/* Not before the thread is set up (thread_init: its tid and errno), as for a thread whose
	 * first call frees a block that another thread sampled. */
	if (t->rec_state == LK_REC_NEVER || lk_single_threaded() || !t->errno_at || !t->tid)
		return NULL;
	lk_lock();
	if (!key_made && !key_failed) {
		key_failed = pthread_key_create(&key, thread_exit) != 0;
		key_made = !key_failed;
	}
	struct lk_trec *r = key_made ? take(t->tid) : NULL;
	lk_unlock();
	/* Without its destructor the record would never come back: none, then. */
	if (r && pthread_setspecific(key, r) != 0) {
		lk_lock();
		r->used = 0;
		lk_unlock();
		r = NULL;
	}
	t->rec = r;
	t->rec_state = r ? LK_REC_OWN : LK_REC_NEVER;
	return r;
}

uint32_t lk_trecs_seen(void)
{
	return __atomic_load_n(&trecs_seen, __ATOMIC_ACQUIRE);
}

void lk_trecs_new_file(void)
{
	uint32_t n = __atomic_load_n(&trecs_seen, __ATOMIC_ACQUIRE);

	for (uint32_t i = 0; i < n; i++) {
		__atomic_store_n(&lk_trecs[i].samples, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&lk_trecs[i].frees, 0, __ATOMIC_RELAXED);
	}
}

void lk_counters_sum(uint64_t out[LK_CNT_MAX + 1])
{
	uint32_t n = __atomic_load_n(&trecs_seen, __ATOMIC_ACQUIRE);

	for (int i = 0; i <= LK_CNT_MAX; i++)
		out[i] = lk_counters[i];
	for (uint32_t i = 0; i < n; i++) {
		const struct lk_trec *r = &lk_trecs[i];
		if (!__atomic_load_n(&r->used, __ATOMIC_RELAXED))
			continue;
		out[LK_CNT_SAMPLES] += __atomic_load_n(&r->samples, __ATOMIC_RELAXED);
		out[LK_CNT_FREES] += __atomic_load_n(&r->frees, __ATOMIC_RELAXED);
	}
}

/* A fork's child has one thread, the one that forked, which gives its record back (its body,
 * the parent's file's, unmapped and unwritten), as the child has no other thread yet, and takes
 * one again once it has. The others' records go too. Their bodies are sound (they change under
 * lk_lock only, which the fork holds), but their lists may not be: their threads went on taking
 * and freeing during the fork. So the slots and runs on them stay where they are, marked in use
 * and freed (at most LK_ARENA_RECENT a class, and one run, a thread), and a block that a thread
 * was taking or freeing just then may be inherited live. The child's counts begin at zero, as
 * its file does. */
void lk_trecs_atfork_child(void)
{
	struct lk_trec *mine = lk_tls.rec;

	for (uint32_t i = 0; i < trecs_seen; i++) {
		struct lk_trec *r = &lk_trecs[i];
		if (!r->used)
			continue;
		lk_seg_drop(r);
		if (r == mine)
			lk_arena_give_back(r);
		*r = (struct lk_trec){ 0 };
	}
	lk_tls.rec = NULL;
	lk_tls.rec_state = LK_REC_NONE;
	lk_seg_atfork_child();
}
