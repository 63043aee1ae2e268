/* tree.c: the call tree of reports' stacks (tree.h).
 *
 * Nodes live in chunks taken from the memory budget, so a node never moves and the tree links
 * them by pointer; a node's sums follow it in its chunk (nfigures, or twice that with self). A
 * node is found among its parent's children through one hash table keyed by (parent, function,
 * inlined): adding a stack of n frames costs n lookups, whatever the number of children. Sums
 * are added raw (lk_tree_sum) and finished when asked for; once built, each node's children are
 * sorted, by the total of figure 0, largest first, and for ties by their function's key, so that
 * a tree prints the same on every run. A node's series is, while one stack ends there, that
 * stack's own (the report keeps it); from the second on, a sum of the tree's.
 *
 * Never: keep a pointer into a report's stacks beyond their series (frames point into the
 * symbolizer, which outlives the report; the series into the report, which outlives the tree),
 * print, or recurse (a stack is as deep as the profile says).
 */
#include <errno.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "report.h"
#include "tree.h"

#define CHUNK_NODES 1024
#define SERIES_BYTES (LK_TIMELINE_BUCKETS * sizeof(double))

struct chunk {
	struct chunk *next;
	size_t used;
	alignas(struct lk_tree_node) unsigned char node[]; /* CHUNK_NODES of node_size bytes */
};

struct lk_tree {
	struct lk_tree_opts opts;
	struct lk_tree_node *root;
	struct chunk *chunks;
	size_t node_size;            /* a node and its sums */
	size_t nodes, ids, stacks;   /* in the tree, made (the root included); stacks added */
	struct lk_tree_node **slot;  /* open addressing by node_hash; NULL = empty */
	size_t nslots;
};

void lk_tree_add(struct lk_tree_sum *s, const struct lk_tree_sum *x)
{
	s->value += x->value;
	s->var += x->var;
	s->observed += x->observed;
	s->samples += x->samples;
	s->step = x->step > s->step ? x->step : s->step;
	s->heavy_step = x->heavy_step > s->heavy_step ? x->heavy_step : s->heavy_step;
	s->heavy_miss += x->heavy_miss;
}

static void add_estimate(struct lk_tree_sum *s, const struct lk_estimate *e)
{
	lk_tree_add(s, &(struct lk_tree_sum){ .value = e->value, .var = e->var,
					      .observed = e->observed, .step = e->step,
					      .heavy_step = e->heavy_step,
					      .heavy_miss = e->heavy_miss, .samples = e->samples });
}

void lk_tree_finish(const struct lk_tree_sum *s, struct lk_estimate *ret)
{
	*ret = (struct lk_estimate){ .value = s->value, .var = s->var, .observed = s->observed,
				     .samples = s->samples, .step = s->step,
				     .heavy_step = s->heavy_step, .heavy_miss = s->heavy_miss };
	lk_estimate_finish(ret);
}

void lk_tree_total(const struct lk_tree *t, const struct lk_tree_node *n, unsigned i,
		   struct lk_estimate *ret)
{
	(void)t;
	lk_tree_finish(&n->sum[i], ret);
}

void lk_tree_self(const struct lk_tree *t, const struct lk_tree_node *n, unsigned i,
		  struct lk_estimate *ret)
{
	lk_tree_finish(&n->sum[t->opts.nfigures + i], ret);
}

static size_t node_hash(const struct lk_tree_node *parent, uint32_t func, bool inlined)
{
	uint64_t h = (uint64_t)(uintptr_t)parent ^ ((uint64_t)LK_FUNC_ID(func) << 1 | inlined) *
							      0x9e3779b97f4a7c15ull;

	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return (size_t)h;
}

static bool same(const struct lk_tree_node *n, const struct lk_tree_node *parent, uint32_t func,
		 bool inlined)
{
	return n->parent == parent && LK_FUNC_ID(n->func) == LK_FUNC_ID(func) &&
	       n->frame->inlined == inlined;
}

static int grow_slots(struct lk_tree *t)
{
	size_t n = t->nslots ? 2 * t->nslots : 1024;
	struct lk_tree_node **slot = lk_budget_calloc(n, sizeof(*slot));

	if (!slot)
		return -errno;
	for (size_t i = 0; i < t->nslots; i++) {
		struct lk_tree_node *x = t->slot[i];
		size_t h;
		if (!x)
			continue;
		for (h = node_hash(x->parent, x->func, x->frame->inlined) & (n - 1); slot[h];
		     h = (h + 1) & (n - 1))
			;
		slot[h] = x;
	}
	lk_budget_free(t->slot, t->nslots * sizeof(*t->slot));
	t->slot = slot;
	t->nslots = n;
	return 0;
}

/* A new node, zeroed but for its id; NULL and errno ENOMEM or E2BIG. */
static struct lk_tree_node *new_node(struct lk_tree *t)
{
	struct lk_tree_node *n;

	if (t->ids >= UINT32_MAX) {
		errno = E2BIG;
		return NULL;
	}
	if (!t->chunks || t->chunks->used == CHUNK_NODES) {
		struct chunk *c = lk_budget_malloc(sizeof(*c) + CHUNK_NODES * t->node_size);
		if (!c)
			return NULL;
		c->next = t->chunks;
		c->used = 0;
		t->chunks = c;
	}
	n = (struct lk_tree_node *)(t->chunks->node + t->chunks->used++ * t->node_size);
	memset(n, 0, t->node_size);
	n->id = (uint32_t)t->ids++;
	t->nodes++;
	return n;
}

/* parent's child for this frame, added if new; NULL and errno ENOMEM or E2BIG. */
static struct lk_tree_node *child_of(struct lk_tree *t, struct lk_tree_node *parent,
				     const struct lk_sym_frame *frame, uint32_t func)
{
	struct lk_tree_node *n;
	size_t h;
	int k;

	if ((t->nodes + 1) * 2 > t->nslots && (k = grow_slots(t)) < 0) {
		errno = -k;
		return NULL;
	}
	for (h = node_hash(parent, func, frame->inlined) & (t->nslots - 1); (n = t->slot[h]);
	     h = (h + 1) & (t->nslots - 1))
		if (same(n, parent, func, frame->inlined)) {
			if (frame->line != n->frame->line)
				n->lines_differ = true;
			return n;
		}
	n = new_node(t);
	if (!n)
		return NULL;
	n->frame = frame;
	n->func = func;
	n->parent = parent;
	n->next = parent->child;
	parent->child = n;
	t->slot[h] = n;
	return n;
}

/* The stack's series into the node it ends at: its own while it is the only one. */
static int add_series(struct lk_tree_node *n, const double *series)
{
	double *sum;

	if (!n->series) {
		n->series = series;
		return 0;
	}
	if (!n->series_owned) {
		sum = lk_budget_malloc(SERIES_BYTES);
		if (!sum)
			return -errno;
		memcpy(sum, n->series, SERIES_BYTES);
		n->series = sum;
		n->series_owned = true;
	}
	sum = (double *)n->series;
	for (unsigned b = 0; b < LK_TIMELINE_BUCKETS; b++)
		sum[b] += series[b];
	return 0;
}

/* Children order: figure 0's total, largest first; then the function's key, then inlined
 * frames after. */
static int cmp_nodes(const struct lk_tree_node *a, const struct lk_tree_node *b)
{
	int c;

	if (a->sum[0].value != b->sum[0].value)
		return a->sum[0].value > b->sum[0].value ? -1 : 1;
	c = lk_site_func_compare(a->frame, b->frame);
	if (c == 0)
		c = (int)a->frame->inlined - (int)b->frame->inlined;
	return c;
}

/* Merge sort of a list of siblings, in place (no memory, no recursion: bottom-up). */
static struct lk_tree_node *sort_list(struct lk_tree_node *list)
{
	for (size_t width = 1;; width *= 2) {
		struct lk_tree_node *head = NULL, **tail = &head, *p = list;
		size_t merges = 0;

		while (p) {
			struct lk_tree_node *q = p;
			size_t np = 0, nq = width;
			merges++;
			while (q && np < width) {
				q = q->next;
				np++;
			}
			while (np || (nq && q)) {
				struct lk_tree_node *e;
				if (!np)
					e = q, q = q->next, nq--;
				else if (!nq || !q || cmp_nodes(p, q) <= 0)
					e = p, p = p->next, np--;
				else
					e = q, q = q->next, nq--;
				*tail = e;
				tail = &e->next;
			}
			p = q;
		}
		*tail = NULL;
		list = head;
		if (merges <= 1)
			return list;
	}
}

static void walk(const struct lk_tree_node *start, lk_tree_visit *enter, lk_tree_visit *leave,
		 void *ctx)
{
	const struct lk_tree_node *n = start;
	unsigned depth = 0;

	for (;;) {
		if (enter)
			enter(n, depth, ctx);
		if (n->child) {
			n = n->child;
			depth++;
			continue;
		}
		for (;;) {
			if (leave)
				leave(n, depth, ctx);
			if (n == start)
				return;
			if (n->next) {
				n = n->next;
				break;
			}
			n = n->parent;
			depth--;
		}
	}
}

void lk_tree_walk(const struct lk_tree *t, lk_tree_visit *enter, lk_tree_visit *leave, void *ctx)
{
	walk(t->root, enter, leave, ctx);
}

static void sort_children(const struct lk_tree_node *n, unsigned depth, void *ctx)
{
	struct lk_tree_node *x = (struct lk_tree_node *)n;

	(void)depth;
	(void)ctx;
	x->child = sort_list(x->child);
}

/* Adds stack st of report `report` (whose function ids map to the tree's through ids, NULL for
 * the same); 0, or a negative errno. */
static int add_stack(struct lk_tree *t, const struct lk_report *r, size_t report,
		     const uint32_t *ids, const struct lk_report_stack *st)
{
	const struct lk_tree_opts *o = &t->opts;
	const struct lk_estimate *e[LK_TREE_MAX_FIGURES] = { 0 };
	struct lk_tree_node *n = t->root;
	size_t from = 0, to = st->n; /* frames[from .. to), innermost first */
	bool any = false;

	if (st->filtered)
		return 0;
	o->figures(o->ctx, report, st, e);
	for (unsigned i = 0; i < o->nfigures; i++)
		any |= e[i] && (e[i]->value > 0 || e[i]->samples);
	if (!any)
		return 0;
	if (o->to_site)
		from = lk_report_stack_site(r, st);
	t->stacks++;
	for (size_t j = 0;; j++) {
		size_t f = o->inverted ? from + j : to - 1 - j;
		uint32_t func;
		for (unsigned i = 0; i < o->nfigures; i++)
			if (e[i])
				add_estimate(&n->sum[i], e[i]);
		if (j == to - from)
			break;
		func = ids ? (st->funcs[f] & LK_FUNC_ALLOC) | ids[LK_FUNC_ID(st->funcs[f])]
			   : st->funcs[f];
		n = child_of(t, n, st->frames[f], func);
		if (!n)
			return -errno;
	}
	for (unsigned i = 0; o->self && i < o->nfigures; i++)
		if (e[i])
			add_estimate(&n->sum[o->nfigures + i], e[i]);
	return o->series && st->series ? add_series(n, st->series) : 0;
}

/* Each report's function ids in one numbering, into ids[i] (several reports only). */
static int number_funcs(const struct lk_report *const *r, size_t n, struct lk_funcs *all,
			uint32_t **ids)
{
	for (size_t i = 0; i < n; i++) {
		int k;
		if (!(ids[i] = lk_budget_malloc((r[i]->funcs.n ? r[i]->funcs.n : 1) * sizeof(**ids))))
			return -errno;
		k = lk_funcs_map(all, &r[i]->funcs, ids[i]);
		if (k < 0)
			return k;
	}
	return 0;
}

int lk_tree_build(const struct lk_report *const *r, size_t n, const struct lk_tree_opts *o,
		  struct lk_tree **ret)
{
	struct lk_tree *t;
	struct lk_funcs all;
	uint32_t **ids = NULL;
	int k = 0;

	if (!o->figures || o->nfigures < 1 || o->nfigures > LK_TREE_MAX_FIGURES || !n)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->opts = *o;
	t->node_size = sizeof(struct lk_tree_node) +
		       (o->self ? 2 : 1) * o->nfigures * sizeof(struct lk_tree_sum);
	t->node_size = (t->node_size + alignof(struct lk_tree_node) - 1) &
		       ~(alignof(struct lk_tree_node) - 1);
	t->root = new_node(t);
	if (!t->root) {
		free(t);
		return -errno;
	}
	lk_funcs_init(&all, r[0]->opts.filter);
	if (n > 1 && !(ids = calloc(n, sizeof(*ids))))
		k = -ENOMEM;
	else if (n > 1)
		k = number_funcs(r, n, &all, ids);
	for (size_t i = 0; i < n && k >= 0; i++)
		for (size_t j = 0; j < r[i]->nstacks && k >= 0; j++)
			k = add_stack(t, r[i], i, ids ? ids[i] : NULL, &r[i]->stacks[j]);
	for (size_t i = 0; ids && i < n; i++)
		lk_budget_free(ids[i], (r[i]->funcs.n ? r[i]->funcs.n : 1) * sizeof(**ids));
	free(ids);
	lk_funcs_done(&all);
	/* The lookup is for building only. */
	lk_budget_free(t->slot, t->nslots * sizeof(*t->slot));
	t->slot = NULL;
	t->nslots = 0;
	if (k < 0) {
		lk_tree_free(t);
		return k;
	}
	walk(t->root, sort_children, NULL, NULL);
	*ret = t;
	return 0;
}

struct lk_tree *lk_tree_free(struct lk_tree *t)
{
	if (!t)
		return NULL;
	for (struct chunk *c = t->chunks, *next; c; c = next) {
		next = c->next;
		for (size_t i = 0; i < c->used; i++) {
			struct lk_tree_node *x = (struct lk_tree_node *)(c->node + i * t->node_size);
			if (x->series_owned)
				lk_budget_free((void *)x->series, SERIES_BYTES);
		}
		lk_budget_free(c, sizeof(*c) + CHUNK_NODES * t->node_size);
	}
	lk_budget_free(t->slot, t->nslots * sizeof(*t->slot));
	free(t);
	return NULL;
}

const struct lk_tree_node *lk_tree_root(const struct lk_tree *t)
{
	return t->root;
}

size_t lk_tree_nodes(const struct lk_tree *t)
{
	return t->nodes;
}

size_t lk_tree_ids(const struct lk_tree *t)
{
	return t->ids;
}

size_t lk_tree_stacks(const struct lk_tree *t)
{
	return t->stacks;
}

const struct lk_tree_opts *lk_tree_opts(const struct lk_tree *t)
{
	return &t->opts;
}

struct prune {
	struct lk_tree *t;
	double min;
	struct lk_tree_pruned *pruned;
};

static void count(const struct lk_tree_node *n, unsigned depth, void *ctx)
{
	(void)n;
	(void)depth;
	(*(size_t *)ctx)++;
}

/* Before the walk goes into n's children: the ones below min go, with their subtrees. Children
 * are sorted by total, so they are the last ones. */
static void prune_children(const struct lk_tree_node *n, unsigned depth, void *ctx)
{
	struct prune *p = ctx;
	struct lk_tree_node **link = &((struct lk_tree_node *)n)->child;

	(void)depth;
	while (*link && !((*link)->sum[0].value < p->min))
		link = &(*link)->next;
	for (struct lk_tree_node *x = *link, *next; x; x = next) {
		size_t nodes = 0;
		next = x->next;
		x->next = NULL; /* walk x's subtree alone */
		walk(x, count, NULL, &nodes);
		p->t->nodes -= nodes;
		p->pruned->nodes += nodes;
		p->pruned->total += x->sum[0].value;
	}
	*link = NULL;
}

void lk_tree_prune(struct lk_tree *t, double min, struct lk_tree_pruned *pruned)
{
	struct prune p = { .t = t, .min = min, .pruned = pruned };

	walk(t->root, prune_children, NULL, &p);
}
