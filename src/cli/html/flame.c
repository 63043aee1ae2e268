/* flame.c: builds the HTML report's flame graph tree (flame.h); flame-prune.c prunes it.
 *
 * Adding a stack walks it from its outermost frame down to its site, finding or making each
 * node in one open-addressed table keyed by (parent, function, module), and adds the stack's
 * estimates and series to the node it ends at; lk_flame_finish() then sums every node's into its
 * parent's, so each holds the sums of the stacks through it (one pass, rather than a write to
 * every node of every stack: a third of the time for 131 072 stacks of 36 frames). Sums are kept
 * raw (value, variance, observed, samples) and finished once, at the end: the interval of a sum,
 * never a sum of intervals (docs/sampling.md section 5). Children always come after their parent
 * in the node array, which the passes rely on.
 *
 * Never: print, or hold a stack's stats after lk_flame_add() returns.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "flame-internal.h"

static uint64_t hash_str(uint64_t h, const char *s)
{
	for (; s && *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull; /* FNV-1a */
	return (h ^ 0xff) * 0x100000001b3ull; /* so "ab"+"" and "a"+"b" differ */
}

static uint64_t key_hash(uint32_t parent, const struct lk_sym_frame *fr)
{
	uint64_t h = hash_str(0xcbf29ce484222325ull ^ ((uint64_t)parent * 0x9e3779b97f4a7c15ull),
			      fr->function);

	h = hash_str(h, fr->module);
	return h ^ (h >> 29);
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static bool key_equal(const struct tnode *x, uint32_t parent, const struct lk_sym_frame *fr)
{
	return x->parent == parent && x->frame &&
	       same_str(x->frame->function, fr->function) && same_str(x->frame->module, fr->module);
}

void lk_flame_free_tree(struct lk_flame *f)
{
	lk_budget_free(f->nodes, f->cap * sizeof(*f->nodes));
	lk_budget_free(f->slots, f->nslots * sizeof(*f->slots));
	lk_budget_free(f->series, f->series_cap * sizeof(*f->series));
	f->nodes = NULL;
	f->slots = NULL;
	f->series = NULL;
	f->cap = f->nslots = f->series_cap = 0;
}

struct lk_flame *lk_flame_free(struct lk_flame *f)
{
	if (!f)
		return NULL;
	lk_flame_free_tree(f);
	lk_budget_free(f->out, f->out_cap * sizeof(*f->out));
	lk_budget_free(f->out_series, f->out_series_cap * sizeof(*f->out_series));
	free(f);
	return NULL;
}

static int new_node(struct lk_flame *f, uint32_t parent, const struct lk_sym_frame *fr)
{
	struct tnode *x;

	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 256;
		if (cap > MAX_TREE_NODES)
			cap = MAX_TREE_NODES;
		if (cap == f->n)
			return -E2BIG;
		x = lk_budget_realloc(f->nodes, f->cap * sizeof(*x), cap * sizeof(*x));
		if (!x)
			return -errno;
		f->nodes = x;
		f->cap = cap;
	}
	x = &f->nodes[f->n];
	*x = (struct tnode){
		.frame = fr,
		.parent = parent,
		.first_child = NONE,
		.next_sibling = NONE,
		.series = NONE,
		.out = NONE,
		.other = NONE,
	};
	if (parent != NONE) {
		x->next_sibling = f->nodes[parent].first_child;
		f->nodes[parent].first_child = (uint32_t)f->n;
	}
	f->n++;
	return 0;
}

static int grow_slots(struct lk_flame *f)
{
	size_t n = f->nslots ? 2 * f->nslots : 1024;
	uint32_t *slots = lk_budget_calloc(n, sizeof(*slots));

	if (!slots)
		return -errno;
	for (size_t i = 1; i < f->n; i++) { /* the root is never looked up */
		size_t h = key_hash(f->nodes[i].parent, f->nodes[i].frame) & (n - 1);
		while (slots[h])
			h = (h + 1) & (n - 1);
		slots[h] = (uint32_t)i + 1;
	}
	lk_budget_free(f->slots, f->nslots * sizeof(*f->slots));
	f->slots = slots;
	f->nslots = n;
	return 0;
}

/* The child of parent for frame fr, made if new; its index, or a negative errno. */
static int64_t child_of(struct lk_flame *f, uint32_t parent, const struct lk_sym_frame *fr)
{
	size_t h;
	int k;

	if ((f->n + 1) * 2 > f->nslots && (k = grow_slots(f)) < 0)
		return k;
	h = key_hash(parent, fr) & (f->nslots - 1);
	for (; f->slots[h]; h = (h + 1) & (f->nslots - 1))
		if (key_equal(&f->nodes[f->slots[h] - 1], parent, fr))
			return f->slots[h] - 1;
	k = new_node(f, parent, fr);
	if (k < 0)
		return k;
	f->slots[h] = (uint32_t)f->n;
	return (int64_t)f->n - 1;
}

static void add_sum(struct lk_flame_sum *s, const struct lk_estimate *e)
{
	s->value += e->value;
	s->var += e->var;
	s->observed += e->observed;
	s->samples += e->samples;
}

void lk_flame_add_sums(struct lk_flame_sum *s, const struct lk_flame_sum *t)
{
	for (unsigned m = 0; m < _LK_FLAME_METRIC_MAX; m++) {
		s[m].value += t[m].value;
		s[m].var += t[m].var;
		s[m].observed += t[m].observed;
		s[m].samples += t[m].samples;
	}
}

static void add_stats(struct tnode *x, const struct lk_stack_stats *st)
{
	add_sum(&x->v[LK_FLAME_LIVE], &st->live_bytes);
	add_sum(&x->v[LK_FLAME_PEAK], &st->peak_bytes);
	add_sum(&x->v[LK_FLAME_ALLOC], &st->alloc_bytes);
	add_sum(&x->v[LK_FLAME_LIVE_OBJECTS], &st->live_objects);
	add_sum(&x->v[LK_FLAME_ALLOC_OBJECTS], &st->alloc_objects);
}

static int add_series(struct lk_flame *f, struct tnode *x, const double *series)
{
	if (x->series == NONE) {
		if (f->nseries == f->series_cap) {
			size_t cap = f->series_cap ? 2 * f->series_cap : 64;
			void *p = lk_budget_realloc(f->series, f->series_cap * sizeof(*f->series),
						    cap * sizeof(*f->series));
			if (!p)
				return -errno;
			f->series = p;
			f->series_cap = cap;
		}
		memset(f->series[f->nseries], 0, sizeof(*f->series));
		x->series = (uint32_t)f->nseries++;
	}
	for (unsigned b = 0; b < LK_TIMELINE_BUCKETS; b++)
		f->series[x->series][b] += series[b];
	return 0;
}

static int add_stack(void *ctx, uint32_t profile, const struct lk_sym_frame *const *frames,
		     size_t n, size_t site, const struct lk_stack_stats *st)
{
	struct lk_flame *f = ctx;
	uint32_t at = 0;

	if (f->finished)
		return -EINVAL;
	if (f->stacks && profile != f->profile)
		f->several_profiles = true;
	f->profile = profile;
	f->stacks++;
	for (size_t i = n; i-- > site;) { /* outermost first, down to the site */
		int64_t c = child_of(f, at, frames[i]);
		if (c < 0)
			return (int)c;
		at = (uint32_t)c;
	}
	add_stats(&f->nodes[at], st); /* the node's own: lk_flame_finish() sums them up */
	return add_series(f, &f->nodes[at], st->series);
}

int lk_flame_new(struct lk_flame **ret)
{
	struct lk_flame *f = calloc(1, sizeof(*f));
	int k;

	if (!f)
		return -ENOMEM;
	f->hook = (struct lk_report_stack_hook){ .fn = add_stack, .ctx = f };
	k = new_node(f, NONE, NULL);
	if (k < 0) {
		lk_flame_free(f);
		return k;
	}
	*ret = f;
	return 0;
}

const struct lk_report_stack_hook *lk_flame_hook(struct lk_flame *f)
{
	return &f->hook;
}

size_t lk_flame_nodes(const struct lk_flame *f, const struct lk_flame_node **ret)
{
	*ret = f->out;
	return f->nout;
}

unsigned lk_flame_buckets(const struct lk_flame *f)
{
	return f->buckets;
}

size_t lk_flame_nodes_before(const struct lk_flame *f)
{
	return f->nodes_before;
}

size_t lk_flame_stacks(const struct lk_flame *f)
{
	return f->stacks;
}
