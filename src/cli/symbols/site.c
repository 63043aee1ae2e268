/* site.c: symbolized stacks, allocation sites and stack filters (see site.h).
 *
 * The built-in allocator frames, skipped when choosing a stack's site (pprof keeps a similar
 * list; `--alloc-fn REGEX` adds the program's own wrappers):
 *
 *   anywhere      the malloc family, also as __libc_malloc etc.; the wrappers that only
 *                 allocate: xmalloc, xcalloc, xrealloc, xreallocarray, xzalloc, xstrdup, xstrndup,
 *                 xmemdup, and GLib's g_malloc, g_malloc0, g_realloc, g_try_*, g_*_n
 *   C++           operator new and new[] in every form (demangled "operator new...", mangled
 *                 _Znw*, _Zna*), __cxa_allocate_exception, and the standard library's code:
 *                 std::* and __gnu_cxx::* (std::allocator, std::vector's _M_allocate,
 *                 std::string's _M_create, ...), so that the site is the program's own call
 *                 of push_back or of the string's constructor
 *   Rust          the global allocator's shims (__rust_alloc, __rust_alloc_zeroed, __rust_realloc,
 *                 __rdl_*, __rg_*) and the modules of the standard library's crates that
 *                 allocate or pass an allocation through: alloc's alloc, raw_vec, vec, string,
 *                 boxed, fmt, collections, rc, sync, slice, str, borrow and ffi; core's iter,
 *                 ops::function, clone and fmt; the hashbrown behind HashMap; also as the type of
 *                 a trait method ("<alloc::vec::Vec<T> as core::clone::Clone>::clone"), and the
 *                 standard traits' blanket impls ("<&mut W as core::fmt::Write>::write_str"),
 *                 so that the site is the program's call of push, clone or collect (std::* is
 *                 skipped as for C++)
 *   in libc.so    the functions that allocate on their caller's behalf: strdup, strndup, wcsdup,
 *                 asprintf, vasprintf, getline, getdelim, open_memstream, realpath,
 *                 canonicalize_file_name, their __ and _chk spellings, and glibc's internal
 *                 allocation helpers (_int_*, __libc_scratch_buffer_*, __libc_dynarray_*,
 *                 __libc_alloc_buffer_*)
 *
 * Names are compared without a parameter list ("malloc(unsigned long)" is malloc), without the
 * return type of a template ("void std::_Construct<...>" is in std::) and without glibc's "__GI_"
 * alias prefix.
 *
 * Never: look up a frame's own return address (it points after the call, maybe into the next
 * line or function: frame - 1 is inside the call), or let a pattern decide more than it says
 * (focus and ignore look at names and modules only, the site at the skip list only).
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

static const char *const malloc_names[] = {
	"malloc", "calloc", "realloc", "reallocarray", "memalign", "aligned_alloc",
	"posix_memalign", "valloc", "pvalloc", "__posix_memalign",
	"xmalloc", "xcalloc", "xrealloc", "xreallocarray", "xzalloc", "xstrdup", "xstrndup",
	"xmemdup",
	"g_malloc", "g_malloc0", "g_realloc", "g_try_malloc", "g_try_malloc0", "g_try_realloc",
	"g_malloc_n", "g_malloc0_n", "g_realloc_n", "g_try_malloc_n", "g_try_malloc0_n",
	"g_try_realloc_n",
};

/* The modules of Rust's alloc, core and hashbrown crates that allocate or pass an allocation
 * through, by path: a C++ namespace named alloc or core keeps its frames. */
static const char *const rust_prefixes[] = {
	"__rust_alloc", "__rust_realloc", "__rdl_", "__rg_",
	"alloc::alloc::", "alloc::raw_vec::", "alloc::vec::", "alloc::string::", "alloc::boxed::",
	"alloc::fmt::", "alloc::collections::", "alloc::rc::", "alloc::sync::", "alloc::slice::",
	"alloc::str::", "alloc::borrow::", "alloc::ffi::", "core::iter::", "core::ops::function::",
	"core::clone::", "core::fmt::", "hashbrown::",
};

/* A standard library trait's blanket impl: "<&mut W as core::fmt::Write>::write_str", whose self
 * type is a type parameter (one capital letter, behind & or &mut, or a slice of one) and whose
 * trait is core's, alloc's or std's. A program's own impl names its own type. */
static bool rust_blanket_impl(const char *name)
{
	const char *t = name + 1, *as;

	if (name[0] != '<' || !(as = strstr(name, " as ")))
		return false;
	while (*t == '&' || *t == '[' || *t == '*')
		t += *t == '*' && !strncmp(t, "*const ", 7) ? 7 : *t == '*' && !strncmp(t, "*mut ", 5) ? 5 : 1;
	if (!strncmp(t, "mut ", 4))
		t += 4;
	if (!(t[0] >= 'A' && t[0] <= 'Z') || !(t + 1 == as || t[1] == ']'))
		return false;
	as += 4;
	return !strncmp(as, "core::", 6) || !strncmp(as, "alloc::", 7) || !strncmp(as, "std::", 5);
}

static const char *const libc_names[] = {
	"strdup", "strndup", "__strdup", "__strndup", "wcsdup", "__wcsdup",
	"asprintf", "vasprintf", "__asprintf", "__vasprintf", "__asprintf_chk", "__vasprintf_chk",
	"__vasprintf_internal", "getline", "getdelim", "__getline", "__getdelim",
	"open_memstream", "open_wmemstream", "realpath", "__realpath", "canonicalize_file_name",
};

static const char *const libc_prefixes[] = {
	"_int_", "__libc_scratch_buffer_", "__libc_dynarray_", "__libc_alloc_buffer_",
};

/* Prefixes of C++ names, demangled and (when no demangler was found) mangled. The whole standard
 * library is skipped, not only std::allocator: as a site, std::vector<int>::_M_realloc_insert
 * would merge every vector of ints in the program into one line. */
static const char *const cxx_prefixes[] = {
	"_Znw", "_Zna", "__cxa_allocate_exception",
	"__cxa_allocate_dependent_exception",
	"std::", "__gnu_cxx::",
	"_ZSt", "_ZNSt", "_ZNKSt", "_ZNSa", "_ZNKSa", "_ZNSs", "_ZNKSs", "_ZNSb", "_ZNKSb",
	"_ZN9__gnu_cxx", "_ZNK9__gnu_cxx",
};

#define ELEMENTS(a) (sizeof(a) / sizeof((a)[0]))

int lk_site_filter_add(struct lk_site_filter *f, enum lk_site_pattern which, const char *pattern,
		       char *err, size_t err_size)
{
	regex_t *re;
	int r;

	if ((unsigned)which >= _LK_SITE_PATTERN_MAX)
		return -EINVAL;
	re = reallocarray(f->re[which], f->n[which] + 1, sizeof(*re));
	if (!re)
		return -ENOMEM;
	f->re[which] = re;
	r = regcomp(&re[f->n[which]], pattern, REG_EXTENDED | REG_NOSUB);
	if (r != 0) {
		if (err && err_size)
			regerror(r, &re[f->n[which]], err, err_size);
		return r == REG_ESPACE ? -ENOMEM : -EINVAL;
	}
	f->n[which]++;
	return 0;
}

void lk_site_filter_done(struct lk_site_filter *f)
{
	for (unsigned w = 0; w < _LK_SITE_PATTERN_MAX; w++) {
		for (size_t i = 0; i < f->n[w]; i++)
			regfree(&f->re[w][i]);
		free(f->re[w]);
		f->re[w] = NULL;
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

static bool in_list(const char *const *list, size_t n, const char *name, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(list[i]) == len && memcmp(list[i], name, len) == 0)
			return true;
	return false;
}

static bool starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* libc.so.6, or libc-2.31.so on older systems. */
static bool in_libc(const struct lk_sym_frame *frame)
{
	const char *base = lk_site_basename(frame->module);

	return starts_with(base, "libc.so") || (starts_with(base, "libc-") && strstr(base, ".so"));
}

/* A demangled C++ name without the return type that function templates carry: "void
 * std::_Construct<...>(...)" is std::_Construct. The start is after the last space outside <>
 * and () before the parameter list; "(anonymous namespace)::f()" has no return type. */
static const char *qualified_name(const char *name)
{
	const char *start = name;
	int angle = 0, paren = 0;

	if (starts_with(name, "operator"))
		return name;
	for (const char *p = name; *p; p++) {
		if (*p == '<')
			angle++;
		else if (*p == '>' && angle > 0)
			angle--;
		else if (*p == '(' && !angle && !paren && p > name && p[-1] != ' ')
			return start; /* the parameter list */
		else if (*p == '(')
			paren++;
		else if (*p == ')' && paren > 0)
			paren--;
		else if (*p == ' ' && !angle && !paren)
			start = p + 1;
	}
	return start;
}

static bool builtin_allocator(const struct lk_sym_frame *frame)
{
	const char *name = frame->function, *op = strstr(name, "operator new");

	/* operator new and new[], a class's own too (Foo::operator new). */
	if (op && (op == name || (op - name >= 2 && op[-1] == ':' && op[-2] == ':')) &&
	    strchr("([", op[strlen("operator new")]))
		return true;
	for (size_t i = 0; i < ELEMENTS(cxx_prefixes); i++)
		if (starts_with(name, cxx_prefixes[i]) ||
		    starts_with(qualified_name(name), cxx_prefixes[i]))
			return true;
	for (size_t i = 0; i < ELEMENTS(rust_prefixes); i++)
		if (starts_with(name + (name[0] == '<'), rust_prefixes[i]))
			return true;
	if (rust_blanket_impl(name))
		return true;
	if (starts_with(name, "__GI_"))
		name += strlen("__GI_");
	if (in_libc(frame)) {
		for (size_t i = 0; i < ELEMENTS(libc_prefixes); i++)
			if (starts_with(name, libc_prefixes[i]))
				return true;
		if (in_list(libc_names, ELEMENTS(libc_names), name, strcspn(name, "(")))
			return true;
	}
	if (starts_with(name, "__libc_")) /* __libc_malloc, __libc_memalign, ... */
		name += strlen("__libc_");
	return in_list(malloc_names, ELEMENTS(malloc_names), name, strcspn(name, "("));
}

static bool any_match(const regex_t *re, size_t n, const char *s)
{
	if (!s)
		return false;
	for (size_t i = 0; i < n; i++)
		if (regexec(&re[i], s, 0, NULL, 0) == 0)
			return true;
	return false;
}

bool lk_site_is_allocator(const struct lk_site_filter *f, const struct lk_sym_frame *frame)
{
	return builtin_allocator(frame) ||
	       (f && any_match(f->re[LK_SITE_ALLOC_FN], f->n[LK_SITE_ALLOC_FN], frame->function));
}

size_t lk_site_pick(const struct lk_site_filter *f, const struct lk_sym_frame *const *frames,
		    size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!lk_site_is_allocator(f, frames[i]))
			return i;
	return 0;
}

static bool frame_matches(const regex_t *re, size_t n, const struct lk_sym_frame *frame)
{
	return any_match(re, n, frame->function) || any_match(re, n, frame->module) ||
	       (frame->module && any_match(re, n, lk_site_basename(frame->module)));
}

static bool stack_matches(const struct lk_site_filter *f, enum lk_site_pattern which,
			  const struct lk_sym_frame *const *frames, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (frame_matches(f->re[which], f->n[which], frames[i]))
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

uint64_t lk_site_key_hash(const struct lk_sym_frame *frame)
{
	uint64_t h = 0xcbf29ce484222325ull;

	h = hash_str(h, frame->function);
	h = hash_str(h, frame->file);
	h = hash_str(h, frame->module);
	return (h ^ frame->line) * 0x100000001b3ull;
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
