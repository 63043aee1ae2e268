/* flame.c: builds and prunes the HTML report's flame graph tree (flame.h).
 *
 * Adding a stack walks it from its outermost frame down to its site, finding or making each
 * node in one open-addressed table keyed by (parent, function, module), and adds the stack's
 * estimates to every node on the way, so each node holds the sums of the stacks through it. Sums
 * are kept raw (value, variance, observed, samples) and finished once, at the end: the interval
 * of a sum, never a sum of intervals (docs/sampling.md section 5). Children always come after
 * their parent in the node array, which the passes below rely on.
 *
 * Pruning, in lk_flame_finish():
 *   1. each node's share: the largest of its live, peak and allocated bytes over the root's,
 *      and of its live bytes at each bucket's end over the heap's highest point (one depth-first
 *      walk that sums the series of the stacks ending under it, one accumulator a depth);
 *   2. the nodes with a share of at least min_share, at most max_nodes of them, the largest
 *      first (ties to the lower index, so a parent, whose share is never below its child's, is
 *      kept before it);
 *   3. the kept nodes in depth-first order, each followed by its kept children and then one
 *      "other" node for the children it lost, whose sums and series are those children's.
 *
 * Never: print, or hold a stack's stats after lk_flame_add() returns.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "flame.h"

#define NONE UINT32_MAX
#define MAX_TREE_NODES (UINT32_MAX - 1)

struct sum { /* what lk_estimate_finish() needs of an estimate */
	double value, var, observed;
	uint64_t samples;
};

struct tnode {
	const struct lk_sym_frame *frame; /* NULL: the root */
	uint32_t parent, first_child, next_sibling;
	uint32_t series; /* index of its self series in f->series, or NONE */
	uint32_t out;    /* its index among the pruned nodes, or NONE if dropped */
	uint32_t other;  /* the index of its "other" node among the pruned, or NONE */
	double share;
	struct sum v[_LK_FLAME_METRIC_MAX];
};

struct lk_flame {
	struct lk_report_stack_hook hook;
	struct tnode *nodes;
	size_t n, cap;
	uint32_t *slots; /* node index + 1; 0 = empty */
	size_t nslots;
	double (*series)[LK_TIMELINE_BUCKETS];
	size_t nseries, series_cap;
	size_t stacks;
	uint32_t profile;
	bool several_profiles, finished;

	struct lk_flame_node *out; /* after lk_flame_finish(): out_cap of them, nout used */
	double (*out_series)[LK_TIMELINE_BUCKETS]; /* out_series_cap, nout_series used */
	size_t nout, out_cap, nout_series, out_series_cap, nodes_before;
	unsigned buckets;
};

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

static void free_tree(struct lk_flame *f)
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
	free_tree(f);
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

static void add_sum(struct sum *s, const struct lk_estimate *e)
{
	s->value += e->value;
	s->var += e->var;
	s->observed += e->observed;
	s->samples += e->samples;
}

static void add_sums(struct sum *s, const struct sum *t)
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
	add_stats(&f->nodes[0], st);
	for (size_t i = n; i-- > site;) { /* outermost first, down to the site */
		int64_t c = child_of(f, at, frames[i]);
		if (c < 0)
			return (int)c;
		at = (uint32_t)c;
		add_stats(&f->nodes[at], st);
	}
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

/* Step 1: every node's share (see the top of the file). nb buckets; heap_max the highest sum of
 * all series at one bucket (0: no series). */
static int score(struct lk_flame *f, unsigned nb, double heap_max)
{
	const struct tnode *root = &f->nodes[0];
	double (*acc)[LK_TIMELINE_BUCKETS] = NULL;
	uint32_t *path = NULL, at = 0;
	size_t depth = 0, cap = 0;
	int k = 0;

	for (;;) {
		struct tnode *x = &f->nodes[at];
		if (depth == cap) { /* entering at: a new accumulator */
			size_t c = cap ? 2 * cap : 64;
			void *a = realloc(acc, c * sizeof(*acc)), *p;
			if (a)
				acc = a;
			p = a ? realloc(path, c * sizeof(*path)) : NULL;
			if (!p) {
				k = -ENOMEM;
				break;
			}
			path = p;
			cap = c;
		}
		path[depth] = at;
		memset(acc[depth], 0, sizeof(*acc));
		if (x->series != NONE)
			memcpy(acc[depth], f->series[x->series], sizeof(*acc));
		if (x->first_child != NONE) {
			at = x->first_child;
			depth++;
			continue;
		}
		for (;;) { /* leaving path[depth]: its share, then on to its next sibling */
			struct tnode *y = &f->nodes[path[depth]];
			double s = 0;
			for (unsigned m = LK_FLAME_LIVE; m <= LK_FLAME_ALLOC; m++)
				if (root->v[m].value > 0 && y->v[m].value / root->v[m].value > s)
					s = y->v[m].value / root->v[m].value;
			for (unsigned b = 0; b < nb && heap_max > 0; b++)
				if (acc[depth][b] / heap_max > s)
					s = acc[depth][b] / heap_max;
			y->share = s;
			if (depth == 0)
				goto done;
			for (unsigned b = 0; b < nb; b++)
				acc[depth - 1][b] += acc[depth][b];
			if (y->next_sibling != NONE) {
				at = y->next_sibling;
				break;
			}
			depth--;
		}
	}
done:
	free(acc);
	free(path);
	return k;
}

static const struct tnode *sort_nodes; /* qsort has no context argument */

static int cmp_share(const void *a, const void *b)
{
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
	double x = sort_nodes[i].share, y = sort_nodes[j].share;

	if (x != y)
		return x > y ? -1 : 1;
	return i < j ? -1 : i > j;
}

/* Step 2: marks the kept nodes (out != NONE, for now 0); how many. */
static int64_t select_nodes(struct lk_flame *f, const struct lk_flame_opts *o)
{
	size_t nc = 0, keep;
	uint32_t *c = lk_budget_malloc(f->n * sizeof(*c));

	if (!c)
		return -errno;
	for (size_t i = 0; i < f->n; i++)
		if (i == 0 || f->nodes[i].share >= o->min_share)
			c[nc++] = (uint32_t)i;
	sort_nodes = f->nodes;
	qsort(c, nc, sizeof(*c), cmp_share);
	keep = nc < o->max_nodes ? nc : o->max_nodes ? o->max_nodes : 1;
	for (size_t i = 0; i < keep; i++)
		f->nodes[c[i]].out = 0;
	lk_budget_free(c, f->n * sizeof(*c));
	return (int64_t)keep;
}

static void finish_sums(struct lk_estimate *e, const struct sum *s)
{
	for (unsigned m = 0; m < _LK_FLAME_METRIC_MAX; m++) {
		e[m] = (struct lk_estimate){
			.value = s[m].value,
			.var = s[m].var,
			.observed = s[m].observed,
			.samples = s[m].samples,
		};
		lk_estimate_finish(&e[m]);
	}
}

/* Step 3: the pruned nodes in depth-first order, an "other" node after each kept node's kept
 * children. The children lists hold the newest first; the page orders them itself. */
static void emit(struct lk_flame *f, uint32_t i, size_t parent)
{
	struct tnode *x = &f->nodes[i];
	struct sum other[_LK_FLAME_METRIC_MAX] = { 0 };
	size_t dropped = 0, me = f->nout++;

	x->out = (uint32_t)me;
	f->out[me] = (struct lk_flame_node){ .frame = x->frame, .parent = parent };
	finish_sums(f->out[me].value, x->v);
	for (uint32_t c = x->first_child; c != NONE; c = f->nodes[c].next_sibling) {
		if (f->nodes[c].out != NONE) {
			emit(f, c, me);
			continue;
		}
		add_sums(other, f->nodes[c].v);
		dropped++;
	}
	if (!dropped)
		return;
	x->other = (uint32_t)f->nout;
	f->out[f->nout] = (struct lk_flame_node){ .parent = me, .other = true, .dropped = dropped };
	finish_sums(f->out[f->nout++].value, other);
}

/* The series of pruned node o, made (zeros) if it has none yet. */
static double *out_series(struct lk_flame *f, size_t o)
{
	if (!f->out[o].series) {
		f->out[o].series = f->out_series[f->nout_series];
		memset(f->out_series[f->nout_series++], 0, sizeof(*f->out_series));
	}
	return (double *)f->out[o].series;
}

/* Each stack's series goes to the node it ends at if that is kept, else to the "other" node
 * under its nearest kept ancestor. */
static int place_series(struct lk_flame *f, unsigned nb)
{
	size_t need = f->nseries < f->nout ? f->nseries : f->nout;

	f->out_series = lk_budget_malloc(need * sizeof(*f->out_series));
	if (!f->out_series && need)
		return -errno;
	f->out_series_cap = need;
	for (size_t i = 0; i < f->n; i++) {
		const struct tnode *x = &f->nodes[i];
		uint32_t at = (uint32_t)i, from = NONE;
		double *s;
		if (x->series == NONE)
			continue;
		while (f->nodes[at].out == NONE) {
			from = at;
			at = f->nodes[at].parent;
		}
		s = out_series(f, from == NONE ? f->nodes[at].out : f->nodes[at].other);
		for (unsigned b = 0; b < nb; b++)
			s[b] += f->series[x->series][b];
	}
	return 0;
}

int lk_flame_finish(struct lk_flame *f, const struct lk_flame_opts *o, unsigned nbuckets)
{
	double heap_max = 0;
	int64_t kept;
	int k;

	if (f->finished)
		return -EINVAL;
	f->finished = true;
	f->nodes_before = f->n;
	f->buckets = f->several_profiles ? 0
		     : nbuckets < LK_TIMELINE_BUCKETS ? nbuckets : LK_TIMELINE_BUCKETS;
	for (unsigned b = 0; b < f->buckets; b++) {
		double sum = 0;
		for (size_t i = 0; i < f->nseries; i++)
			sum += f->series[i][b];
		heap_max = sum > heap_max ? sum : heap_max;
	}
	k = score(f, f->buckets, heap_max);
	if (k < 0)
		return k;
	kept = select_nodes(f, o);
	if (kept < 0)
		return (int)kept;
	/* kept nodes and at most one "other" each */
	f->out = lk_budget_calloc(2 * (size_t)kept, sizeof(*f->out));
	if (!f->out)
		return -errno;
	f->out_cap = 2 * (size_t)kept;
	emit(f, 0, SIZE_MAX);
	if (f->buckets && (k = place_series(f, f->buckets)) < 0)
		return k;
	free_tree(f);
	return 0;
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
