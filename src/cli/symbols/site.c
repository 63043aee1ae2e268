/* site.c: symbolized stacks, allocation sites and stack filters (see site.h).
 *
 * A stack's site is its first frame, innermost first, that is not an allocator frame: the
 * built-in list (allocators.c) or a --alloc-fn pattern. A pattern is a POSIX extended regex over
 * the frame's function (and, for --focus and --ignore, its module), or a location,
 * MODULE+0xOFFSET, which names one address of a module, symbol or not (site.h).
 *
 * Never: look up a frame's own return address (it points after the call, maybe into the next
 * line or function: frame - 1 is inside the call), or let a pattern decide more than it says
 * (focus and ignore look at names, modules and locations only, the site at the skip list only).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "site.h"

struct lk_site_synth {
	struct lk_site_synth *next;
	struct lk_sym_frame frame;
	char name[24];
};

static const struct lk_sym_frame no_stack = { .function = "(no stack)" };

/* "MODULE+0xOFFSET": the module (a path if it holds a '/', else a file name) and the offset
 * into *rule; false for anything else. The last "+0x" splits, since a module's name may hold a
 * '+' (libstdc++.so.6+0x9a1b2). */
static bool parse_location(const char *pattern, struct lk_site_rule *rule)
{
	const char *plus = NULL, *hex;
	char *end;

	for (const char *p = strstr(pattern, "+0x"); p; p = strstr(p + 1, "+0x"))
		plus = p;
	if (!plus || plus == pattern)
		return false;
	hex = plus + 3;
	if (strspn(hex, "0123456789abcdefABCDEF") != strlen(hex) || !*hex || strlen(hex) > 16)
		return false;
	rule->offset = strtoull(hex, &end, 16);
	rule->module = strndup(pattern, (size_t)(plus - pattern));
	rule->location = true;
	return true;
}

int lk_site_filter_add(struct lk_site_filter *f, enum lk_site_pattern which, const char *pattern,
		       char *err, size_t err_size)
{
	struct lk_site_rule *rules, *rule;
	int r;

	if ((unsigned)which >= _LK_SITE_PATTERN_MAX)
		return -EINVAL;
	rules = reallocarray(f->rules[which], f->n[which] + 1, sizeof(*rules));
	if (!rules)
		return -ENOMEM;
	f->rules[which] = rules;
	rule = &rules[f->n[which]];
	*rule = (struct lk_site_rule){};
	if (parse_location(pattern, rule)) {
		if (!rule->module)
			return -ENOMEM;
		f->n[which]++;
		return 0;
	}
	r = regcomp(&rule->re, pattern, REG_EXTENDED | REG_NOSUB);
	if (r != 0) {
		if (err && err_size)
			regerror(r, &rule->re, err, err_size);
		return r == REG_ESPACE ? -ENOMEM : -EINVAL;
	}
	f->n[which]++;
	return 0;
}

void lk_site_filter_done(struct lk_site_filter *f)
{
	for (unsigned w = 0; w < _LK_SITE_PATTERN_MAX; w++) {
		for (size_t i = 0; i < f->n[w]; i++) {
			if (f->rules[w][i].location)
				free(f->rules[w][i].module);
			else
				regfree(&f->rules[w][i].re);
		}
		free(f->rules[w]);
		f->rules[w] = NULL;
		f->n[w] = 0;
	}
}

const char *lk_site_basename(const char *path)
{
	const char *slash;

	if (!path)
		return "";
	slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

static bool regex_match(const regex_t *re, const char *s)
{
	return s && regexec(re, s, 0, NULL, 0) == 0;
}

static bool at_location(const struct lk_site_rule *rule, const struct lk_sym_frame *frame)
{
	const char *module = strchr(rule->module, '/') ? frame->module
						       : lk_site_basename(frame->module);

	return frame->module && frame->offset == rule->offset && strcmp(module, rule->module) == 0;
}

/* Whether one of the rules matches the frame: a location by its module and offset, a regex by the
 * function, and also by the module's path or file name if modules (--focus, --ignore). */
static bool any_rule(const struct lk_site_filter *f, enum lk_site_pattern which,
		     const struct lk_sym_frame *frame, bool modules)
{
	for (size_t i = 0; i < f->n[which]; i++) {
		const struct lk_site_rule *rule = &f->rules[which][i];
		if (rule->location ? at_location(rule, frame)
				   : regex_match(&rule->re, frame->function) ||
					     (modules && (regex_match(&rule->re, frame->module) ||
							  (frame->module &&
							   regex_match(&rule->re,
								       lk_site_basename(frame->module))))))
			return true;
	}
	return false;
}

bool lk_site_is_allocator(const struct lk_site_filter *f, const struct lk_sym_frame *frame)
{
	return lk_site_builtin_allocator(frame) || (f && any_rule(f, LK_SITE_ALLOC_FN, frame, false));
}

size_t lk_site_pick(const struct lk_site_filter *f, const struct lk_sym_frame *const *frames,
		    size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!lk_site_is_allocator(f, frames[i]))
			return i;
	return 0;
}

static bool stack_matches(const struct lk_site_filter *f, enum lk_site_pattern which,
			  const struct lk_sym_frame *const *frames, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (any_rule(f, which, frames[i], true))
			return true;
	return false;
}

bool lk_site_wanted(const struct lk_site_filter *f, const struct lk_sym_frame *const *frames,
		    size_t n)
{
	if (!f)
		return true;
	if (f->n[LK_SITE_FOCUS] && !stack_matches(f, LK_SITE_FOCUS, frames, n))
		return false;
	return !(f->n[LK_SITE_IGNORE] && stack_matches(f, LK_SITE_IGNORE, frames, n));
}

/* FNV-1a, continued over each field (a NULL string hashes as one 0xff byte, which no C string
 * holds). */
static uint64_t hash_str(uint64_t h, const char *s)
{
	if (!s)
		return (h ^ 0xff) * 0x100000001b3ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return (h ^ 0) * 0x100000001b3ull;
}

uint64_t lk_site_func_hash(const struct lk_sym_frame *frame)
{
	uint64_t h = 0xcbf29ce484222325ull;

	h = hash_str(h, frame->function);
	h = hash_str(h, frame->file);
	return hash_str(h, frame->module);
}

uint64_t lk_site_key_hash(const struct lk_sym_frame *frame)
{
	return (lk_site_func_hash(frame) ^ frame->line) * 0x100000001b3ull;
}

static int cmp_str(const char *a, const char *b)
{
	if (!a || !b)
		return (a != NULL) - (b != NULL);
	return strcmp(a, b);
}

int lk_site_key_compare(const struct lk_sym_frame *a, const struct lk_sym_frame *b)
{
	int c = cmp_str(a->function, b->function);

	if (c == 0)
		c = cmp_str(a->file, b->file);
	if (c == 0)
		c = a->line < b->line ? -1 : a->line > b->line;
	if (c == 0)
		c = cmp_str(a->module, b->module);
	return c;
}

int lk_site_func_compare(const struct lk_sym_frame *a, const struct lk_sym_frame *b)
{
	int c = cmp_str(a->function, b->function);

	if (c == 0)
		c = cmp_str(a->file, b->file);
	return c ? c : cmp_str(a->module, b->module);
}

void lk_site_stack_init(struct lk_site_stack *s)
{
	*s = (struct lk_site_stack){};
	lk_u64map_init_budgeted(&s->synth_by_pc, SIZE_MAX);
}

void lk_site_stack_trim(struct lk_site_stack *s)
{
	lk_budget_free(s->frames, s->cap * sizeof(*s->frames));
	s->frames = NULL;
	s->n = s->cap = 0;
}

void lk_site_stack_done(struct lk_site_stack *s)
{
	lk_site_stack_trim(s);
	for (struct lk_site_synth *x = s->synths, *next; x; x = next) {
		next = x->next;
		lk_budget_free(x, sizeof(*x));
	}
	s->synths = NULL;
	lk_u64map_done(&s->synth_by_pc);
}

/* A frame for an address no module covers: its hex value as the function. NULL and errno ENOMEM
 * or E2BIG (the budget: one for each distinct address of a profile). */
static const struct lk_sym_frame *synth_frame(struct lk_site_stack *s, uint64_t pc)
{
	uint64_t *slot = lk_u64map_get(&s->synth_by_pc, pc);
	struct lk_site_synth *x;
	int k;

	if (slot)
		return &((struct lk_site_synth *)(uintptr_t)*slot)->frame;
	x = lk_budget_calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	snprintf(x->name, sizeof(x->name), "0x%llx", (unsigned long long)pc);
	x->frame.function = x->name;
	x->frame.offset = pc;
	k = lk_u64map_put(&s->synth_by_pc, pc, (uint64_t)(uintptr_t)x);
	if (k < 0) {
		lk_budget_free(x, sizeof(*x));
		errno = -k;
		return NULL;
	}
	x->next = s->synths;
	s->synths = x;
	return &x->frame;
}

/* 0, or -ENOMEM or -E2BIG (the budget); f NULL: synth_frame's failure, in errno. */
static int push_frame(struct lk_site_stack *s, const struct lk_sym_frame *f)
{
	if (!f)
		return -errno;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 256;
		const struct lk_sym_frame **b =
			lk_budget_realloc(s->frames, s->cap * sizeof(*b), cap * sizeof(*b));
		if (!b)
			return -errno;
		s->frames = b;
		s->cap = cap;
	}
	s->frames[s->n++] = f;
	return 0;
}

int lk_site_symbolize(struct lk_site_stack *s, struct lk_symbolizer *sym, uint32_t profile,
		      const uint64_t *frames, const uint64_t *modules, uint32_t nframes)
{
	int r = 0;

	s->n = 0;
	if (nframes == 0)
		return push_frame(s, &no_stack);
	for (uint32_t i = 0; i < nframes && r >= 0; i++) {
		const struct lk_sym_frame *chain = NULL;
		size_t k = 0;
		/* Every frame is a return address: look up the call instruction (docs/format.md). */
		uint64_t pc = frames[i] ? frames[i] - 1 : 0;

		r = modules[i] ? lk_symbolize(sym, profile, modules[i], pc, &chain, &k) : -ENOENT;
		if (r == -ENOMEM || r == -E2BIG)
			break;
		if (r < 0) {
			r = push_frame(s, synth_frame(s, frames[i]));
			continue;
		}
		for (size_t j = 0; j < k && r >= 0; j++)
			r = push_frame(s, &chain[j]);
	}
	return r < 0 ? r : 0;
}
