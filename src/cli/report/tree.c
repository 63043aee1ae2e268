/* tree.c: the call tree of a report's stacks (tree.h).
 *
 * Nodes live in chunks taken from the memory budget, so a node never moves and the tree links
 * them by pointer. A node is found among its parent's children through one hash table keyed by
 * (parent, function, inlined): adding a stack of n frames costs n lookups, whatever the number
 * of children. Sums are added raw (value, variance, observed, samples) and finished once, when
 * the tree is built; then each node's children are sorted, by total, largest first, and for ties
 * by their function's key, so that a tree prints the same on every run.
 *
 * Never: keep a pointer into a report's stacks (frames point into the symbolizer, which outlives
 * the report), print, or recurse (a stack is as deep as the profile says).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "report.h"
#include "tree.h"

#define CHUNK_NODES 1024

struct chunk {
	struct chunk *next;
	size_t used;
	struct lk_tree_node node[CHUNK_NODES];
};

struct lk_tree {
	struct lk_tree_opts opts;
	struct lk_tree_node root;
	struct chunk *chunks;
	size_t nodes;                /* in the tree, the root included */
	struct lk_tree_node **slot;  /* open addressing by node_hash; NULL = empty */
	size_t nslots, nadded;
};

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

/* parent's child for this frame, added if new; NULL and errno ENOMEM or E2BIG. */
static struct lk_tree_node *child_of(struct lk_tree *t, struct lk_tree_node *parent,
				     const struct lk_sym_frame *frame, uint32_t func)
{
	struct lk_tree_node *n;
	size_t h;
	int k;

	if ((t->nadded + 1) * 2 > t->nslots && (k = grow_slots(t)) < 0) {
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
	if (!t->chunks || t->chunks->used == CHUNK_NODES) {
		struct chunk *c = lk_budget_malloc(sizeof(*c));
		if (!c)
			return NULL;
		c->next = t->chunks;
		c->used = 0;
		t->chunks = c;
	}
	n = &t->chunks->node[t->chunks->used++];
	*n = (struct lk_tree_node){ .frame = frame, .func = func, .parent = parent,
				    .next = parent->child };
	parent->child = n;
	t->slot[h] = n;
	t->nadded++;
	t->nodes++;
	return n;
}

/* A sum of independent estimates, finished once at the end (lk_estimate_add finishes each
 * time). */
static void add(struct lk_estimate *sum, const struct lk_estimate *e)
{
	sum->value += e->value;
	sum->var += e->var;
	sum->observed += e->observed;
	sum->samples += e->samples;
}

/* Children order: total, largest first; then the function's key, then inlined frames after. */
static int cmp_nodes(const struct lk_tree_node *a, const struct lk_tree_node *b)
{
	int c;

	if (a->total.value != b->total.value)
		return a->total.value > b->total.value ? -1 : 1;
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
	walk(&t->root, enter, leave, ctx);
}

static void finish(const struct lk_tree_node *n, unsigned depth, void *ctx)
{
	struct lk_tree_node *x = (struct lk_tree_node *)n;

	(void)depth;
	(void)ctx;
	lk_estimate_finish(&x->total);
	lk_estimate_finish(&x->self);
	x->child = sort_list(x->child);
}

int lk_tree_build(const struct lk_report *r, const struct lk_tree_opts *o, struct lk_tree **ret)
{
	struct lk_tree *t = calloc(1, sizeof(*t));
	int k = 0;

	if (!t)
		return -ENOMEM;
	t->opts = *o;
	t->nodes = 1;
	for (size_t i = 0; i < r->nstacks && k >= 0; i++) {
		const struct lk_report_stack *st = &r->stacks[i];
		const struct lk_estimate *e = o->objects ? LK_VIEW_FIGURE(st, o->view, objects)
							 : LK_VIEW_FIGURE(st, o->view, bytes);
		struct lk_tree_node *n = &t->root;

		if (st->filtered || !(e->value > 0 || e->samples))
			continue;
		add(&n->total, e);
		for (size_t j = 0; j < st->n; j++) {
			size_t f = o->inverted ? j : st->n - 1 - j;
			n = child_of(t, n, st->frames[f], st->funcs[f]);
			if (!n) {
				k = -errno;
				break;
			}
			add(&n->total, e);
		}
		if (n)
			add(&n->self, e);
	}
	/* The lookup is for building only. */
	lk_budget_free(t->slot, t->nslots * sizeof(*t->slot));
	t->slot = NULL;
	t->nslots = 0;
	if (k < 0) {
		lk_tree_free(t);
		return k;
	}
	walk(&t->root, finish, NULL, NULL);
	*ret = t;
	return 0;
}

struct lk_tree *lk_tree_free(struct lk_tree *t)
{
	if (!t)
		return NULL;
	for (struct chunk *c = t->chunks, *next; c; c = next) {
		next = c->next;
		lk_budget_free(c, sizeof(*c));
	}
	lk_budget_free(t->slot, t->nslots * sizeof(*t->slot));
	free(t);
	return NULL;
}

const struct lk_tree_node *lk_tree_root(const struct lk_tree *t)
{
	return &t->root;
}

size_t lk_tree_nodes(const struct lk_tree *t)
{
	return t->nodes;
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
	while (*link && !((*link)->total.value < p->min))
		link = &(*link)->next;
	for (struct lk_tree_node *x = *link, *next; x; x = next) {
		size_t nodes = 0;
		next = x->next;
		x->next = NULL; /* walk x's subtree alone */
		walk(x, count, NULL, &nodes);
		p->t->nodes -= nodes;
		p->pruned->nodes += nodes;
		p->pruned->total += x->total.value;
	}
	*link = NULL;
}

void lk_tree_prune(struct lk_tree *t, double min, struct lk_tree_pruned *pruned)
{
	struct prune p = { .t = t, .min = min, .pruned = pruned };

	walk(&t->root, prune_children, NULL, &p);
}
