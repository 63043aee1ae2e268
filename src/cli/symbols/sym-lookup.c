/* sym-lookup.c: an address in an object's file to its chain of frames (sym-internal.h): the
 * DWARF scopes around it, innermost first, from the inlined subroutines out to the function, each
 * with its file and line (eu-addr2line -i does the same); the symbol table where there is no
 * DWARF; "label+0x1a2b" where there is neither.
 *
 * Never: keep a pointer into libdw's memory beyond the object's Dwfl (names are interned), or
 * fail a lookup for want of debug information (that is a frame with less in it).
 */
#include <dwarf.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sym-internal.h"

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
		return lk_sym_intern(s, name);
	if (asprintf(&joined, "%s/%s", comp_dir, name) < 0) {
		s->nomem = -ENOMEM;
		return NULL;
	}
	clean_path(joined);
	r = lk_sym_intern(s, joined);
	free(joined);
	return r;
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
 * following abstract origins and specifications. NULL if it has none; else *raw gets the name
 * as DWARF spells it. */
static const char *die_name(struct lk_symbolizer *s, Dwarf_Die *die, const char **raw)
{
	static const unsigned attrs[] = { DW_AT_linkage_name, DW_AT_MIPS_linkage_name, DW_AT_name };
	Dwarf_Attribute a;

	for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
		const char *name = dwarf_formstring(dwarf_attr_integrate(die, attrs[i], &a));
		if (name && *name)
			return lk_sym_demangle(s, name, raw);
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
void lk_sym_read_symbols(struct lk_symbolizer *s, struct object *o)
{
	int n = dwfl_module_getsymtab(o->mod);
	size_t k = 0;

	o->syms = lk_sym_alloc(s, (n > 0 ? (size_t)n : 1) * sizeof(*o->syms));
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

/* The symbol table's name at rel, demangled (*raw: as the table spells it), else
 * "label+0x1a2b" (and *raw NULL). */
static const char *symtab_name(struct lk_symbolizer *s, struct object *o, uint64_t rel,
			       const char **raw)
{
	GElf_Off off;
	GElf_Sym sym;
	const char *name = NULL;

	*raw = NULL;
	if (o->mod && !o->syms)
		lk_sym_read_symbols(s, o);
	if (o->mod && !(name = symbol_at(o, rel)))
		name = dwfl_module_addrinfo(o->mod, rel, &off, &sym, NULL, NULL, NULL);

	return name && *name ? lk_sym_demangle(s, name, raw)
			     : lk_sym_internf(s, "%s+%#" PRIx64, o->label, rel);
}

/* symbol NULL: the function's own name. */
static void set_frame(struct lk_sym_frame *f, const struct object *o, uint64_t rel,
		      const char *function, const char *symbol, struct loc l, bool inlined)
{
	*f = (struct lk_sym_frame){
		.function = function,
		.symbol = symbol ? symbol : function,
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
int lk_sym_resolve(struct lk_symbolizer *s, struct object *o, uint64_t rel, struct chain **ret)
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

	c = lk_sym_alloc(s, sizeof(*c) + ((ns > 0 ? (size_t)ns : 0) + 1) * sizeof(c->f[0]));
	if (!c) {
		free(scopes);
		return lk_sym_nomem_error(s);
	}
	c->n = 0;
	for (int i = 0; i < ns; i++) {
		int tag = dwarf_tag(&scopes[i]);
		if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine &&
		    tag != DW_TAG_entry_point)
			continue;
		bool inlined = tag == DW_TAG_inlined_subroutine;
		const char *raw = NULL, *name = die_name(s, &scopes[i], &raw);
		if (!name)
			name = inlined ? lk_sym_internf(s, "%s+%#" PRIx64, o->label, rel)
				       : symtab_name(s, o, rel, &raw);
		set_frame(&c->f[c->n++], o, rel, name, raw, l, inlined);
		if (!inlined)
			break;
		l = call_site(s, &scopes[i]);
	}
	free(scopes);
	/* No DWARF here, or a chain of inlined frames with no function around them. */
	if (c->n == 0 || c->f[c->n - 1].inlined) {
		const char *raw, *name = symtab_name(s, o, rel, &raw);
		set_frame(&c->f[c->n++], o, rel, name, raw, l, false);
	}
	if (s->nomem)
		return s->nomem;
	*ret = c;
	return 0;
}
