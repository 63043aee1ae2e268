/* read-chain.c: the segments of one rotated profile read as one timeline (docs/format.md,
 * "Rotated segments", "Reading a chain").
 *
 * lk_chain_find() finds the segments beside a file: NAME (segment 0) and NAME.segN[.M] that share
 * its session, pid and origin, ordered by segment. lk_reader_open_chain() makes a reader hand out
 * their records as the records of one profile: the first kept segment's header, times counted
 * from its start, and every number the segments restart (stacks, modules, blocks) mapped into one
 * series:
 *
 * - a later segment's STACK whose frames an earlier one defined is the earlier stack (and is not
 *   handed out again); a MODULE still loaded with the same base, path and build-id likewise;
 * - its INHERITs are the blocks live at the end of the segment before, and are not handed out:
 *   each is matched to one of them by size and stack (the one allocated at its alloc time if there
 *   is one: blocks of equal size and stack are interchangeable for every count), so the block
 *   keeps its ALLOC, and a FREE in the later segment frees it. An INHERIT that matches none (its
 *   ALLOC was lost) goes out as an INHERIT; a block live at a segment's end that the next one does
 *   not inherit is freed at the boundary by a FREE of no thread. Both are counted
 *   (struct lk_chain_stats), and are 0 in a chain that libleek wrote whole;
 * - LOSS and TRAILER counters count afresh in each segment: a segment's values are added to the
 *   last ones of the segments before it.
 * The first kept segment's INHERITs go out as they are: blocks allocated before the chain's
 * start, as a forked child's are.
 *
 * Never: print, or hold more than the live blocks, the stacks' frames and the loaded modules
 * (each of them is held by the profile too); a segment is opened only once the one before is read.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "read-internal.h"

#define NCOUNTERS 64 /* counter ids whose values are summed over segments (LK_CNT_MAX and more) */

struct live {
	uint64_t size, stack, t; /* t: CLOCK_MONOTONIC, absolute */
	uint64_t block;          /* the chain's number */
};

struct cand {
	uint64_t size, stack, t, block;
};

struct stack_def {
	uint64_t *frames;
	uint32_t n;
};

struct lk_chain {
	char **paths;
	size_t n, cur;
	uint32_t first;               /* segment number of paths[0] */
	struct lk_reader *sub;        /* the current segment's reader */
	uint64_t start0;              /* the first segment's start_monotonic_ns */
	uint64_t shift;               /* the current one's start - start0 */
	uint64_t last_time;           /* the last time handed out */
	uint64_t limit, whole;        /* lk_reader_follow(): for the newest segment */
	bool follow;

	/* Stacks: the current segment's id -> the chain's; the chain's by a hash of their frames. */
	struct lk_u64map stack_of, stack_by_hash;
	struct stack_def *stacks;     /* by the chain's id (0 unused) */
	size_t nstacks, stacks_cap;

	/* Modules: the current segment's id -> the chain's; loaded ones by a hash of their key. */
	struct lk_u64map module_of, module_by_hash;
	uint64_t nmodules;

	/* Blocks: the chain's number of a segment's block is base + its number, or the block it
	 * inherits (inherited: segment number -> chain number). */
	uint64_t base, top;           /* top: the highest segment number seen in this one */
	uint64_t inherited_top;       /* the highest segment number an INHERIT matched */
	struct lk_u64map inherited;
	struct lk_u64map live_at;     /* chain block -> index in live */
	struct live *live;            /* block 0: a free entry, its size the next free one + 1 */
	size_t nlive, live_cap, free_head; /* free_head: the first free entry + 1, or 0 */
	struct cand *cand;            /* the blocks live at the last boundary, sorted; taken ones */
	size_t *next_free;            /* point past themselves (a union-find of untaken entries) */
	size_t ncand;
	uint64_t *drop;               /* blocks to free at the boundary, not inherited */
	size_t ndrop, drop_at;
	bool checkpoint;              /* in a later segment's checkpoint (INHERITs to match) */
	struct lk_record pending;     /* read, to go out after the drops */
	bool has_pending;

	uint64_t base_counters[NCOUNTERS], last_counters[NCOUNTERS];
	struct lk_counter_value counters[LK_READ_MAX_COUNTERS];
	struct lk_chain_stats stats;
};

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static void chain_free(struct lk_chain *c)
{
	if (!c)
		return;
	lk_reader_free(c->sub);
	for (size_t i = 0; i < c->n; i++)
		free(c->paths[i]);
	free(c->paths);
	for (size_t i = 0; i < c->nstacks; i++)
		free(c->stacks[i].frames);
	free(c->stacks);
	lk_u64map_done(&c->stack_of);
	lk_u64map_done(&c->stack_by_hash);
	lk_u64map_done(&c->module_of);
	lk_u64map_done(&c->module_by_hash);
	lk_u64map_done(&c->inherited);
	lk_u64map_done(&c->live_at);
	free(c->live);
	free(c->cand);
	free(c->next_free);
	free(c->drop);
	free(c);
}

void lk_chain_release(struct lk_chain *c)
{
	chain_free(c);
}

static int fail(struct lk_reader *r, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->error, sizeof(r->error), fmt, ap);
	va_end(ap);
	r->err = err;
	r->state = ST_FAILED;
	return err;
}

static int fail_sub(struct lk_reader *r, int err)
{
	struct lk_chain *c = r->chain;
	const char *e = c->sub ? lk_reader_error(c->sub) : "";

	return fail(r, err, "%s: %s", c->paths[c->cur], *e ? e : strerror(-err));
}

/* ---- live blocks ---- */

static int live_add(struct lk_chain *c, uint64_t block, uint64_t size, uint64_t stack, uint64_t t)
{
	size_t i;
	int k;

	if (c->free_head) {
		i = c->free_head - 1;
		c->free_head = (size_t)c->live[i].size;
	} else {
		if (c->nlive == c->live_cap) {
			size_t cap = c->live_cap ? 2 * c->live_cap : 1024;
			struct live *l = reallocarray(c->live, cap, sizeof(*l));
			if (!l)
				return -ENOMEM;
			c->live = l;
			c->live_cap = cap;
		}
		i = c->nlive++;
	}
	c->live[i] = (struct live){ .size = size, .stack = stack, .t = t, .block = block };
	if ((k = lk_u64map_put(&c->live_at, block, i)) < 0) {
		c->live[i] = (struct live){ .size = c->free_head };
		c->free_head = i + 1;
	}
	return k;
}

/* One lookup a FREE: the entry goes to the free list, where no swap needs a second one. */
static void live_remove(struct lk_chain *c, uint64_t block)
{
	uint64_t i;

	if (!lk_u64map_remove(&c->live_at, block, &i))
		return;
	c->live[i] = (struct live){ .size = c->free_head };
	c->free_head = i + 1;
}

static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->size != y->size)
		return x->size < y->size ? -1 : 1;
	if (x->stack != y->stack)
		return x->stack < y->stack ? -1 : 1;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->block < y->block ? -1 : x->block > y->block;
}

/* The first untaken candidate at or after i (ncand if none). */
static size_t untaken(struct lk_chain *c, size_t i)
{
	size_t root = i;

	while (root < c->ncand && c->next_free[root] != root)
		root = c->next_free[root];
	while (i < c->ncand && c->next_free[i] != i) { /* path compression */
		size_t nx = c->next_free[i];
		c->next_free[i] = root;
		i = nx;
	}
	return root;
}

static size_t lower_bound(const struct lk_chain *c, uint64_t size, uint64_t stack, uint64_t t)
{
	size_t lo = 0, hi = c->ncand;
	struct cand key = { size, stack, t, 0 };

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (cand_cmp(&c->cand[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The live block an INHERIT of (size, stack, t) is: taken from the candidates, or 0. */
static uint64_t match(struct lk_chain *c, uint64_t size, uint64_t stack, uint64_t t)
{
	size_t at = untaken(c, lower_bound(c, size, stack, t));

	if (at == c->ncand || c->cand[at].size != size || c->cand[at].stack != stack) {
		/* none at or after t: the earliest untaken one of this size and stack */
		at = untaken(c, lower_bound(c, size, stack, 0));
		if (at == c->ncand || c->cand[at].size != size || c->cand[at].stack != stack)
			return 0;
	}
	c->next_free[at] = at + 1;
	return c->cand[at].block;
}

/* ---- segments ---- */

static int open_segment(struct lk_reader *r, size_t i)
{
	struct lk_chain *c = r->chain;
	const struct lk_profile_header *h;
	int k;

	lk_reader_free(c->sub);
	c->cur = i;
	if (!(c->sub = lk_reader_new()))
		return fail(r, -ENOMEM, "out of memory");
	k = 0;
	if (c->follow && i + 1 == c->n) {
		k = lk_reader_follow(c->sub, c->limit);
		lk_reader_follow_whole(c->sub, c->whole);
	}
	if (k >= 0)
		k = lk_reader_open(c->sub, c->paths[i]);
	if (k < 0)
		return fail_sub(r, k);
	h = lk_reader_header(c->sub);
	if (i == 0) {
		c->start0 = h->h.start_monotonic_ns;
		return 0;
	}
	if (h->h.start_monotonic_ns < c->start0)
		return fail(r, -EBADMSG, "%s: segment %u starts before segment %u", c->paths[i],
			    h->segment, c->first);
	c->shift = h->h.start_monotonic_ns - c->start0;
	return 0;
}

/* The end of a segment that another follows: its live blocks become the candidates that the next
 * one's INHERITs are matched to; the ones left from the boundary before are freed. */
static int next_segment(struct lk_reader *r)
{
	struct lk_chain *c = r->chain;

	free(c->cand);
	free(c->next_free);
	c->cand = malloc((c->nlive ? c->nlive : 1) * sizeof(*c->cand));
	c->next_free = malloc((c->nlive + 1) * sizeof(*c->next_free));
	if (!c->cand || !c->next_free)
		return fail(r, -ENOMEM, "out of memory");
	c->ncand = 0;
	for (size_t i = 0; i < c->nlive; i++) {
		if (!c->live[i].block)
			continue; /* free */
		c->cand[c->ncand] = (struct cand){ c->live[i].size, c->live[i].stack, c->live[i].t,
						   c->live[i].block };
		c->next_free[c->ncand] = c->ncand;
		c->ncand++;
	}
	qsort(c->cand, c->ncand, sizeof(*c->cand), cand_cmp);
	for (size_t i = 0; i < NCOUNTERS; i++) {
		c->base_counters[i] += c->last_counters[i];
		c->last_counters[i] = 0;
	}
	c->base += c->top;
	c->top = c->inherited_top = 0;
	lk_u64map_done(&c->stack_of);
	lk_u64map_done(&c->module_of);
	lk_u64map_done(&c->inherited);
	lk_u64map_init(&c->stack_of, SIZE_MAX);
	lk_u64map_init(&c->module_of, LK_READ_MAX_LOADED);
	lk_u64map_init(&c->inherited, SIZE_MAX);
	return open_segment(r, c->cur + 1);
}

/* Before the next segment's first record: the candidates its INHERITs did not take, freed. */
static void collect_drops(struct lk_chain *c)
{
	c->ndrop = c->drop_at = 0;
	for (size_t i = untaken(c, 0); i < c->ncand; i = untaken(c, i + 1)) {
		uint64_t *d = reallocarray(c->drop, c->ndrop + 1, sizeof(*d));
		if (!d)
			break;
		c->drop = d;
		c->drop[c->ndrop++] = c->cand[i].block;
		c->next_free[i] = i + 1;
	}
	c->stats.dropped += c->ndrop;
	c->ncand = 0;
}

static int map_stack(struct lk_chain *c, uint64_t local, uint64_t *ret)
{
	uint64_t *g;

	if (local == 0) {
		*ret = 0;
		return 0;
	}
	if (!(g = lk_u64map_get(&c->stack_of, local)))
		return -EBADMSG;
	*ret = *g;
	return 0;
}

static uint64_t map_block(struct lk_chain *c, uint64_t local)
{
	uint64_t *g = local <= c->inherited_top ? lk_u64map_get(&c->inherited, local) : NULL;

	if (local > c->top)
		c->top = local;
	return g ? *g : c->base + local;
}

/* A STACK: the chain's stack with these frames, or a new one. 1 to hand it out, 0 if known. */
static int take_stack(struct lk_chain *c, struct lk_record *rec)
{
	uint64_t h = hash_bytes(0xcbf29ce484222325ull, rec->stack.frames,
				rec->stack.nframes * sizeof(uint64_t));
	uint64_t *g;
	int k;

	for (;; h++) {
		if (!(g = lk_u64map_get(&c->stack_by_hash, h)))
			break;
		const struct stack_def *d = &c->stacks[*g];
		if (d->n == rec->stack.nframes &&
		    !memcmp(d->frames, rec->stack.frames, d->n * sizeof(uint64_t)))
			return lk_u64map_put(&c->stack_of, rec->stack.id, *g) < 0 ? -ENOMEM : 0;
	}
	if (c->nstacks == c->stacks_cap) {
		size_t cap = c->stacks_cap ? 2 * c->stacks_cap : 256;
		struct stack_def *s = reallocarray(c->stacks, cap, sizeof(*s));
		if (!s)
			return -ENOMEM;
		c->stacks = s;
		c->stacks_cap = cap;
	}
	if (c->nstacks == 0)
		c->stacks[c->nstacks++] = (struct stack_def){ 0 };
	struct stack_def *d = &c->stacks[c->nstacks];
	d->n = rec->stack.nframes;
	if (!(d->frames = malloc((d->n ? d->n : 1) * sizeof(uint64_t))))
		return -ENOMEM;
	memcpy(d->frames, rec->stack.frames, d->n * sizeof(uint64_t));
	uint64_t id = c->nstacks++;
	if ((k = lk_u64map_put(&c->stack_by_hash, h, id)) < 0 ||
	    (k = lk_u64map_put(&c->stack_of, rec->stack.id, id)) < 0)
		return k;
	rec->stack.id = id;
	return 1;
}

static uint64_t module_hash(const struct lk_record *rec)
{
	uint64_t h = hash_bytes(0xcbf29ce484222325ull, &rec->module.base, sizeof(uint64_t));

	h = hash_bytes(h, rec->module.build_id, rec->module.build_id_len);
	return hash_bytes(h, rec->module.path, rec->module.path_len);
}

/* A MODULE: one still loaded with the same base, path and build-id (a later segment's checkpoint
 * names every loaded module again), or a new one. 1 to hand it out, 0 if known. The key's hash
 * alone decides: a collision of 64 bits between two modules loaded at one base is not a case. */
static int take_module(struct lk_chain *c, struct lk_record *rec)
{
	uint64_t h = module_hash(rec), *g = lk_u64map_get(&c->module_by_hash, h);
	int k;

	if (g && c->cur > 0)
		return lk_u64map_put(&c->module_of, rec->module.id, *g) < 0 ? -ENOMEM : 0;
	uint64_t id = ++c->nmodules;
	if ((k = lk_u64map_put(&c->module_by_hash, h, id)) < 0 ||
	    (k = lk_u64map_put(&c->module_of, rec->module.id, id)) < 0)
		return k;
	rec->module.id = id;
	return 1;
}

static void unload_module(struct lk_chain *c, struct lk_record *rec)
{
	uint64_t *g = lk_u64map_get(&c->module_of, rec->unload.id);

	if (!g)
		return; /* the segment's reader checked it: not reached */
	rec->unload.id = *g;
	for (size_t i = 0; i < c->module_by_hash.size; i++)
		if (c->module_by_hash.e[i].used && c->module_by_hash.e[i].value == *g) {
			lk_u64map_remove(&c->module_by_hash, c->module_by_hash.e[i].key, NULL);
			break;
		}
}

static void sum_counters(struct lk_chain *c, struct lk_record *rec)
{
	uint32_t n = rec->counters.n;

	for (uint32_t i = 0; i < n; i++) {
		struct lk_counter_value v = rec->counters.v[i];
		if (v.id < NCOUNTERS) {
			c->last_counters[v.id] = v.value;
			v.value += c->base_counters[v.id];
		}
		c->counters[i] = v;
	}
	rec->counters.v = c->counters;
}

/* The current segment's record, mapped: 1 to hand it out, 0 to read the next, < 0. */
static int map_record(struct lk_chain *c, struct lk_record *rec)
{
	uint64_t stack;
	int k;

	switch (rec->tag) {
	case LK_REC_STACK:
		return take_stack(c, rec);
	case LK_REC_MODULE:
		return take_module(c, rec);
	case LK_REC_UNLOAD:
		unload_module(c, rec);
		return 1;
	case LK_REC_ALLOC:
		if (map_stack(c, rec->alloc.stack, &stack) < 0)
			return -EBADMSG;
		rec->alloc.stack = stack;
		rec->alloc.block = map_block(c, rec->alloc.block);
		k = live_add(c, rec->alloc.block, rec->alloc.size, stack,
			     c->start0 + rec->time_ns);
		return k < 0 ? k : 1;
	case LK_REC_INHERIT: {
		uint64_t g = 0, local = rec->inherit.block;
		if (map_stack(c, rec->inherit.stack, &stack) < 0)
			return -EBADMSG;
		rec->inherit.stack = stack;
		if (c->cur > 0)
			g = match(c, rec->inherit.size, stack, rec->inherit.alloc_monotonic_ns);
		if (g) {
			c->stats.matched++;
			if (local > c->top)
				c->top = local;
			if (local > c->inherited_top)
				c->inherited_top = local;
			return lk_u64map_put(&c->inherited, local, g) < 0 ? -ENOMEM : 0;
		}
		c->stats.unmatched += c->cur > 0;
		rec->inherit.block = map_block(c, local);
		k = live_add(c, rec->inherit.block, rec->inherit.size, stack,
			     rec->inherit.alloc_monotonic_ns);
		return k < 0 ? k : 1;
	}
	case LK_REC_FREE:
		if (map_stack(c, rec->free.stack, &stack) < 0)
			return -EBADMSG;
		rec->free.stack = stack;
		if (rec->free.block > c->inherited_top ||
		    !lk_u64map_remove(&c->inherited, rec->free.block, &rec->free.block))
			rec->free.block = map_block(c, rec->free.block);
		live_remove(c, rec->free.block);
		return 1;
	case LK_REC_SEGMENT:
		if (rec->segment.first_block + rec->segment.blocks - 1 > c->top)
			c->top = rec->segment.first_block + rec->segment.blocks - 1;
		rec->segment.first_block += c->base;
		return 1;
	case LK_REC_ERROR:
		if (map_stack(c, rec->error.alloc_stack, &rec->error.alloc_stack) < 0 ||
		    map_stack(c, rec->error.free_stack, &rec->error.free_stack) < 0 ||
		    map_stack(c, rec->error.stack, &rec->error.stack) < 0)
			return -EBADMSG;
		if (rec->error.block)
			rec->error.block = map_block(c, rec->error.block);
		return 1;
	case LK_REC_LOSS:
	case LK_REC_TRAILER:
		sum_counters(c, rec);
		return 1;
	default:
		return 1;
	}
}

static bool in_checkpoint(const struct lk_record *rec)
{
	return rec->tag == LK_REC_STACK || rec->tag == LK_REC_MODULE ||
	       rec->tag == LK_REC_INHERIT || rec->tag == LK_REC_CTL;
}

int lk_chain_next(struct lk_reader *r, struct lk_record *rec)
{
	struct lk_chain *c = r->chain;
	int k;

	if (r->state == ST_FAILED)
		return r->err;
	for (;;) {
		if (c->drop_at < c->ndrop) { /* not inherited: freed at the boundary */
			uint64_t b = c->drop[c->drop_at++];
			live_remove(c, b);
			*rec = (struct lk_record){ .tag = LK_REC_FREE, .time_ns = c->last_time,
						   .free = { .block = b } };
			return 1;
		}
		if (c->has_pending) {
			*rec = c->pending;
			c->has_pending = false;
		} else {
			k = lk_reader_next(c->sub, rec);
			if (k < 0)
				return fail_sub(r, k);
			if (k == 0 && c->checkpoint) { /* a segment of its checkpoint alone */
				c->checkpoint = false;
				collect_drops(c);
				continue;
			}
			if (k == 0 && c->cur + 1 == c->n) {
				r->end_offset = lk_reader_end_offset(c->sub);
				r->trailer = lk_reader_has_trailer(c->sub);
				return 0;
			}
			if (k == 0) {
				if (lk_reader_has_trailer(c->sub))
					return fail(r, -EBADMSG, "%s: segment %u has a TRAILER, but "
						    "segment %u follows it", c->paths[c->cur],
						    c->first + (unsigned)c->cur,
						    c->first + (unsigned)c->cur + 1);
				if ((k = next_segment(r)) < 0)
					return k;
				c->checkpoint = true;
				continue;
			}
			rec->time_ns += c->shift;
			if (rec->time_ns < c->last_time)
				rec->time_ns = c->last_time;
			if (c->checkpoint && !in_checkpoint(rec)) { /* the checkpoint is over */
				c->checkpoint = false;
				collect_drops(c);
				if (c->ndrop) { /* the drops first, then this record */
					c->pending = *rec;
					c->has_pending = true;
					continue;
				}
			}
		}
		k = map_record(c, rec);
		if (k < 0)
			return fail(r, k, "%s: offset %" PRIu64 ": %s", c->paths[c->cur], rec->offset,
				    k == -EBADMSG ? "a stack that is not defined" : strerror(-k));
		if (k == 0)
			continue;
		c->last_time = rec->time_ns;
		r->end_offset = lk_reader_end_offset(c->sub);
		return 1;
	}
}

int lk_chain_next_many(struct lk_reader *r, struct lk_record *rec, unsigned n)
{
	unsigned i = 0;

	while (i < n) {
		int k = lk_chain_next(r, &rec[i]);
		if (k <= 0)
			return i ? (int)i : k;
		switch (rec[i++].tag) {
		case LK_REC_STACK:
		case LK_REC_MODULE:
		case LK_REC_LOSS:
		case LK_REC_TRAILER:
			return (int)i;
		default:
			break;
		}
	}
	return (int)i;
}

int lk_reader_open_chain(struct lk_reader *r, const char *const *paths, size_t n, uint32_t first)
{
	struct lk_chain *c;
	const struct lk_profile_header *h;
	int k;

	if (r->state != ST_NEW || r->chain || n == 0)
		return -EINVAL;
	if (!(c = calloc(1, sizeof(*c))) || !(c->paths = calloc(n, sizeof(*c->paths)))) {
		free(c);
		return fail(r, -ENOMEM, "out of memory");
	}
	r->chain = c;
	c->n = n;
	c->first = first;
	c->limit = r->limit;
	c->whole = r->whole;
	c->follow = r->followed;
	c->stats.first = first;
	c->stats.segments = (uint32_t)n;
	for (size_t i = 0; i < n; i++)
		if (!(c->paths[i] = strdup(paths[i])))
			return fail(r, -ENOMEM, "out of memory");
	lk_u64map_init(&c->stack_of, SIZE_MAX);
	lk_u64map_init(&c->stack_by_hash, SIZE_MAX);
	lk_u64map_init(&c->module_of, LK_READ_MAX_LOADED);
	lk_u64map_init(&c->module_by_hash, LK_READ_MAX_LOADED);
	lk_u64map_init(&c->inherited, SIZE_MAX);
	lk_u64map_init(&c->live_at, SIZE_MAX);
	if ((k = open_segment(r, 0)) < 0)
		return k;
	h = lk_reader_header(c->sub);
	size_t len = (size_t)h->h.exe_len + h->h.cmdline_len + 2;
	if (!(r->strings = malloc(len)))
		return fail(r, -ENOMEM, "out of memory");
	memcpy(r->strings, h->exe, len);
	r->hdr = *h;
	r->hdr.exe = r->strings;
	r->hdr.cmdline = r->strings + h->h.exe_len + 1;
	r->state = ST_RECORDS;
	return 0;
}

void lk_reader_chain_stats(const struct lk_reader *r, struct lk_chain_stats *ret)
{
	*ret = r->chain ? r->chain->stats : (struct lk_chain_stats){ 0 };
}

/* ---- finding a chain ---- */

void lk_chain_files_done(struct lk_chain_files *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->paths[i]);
	free(f->paths);
	free(f->segments);
	*f = (struct lk_chain_files){ 0 };
}

/* The length of a compressed profile's suffix at the end of name[0..len-1] (`leek run` writes
 * NAME.zst, NAME.seg1.zst, ...; it wrote .gz before), or 0. */
static size_t codec_suffix(const char *name, size_t len)
{
	if (len > 4 && !memcmp(name + len - 4, ".zst", 4))
		return 4;
	if (len > 3 && !memcmp(name + len - 3, ".gz", 3))
		return 3;
	return 0;
}

/* name[0..len-1] is "", or ".seg" + digits and optionally "." + digits (a name that was taken),
 * then optionally a compressed profile's suffix; *seg says whether it names a segment. */
static bool segment_name(const char *name, size_t len, bool *seg)
{
	const char *p = name, *end;

	len -= codec_suffix(name, len);
	end = name + len;
	*seg = len > 0;
	if (!len)
		return true;
	if (len < 5 || strncmp(p, ".seg", 4))
		return false;
	p += 4;
	if (*p < '0' || *p > '9')
		return false;
	while (p < end && *p >= '0' && *p <= '9')
		p++;
	if (p < end && *p == '.') {
		p++;
		if (p == end || *p < '0' || *p > '9')
			return false;
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	}
	return p == end;
}

/* The header of a regular file that is a profile, or < 0. */
static int peek(const char *path, struct lk_profile_header *h)
{
	struct lk_reader *rd;
	struct stat st;
	int k;

	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return -EINVAL;
	if (!(rd = lk_reader_new()))
		return -ENOMEM;
	k = lk_reader_open(rd, path);
	if (k >= 0) {
		*h = *lk_reader_header(rd);
		h->exe = h->cmdline = NULL;
	}
	lk_reader_free(rd);
	return k;
}

static int add_file(struct lk_chain_files *f, const char *path, uint32_t segment)
{
	char **p = reallocarray(f->paths, f->n + 1, sizeof(*p));
	uint32_t *s;

	if (!p)
		return -ENOMEM;
	f->paths = p;
	if (!(s = reallocarray(f->segments, f->n + 1, sizeof(*s))))
		return -ENOMEM;
	f->segments = s;
	if (!(p[f->n] = strdup(path)))
		return -ENOMEM;
	s[f->n++] = segment;
	return 0;
}

static int err_msg(char **err, int r, const char *fmt, ...)
{
	va_list ap;

	if (err) {
		va_start(ap, fmt);
		if (vasprintf(err, fmt, ap) < 0)
			*err = NULL;
		va_end(ap);
	}
	return r;
}

int lk_chain_find(const char *path, struct lk_chain_files *ret, char **err)
{
	struct lk_chain_files f = { 0 };
	struct lk_profile_header h, o;
	char *dir = NULL, *base = NULL, *foreign = NULL;
	const char *slash;
	size_t base_len;
	DIR *d;
	int k;

	*ret = f;
	if (peek(path, &h) < 0)
		return 0; /* not a profile on disk: read as it is, and its reader says why */
	base = strdup(path);
	if (!base)
		return -ENOMEM;
	base_len = strlen(base);
	base_len -= codec_suffix(base, base_len);
	base[base_len] = 0;
	if (h.segment) { /* NAME.segN[.M]: NAME */
		char *seg = NULL;
		bool is_seg;
		for (char *p = strstr(base, ".seg"); p; p = strstr(p + 1, ".seg"))
			seg = p;
		if (!seg || !segment_name(seg, strlen(seg), &is_seg)) { /* renamed: alone */
			free(base);
			return 0;
		}
		*seg = 0;
		base_len = (size_t)(seg - base);
	}
	slash = strrchr(base, '/');
	dir = slash ? strndup(base, (size_t)(slash - base) + (slash == base)) : strdup(".");
	if (!dir) {
		free(base);
		return -ENOMEM;
	}
	const char *leaf = slash ? slash + 1 : base;
	size_t leaf_len = strlen(leaf);
	k = 0;
	if (!(d = opendir(dir))) {
		free(dir);
		free(base);
		return 0;
	}
	for (struct dirent *e; k >= 0 && (e = readdir(d));) {
		char *p;
		bool is_seg;
		if (strncmp(e->d_name, leaf, leaf_len) ||
		    !segment_name(e->d_name + leaf_len, strlen(e->d_name + leaf_len), &is_seg))
			continue;
		if (asprintf(&p, "%.*s%s", (int)(base_len - leaf_len), base, e->d_name) < 0) {
			k = -ENOMEM;
			break;
		}
		if (peek(p, &o) >= 0 && o.h.pid == h.h.pid && o.h.session == h.h.session &&
		    o.origin_ns == h.origin_ns && !!o.segment == !!(o.h.flags & LK_HDR_ROTATED) &&
		    is_seg == (o.segment != 0))
			k = add_file(&f, p, o.segment);
		else if (!foreign && is_seg && peek(p, &o) >= 0 &&
			 (o.h.flags & LK_HDR_ROTATED) && o.origin_ns == h.origin_ns)
			foreign = strdup(p); /* another process's, though of the same origin */
		free(p);
	}
	closedir(d);
	free(dir);
	if (k >= 0 && foreign)
		k = err_msg(err, -EINVAL, "%s is a rotated segment named as one of the chain of %s "
			    "(pid %u, session %" PRIx64 "), but another process wrote it", foreign,
			    path, h.h.pid, h.h.session);
	free(foreign);
	free(base);
	if (k < 0) {
		lk_chain_files_done(&f);
		return k;
	}
	/* by segment */
	for (size_t i = 1; i < f.n; i++)
		for (size_t j = i; j > 0 && f.segments[j - 1] > f.segments[j]; j--) {
			char *tp = f.paths[j];
			uint32_t ts = f.segments[j];
			f.paths[j] = f.paths[j - 1];
			f.segments[j] = f.segments[j - 1];
			f.paths[j - 1] = tp;
			f.segments[j - 1] = ts;
		}
	if (k >= 0 && f.n && f.segments[f.n - 1] == 0) {
		lk_chain_files_done(&f);
		return 0; /* no segment after 0: a profile of its own (a raw one and its .zst, too) */
	}
	for (size_t i = 1; i < f.n && k >= 0; i++) {
		if (f.segments[i] == f.segments[i - 1])
			k = err_msg(err, -EINVAL, "%s and %s are both segment %u of pid %u's rotated "
				    "profile: keep one", f.paths[i - 1], f.paths[i], f.segments[i],
				    h.h.pid);
		else if (f.segments[i] != f.segments[i - 1] + 1)
			k = err_msg(err, -EINVAL, "segment %u of pid %u's rotated profile is missing: "
				    "%s is segment %u and %s is segment %u (--segment-only reads one "
				    "file alone)", f.segments[i - 1] + 1, h.h.pid, f.paths[i - 1],
				    f.segments[i - 1], f.paths[i], f.segments[i]);
	}
	for (size_t i = 0; i < f.n; i++)
		if (f.segments[i] == h.segment)
			f.named = i;
	if (k < 0 || f.n == 0 || (f.n == 1 && f.segments[0] == 0)) {
		lk_chain_files_done(&f);
		return k < 0 ? k : 0; /* no chain: the file alone */
	}
	*ret = f;
	return 0;
}
