/* pprof-pack.c: a pprof export's tables (pprof.h) as one profile.proto message, packed by
 * protobuf-c (the code protoc-c generates from third_party/pprof/profile.proto) straight into a
 * gzip stream (gzip.c).
 *
 * The message goes out a field at a time. protobuf-c packs C structs that point at one another,
 * and laying out the whole Profile for one call took a struct and a pointer per sample, location,
 * line, function and string: about 200 bytes a distinct frame, 250 MB on bench/export.sh's
 * profile of 1.15 million. A message is the concatenation of its fields, and a repeated field's
 * elements may come one by one (the protobuf encoding), so each element is packed on its own
 * from one struct reused for all, behind its tag and length: the same bytes as one pack of the
 * whole, in the same field order, and memory that no longer grows with the tables. The strings
 * of string_table are written as protobuf writes a string field; the tags are the generated
 * descriptor's.
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

struct out {
	ProtobufCBuffer base;
	struct lk_gzip *g;
};

static void append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
	lk_gzip_write(((struct out *)b)->g, data, len);
}

/* A field's tag, or a length, as a varint (protobuf's encoding). */
static size_t varint(uint8_t *b, uint64_t v)
{
	size_t n = 0;

	for (; v >= 0x80; v >>= 7)
		b[n++] = (uint8_t)(v | 0x80);
	b[n++] = (uint8_t)v;
	return n;
}

/* The number of Profile's field `name`, from the generated descriptor. */
static uint32_t field(const char *name)
{
	return protobuf_c_message_descriptor_get_field_by_name(
		       &perftools__profiles__profile__descriptor, name)->id;
}

/* A length-delimited field (wire type 2): its tag, its length, then len bytes (data, or if data
 * is NULL the message m packed). */
static void put(struct out *o, uint32_t number, const void *data, size_t len,
		const ProtobufCMessage *m)
{
	uint8_t head[20];
	size_t n = varint(head, (uint64_t)number << 3 | 2);

	n += varint(head + n, len);
	lk_gzip_write(o->g, head, n);
	if (data)
		lk_gzip_write(o->g, data, len);
	else
		protobuf_c_message_pack_to_buffer(m, &o->base);
}

static void put_message(struct out *o, uint32_t number, const ProtobufCMessage *m)
{
	put(o, number, NULL, protobuf_c_message_get_packed_size(m), m);
}

static void put_sample_types(const struct lk_pprof *p, struct out *o)
{
	uint32_t number = field("sample_type");
	Perftools__Profiles__ValueType t;

	for (unsigned i = 0; i < _LK_EXPORT_VALUE_MAX; i++) {
		perftools__profiles__value_type__init(&t);
		t.type = p->type_names[i];
		t.unit = p->type_units[i];
		put_message(o, number, &t.base);
	}
}

static void put_samples(const struct lk_pprof *p, struct out *o)
{
	uint32_t number = field("sample");
	Perftools__Profiles__Label base, *labels[1] = { &base };
	Perftools__Profiles__Sample s;

	perftools__profiles__label__init(&base);
	base.key = p->base_key;
	base.str = p->base_true;
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct lk_pprof_sample *x = &p->samples[i];
		perftools__profiles__sample__init(&s);
		s.n_location_id = x->locs.n;
		s.location_id = p->locs + x->locs.first;
		s.n_value = _LK_EXPORT_VALUE_MAX;
		s.value = (int64_t *)x->value;
		if (x->base) {
			s.n_label = 1;
			s.label = labels;
		}
		put_message(o, number, &s.base);
	}
}

static void put_mappings(const struct lk_pprof *p, struct out *o)
{
	uint32_t number = field("mapping");
	Perftools__Profiles__Mapping m;

	for (size_t i = 0; i < p->mappings.n; i++) {
		struct lk_pprof_mapping k;
		memcpy(&k, lk_idset_get(&p->mappings, (uint32_t)i, NULL), sizeof(k));
		perftools__profiles__mapping__init(&m);
		m.id = i + 1;
		m.memory_start = k.start;
		m.memory_limit = k.limit;
		m.file_offset = 0; /* the first PT_LOAD's, at memory_start (pprof.c) */
		m.filename = k.file;
		m.build_id = k.build_id;
		m.has_functions = m.has_filenames = true;
		m.has_line_numbers = m.has_inline_frames = true;
		put_message(o, number, &m.base);
	}
}

/* 0, or -ENOMEM / -E2BIG for the lines of the longest chain. */
static int put_locations(const struct lk_pprof *p, struct out *o)
{
	uint32_t number = field("location"), most = 0;
	Perftools__Profiles__Location l;
	Perftools__Profiles__Line *lines, **plines;

	for (size_t i = 0; i < p->locations.n; i++)
		most = p->loc_lines[i].n > most ? p->loc_lines[i].n : most;
	lines = lk_budget_calloc(most + 1, sizeof(*lines));
	plines = lk_budget_calloc(most + 1, sizeof(*plines));
	if (!lines || !plines) {
		int r = errno == E2BIG ? -E2BIG : -ENOMEM;
		lk_budget_free(lines, lines ? (most + 1) * sizeof(*lines) : 0);
		lk_budget_free(plines, plines ? (most + 1) * sizeof(*plines) : 0);
		return r;
	}
	for (size_t i = 0; i < p->locations.n; i++) {
		struct lk_pprof_location k;
		const struct lk_pprof_span *span = &p->loc_lines[i];
		memcpy(&k, lk_idset_get(&p->locations, (uint32_t)i, NULL), sizeof(k));
		perftools__profiles__location__init(&l);
		l.id = i + 1;
		l.mapping_id = k.mapping;
		l.address = k.address;
		for (uint32_t j = 0; j < span->n; j++) {
			perftools__profiles__line__init(&lines[j]);
			lines[j].function_id = p->lines[span->first + j].function;
			lines[j].line = p->lines[span->first + j].line;
			plines[j] = &lines[j];
		}
		l.n_line = span->n;
		l.line = plines;
		put_message(o, number, &l.base);
	}
	lk_budget_free(lines, (most + 1) * sizeof(*lines));
	lk_budget_free(plines, (most + 1) * sizeof(*plines));
	return 0;
}

static void put_functions(const struct lk_pprof *p, struct out *o)
{
	uint32_t number = field("function");
	Perftools__Profiles__Function f;

	for (size_t i = 0; i < p->functions.n; i++) {
		struct lk_pprof_function k;
		memcpy(&k, lk_idset_get(&p->functions, (uint32_t)i, NULL), sizeof(k));
		perftools__profiles__function__init(&f);
		f.id = i + 1;
		f.name = k.name;
		f.system_name = k.system_name;
		f.filename = k.file;
		put_message(o, number, &f.base);
	}
}

static void put_strings(const struct lk_pprof *p, struct out *o)
{
	uint32_t number = field("string_table");

	for (size_t i = 0; i < p->strings.n; i++) {
		size_t len;
		const char *s = lk_idset_get(&p->strings, (uint32_t)i, &len);
		put(o, number, s, len, NULL);
	}
}

/* Fields 7 to 14: one Profile without its repeated messages, packed as it is. */
static void put_rest(const struct lk_pprof *p, struct out *o)
{
	Perftools__Profiles__Profile m;
	Perftools__Profiles__ValueType period;

	perftools__profiles__profile__init(&m);
	perftools__profiles__value_type__init(&period);
	period.type = p->period_type;
	period.unit = p->period_unit;
	m.period_type = &period;
	m.period = (int64_t)p->period;
	m.time_nanos = (int64_t)p->start_ns;
	m.duration_nanos = (int64_t)(p->end_ns - p->start_ns);
	if (p->opts.span_from_ns && p->opts.span_until_ns > p->opts.span_from_ns) {
		m.time_nanos = (int64_t)p->opts.span_from_ns;
		m.duration_nanos = (int64_t)(p->opts.span_until_ns - p->opts.span_from_ns);
	}
	m.n_comment = p->ncomments;
	m.comment = p->comments;
	m.default_sample_type = p->type_names[LK_EXPORT_INUSE_SPACE];
	perftools__profiles__profile__pack_to_buffer(&m, &o->base);
}

int lk_pprof_pack(const struct lk_pprof *p, FILE *f)
{
	struct lk_gzip *g = malloc(sizeof(*g)); /* deflate's window and 128 KiB: a fixed size */
	struct out o = { .base = { .append = append } };
	int r;

	if (!g)
		return -ENOMEM;
	r = lk_gzip_open(g, f, GZIP_LEVEL);
	if (r < 0) {
		free(g);
		return r;
	}
	o.g = g;
	put_sample_types(p, &o);
	put_samples(p, &o);
	put_mappings(p, &o);
	r = put_locations(p, &o);
	put_functions(p, &o);
	put_strings(p, &o);
	put_rest(p, &o);
	int k = lk_gzip_close(g);
	if (r >= 0)
		r = k;
	free(g);
	return r;
}
