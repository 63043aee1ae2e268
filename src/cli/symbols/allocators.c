/* allocators.c: the built-in list of allocator frames, which a stack's site skips (site.h).
 *
 * A frame is an allocator frame when it is the allocator or code that only allocates on its
 * caller's behalf: as a site it would merge every caller into one line. pprof keeps a similar
 * list; `--alloc-fn` adds the program's own wrappers, and a report detects the wrappers a profile
 * reveals by itself (wrappers.c). The list, and why each part is there (docs/design.md, "Choosing
 * a site"):
 *
 *   anywhere      the malloc family, also as __libc_malloc etc.
 *   xmalloc       the allocate-or-die helpers of GNU programs, gnulib and git: xmalloc, xcalloc,
 *                 xrealloc, xstrdup, xmemdup, ... (xmalloc_names below)
 *   GLib          g_malloc and its relatives (g_new, g_new0, g_renew and g_try_new are macros
 *                 over g_malloc_n and friends), g_slice_alloc (g_slice_new), g_aligned_alloc and
 *                 the copying helpers g_strdup, g_strndup, g_strdup_printf, g_memdup
 *   CPython       the PyMem_* and PyObject_* allocators in every layer (the public functions, the
 *                 static _PyObject_Malloc and _PyMem_RawMalloc behind them, pymalloc and the
 *                 debug hooks), the generic object allocators (_PyObject_GC_New,
 *                 PyType_GenericAlloc, ...), so that the site is the type's own constructor
 *                 (PyList_New, dict_new), and the strdup helpers
 *   SQLite        sqlite3_malloc and the library's internal layers (sqlite3Malloc,
 *                 sqlite3DbMallocRawNN, sqlite3MemMalloc, ...), and its printf helpers, which
 *                 allocate their result as asprintf does
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
 * The names outside libc's own are matched in any module: the libraries are often built into a
 * program (SQLite's amalgamation, a vendored GLib), and their prefixes are their own. Static
 * functions (sqlite3MemMalloc, _PyObject_Malloc) are named only where a symbol table or debug
 * information names them; without one, wrapper detection finds them (wrappers.c).
 *
 * Names are compared without a parameter list ("malloc(unsigned long)" is malloc), without the
 * return type of a template ("void std::_Construct<...>" is in std::) and without glibc's "__GI_"
 * alias prefix.
 *
 * Never: decide by anything but the frame's function name and module (a site must not depend on
 * the other stacks of a profile: that is wrappers.c's job, and it says what it skipped).
 */
#include <string.h>

#include "site.h"

#define ELEMENTS(a) (sizeof(a) / sizeof((a)[0]))

static const char *const malloc_names[] = {
	"malloc", "calloc", "realloc", "reallocarray", "memalign", "aligned_alloc",
	"posix_memalign", "valloc", "pvalloc", "__posix_memalign",
};

/* GNU, gnulib (xalloc.h) and git (wrapper.c, strbuf.c's xstrfmt). */
static const char *const xmalloc_names[] = {
	"xmalloc", "xcalloc", "xrealloc", "xreallocarray", "xzalloc", "xstrdup", "xstrndup",
	"xmemdup", "xmemdupz", "xmallocz", "xmallocz_gently", "xnmalloc", "xnrealloc", "x2realloc",
	"x2nrealloc", "xpalloc", "xcharalloc", "ximalloc", "xizalloc", "xicalloc", "xirealloc",
	"xireallocarray", "ximemdup", "ximemdup0", "xinmalloc", "xasprintf", "xvasprintf",
	"xstrfmt", "xstrvfmt",
};

static const char *const glib_names[] = {
	"g_malloc", "g_malloc0", "g_realloc", "g_try_malloc", "g_try_malloc0", "g_try_realloc",
	"g_malloc_n", "g_malloc0_n", "g_realloc_n", "g_try_malloc_n", "g_try_malloc0_n",
	"g_try_realloc_n", "g_aligned_alloc", "g_aligned_alloc0", "g_slice_alloc",
	"g_slice_alloc0", "g_slice_copy", "g_memdup", "g_memdup2", "g_strdup", "g_strndup",
	"g_strdup_printf", "g_strdup_vprintf",
};

/* CPython 3.8 to 3.13: Objects/obmalloc.c, Objects/object.c, Modules/gcmodule.c (Python/gc.c). */
static const char *const python_names[] = {
	"PyMem_Malloc", "PyMem_Calloc", "PyMem_Realloc", "PyMem_RawMalloc", "PyMem_RawCalloc",
	"PyMem_RawRealloc", "PyObject_Malloc", "PyObject_Calloc", "PyObject_Realloc",
	"_PyObject_Malloc", "_PyObject_Calloc", "_PyObject_Realloc", "_PyMem_RawMalloc",
	"_PyMem_RawCalloc", "_PyMem_RawRealloc", "pymalloc_alloc", "pymalloc_realloc",
	"_PyMem_Strdup", "_PyMem_RawStrdup", "_PyMem_RawWcsdup",
	"_PyObject_New", "_PyObject_NewVar", "_PyObject_GC_New", "_PyObject_GC_NewVar",
	"_PyObject_GC_Malloc", "_PyObject_GC_Calloc", "_PyObject_GC_Alloc", "_PyObject_GC_Resize",
	"PyType_GenericAlloc", "_PyType_AllocNoTrack",
};

/* SQLite 3: src/malloc.c, src/mem1.c, src/printf.c. */
static const char *const sqlite_names[] = {
	"sqlite3_malloc", "sqlite3_malloc64", "sqlite3_realloc", "sqlite3_realloc64",
	"sqlite3Malloc", "sqlite3MallocZero", "sqlite3Realloc", "sqlite3DbMallocRaw",
	"sqlite3DbMallocRawNN", "sqlite3DbMallocZero", "sqlite3DbRealloc", "sqlite3DbReallocOrFree",
	"sqlite3DbStrDup", "sqlite3DbStrNDup", "sqlite3DbSpanDup", "dbMallocRawFinish",
	"dbReallocFinish", "mallocWithAlarm", "sqlite3MemMalloc", "sqlite3MemRealloc",
	"sqlite3_mprintf", "sqlite3_vmprintf", "sqlite3MPrintf", "sqlite3VMPrintf",
	"sqlite3MAppendf", "sqlite3StrAccumEnlarge", "sqlite3StrAccumFinish", "strAccumFinishRealloc",
};

/* The lists above, matched in any module. */
static const struct {
	const char *const *names;
	size_t n;
} anywhere[] = {
	{ malloc_names, ELEMENTS(malloc_names) }, { xmalloc_names, ELEMENTS(xmalloc_names) },
	{ glib_names, ELEMENTS(glib_names) },     { python_names, ELEMENTS(python_names) },
	{ sqlite_names, ELEMENTS(sqlite_names) },
};

/* CPython's debug hooks (PYTHONMALLOC=debug): _PyMem_DebugMalloc, _PyMem_DebugRawCalloc, ... */
static const char *const python_prefixes[] = { "_PyMem_Debug" };

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

static bool any_prefix(const char *const *list, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (starts_with(s, list[i]))
			return true;
	return false;
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

bool lk_site_builtin_allocator(const struct lk_sym_frame *frame)
{
	const char *name = frame->function, *op = strstr(name, "operator new");
	size_t len;

	/* operator new and new[], a class's own too (Foo::operator new). */
	if (op && (op == name || (op - name >= 2 && op[-1] == ':' && op[-2] == ':')) &&
	    strchr("([", op[strlen("operator new")]))
		return true;
	for (size_t i = 0; i < ELEMENTS(cxx_prefixes); i++)
		if (starts_with(name, cxx_prefixes[i]) ||
		    starts_with(qualified_name(name), cxx_prefixes[i]))
			return true;
	if (any_prefix(rust_prefixes, ELEMENTS(rust_prefixes), name + (name[0] == '<')) ||
	    rust_blanket_impl(name) || any_prefix(python_prefixes, ELEMENTS(python_prefixes), name))
		return true;
	if (starts_with(name, "__GI_"))
		name += strlen("__GI_");
	if (in_libc(frame)) {
		if (any_prefix(libc_prefixes, ELEMENTS(libc_prefixes), name))
			return true;
		if (in_list(libc_names, ELEMENTS(libc_names), name, strcspn(name, "(")))
			return true;
	}
	if (starts_with(name, "__libc_")) /* __libc_malloc, __libc_memalign, ... */
		name += strlen("__libc_");
	len = strcspn(name, "(");
	for (size_t i = 0; i < ELEMENTS(anywhere); i++)
		if (in_list(anywhere[i].names, anywhere[i].n, name, len))
			return true;
	return false;
}
