/* sym-internal.h: what the symbolizer's files share (symbolize.h is the interface): the
 * symbolizer, its objects (one per file and build-id), modules (one per MODULE record) and spans,
 * and the functions each file gives the others. Only src/cli/symbols/sym*.c and demangle.c may
 * include it.
 *
 *   symbolize.c   the interface: modules, spans, lookups with their cache, warnings
 *   sym-file.c    objects: the file behind a module, opened and checked by its build-id
 *   sym-lookup.c  an address to its chain of frames: DWARF scopes, line tables, symbol tables
 *   sym-pool.c    memory: the pool, interned strings and the warnings, from the
 *                 budget (budget.h)
 *   demangle.c    C++ and Rust names
 */
#ifndef LEEK_SYM_INTERNAL_H
#define LEEK_SYM_INTERNAL_H

#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "debuginfo.h"
#include "symbolize.h"
#include "u64map.h"

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

/* ---- sym-pool.c ---- */
/* What a helper's failed allocation leaves for the lookup: errno E2BIG is the budget's. */
void lk_sym_set_nomem(struct lk_symbolizer *s);
int lk_sym_nomem_error(const struct lk_symbolizer *s); /* of a helper that returned NULL */
void *lk_sym_alloc(struct lk_symbolizer *s, size_t size);     /* from the pool; NULL: nomem */
/* The one copy of a string, in the pool; NULL when out of memory (nomem set). */
const char *lk_sym_intern_n(struct lk_symbolizer *s, const char *str, size_t len);
const char *lk_sym_intern(struct lk_symbolizer *s, const char *str);
const char *lk_sym_internf(struct lk_symbolizer *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void lk_sym_keep_warning(struct lk_symbolizer *s, char *str); /* takes the malloc'ed str */
void lk_sym_warn(struct lk_symbolizer *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ---- demangle.c ---- */
/* The demangled name of a C++ or Rust symbol, interned; name itself (interned) otherwise. If
 * raw is not NULL, *raw gets name interned (the same pointer as the result when nothing was
 * demangled). */
const char *lk_sym_demangle(struct lk_symbolizer *s, const char *name, const char **raw);

/* ---- sym-file.c ---- */
/* The object for (path, build-id), shared by every module that names the same file. */
int lk_sym_get_object(struct lk_symbolizer *s, const char *path, const uint8_t *build_id,
		      size_t build_id_len, struct object **ret);
void lk_sym_open_object(struct lk_symbolizer *s, struct object *o); /* once; warns */

/* ---- sym-lookup.c ---- */
void lk_sym_read_symbols(struct lk_symbolizer *s, struct object *o); /* its symbol table */
/* The chain of frames at rel, an address in o's file: 0, or -ENOMEM or -E2BIG. */
int lk_sym_resolve(struct lk_symbolizer *s, struct object *o, uint64_t rel, struct chain **ret);

#endif /* LEEK_SYM_INTERNAL_H */
