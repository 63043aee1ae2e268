/* symbolize.c: addresses to functions, files and lines, offline, with libdwfl (see symbolize.h).
 *
 * This file is the interface: the modules of each profile (MODULE records) and their address
 * spans, each module's object (sym-file.c: one per distinct file and build-id), and each object's
 * cache of answers by address, which sym-lookup.c computes. Answers, names and paths live in a
 * pool (sym-pool.c) freed only with the symbolizer, because callers keep the pointers.
 *
 * Never: print (warnings are kept for the caller), or free a cached answer before
 * lk_symbolizer_free.
 *
 * Glossary: rel = pc - base, an address in the file; object = one opened file; chain = the
 * frames of one address, innermost (most deeply inlined) first.
 */
#include <dwarf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "sym-internal.h"
#include "util.h"

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
	r = lk_sym_get_object(s, path ? path : "", build_id, build_id_len, &o);
	if (r < 0)
		return r;
	r = lk_budget_grow((void **)&s->modules, &s->modules_cap, s->n_modules + 1, sizeof(*s->modules));
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
	int r = lk_budget_grow((void **)&s->spans, &s->spans_cap, n ? n : 1, sizeof(*v));
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
			lk_sym_open_object(s, o);
		if (o->held) { /* opened ahead: its warning is due now */
			lk_sym_keep_warning(s, o->held);
			o->held = NULL;
		}
		r = lk_sym_resolve(s, o, rel, &c);
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
		lk_sym_open_object(s, o);
		s->holding = NULL;
	}
	if (o->mod) {
		/* What the first lookups take their time in: the DWARF (a compressed debug file's
		 * sections inflated, tens of milliseconds for libc6-dbg's), its address ranges, the
		 * symbol table. */
		if ((dw = dwfl_module_getdwarf(o->mod, &bias)))
			(void)dwarf_getaranges(dw, &ar, &nar);
		if (!o->syms)
			lk_sym_read_symbols(s, o);
	}
	return s->nomem;
}

size_t lk_symbolizer_warnings(const struct lk_symbolizer *s, const char *const **ret)
{
	*ret = (const char *const *)s->warnings;
	return s->n_warnings;
}
