/* profile-live.c: the set of sampled blocks live at the current record, their sum H(t), the
 * estimated live heap (docs/sampling.md section 4, "Live bytes"), and the set as it was at one
 * marked moment (the heap's peak).
 *
 * Pass 2 of profile.c looks a block up here for every ALLOC and FREE, tens of millions of them in
 * an exact-mode profile, and the table of a large heap does not fit in the cache: this is the hot
 * spot of the aggregation. The blocks numbered among the newest 262 144 are kept by number in a
 * window of pages (recent.h): ALLOCs write one page after another, and most FREEs come while their
 * block is still there. That case, a block in a page of the window, is inline in
 * profile-internal.h (live_set_add, live_set_remove); the rest is here (live_set_add_slow,
 * live_set_remove_slow). A block still live when its page leaves the window moves to an array of
 * slots (freed slots reused last freed first) found through a table of its own rather than
 * u64map: 8-byte entries (a slot, and 32 bits of the block number's hash, which are the entry's
 * home and a filter, so that a probe reads a block only when the hashes match), a load of at
 * most 1/2, and deletion that shifts back the rest of the run (no tombstones). Memory follows
 * the most blocks live at once, plus the window (8 MiB at most), never the number of records;
 * the slots, the table and the blocks set aside at the mark are taken from the memory budget
 * (budget.h), and LK_PROFILE_MAX_LIVE bounds them whatever the budget.
 *
 * The mark remembers the set without copying it: each block carries the number of marks made
 * before it came (its epoch, in a field that only a free slot uses otherwise), so the blocks live
 * at the mark are the live ones of an epoch below the marks made, and those that have left since,
 * which are kept aside in `gone` (never more than were live at the mark). Numbers would not do:
 * a profile of thread segments hands its blocks out of order (read-merge.c).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "budget.h"
#include "profile-internal.h"

void live_set_init(struct live_set *ls, uint64_t period)
{
	*ls = (struct live_set){ .period = period };
	lk_recent_init(&ls->recent, sizeof(struct live_block));
}

void live_set_done(struct live_set *ls)
{
	lk_recent_done(&ls->recent);
	lk_budget_free(ls->e, ls->size * sizeof(*ls->e));
	lk_budget_free(ls->blocks, (size_t)ls->cap * sizeof(*ls->blocks));
	lk_budget_free(ls->gone, ls->gone_cap * sizeof(*ls->gone));
	ls->e = NULL;
	ls->blocks = NULL;
	ls->gone = NULL;
	ls->size = 0;
	ls->nold = 0;
}

/* w = 1/p and v1 = (1-p)/p^2, with 1 - p = exp(-s/T) taken directly rather than by
 * cancellation. p = 1 in double precision (s above about 37 T) adds no variance at all, as
 * section 4 says, and exact mode weighs 1 (section 6). Same w as lk_sample_weight(). */
struct live_weight live_weigh_sampled(uint64_t size, uint64_t period)
{
	double x, p;

	if (period <= 1 || size == 0)
		return (struct live_weight){ .w = 1.0, .v1 = 0.0 };
	x = (double)size / (double)period;
	p = -expm1(-x);
	if (p >= 1.0)
		return (struct live_weight){ .w = 1.0, .v1 = 0.0 };
	return (struct live_weight){ .w = 1.0 / p, .v1 = exp(-x) / (p * p) };
}

/* The entry of block number `block`, or the empty one where it would go (there is always one). */
static size_t find(const struct live_set *ls, uint64_t block, uint32_t h)
{
	size_t mask = ls->size - 1;

	for (size_t i = h & mask;; i = (i + 1) & mask) {
		const struct live_entry *x = &ls->e[i];
		if (!x->slot1 || (x->hash == h && ls->blocks[x->slot1 - 1].seq == block))
			return i;
	}
}

void live_set_drop_table(struct live_set *ls)
{
	lk_budget_free(ls->e, ls->size * sizeof(*ls->e));
	ls->e = NULL;
	ls->size = 0;
	ls->nold = 0;
}

/* Doubles the table (the load stays at most 1/2). */
static int grow_table(struct live_set *ls)
{
	size_t size = ls->size ? ls->size * 2 : 64, mask = size - 1;
	struct live_entry *e = lk_budget_calloc(size, sizeof(*e));

	if (!e)
		return -errno;
	for (size_t i = 0; i < ls->size; i++) {
		size_t j = ls->e[i].hash & mask;
		if (!ls->e[i].slot1)
			continue;
		while (e[j].slot1)
			j = (j + 1) & mask;
		e[j] = ls->e[i];
	}
	lk_budget_free(ls->e, ls->size * sizeof(*e));
	ls->e = e;
	ls->size = size;
	return 0;
}

static int grow_blocks(struct live_set *ls)
{
	uint32_t cap = ls->cap ? ls->cap * 2 : 1024;
	struct live_block *b;

	if (cap > LK_PROFILE_MAX_LIVE)
		cap = LK_PROFILE_MAX_LIVE;
	if (cap <= ls->cap)
		return -E2BIG;
	b = lk_budget_realloc(ls->blocks, (size_t)ls->cap * sizeof(*b), (size_t)cap * sizeof(*b));
	if (!b)
		return -errno;
	ls->blocks = b;
	ls->cap = cap;
	return 0;
}

/* Block number `block`, in slot1 - 1, into the table. */
static int table_put(struct live_set *ls, uint64_t block, uint32_t slot1)
{
	uint32_t h = live_hash(block);
	int r;

	if ((ls->nold + 1) * 2 > ls->size) {
		r = grow_table(ls);
		if (r < 0)
			return r;
	}
	ls->e[find(ls, block, h)] = (struct live_entry){ .slot1 = slot1, .hash = h };
	ls->nold++;
	return 0;
}

/* Where the table's lookup of block starts, asked of the cache ahead of to_table. */
static void table_hint(void *ctx, uint64_t block)
{
	live_table_prefetch(ctx, block);
}

/* A block into a slot of the array and the table: one that outlives the recent window
 * (struct lk_recent_evict's put), or one numbered behind it. */
static int to_table(void *ctx, uint64_t block, const void *elem)
{
	struct live_set *ls = ctx;
	uint32_t slot;
	int r;

	if (!ls->free_head && ls->used == ls->cap) {
		r = grow_blocks(ls);
		if (r < 0)
			return r;
	}
	slot = ls->free_head ? ls->free_head - 1 : ls->used;
	r = table_put(ls, block, slot + 1);
	if (r < 0)
		return r;
	if (ls->free_head)
		ls->free_head = ls->blocks[slot].next;
	else
		ls->used++;
	ls->blocks[slot] = *(const struct live_block *)elem;
	return 0;
}

/* Block number `block` out of the table: its slot + 1, or 0 if it is not there. */
static uint32_t table_remove(struct live_set *ls, uint64_t block)
{
	size_t mask = ls->size - 1, i, j;
	uint32_t slot1;

	if (!ls->size)
		return 0;
	i = find(ls, block, live_hash(block));
	slot1 = ls->e[i].slot1;
	if (!slot1)
		return 0;
	/* Backward shift: pull later members of the probe run into the hole, so that no lookup
	 * ever stops early at it (Knuth 6.4, algorithm R). */
	for (j = (i + 1) & mask; ls->e[j].slot1; j = (j + 1) & mask) {
		size_t h = ls->e[j].hash & mask;
		/* Move j to i unless its home lies cyclically in (i, j]. */
		if (i <= j ? (h <= i || h > j) : (h <= i && h > j)) {
			ls->e[i] = ls->e[j];
			i = j;
		}
	}
	ls->e[i].slot1 = 0;
	ls->nold--;
	return slot1;
}

int live_set_add_slow(struct live_set *ls, uint64_t block, uint64_t size, uint32_t stack,
		      int64_t t_ns)
{
	struct live_block b = { .seq = block, .size = size, .t_ns = t_ns, .stack = stack,
				.epoch = ls->marks };
	int r;

	if (block == 0) /* the reader numbers from 1; a free slot's seq is 0 */
		return -EBADMSG;
	if (ls->count >= LK_PROFILE_MAX_LIVE)
		return -E2BIG;
	r = lk_recent_add(&ls->recent, block, &b,
			  &(struct lk_recent_evict){ .hint = table_hint, .put = to_table, .ctx = ls });
	if (r == -ERANGE) /* behind the window: a thread segment's, handed out late */
		r = to_table(ls, block, &b);
	if (r < 0)
		return r;
	live_sum_add(ls, size);
	return 0;
}

bool live_set_remove_slow(struct live_set *ls, uint64_t block, struct live_block *ret)
{
	struct live_block b;
	int k = lk_recent_remove(&ls->recent, block, &b);
	uint32_t slot1 = 0;

	if (k == -ERANGE) {
		slot1 = table_remove(ls, block);
		if (!slot1)
			return false;
		b = ls->blocks[slot1 - 1];
		ls->blocks[slot1 - 1].seq = 0; /* free: live_set_foreach passes it by */
		ls->blocks[slot1 - 1].next = ls->free_head;
		ls->free_head = slot1;
	} else if (k == 0) {
		return false;
	}
	*ret = b;
	live_sum_remove(ls, &b);
	return true;
}

struct visit {
	const struct live_set *ls;
	void (*fn)(void *ctx, const struct live_block *b);
	void *ctx;
};

static void visit_recent(void *ctx, uint64_t block, const void *elem)
{
	struct visit *v = ctx;

	(void)block;
	v->fn(v->ctx, elem);
}

void live_set_foreach(const struct live_set *ls,
		      void (*fn)(void *ctx, const struct live_block *b), void *ctx)
{
	lk_recent_foreach(&ls->recent, visit_recent, &(struct visit){ ls, fn, ctx });
	/* The slots in their order, not the table's: a table entry's slot is anywhere in the array,
	 * and a million live blocks read that way would be a cache miss each (an exact profile of
	 * redis-server; bench/report-throughput.sh). Block numbers start at 1. */
	for (uint32_t i = 0; i < ls->used; i++)
		if (ls->blocks[i].seq)
			fn(ctx, &ls->blocks[i]);
}

/* Every block live at a mark came before it: epoch 0. The elements are the set's own, written
 * through a const pointer that lk_recent_foreach gives every visitor. */
static void restart_epoch(void *ctx, const struct live_block *b)
{
	(void)ctx;
	((struct live_block *)b)->epoch = 0;
}

int live_set_mark(struct live_set *ls)
{
	/* Every block live now may leave before the next mark: room for all of them. */
	if (ls->count > ls->gone_cap) {
		size_t cap = ls->gone_cap * 2 > ls->count ? ls->gone_cap * 2 : ls->count;
		struct live_gone *g = lk_budget_realloc(ls->gone, ls->gone_cap * sizeof(*g),
							cap * sizeof(*g));
		if (!g)
			return -errno;
		ls->gone = g;
		ls->gone_cap = cap;
	}
	ls->ngone = 0;
	if (ls->marks == UINT32_MAX) { /* once in 2^32 marks: the epochs start again */
		live_set_foreach(ls, restart_epoch, NULL);
		ls->marks = 0;
	}
	ls->marks++;
	return 0;
}
