/* symbolize.h: offline symbolization of profile addresses with elfutils (libdwfl).
 *
 * The caller registers the modules of one or more profiles (their MODULE records), then asks for
 * return addresses minus one. Each answer is a chain of frames, innermost first: the functions
 * inlined at that address, then the real function that contains them. Names come from DWARF, else
 * from the ELF symbol table, else they read "libfoo.so+0x1a2b"; a module whose file cannot be
 * found (linux-vdso.so.1) gives only those.
 *
 * Modules are named by (profile, id): profile is any number the caller picks per profile (0 if
 * there is only one), id the MODULE record's id. Files are shared between profiles: a library
 * with the same path and build-id is opened and parsed once, and its answers cached once, however
 * many processes mapped it and at whatever address (the cache is keyed by the address within the
 * file, pc - base). Nothing is ever evicted.
 *
 * Files are opened lazily, at the first lookup in them. A file whose build-id differs from the
 * profile's is still used, unless a debug file carrying the recorded build-id is found; either
 * way the symbolizer records a warning, once per file. It never prints: the caller shows
 * lk_symbolizer_warnings(). Strings in the frames live as long as the symbolizer.
 *
 * Not thread-safe. Errors are negative errnos.
 */
#ifndef LEEK_SYMBOLIZE_H
#define LEEK_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record.h" /* struct lk_module_seg */

struct lk_symbolizer;

struct lk_sym_frame {
	const char *function;  /* never NULL: demangled when possible, else "libfoo.so+0x1a2b" */
	const char *symbol;    /* the name as the object spells it (C++ and Rust: mangled), for
				* pprof's system_name; NULL: the same as function */
	const char *file;      /* absolute (joined to DW_AT_comp_dir, tidied); NULL if unknown */
	const char *module;    /* the module's path as the profile recorded it */
	uint64_t offset;       /* pc - base: the address in the file (what addr2line -e takes) */
	uint32_t line, column; /* 0 when unknown */
	bool inlined;          /* inlined into the next frame of the chain */
};

int lk_symbolizer_new(struct lk_symbolizer **ret);
struct lk_symbolizer *lk_symbolizer_free(struct lk_symbolizer *s); /* accepts NULL, returns NULL */
static inline void lk_symbolizer_freep(struct lk_symbolizer **s)
{
	lk_symbolizer_free(*s);
}

/* Adds a directory (--debug-dir) searched before the standard places: DIR/.build-id/xx/rest.debug
 * by build-id, DIR/<the module's directory>/<debuglink name> and DIR/.dwz (debuginfo.h). Affects
 * files opened later. 0, -ENOMEM, or the errno of realpath(). */
int lk_symbolizer_add_debug_dir(struct lk_symbolizer *s, const char *dir);

/* Registers a MODULE record. base is the load bias, seg the PT_LOAD ranges relative to it (used by
 * lk_symbolizer_find_module only). -EEXIST if (profile, id) is taken, -ERANGE for an id above
 * UINT32_MAX (writers assign ids from 1), -EINVAL for too many segments or build-id bytes. */
int lk_symbolizer_add_module(struct lk_symbolizer *s, uint32_t profile, uint64_t id,
			     const char *path, const uint8_t *build_id, size_t build_id_len,
			     uint64_t base, const struct lk_module_seg *seg, uint32_t nseg);

/* An UNLOAD record: the module no longer covers its addresses for lk_symbolizer_find_module, but
 * lk_symbolize still answers for it (stacks recorded earlier name it). -ENOENT if unknown. */
int lk_symbolizer_unload_module(struct lk_symbolizer *s, uint32_t profile, uint64_t id);

/* The loaded module of that profile whose segments cover pc: the one registered last if several
 * do. Callers that know which module a frame belongs to should say so instead, since dlclose and
 * dlopen reuse address ranges. -ENOENT if none, -ENOMEM. */
int lk_symbolizer_find_module(struct lk_symbolizer *s, uint32_t profile, uint64_t pc,
			      uint64_t *ret_id);

/* Symbolizes an absolute address of module (profile, id); pass a frame's return address minus
 * one. *ret gets the chain, innermost first, and *n its length (at least 1); the array is owned
 * by the symbolizer and the same for the same address. -ENOENT for an unknown module, -ENOMEM. */
int lk_symbolize(struct lk_symbolizer *s, uint32_t profile, uint64_t id, uint64_t pc,
		 const struct lk_sym_frame **ret, size_t *n);

/* Opens the file of module (profile, id) and reads its symbol table and DWARF now, as its first
 * lookup would: `leek run` does it on an idle CPU while the program runs, for the modules its
 * stacks name, so that the summary after the exit does not. A warning about the file (not found,
 * another build-id) waits for the first lookup in it: one never looked up warns of nothing.
 * -ENOENT for an unknown module, -ENOMEM. */
int lk_symbolizer_prepare(struct lk_symbolizer *s, uint32_t profile, uint64_t id);

/* Every warning so far, oldest first; the count is returned. A caller that prints them as they
 * come remembers how many it has printed. */
size_t lk_symbolizer_warnings(const struct lk_symbolizer *s, const char *const **ret);

#endif /* LEEK_SYMBOLIZE_H */
