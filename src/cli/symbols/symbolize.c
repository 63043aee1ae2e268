/* symbolize.c: addresses to functions, files and lines, offline, with libdwfl (see symbolize.h).
 *
 * Each distinct file (path and recorded build-id) is an object with its own Dwfl, reported at
 * bias 0 so that libdwfl sees the file's own addresses: a module's pc becomes pc - base, and the
 * same library mapped at different addresses in several processes is parsed once. Each object
 * caches its answers by that address. Answers, names and paths live in a pool freed only with the
 * symbolizer, because callers keep the pointers.
 *
 * Never: print (warnings are kept for the caller), trust a file on disk to be the build that was
 * profiled without comparing build-ids, open /proc/self paths (they would name leek itself), open
 * anything but a regular file or let libdwfl open a file itself (the paths come from the profile
 * and from the files it names: a FIFO there would block for good, see debuginfo.h), or free a
 * cached answer before lk_symbolizer_free.
 *
 * Glossary: rel = pc - base, an address in the file; object = one opened file; chain = the
 * frames of one address, innermost (most deeply inlined) first.
 */
#include <ctype.h>
#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "budget.h"
#include "debuginfo.h"
#include "symbolize.h"
#include "u64map.h"
#include "util.h"

#define CHUNK_SIZE (64u << 10)

/* The pool: strings, objects and chains, all freed together. */
struct chunk {
	struct chunk *next;
	size_t used, size;
	max_align_t data[];
};

struct chain {
	size_t n;
	struct lk_sym_frame f[];
};

struct object {
	const char *path, *label; /* interned; label is the basename, for "label+0x1a2b" */
	uint8_t build_id[LK_MAX_BUILD_ID];
	uint32_t build_id_len;
	struct object *next_same_path;
	bool opened;
	Dwfl *dwfl;
	Dwfl_Module *mod;       /* NULL: no file was found, so no symbols */
	struct lk_u64map cache; /* rel -> struct chain * */
	struct symbol *syms;    /* the sized symbols, by address (symtab_name); NULL: not read yet */
	size_t nsyms;
	char *held;             /* the warning of an opening ahead (lk_symbolizer_prepare), until
				 * the first lookup in it */
};

/* A sized symbol of an object's symbol table. */
struct symbol {
	uint64_t start, end;
	const char *name; /* libdwfl's, valid while its Dwfl is */
	int rank;         /* binding: 2 global, 1 weak, 0 local (libdwfl prefers them in that order) */
};

struct module {
	uint64_t id, base;
	uint32_t profile, nseg;
	bool unloaded;
	struct object *obj;
	struct lk_module_seg seg[LK_MAX_SEGMENTS];
};

/* One segment of a loaded module, for lk_symbolizer_find_module. Sorted by (profile, start);
 * max_end is the largest end of this and earlier spans of the same profile. */
struct span {
	uint64_t start, end, max_end;
	uint32_t profile;
	size_t module;
};

struct strslot {
	const char *s;
	uint64_t hash;
};

struct lk_symbolizer {
	struct chunk *chunks;
	struct strslot *strs; /* interned strings: open addressing, size a power of two */
	size_t strs_size, strs_count;

	struct object **objects;
	size_t n_objects, objects_cap;
	struct lk_u64map object_by_path; /* interned path pointer -> struct object * */

	struct module *modules;
	size_t n_modules, modules_cap;
	struct lk_u64map module_by_key; /* profile << 32 | id -> index in modules */

	struct span *spans;
	size_t n_spans, spans_cap;
	bool spans_dirty;

	struct lk_debuginfo debuginfo; /* the debug directories: every module's userdata */
	Dwfl_Callbacks callbacks; /* every Dwfl keeps a pointer to this */

	char **warnings;
	size_t n_warnings, warnings_cap;
	struct object *holding; /* the object being opened ahead: its warning waits there */
	int nomem; /* a helper ran out of memory (-ENOMEM) or budget (-E2BIG): the current lookup
		    * fails with it */
};

/* What a helper's failed allocation leaves for the lookup: errno E2BIG is the budget's. */
static void set_nomem(struct lk_symbolizer *s)
{
	s->nomem = errno == E2BIG ? -E2BIG : -ENOMEM;
}

/* The error of a helper that returned NULL. */
static int nomem_error(const struct lk_symbolizer *s)
{
	return s->nomem ? s->nomem : -ENOMEM;
}

typedef char *demangle_fn(const char *mangled, char *buf, size_t *len, int *status);
static demangle_fn *demangler;
static pthread_once_t demangler_once = PTHREAD_ONCE_INIT;

/* Arrays whose length a profile decides grow from the budget (budget.h); -ENOMEM or -E2BIG. */
static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t n = *cap ? *cap : 8, bytes;
	void *q;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	if (__builtin_mul_overflow(n, elem, &bytes))
		return -ENOMEM;
	q = lk_budget_realloc(*p, *cap * elem, bytes);
	if (!q)
		return errno == E2BIG ? -E2BIG : -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

static void *pool_alloc(struct lk_symbolizer *s, size_t size)
{
	struct chunk *c = s->chunks;

	size = (size + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
	if (!c || c->size - c->used < size) {
		size_t cap = size > CHUNK_SIZE ? size : CHUNK_SIZE;
		c = lk_budget_malloc(sizeof(*c) + cap);
		if (!c) {
			set_nomem(s);
			return NULL;
		}
		*c = (struct chunk){ .next = s->chunks, .size = cap };
		s->chunks = c;
	}
	c->used += size;
	return (char *)c->data + c->used - size;
}

static uint64_t hash_bytes(const char *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */

	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)p[i]) * 0x100000001b3ull;
	return h;
}

/* The one copy of str[0..len) (which holds no NUL); NULL when out of memory. */
static const char *intern_n(struct lk_symbolizer *s, const char *str, size_t len)
{
	uint64_t h = hash_bytes(str, len);
	size_t i, mask;

	if ((s->strs_count + 1) * 2 > s->strs_size) {
		size_t size = s->strs_size ? s->strs_size * 2 : 1024;
		struct strslot *v = lk_budget_calloc(size, sizeof(*v));
		if (!v) {
			set_nomem(s);
			return NULL;
		}
		for (i = 0; i < s->strs_size; i++) {
			if (!s->strs[i].s)
				continue;
			size_t j = s->strs[i].hash & (size - 1);
			while (v[j].s)
				j = (j + 1) & (size - 1);
			v[j] = s->strs[i];
		}
		lk_budget_free(s->strs, s->strs_size * sizeof(*v));
		s->strs = v;
		s->strs_size = size;
	}
	mask = s->strs_size - 1;
	for (i = h & mask; s->strs[i].s; i = (i + 1) & mask)
		if (s->strs[i].hash == h && strncmp(s->strs[i].s, str, len) == 0 &&
		    s->strs[i].s[len] == 0)
			return s->strs[i].s;
	char *copy = pool_alloc(s, len + 1);
	if (!copy)
		return NULL;
	memcpy(copy, str, len);
	copy[len] = 0;
	s->strs[i] = (struct strslot){ copy, h };
	s->strs_count++;
	return copy;
}

static const char *intern(struct lk_symbolizer *s, const char *str)
{
	return intern_n(s, str, strlen(str));
}

static const char *internf(struct lk_symbolizer *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static const char *internf(struct lk_symbolizer *s, const char *fmt, ...)
{
	const char *r = NULL;
	char *str;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&str, fmt, ap) >= 0) {
		r = intern(s, str);
		free(str);
	} else {
		s->nomem = -ENOMEM;
	}
	va_end(ap);
	return r;
}

/* Adds the malloc'ed warning str (NULL: out of memory) to the list, which takes it. */
static void keep_warning(struct lk_symbolizer *s, char *str)
{
	int r = str ? grow((void **)&s->warnings, &s->warnings_cap, s->n_warnings + 1,
			   sizeof(char *))
		    : -ENOMEM;

	if (r < 0) {
		free(str);
		s->nomem = r;
		return;
	}
	s->warnings[s->n_warnings++] = str;
}

static void warn(struct lk_symbolizer *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void warn(struct lk_symbolizer *s, const char *fmt, ...)
{
	char *str;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&str, fmt, ap) < 0)
		str = NULL;
	va_end(ap);
	if (str && s->holding) {
		free(s->holding->held);
		s->holding->held = str;
		return;
	}
	keep_warning(s, str);
}

static void hex(char *buf, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sprintf(buf + 2 * i, "%02x", p[i]);
	buf[2 * n] = 0;
}

static void find_demangler(void)
{
	void *h;

	/* The C++ runtime, if this process has one; else load it (a C program has none), and keep
	 * it: unloading a C++ runtime is not safe. */
	demangler = (demangle_fn *)dlsym(RTLD_DEFAULT, "__cxa_demangle");
	if (!demangler && (h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL)))
		demangler = (demangle_fn *)dlsym(h, "__cxa_demangle");
}

/* Rust's legacy mangling ends every path with a hash, "::h0123456789abcdef": drop it. Whether
 * there was one: the name is Rust's. */
static bool strip_rust_hash(char *d)
{
	size_t n = strlen(d);

	if (n < 19 || memcmp(d + n - 19, "::h", 3) != 0)
		return false;
	for (size_t i = n - 16; i < n; i++)
		if (!isxdigit((unsigned char)d[i]))
			return false;
	d[n - 19] = 0;
	return true;
}

/* Rust's legacy mangling spells what a C++ name cannot hold with escapes: "$LT$" for '<', "$u20$"
 * for a space, ".." for "::", and a component that starts with one is prefixed with '_'
 * (rustc-demangle's rules). Decoded in place: "_$LT$alloc..vec..Vec$LT$T$GT$$u20$as$u20$..."
 * is "<alloc::vec::Vec<T> as ...". An escape it does not know stays as it is. */
static void rust_unescape(char *d)
{
	static const struct {
		char esc[5], c;
	} named[] = { { "$SP$", '@' }, { "$BP$", '*' }, { "$RF$", '&' }, { "$LT$", '<' },
		      { "$GT$", '>' }, { "$LP$", '(' }, { "$RP$", ')' }, { "$C$", ',' } };
	char *w = d;
	const char *r = d;

	while (*r) {
		bool start = r == d || (r - d >= 2 && r[-1] == ':' && r[-2] == ':');
		if (start && r[0] == '_' && r[1] == '$') {
			r++;
			continue;
		}
		if (r[0] == '.' && r[1] == '.') {
			*w++ = ':';
			*w++ = ':';
			r += 2;
			continue;
		}
		if (*r == '$') {
			size_t i, len = 0;
			for (i = 0; i < sizeof(named) / sizeof(named[0]); i++)
				if (!strncmp(r, named[i].esc, len = strlen(named[i].esc)))
					break;
			if (i < sizeof(named) / sizeof(named[0])) {
				*w++ = named[i].c;
				r += len;
				continue;
			}
			unsigned v;
			int n = 0;
			if (r[1] == 'u' && sscanf(r + 2, "%2x$%n", &v, &n) == 1 && n == 3 && v >= 0x20 &&
			    v < 0x7f) {
				*w++ = (char)v;
				r += 2 + n;
				continue;
			}
		}
		*w++ = *r++;
	}
	*w = 0;
}

/* C++ and legacy Rust names demangled; any other name as it is. rustc adds ".llvm.<digits>" to
 * some names, which the C++ demangler rejects: demangled without it. */
static const char *demangle(struct lk_symbolizer *s, const char *name)
{
	if (strncmp(name, "_Z", 2) == 0) {
		pthread_once(&demangler_once, find_demangler);
		const char *llvm = strstr(name, ".llvm.");
		char *bare = llvm ? strndup(name, (size_t)(llvm - name)) : NULL;
		int status = -1;
		char *d = demangler ? demangler(bare ? bare : name, NULL, NULL, &status) : NULL;
		free(bare);
		if (d && status == 0) {
			if (strip_rust_hash(d))
				rust_unescape(d);
			const char *r = intern(s, d);
			free(d);
			return r;
		}
		free(d);
	}
	return intern(s, name);
}

/* Lexically drops "." and "dir/.." from an absolute path, in place: "/b/../src/x.c" is
 * "/src/x.c". Symlinks are not consulted; this only tidies what compilers joined. */
static void clean_path(char *p)
{
	char *out = p;
	const char *in = p;

	while (*in) {
		while (*in == '/')
			in++;
		const char *seg = in;
		while (*in && *in != '/')
			in++;
		size_t len = (size_t)(in - seg);
		if (len == 0 || (len == 1 && seg[0] == '.'))
			continue;
		if (len == 2 && seg[0] == '.' && seg[1] == '.') {
			while (out > p && *--out != '/')
				;
			continue;
		}
		*out++ = '/';
		memmove(out, seg, len);
		out += len;
	}
	if (out == p)
		*out++ = '/';
	*out = 0;
}

/* A source file name from DWARF, relative to the compilation directory unless absolute. */
static const char *source_path(struct lk_symbolizer *s, const char *name, const char *comp_dir)
{
	char *joined;
	const char *r;

	if (name[0] == '/' || !comp_dir || comp_dir[0] != '/')
		return intern(s, name);
	if (asprintf(&joined, "%s/%s", comp_dir, name) < 0) {
		s->nomem = -ENOMEM;
		return NULL;
	}
	clean_path(joined);
	r = intern(s, joined);
	free(joined);
	return r;
}

/* Reports file as the only module of a new Dwfl, at its own addresses (bias 0). libdwfl gets the
 * file open already, and only if it is a regular file: opened by libdwfl, a FIFO would block. */
static int report(struct lk_symbolizer *s, const char *file, Dwfl **ret_dwfl, Dwfl_Module **ret_mod,
		  const char **ret_why)
{
	int fd = lk_open_regular(AT_FDCWD, file, NULL);
	Dwfl *d = NULL;
	Dwfl_Module *m = NULL;
	Dwarf_Addr bias;
	void **userdata;

	if (fd < 0) {
		if (ret_why)
			*ret_why = fd == -EINVAL ? "not a regular file" : intern(s, strerror(-fd));
		return -ENOENT;
	}
	d = dwfl_begin(&s->callbacks);
	if (!d) {
		close(fd);
		s->nomem = -ENOMEM;
		return -ENOMEM;
	}
	dwfl_report_begin(d);
	m = dwfl_report_elf(d, file, file, fd, 0, true); /* takes fd only if it returns a module */
	if (!m)
		close(fd);
	if (!m || dwfl_report_end(d, NULL, NULL) != 0 || !dwfl_module_getelf(m, &bias)) {
		const char *e = dwfl_errmsg(-1);
		if (ret_why)
			*ret_why = e ? intern(s, e) : NULL;
		dwfl_end(d);
		return -ENOENT;
	}
	dwfl_module_info(m, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
	*userdata = &s->debuginfo; /* for lk_debuginfo_find */
	*ret_dwfl = d;
	*ret_mod = m;
	return 0;
}

/* The module's build-id (0 bytes if it has none). */
static size_t module_build_id(Dwfl_Module *m, const unsigned char **ret)
{
	GElf_Addr vaddr;
	int n = dwfl_module_build_id(m, ret, &vaddr);

	return n > 0 ? (size_t)n : 0;
}

static bool has_build_id(Dwfl_Module *m, const struct object *o)
{
	const unsigned char *bits;
	size_t n = module_build_id(m, &bits);

	return n == o->build_id_len && memcmp(bits, o->build_id, n) == 0;
}

/* The file carrying o's recorded build-id in a debug directory: .build-id/xx/rest.debug (a debug
 * file) or .build-id/xx/rest (the binary). Returns its path, or NULL. */
static const char *open_by_build_id(struct lk_symbolizer *s, struct object *o, Dwfl **ret_dwfl,
				    Dwfl_Module **ret_mod)
{
	char id[2 * LK_MAX_BUILD_ID + 1];

	if (o->build_id_len < 2)
		return NULL;
	hex(id, o->build_id, o->build_id_len);
	for (size_t i = 0; i <= s->debuginfo.n_dirs; i++) {
		const char *dir = i < s->debuginfo.n_dirs ? s->debuginfo.dirs[i] : LK_SYSTEM_DEBUG_DIR;
		for (int debug = 1; debug >= 0; debug--) {
			const char *path = internf(s, "%s/.build-id/%.2s/%s%s", dir, id, id + 2,
						   debug ? ".debug" : "");
			Dwfl *d;
			Dwfl_Module *m;
			if (!path || access(path, R_OK) < 0 || report(s, path, &d, &m, NULL) < 0)
				continue;
			if (has_build_id(m, o)) {
				*ret_dwfl = d;
				*ret_mod = m;
				return path;
			}
			dwfl_end(d);
		}
	}
	return NULL;
}

/* Finds o's file. No file is not an error: o then gives "label+0x1a2b" names. */
static void open_object(struct lk_symbolizer *s, struct object *o)
{
	bool real_path = o->path[0] == '/' && strncmp(o->path, "/proc/self/", 11) != 0;
	const char *why = NULL, *alt;
	Dwfl *d = NULL;
	Dwfl_Module *m = NULL;

	o->opened = true;
	if (real_path && report(s, o->path, &o->dwfl, &o->mod, &why) == 0 &&
	    (o->build_id_len == 0 || has_build_id(o->mod, o)))
		return;

	alt = open_by_build_id(s, o, &d, &m);
	if (o->mod) {
		const unsigned char *bits;
		size_t n = module_build_id(o->mod, &bits);
		char disk[2 * LK_MAX_BUILD_ID + 1], want[2 * LK_MAX_BUILD_ID + 1];

		hex(disk, bits, n < LK_MAX_BUILD_ID ? n : LK_MAX_BUILD_ID); /* any note, any size */
		hex(want, o->build_id, o->build_id_len);
		warn(s, "module %s: build-id on disk (%s) does not match the profile (%s): %s%s",
		     o->path, n ? disk : "none", want, alt ? "using " : "symbols may be wrong",
		     alt ? alt : "");
	} else if (real_path && !alt) {
		warn(s, "module %s: %s: no symbols", o->path, why ? why : "cannot open");
	}
	if (alt) {
		if (o->dwfl)
			dwfl_end(o->dwfl);
		o->dwfl = d;
		o->mod = m;
	}
}

struct loc {
	const char *file;
	int line, column;
};

static const char *comp_dir(Dwarf_Die *cu)
{
	Dwarf_Attribute a;

	return dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &a));
}

/* Where an inlined subroutine was called from, in the function it was inlined into. */
static struct loc call_site(struct lk_symbolizer *s, Dwarf_Die *die)
{
	Dwarf_Word file, line = 0, column = 0;
	Dwarf_Attribute a;
	Dwarf_Files *files;
	Dwarf_Die cu;
	size_t nfiles;
	struct loc l = { NULL, 0, 0 };

	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &a), &file) == 0 &&
	    dwarf_diecu(die, &cu, NULL, NULL) && dwarf_getsrcfiles(&cu, &files, &nfiles) == 0 &&
	    file < nfiles) {
		const char *name = dwarf_filesrc(files, file, NULL, NULL);
		l.file = name ? source_path(s, name, comp_dir(&cu)) : NULL;
	}
	(void)dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &a), &line);
	(void)dwarf_formudata(dwarf_attr(die, DW_AT_call_column, &a), &column);
	l.line = line <= INT_MAX ? (int)line : 0;
	l.column = column <= INT_MAX ? (int)column : 0;
	return l;
}

/* A function's name: the linkage name (demangled) for its namespaces and classes, else DW_AT_name,
 * following abstract origins and specifications. NULL if it has none. */
static const char *die_name(struct lk_symbolizer *s, Dwarf_Die *die)
{
	static const unsigned attrs[] = { DW_AT_linkage_name, DW_AT_MIPS_linkage_name, DW_AT_name };
	Dwarf_Attribute a;

	for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
		const char *name = dwarf_formstring(dwarf_attr_integrate(die, attrs[i], &a));
		if (name && *name)
			return demangle(s, name);
	}
	return NULL;
}

static int symbol_cmp(const void *a, const void *b)
{
	const struct symbol *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return y->rank - x->rank; /* the preferred binding first among symbols at one address */
}

/* The object's sized code and data symbols, read once and sorted. libdwfl finds a symbol by
 * scanning the whole table (elfutils 0.188), which made a report on a profile of node, whose
 * libnode has 58 722 symbols, spend 69% of its time there. */
static void read_symbols(struct lk_symbolizer *s, struct object *o)
{
	int n = dwfl_module_getsymtab(o->mod);
	size_t k = 0;

	o->syms = pool_alloc(s, (n > 0 ? (size_t)n : 1) * sizeof(*o->syms));
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *name = dwfl_module_getsym_info(o->mod, i, &sym, &addr, NULL, NULL, NULL);
		int type = GELF_ST_TYPE(sym.st_info), bind = GELF_ST_BIND(sym.st_info);
		if (!name || !*name || sym.st_shndx == SHN_UNDEF || !sym.st_size ||
		    (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_OBJECT && type != STT_NOTYPE))
			continue;
		o->syms[k++] = (struct symbol){ addr, addr + sym.st_size, name,
						bind == STB_GLOBAL ? 2 : bind == STB_WEAK ? 1 : 0 };
	}
	qsort(o->syms, k, sizeof(*o->syms), symbol_cmp);
	o->nsyms = k;
}

/* The symbol that starts closest below rel and holds it, as libdwfl would choose; NULL where
 * that takes libdwfl's rules for the rest (no sized symbol there, or one nested in another). */
static const char *symbol_at(const struct object *o, uint64_t rel)
{
	size_t lo = 0, hi = o->nsyms;

	while (lo < hi) { /* the first symbol that starts above rel */
		size_t mid = lo + (hi - lo) / 2;
		if (o->syms[mid].start <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	size_t first = lo - 1;
	while (first > 0 && o->syms[first - 1].start == o->syms[lo - 1].start)
		first--;
	for (size_t i = first; i < lo; i++) /* best binding first */
		if (rel < o->syms[i].end)
			return o->syms[i].name;
	return NULL;
}

static const char *symtab_name(struct lk_symbolizer *s, struct object *o, uint64_t rel)
{
	GElf_Off off;
	GElf_Sym sym;
	const char *name = NULL;

	if (o->mod && !o->syms)
		read_symbols(s, o);
	if (o->mod && !(name = symbol_at(o, rel)))
		name = dwfl_module_addrinfo(o->mod, rel, &off, &sym, NULL, NULL, NULL);

	return name && *name ? demangle(s, name) : internf(s, "%s+%#" PRIx64, o->label, rel);
}

static void set_frame(struct lk_sym_frame *f, const struct object *o, uint64_t rel,
		      const char *function, struct loc l, bool inlined)
{
	*f = (struct lk_sym_frame){
		.function = function,
		.file = l.file,
		.module = o->path,
		.offset = rel,
		.line = l.line > 0 ? (uint32_t)l.line : 0,
		.column = l.column > 0 ? (uint32_t)l.column : 0,
		.inlined = inlined,
	};
}

/* The chain for rel: the scopes around it, innermost first, from the inlined subroutines out to
 * the function (eu-addr2line -i does the same). Each inlined subroutine's call site is the
 * location in the next frame out. */
static int resolve(struct lk_symbolizer *s, struct object *o, uint64_t rel, struct chain **ret)
{
	struct loc l = { NULL, 0, 0 };
	Dwarf_Die *scopes = NULL, *cu = NULL;
	Dwarf_Addr bias = 0;
	Dwfl_Line *line;
	struct chain *c;
	int ns = 0;

	if (o->mod && (cu = dwfl_module_addrdie(o->mod, rel, &bias)) &&
	    dwarf_getscopes(cu, rel - bias, &scopes) > 0) {
		/* dwarf_getscopes goes from an inlined instance to the scopes around its abstract origin;
		 * the concrete chain is that of the innermost DIE. */
		Dwarf_Die inner = scopes[0];
		free(scopes);
		scopes = NULL;
		ns = dwarf_getscopes_die(&inner, &scopes);
	}
	/* Only the line table of a unit that holds rel: in a cgo binary .debug_aranges covers only
	 * the C units, and libdw hands back a C unit for a Go address, whose nearest line is wrong
	 * (runtime.sysmon "at" gcc_mmap.c:37). No line beats a wrong one. */
	if (o->mod && cu && dwarf_haspc(cu, rel - bias) > 0 &&
	    (line = dwfl_module_getsrc(o->mod, rel))) {
		const char *name = dwfl_lineinfo(line, NULL, &l.line, &l.column, NULL, NULL);
		l.file = name ? source_path(s, name, dwfl_line_comp_dir(line)) : NULL;
	}

	c = pool_alloc(s, sizeof(*c) + ((ns > 0 ? (size_t)ns : 0) + 1) * sizeof(c->f[0]));
	if (!c) {
		free(scopes);
		return nomem_error(s);
	}
	c->n = 0;
	for (int i = 0; i < ns; i++) {
		int tag = dwarf_tag(&scopes[i]);
		if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine &&
		    tag != DW_TAG_entry_point)
			continue;
		bool inlined = tag == DW_TAG_inlined_subroutine;
		const char *name = die_name(s, &scopes[i]);
		if (!name)
			name = inlined ? internf(s, "%s+%#" PRIx64, o->label, rel)
				       : symtab_name(s, o, rel);
		set_frame(&c->f[c->n++], o, rel, name, l, inlined);
		if (!inlined)
			break;
		l = call_site(s, &scopes[i]);
	}
	free(scopes);
	/* No DWARF here, or a chain of inlined frames with no function around them. */
	if (c->n == 0 || c->f[c->n - 1].inlined)
		set_frame(&c->f[c->n++], o, rel, symtab_name(s, o, rel), l, false);
	if (s->nomem)
		return s->nomem;
	*ret = c;
	return 0;
}

int lk_symbolizer_new(struct lk_symbolizer **ret)
{
	struct lk_symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	lk_u64map_init_budgeted(&s->object_by_path, SIZE_MAX);
	lk_u64map_init_budgeted(&s->module_by_key, SIZE_MAX);
	s->callbacks = (Dwfl_Callbacks){
		.find_elf = lk_debuginfo_find_elf,
		.find_debuginfo = lk_debuginfo_find,
		.section_address = dwfl_offline_section_address,
	};
	*ret = s;
	return 0;
}

struct lk_symbolizer *lk_symbolizer_free(struct lk_symbolizer *s)
{
	if (!s)
		return NULL;
	for (size_t i = 0; i < s->n_objects; i++) {
		if (s->objects[i]->dwfl)
			dwfl_end(s->objects[i]->dwfl);
		lk_u64map_done(&s->objects[i]->cache);
		free(s->objects[i]->held);
	}
	lk_budget_free(s->objects, s->objects_cap * sizeof(*s->objects));
	lk_u64map_done(&s->object_by_path);
	lk_u64map_done(&s->module_by_key);
	lk_budget_free(s->modules, s->modules_cap * sizeof(*s->modules));
	lk_budget_free(s->spans, s->spans_cap * sizeof(*s->spans));
	lk_budget_free(s->strs, s->strs_size * sizeof(*s->strs));
	lk_debuginfo_done(&s->debuginfo);
	for (size_t i = 0; i < s->n_warnings; i++)
		free(s->warnings[i]);
	lk_budget_free(s->warnings, s->warnings_cap * sizeof(*s->warnings));
	while (s->chunks) {
		struct chunk *c = s->chunks;
		s->chunks = c->next;
		lk_budget_free(c, sizeof(*c) + c->size);
	}
	free(s);
	return NULL;
}

int lk_symbolizer_add_debug_dir(struct lk_symbolizer *s, const char *dir)
{
	char *abs = realpath(dir, NULL); /* searched from any file's directory */

	if (!abs)
		return -errno;
	return lk_debuginfo_add_dir(&s->debuginfo, abs);
}

/* The object for (path, build-id), shared by every module that names the same file. */
static int get_object(struct lk_symbolizer *s, const char *path, const uint8_t *build_id,
		      size_t build_id_len, struct object **ret)
{
	const char *p = intern(s, path);
	struct object *o, *first = NULL;
	uint64_t *v;
	int r;

	if (!p)
		return nomem_error(s);
	v = lk_u64map_get(&s->object_by_path, (uintptr_t)p);
	if (v)
		first = (struct object *)(uintptr_t)*v;
	for (o = first; o; o = o->next_same_path)
		if (o->build_id_len == build_id_len && memcmp(o->build_id, build_id, build_id_len) == 0) {
			*ret = o;
			return 0;
		}

	r = grow((void **)&s->objects, &s->objects_cap, s->n_objects + 1, sizeof(o));
	if (r < 0)
		return r;
	if (!(o = pool_alloc(s, sizeof(*o))))
		return nomem_error(s);
	*o = (struct object){ .path = p, .build_id_len = (uint32_t)build_id_len, .next_same_path = first };
	const char *slash = strrchr(p, '/');
	o->label = slash && slash[1] ? slash + 1 : p[0] ? p : "[unknown]";
	memcpy(o->build_id, build_id, build_id_len);
	lk_u64map_init_budgeted(&o->cache, SIZE_MAX);
	r = lk_u64map_put(&s->object_by_path, (uintptr_t)p, (uintptr_t)o);
	if (r < 0)
		return r;
	s->objects[s->n_objects++] = o;
	*ret = o;
	return 0;
}

static uint64_t module_key(uint32_t profile, uint64_t id)
{
	return (uint64_t)profile << 32 | id;
}

/* The module registered as (profile, id), or NULL. */
static struct module *module_of(struct lk_symbolizer *s, uint32_t profile, uint64_t id)
{
	uint64_t *v = id <= UINT32_MAX ? lk_u64map_get(&s->module_by_key, module_key(profile, id))
				       : NULL;

	return v ? &s->modules[*v] : NULL;
}

int lk_symbolizer_add_module(struct lk_symbolizer *s, uint32_t profile, uint64_t id,
			     const char *path, const uint8_t *build_id, size_t build_id_len,
			     uint64_t base, const struct lk_module_seg *seg, uint32_t nseg)
{
	struct object *o = NULL; /* set when get_object returns 0 */
	int r;

	if (id > UINT32_MAX)
		return -ERANGE;
	if (nseg > LK_MAX_SEGMENTS || build_id_len > LK_MAX_BUILD_ID || (nseg && !seg) ||
	    (build_id_len && !build_id))
		return -EINVAL;
	if (module_of(s, profile, id))
		return -EEXIST;
	if (!build_id)
		build_id = (const uint8_t *)""; /* memcmp and memcpy want a pointer even for 0 bytes */
	r = get_object(s, path ? path : "", build_id, build_id_len, &o);
	if (r < 0)
		return r;
	r = grow((void **)&s->modules, &s->modules_cap, s->n_modules + 1, sizeof(*s->modules));
	if (r < 0)
		return r;
	r = lk_u64map_put(&s->module_by_key, module_key(profile, id), s->n_modules);
	if (r < 0)
		return r;
	struct module *m = &s->modules[s->n_modules++];
	*m = (struct module){ .id = id, .base = base, .profile = profile, .nseg = nseg, .obj = o };
	if (nseg)
		memcpy(m->seg, seg, nseg * sizeof(*seg));
	s->spans_dirty = true;
	return 0;
}

int lk_symbolizer_unload_module(struct lk_symbolizer *s, uint32_t profile, uint64_t id)
{
	struct module *m = module_of(s, profile, id);

	if (!m)
		return -ENOENT;
	m->unloaded = true;
	s->spans_dirty = true;
	return 0;
}

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	if (x->profile != y->profile)
		return x->profile < y->profile ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->module < y->module ? -1 : x->module > y->module;
}

static int build_spans(struct lk_symbolizer *s)
{
	size_t n = 0;
	struct span *v;

	for (size_t i = 0; i < s->n_modules; i++)
		n += s->modules[i].unloaded ? 0 : s->modules[i].nseg;
	int r = grow((void **)&s->spans, &s->spans_cap, n ? n : 1, sizeof(*v));
	if (r < 0)
		return r;
	v = s->spans;
	n = 0;
	for (size_t i = 0; i < s->n_modules; i++) {
		const struct module *m = &s->modules[i];
		for (uint32_t j = 0; j < m->nseg && !m->unloaded; j++) {
			uint64_t start = m->base + m->seg[j].start, end = start + m->seg[j].len;
			if (m->seg[j].len)
				v[n++] = (struct span){ .start = start,
							.end = end > start ? end : UINT64_MAX,
							.profile = m->profile,
							.module = i };
		}
	}
	qsort(v, n, sizeof(*v), span_cmp);
	for (size_t i = 0; i < n; i++)
		v[i].max_end = i && v[i - 1].profile == v[i].profile && v[i - 1].max_end > v[i].end
				       ? v[i - 1].max_end
				       : v[i].end;
	s->n_spans = n;
	s->spans_dirty = false;
	return 0;
}

int lk_symbolizer_find_module(struct lk_symbolizer *s, uint32_t profile, uint64_t pc,
			      uint64_t *ret_id)
{
	size_t lo = 0, hi, best = SIZE_MAX;

	int r = s->spans_dirty ? build_spans(s) : 0;

	if (r < 0)
		return r;
	/* lo: the first span after (profile, pc); every span that covers pc is before it. */
	hi = s->n_spans;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct span *sp = &s->spans[mid];
		if (sp->profile < profile || (sp->profile == profile && sp->start <= pc))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i-- > 0;) {
		const struct span *sp = &s->spans[i];
		if (sp->profile != profile || sp->max_end <= pc)
			break;
		if (sp->end > pc && (best == SIZE_MAX || sp->module > best))
			best = sp->module;
	}
	if (best == SIZE_MAX)
		return -ENOENT;
	*ret_id = s->modules[best].id;
	return 0;
}

int lk_symbolize(struct lk_symbolizer *s, uint32_t profile, uint64_t id, uint64_t pc,
		 const struct lk_sym_frame **ret, size_t *n)
{
	const struct module *m = module_of(s, profile, id);
	struct object *o;
	struct chain *c = NULL; /* set when resolve returns 0 */
	uint64_t rel, *v;
	int r;

	if (!m)
		return -ENOENT;
	o = m->obj;
	rel = pc - m->base;
	v = lk_u64map_get(&o->cache, rel);
	if (v) {
		c = (struct chain *)(uintptr_t)*v;
	} else {
		s->nomem = 0;
		if (!o->opened)
			open_object(s, o);
		if (o->held) { /* opened ahead: its warning is due now */
			keep_warning(s, o->held);
			o->held = NULL;
		}
		r = resolve(s, o, rel, &c);
		if (r < 0)
			return r;
		r = lk_u64map_put(&o->cache, rel, (uintptr_t)c);
		if (r < 0)
			return r;
	}
	*ret = c->f;
	*n = c->n;
	return 0;
}

int lk_symbolizer_prepare(struct lk_symbolizer *s, uint32_t profile, uint64_t id)
{
	const struct module *m = module_of(s, profile, id);
	struct object *o;
	Dwarf_Addr bias;
	Dwarf_Aranges *ar;
	size_t nar;
	Dwarf *dw;

	if (!m)
		return -ENOENT;
	o = m->obj;
	s->nomem = 0;
	if (!o->opened) {
		s->holding = o;
		open_object(s, o);
		s->holding = NULL;
	}
	if (o->mod) {
		/* What the first lookups take their time in: the DWARF (a compressed debug file's
		 * sections inflated: 50 ms for libc6-dbg's), its address ranges, the symbol table. */
		if ((dw = dwfl_module_getdwarf(o->mod, &bias)))
			(void)dwarf_getaranges(dw, &ar, &nar);
		if (!o->syms)
			read_symbols(s, o);
	}
	return s->nomem;
}

size_t lk_symbolizer_warnings(const struct lk_symbolizer *s, const char *const **ret)
{
	*ret = (const char *const *)s->warnings;
	return s->n_warnings;
}
