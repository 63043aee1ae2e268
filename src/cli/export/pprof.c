/* pprof.c: `leek export --format pprof`: the tables of a pprof profile (pprof.h), filled as the
 * profiles and their stacks come; pprof-pack.c writes them.
 *
 * What goes where (profile.proto):
 *   - sample types alloc_objects/count, alloc_space/bytes, inuse_objects/count,
 *     inuse_space/bytes, Go's names in Go's order, so that pprof reads the file as it reads a Go
 *     heap profile; the default is inuse_space; the period type space/bytes, the period the first
 *     profile's (1 in exact mode);
 *   - a Mapping per MODULE record (identical ones of several processes, a forked child's, once):
 *     its path, build-id in hex, and the addresses its PT_LOAD segments span. A MODULE record
 *     holds the segments' addresses, not their file offsets: the first PT_LOAD of an ELF object
 *     holds its headers, at offset 0, so file_offset is 0 for memory_start, the start of the
 *     lowest segment. Every mapping says it has functions, file names, lines and inline frames:
 *     the export is symbolized, and pprof must not symbolize again with other binaries;
 *   - a Location per return address of a module, at return address - 1 (inside the call, where
 *     the symbolizer looked), whose lines are the address's chain, inlined functions first and
 *     the function they were inlined into last, as pprof wants; an address outside every module
 *     gets a location without a mapping, named by its address, and a stack without frames one
 *     location, "(no stack)";
 *   - a Function per distinct (name, system name, file): the demangled name, the symbol as the
 *     object spells it (pprof's system_name), the source file;
 *   - a Sample per stack with the four estimates rounded to integers, location ids leaf first; a
 *     stack whose four values round to 0 is left out. A base's samples (--base) are negated and
 *     labelled pprof::base=true, which is what `go tool pprof -diff_base` makes of a base, so the
 *     file reads as NEW - BASE and pprof takes its percentages of BASE;
 *   - time_nanos the earliest profile's start (real time), or opts.span_from_ns when given
 *     (`leek push`: the interval's), duration_nanos from there to the
 *     latest end (a base's times left out), and comments: one per profile, "pid N: COMMAND LINE"
 *     ("base pid N: ..."), and one saying when the in-use values were taken.
 *
 * Never: write a string that did not go through escape.c, or keep a frame's strings by pointer
 * past the stack (they are copied into the string table).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "pprof.h"
#include "util.h"

/* The string s (len bytes) as it is, not escaped: only for leek's own words. */
static int string_raw(struct lk_pprof *p, const char *s, size_t len, uint32_t *ret)
{
	return lk_idset_add(&p->strings, s, len, ret, NULL);
}

/* A string from a profile or a file it names, escaped; NULL is "". */
static int string(struct lk_pprof *p, const char *s, uint32_t *ret)
{
	int r;

	if (!s)
		return string_raw(p, "", 0, ret);
	p->tmp.len = 0;
	r = lk_export_escape(&p->tmp, s, strlen(s), NULL);
	return r < 0 ? r : string_raw(p, p->tmp.s ? p->tmp.s : "", p->tmp.len, ret);
}

static int words(struct lk_pprof *p)
{
	static const char *const units[_LK_EXPORT_VALUE_MAX] = { "count", "bytes", "count",
								 "bytes" };
	uint32_t empty;
	/* string_table[0] must be "" (profile.proto). */
	int r = string_raw(p, "", 0, &empty);

	for (unsigned v = 0; v < _LK_EXPORT_VALUE_MAX && r >= 0; v++) {
		const char *name = lk_export_value_name(v);
		r = string_raw(p, name, strlen(name), &p->type_names[v]);
		if (r >= 0)
			r = string_raw(p, units[v], strlen(units[v]), &p->type_units[v]);
	}
	if (r >= 0)
		r = string_raw(p, "space", 5, &p->period_type);
	if (r >= 0)
		r = string_raw(p, "bytes", 5, &p->period_unit);
	if (r >= 0)
		r = string_raw(p, "pprof::base", 11, &p->base_key);
	if (r >= 0)
		r = string_raw(p, "true", 4, &p->base_true);
	return r;
}

static void pprof_close(void *w)
{
	struct lk_pprof *p = w;

	if (!p)
		return;
	lk_idset_done(&p->strings);
	lk_idset_done(&p->mappings);
	lk_idset_done(&p->functions);
	lk_idset_done(&p->locations);
	lk_u64map_done(&p->mapping_of);
	lk_budget_free(p->loc_lines, p->loc_lines_cap * sizeof(*p->loc_lines));
	lk_budget_free(p->lines, p->lines_cap * sizeof(*p->lines));
	lk_budget_free(p->samples, p->samples_cap * sizeof(*p->samples));
	lk_budget_free(p->locs, p->locs_cap * sizeof(*p->locs));
	lk_budget_free(p->comments, p->comments_cap * sizeof(*p->comments));
	lk_strbuf_done(&p->tmp);
	free(p);
}

static int pprof_open(const struct lk_export_opts *o, void **ret)
{
	struct lk_pprof *p = calloc(1, sizeof(*p));
	int r;

	if (!p)
		return -ENOMEM;
	p->opts = *o;
	lk_idset_init(&p->strings);
	lk_idset_init(&p->mappings);
	lk_idset_init(&p->functions);
	lk_idset_init(&p->locations);
	lk_u64map_init_budgeted(&p->mapping_of, SIZE_MAX);
	r = words(p);
	if (r < 0) {
		pprof_close(p);
		return r;
	}
	*ret = p;
	return 0;
}

static int add_comment(struct lk_pprof *p, const char *text, size_t len)
{
	uint32_t s;
	int r = string_raw(p, text, len, &s);

	if (r >= 0)
		r = lk_budget_grow((void **)&p->comments, &p->comments_cap, p->ncomments + 1,
				   sizeof(*p->comments));
	if (r >= 0)
		p->comments[p->ncomments++] = s;
	return r;
}

/* "pid N: COMMAND LINE" ("base pid N: ..."), the command line quoted as a shell would read it
 * (lk_print_cmdline escapes what it must), or the executable's path if there is none. */
static int comment_process(struct lk_pprof *p, const struct lk_export_process *proc)
{
	const struct lk_profile_header *h = lk_profile_header(proc->profile);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int r;

	if (!f)
		return -ENOMEM;
	fprintf(f, "%spid %" PRIu32 ": ", proc->base ? "base " : "", h->h.pid);
	if (h->h.cmdline_len)
		lk_print_cmdline(f, h->cmdline, h->h.cmdline_len);
	else
		lk_print_escaped(f, h->exe, h->h.exe_len);
	r = fclose(f) == 0 ? add_comment(p, text, len) : -ENOMEM;
	free(text);
	return r;
}

static int comment_at(struct lk_pprof *p)
{
	char text[96];

	if (p->opts.at == LK_EXPORT_AT_PEAK)
		snprintf(text, sizeof(text), "inuse: live at the peak of each profile's heap");
	else if (p->opts.at == LK_EXPORT_AT_TIME)
		snprintf(text, sizeof(text), "inuse: live at %.6f s since each profile's start",
			 (double)p->opts.at_ns / 1e9);
	else
		snprintf(text, sizeof(text), "inuse: live at the end of each profile");
	return add_comment(p, text, strlen(text));
}

/* The hex of a build-id. */
static int build_id_string(struct lk_pprof *p, const uint8_t *id, uint32_t len, uint32_t *ret)
{
	char hex[2 * LK_MAX_BUILD_ID + 1];

	for (uint32_t i = 0; i < len && i < LK_MAX_BUILD_ID; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	return string_raw(p, hex, 2 * (len < LK_MAX_BUILD_ID ? len : LK_MAX_BUILD_ID), ret);
}

static int add_mapping(struct lk_pprof *p, uint32_t number, const struct lk_module_info_rec *m)
{
	struct lk_pprof_mapping key = { .start = UINT64_MAX, .limit = 0 };
	uint32_t id;
	int r;

	for (uint32_t i = 0; i < m->nseg; i++) {
		uint64_t start = m->base + m->seg[i].start, end = start + m->seg[i].len;
		key.start = start < key.start ? start : key.start;
		key.limit = end > key.limit ? end : key.limit;
	}
	if (key.start > key.limit)
		key.start = key.limit = m->base;
	r = string(p, m->path, &key.file);
	if (r >= 0)
		r = build_id_string(p, m->build_id, m->build_id_len, &key.build_id);
	if (r >= 0)
		r = lk_idset_add(&p->mappings, &key, sizeof(key), &id, NULL);
	if (r >= 0 && m->id <= UINT32_MAX)
		r = lk_u64map_put(&p->mapping_of, (uint64_t)number << 32 | m->id, id + 1);
	return r;
}

static int pprof_process(void *w, const struct lk_export_process *proc)
{
	struct lk_pprof *p = w;
	const struct lk_profile_header *h = lk_profile_header(proc->profile);
	const struct lk_module_info_rec *m;
	size_t n = lk_profile_modules(proc->profile, &m);
	uint64_t start = h->h.start_realtime_ns;
	uint64_t end = start + lk_profile_totals(proc->profile)->duration_ns;
	int r = 0;

	if (!p->have_time && !proc->base) {
		p->period = h->h.period;
		p->start_ns = start;
		p->end_ns = end;
		p->have_time = true;
		r = comment_at(p);
	} else if (!proc->base) {
		p->start_ns = start < p->start_ns ? start : p->start_ns;
		p->end_ns = end > p->end_ns ? end : p->end_ns;
	}
	if (r >= 0)
		r = comment_process(p, proc);
	for (size_t i = 0; i < n && r >= 0; i++)
		r = add_mapping(p, proc->number, &m[i]);
	return r;
}

static int add_function(struct lk_pprof *p, const struct lk_sym_frame *f, uint32_t *ret)
{
	struct lk_pprof_function key = { .file = 0 }; /* string 0 is "" */
	int r = string(p, f->function, &key.name);

	key.system_name = key.name;
	if (r >= 0 && f->symbol && f->symbol != f->function)
		r = string(p, f->symbol, &key.system_name);
	if (r >= 0 && f->file)
		r = string(p, f->file, &key.file);
	if (r >= 0)
		r = lk_idset_add(&p->functions, &key, sizeof(key), ret, NULL);
	return r;
}

/* The location of frames[i...i + n), one chain, at address in mapping (an id, 0 for none). */
static int add_location(struct lk_pprof *p, uint32_t mapping, uint64_t address,
			const struct lk_sym_frame *const *chain, size_t n, uint32_t *ret)
{
	struct lk_pprof_location key = { .mapping = mapping, .address = address,
					 .chain = (uintptr_t)chain[0] };
	bool added;
	int r = lk_idset_add(&p->locations, &key, sizeof(key), ret, &added);

	if (r < 0 || !added)
		return r;
	r = lk_budget_grow((void **)&p->loc_lines, &p->loc_lines_cap, p->locations.n,
			   sizeof(*p->loc_lines));
	if (r >= 0)
		r = lk_budget_grow((void **)&p->lines, &p->lines_cap, p->nlines + n,
				   sizeof(*p->lines));
	if (r < 0)
		return r;
	p->loc_lines[*ret] = (struct lk_pprof_span){ .first = p->nlines, .n = (uint32_t)n };
	for (size_t k = 0; k < n && r >= 0; k++) {
		uint32_t fn;
		r = add_function(p, chain[k], &fn);
		if (r >= 0)
			p->lines[p->nlines++] = (struct lk_pprof_line){ .function = fn + 1,
									.line = chain[k]->line };
	}
	return r;
}

/* The mapping id of module `module` of the stack's profile; 0 if none. */
static uint32_t mapping_of(const struct lk_pprof *p, uint32_t number, uint64_t module)
{
	uint64_t *v = module && module <= UINT32_MAX
			      ? lk_u64map_get(&p->mapping_of, (uint64_t)number << 32 | module)
			      : NULL;

	return v ? (uint32_t)*v : 0;
}

static int pprof_stack(void *w, const struct lk_export_stack *s)
{
	struct lk_pprof *p = w;
	const struct lk_stack_stats *st = s->stats;
	int64_t v[_LK_EXPORT_VALUE_MAX];
	bool any = false;
	size_t k = 0, len;
	uint32_t naddr = st->nframes ? st->nframes : 1, loc;
	int r;

	for (unsigned i = 0; i < _LK_EXPORT_VALUE_MAX; i++) {
		v[i] = lk_export_round(s->proc->base ? -s->value[i] : s->value[i]);
		any |= v[i] != 0;
	}
	if (!any)
		return 0;
	r = lk_budget_grow((void **)&p->locs, &p->locs_cap, p->nlocs + naddr, sizeof(*p->locs));
	if (r < 0)
		return r;
	struct lk_pprof_span span = { .first = p->nlocs };
	/* One location per return address: its chain is the next frames up to the first that is
	 * not inlined (export.h). */
	for (uint32_t i = 0; i < naddr && k < s->nframes; i++, k += len) {
		uint32_t mapping = st->nframes ? mapping_of(p, s->proc->number, st->modules[i]) : 0;
		uint64_t address = st->nframes ? st->frames[i] : 0;
		if (mapping && address)
			address--;
		len = lk_export_chain_length(s->frames, s->nframes, k);
		r = add_location(p, mapping, address, s->frames + k, len, &loc);
		if (r < 0)
			return r;
		p->locs[p->nlocs++] = loc + 1;
		span.n++;
	}
	r = lk_budget_grow((void **)&p->samples, &p->samples_cap, p->nsamples + 1,
			   sizeof(*p->samples));
	if (r < 0)
		return r;
	p->samples[p->nsamples] = (struct lk_pprof_sample){ .locs = span, .base = s->proc->base };
	memcpy(p->samples[p->nsamples].value, v, sizeof(v));
	p->nsamples++;
	return 0;
}

static int pprof_write(void *w, FILE *f)
{
	return lk_pprof_pack(w, f);
}

const struct lk_export_format lk_export_pprof = {
	.name = "pprof",
	.suffix = ".pb.gz",
	.binary = true,
	.takes_base = true,
	.takes_value = false,
	.open = pprof_open,
	.process = pprof_process,
	.stack = pprof_stack,
	.write = pprof_write,
	.close = pprof_close,
};
