/* pprof-pack.c: a pprof export's tables (pprof.h) as one profile.proto message, packed by
 * protobuf-c (the code protoc-c generates from third_party/pprof/profile.proto) straight into a
 * gzip stream (gzip.c): the packed message is never whole in memory.
 *
 * protobuf-c packs C structs that point at one another, so the tables are laid out again for it:
 * a struct and a pointer per sample, mapping, location, line and function, and a pointer per
 * string, all from the memory budget, freed once the message is out; the location ids, values
 * and strings themselves are pointed at where they are. docs/performance.md ("Exporting") has
 * what that costs on a large profile.
 *
 * Never: modify the tables, or print.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "pprof.h"
#include "profile.pb-c.h"

/* gzip's level: 1, as Go's runtime/pprof writes its profiles (gzip.BestSpeed). On an export of
 * 50 000 stacks of 32 distinct frames (bench/export.sh), level 6 took 2 to 3 times as long and
 * its file was 5% larger: varints and small ids leave deflate's longer search little to find. */
#define GZIP_LEVEL 1

/* Every table allocated for the message, to free after it. */
struct tables {
	struct {
		void *p;
		size_t bytes;
	} a[16];
	size_t n;
};

/* n zeroed elements of size bytes from the budget (n may be 0); NULL: errno ENOMEM or E2BIG. */
static void *table(struct tables *t, size_t n, size_t size)
{
	void *p = lk_budget_calloc(n ? n : 1, size);

	if (p) {
		t->a[t->n].p = p;
		t->a[t->n++].bytes = (n ? n : 1) * size;
	}
	return p;
}

static void tables_free(struct tables *t)
{
	for (size_t i = 0; i < t->n; i++)
		lk_budget_free(t->a[i].p, t->a[i].bytes);
}

struct gzip_buffer {
	ProtobufCBuffer base;
	struct lk_gzip *g;
};

static void gzip_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
	lk_gzip_write(((struct gzip_buffer *)b)->g, data, len);
}

static int lay_samples(const struct lk_pprof *p, struct tables *t, Perftools__Profiles__Profile *m)
{
	Perftools__Profiles__Sample *s = table(t, p->nsamples, sizeof(*s));
	Perftools__Profiles__Sample **ps = table(t, p->nsamples, sizeof(*ps));
	Perftools__Profiles__Label *base = table(t, 1, sizeof(*base));
	Perftools__Profiles__Label **pbase = table(t, 1, sizeof(*pbase));

	if (!s || !ps || !base || !pbase)
		return errno == E2BIG ? -E2BIG : -ENOMEM;
	perftools__profiles__label__init(base);
	base->key = p->base_key;
	base->str = p->base_true;
	pbase[0] = base;
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct lk_pprof_sample *x = &p->samples[i];
		perftools__profiles__sample__init(&s[i]);
		s[i].n_location_id = x->locs.n;
		s[i].location_id = p->locs + x->locs.first;
		s[i].n_value = _LK_EXPORT_VALUE_MAX;
		s[i].value = (int64_t *)x->value;
		if (x->base) {
			s[i].n_label = 1;
			s[i].label = pbase;
		}
		ps[i] = &s[i];
	}
	m->n_sample = p->nsamples;
	m->sample = ps;
	return 0;
}

static int lay_mappings(const struct lk_pprof *p, struct tables *t, Perftools__Profiles__Profile *m)
{
	size_t n = p->mappings.n;
	Perftools__Profiles__Mapping *x = table(t, n, sizeof(*x)), **px = table(t, n, sizeof(*px));

	if (!x || !px)
		return errno == E2BIG ? -E2BIG : -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct lk_pprof_mapping k;
		memcpy(&k, lk_idset_get(&p->mappings, (uint32_t)i, NULL), sizeof(k));
		perftools__profiles__mapping__init(&x[i]);
		x[i].id = i + 1;
		x[i].memory_start = k.start;
		x[i].memory_limit = k.limit;
		x[i].file_offset = 0; /* the first PT_LOAD's, at memory_start (pprof.c) */
		x[i].filename = k.file;
		x[i].build_id = k.build_id;
		x[i].has_functions = x[i].has_filenames = true;
		x[i].has_line_numbers = x[i].has_inline_frames = true;
		px[i] = &x[i];
	}
	m->n_mapping = n;
	m->mapping = px;
	return 0;
}

static int lay_locations(const struct lk_pprof *p, struct tables *t,
			 Perftools__Profiles__Profile *m)
{
	size_t n = p->locations.n;
	Perftools__Profiles__Location *x = table(t, n, sizeof(*x)), **px = table(t, n, sizeof(*px));
	Perftools__Profiles__Line *l = table(t, p->nlines, sizeof(*l));
	Perftools__Profiles__Line **pl = table(t, p->nlines, sizeof(*pl));

	if (!x || !px || !l || !pl)
		return errno == E2BIG ? -E2BIG : -ENOMEM;
	for (size_t i = 0; i < p->nlines; i++) {
		perftools__profiles__line__init(&l[i]);
		l[i].function_id = p->lines[i].function;
		l[i].line = p->lines[i].line;
		pl[i] = &l[i];
	}
	for (size_t i = 0; i < n; i++) {
		struct lk_pprof_location k;
		memcpy(&k, lk_idset_get(&p->locations, (uint32_t)i, NULL), sizeof(k));
		perftools__profiles__location__init(&x[i]);
		x[i].id = i + 1;
		x[i].mapping_id = k.mapping;
		x[i].address = k.address;
		x[i].n_line = p->loc_lines[i].n;
		x[i].line = pl + p->loc_lines[i].first;
		px[i] = &x[i];
	}
	m->n_location = n;
	m->location = px;
	return 0;
}

static int lay_functions(const struct lk_pprof *p, struct tables *t,
			 Perftools__Profiles__Profile *m)
{
	size_t n = p->functions.n;
	Perftools__Profiles__Function *x = table(t, n, sizeof(*x)), **px = table(t, n, sizeof(*px));

	if (!x || !px)
		return errno == E2BIG ? -E2BIG : -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct lk_pprof_function k;
		memcpy(&k, lk_idset_get(&p->functions, (uint32_t)i, NULL), sizeof(k));
		perftools__profiles__function__init(&x[i]);
		x[i].id = i + 1;
		x[i].name = k.name;
		x[i].system_name = k.system_name;
		x[i].filename = k.file;
		px[i] = &x[i];
	}
	m->n_function = n;
	m->function = px;
	return 0;
}

static int lay_strings(const struct lk_pprof *p, struct tables *t, Perftools__Profiles__Profile *m)
{
	char **s = table(t, p->strings.n, sizeof(*s));
	int64_t *c = table(t, p->ncomments, sizeof(*c));

	if (!s || !c)
		return errno == E2BIG ? -E2BIG : -ENOMEM;
	for (size_t i = 0; i < p->strings.n; i++)
		s[i] = (char *)lk_idset_get(&p->strings, (uint32_t)i, NULL);
	for (size_t i = 0; i < p->ncomments; i++)
		c[i] = p->comments[i];
	m->n_string_table = p->strings.n;
	m->string_table = s;
	m->n_comment = p->ncomments;
	m->comment = c;
	return 0;
}

int lk_pprof_pack(const struct lk_pprof *p, FILE *f)
{
	Perftools__Profiles__Profile m;
	Perftools__Profiles__ValueType types[_LK_EXPORT_VALUE_MAX], *ptypes[_LK_EXPORT_VALUE_MAX];
	Perftools__Profiles__ValueType period;
	struct tables t = { .n = 0 };
	struct lk_gzip *g = NULL;
	int r;

	perftools__profiles__profile__init(&m);
	for (unsigned i = 0; i < _LK_EXPORT_VALUE_MAX; i++) {
		perftools__profiles__value_type__init(&types[i]);
		types[i].type = p->type_names[i];
		types[i].unit = p->type_units[i];
		ptypes[i] = &types[i];
	}
	m.n_sample_type = _LK_EXPORT_VALUE_MAX;
	m.sample_type = ptypes;
	m.default_sample_type = p->type_names[LK_EXPORT_INUSE_SPACE];
	perftools__profiles__value_type__init(&period);
	period.type = p->period_type;
	period.unit = p->period_unit;
	m.period_type = &period;
	m.period = (int64_t)p->period;
	m.time_nanos = (int64_t)p->start_ns;
	m.duration_nanos = (int64_t)(p->end_ns - p->start_ns);

	r = lay_samples(p, &t, &m);
	if (r >= 0)
		r = lay_mappings(p, &t, &m);
	if (r >= 0)
		r = lay_locations(p, &t, &m);
	if (r >= 0)
		r = lay_functions(p, &t, &m);
	if (r >= 0)
		r = lay_strings(p, &t, &m);
	if (r >= 0 && !(g = malloc(sizeof(*g)))) /* deflate's window and 64 KiB: a fixed size */
		r = -ENOMEM;
	if (r >= 0)
		r = lk_gzip_open(g, f, GZIP_LEVEL);
	if (r >= 0) {
		struct gzip_buffer b = { .base = { .append = gzip_append }, .g = g };
		perftools__profiles__profile__pack_to_buffer(&m, &b.base);
		r = lk_gzip_close(g);
	}
	free(g);
	tables_free(&t);
	return r;
}
