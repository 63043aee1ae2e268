/* out-json.c: `leek import --format json` (docs/json.md, "leek import"): the trace's counts,
 * the totals, one object per leak and the warnings kept.
 *
 * Never: write anything but the document, or a caller's bytes unescaped (json-write.h).
 */
#include <inttypes.h>
#include <string.h>

#include "import.h"
#include "json-write.h"

static void caller(struct lk_json *j, const struct lk_import_match *m, uint64_t id)
{
	const struct lk_import_caller *c = id && id < m->callers.n ? &m->callers.c[id] : NULL;

	lk_json_str(j, "caller", c ? c->orig : NULL);
	lk_json_str(j, "function", c ? c->function : NULL);
	lk_json_str(j, "file", c ? c->file : NULL);
	if (c && c->line)
		lk_json_u64(j, "source_line", c->line);
	else
		lk_json_str(j, "source_line", NULL);
}

static void seconds(struct lk_json *j, const char *k, uint64_t ns)
{
	lk_json_value(j, k);
	if (ns == UINT64_MAX)
		fputs("null", j->f);
	else
		fprintf(j->f, "%" PRIu64 ".%06" PRIu64, ns / 1000000000u, ns % 1000000000u / 1000);
}

static void hex(struct lk_json *j, const char *k, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
	lk_json_str(j, k, buf);
}

void lk_import_json(FILE *f, const struct lk_import_result *r)
{
	const struct lk_import_match *m = r->m;
	struct lk_json j;
	uint64_t total = 0;

	lk_json_init(&j, f);
	lk_json_open(&j, '{', false);
	lk_json_str(&j, "format", "leek-import");
	lk_json_u64(&j, "version", 1);
	lk_json_str(&j, "input", r->input);
	lk_json_str(&j, "input_format", lk_import_format_name(r->format));
	lk_json_key(&j, "counts");
	lk_json_open(&j, '{', true);
	lk_json_u64(&j, "lines", m->lines);
	lk_json_u64(&j, "records", m->records);
	lk_json_u64(&j, "skipped", m->skipped);
	lk_json_u64(&j, "malformed", m->malformed);
	lk_json_u64(&j, "allocations", m->allocs);
	lk_json_u64(&j, "frees", m->frees);
	lk_json_u64(&j, "reallocs", m->reallocs);
	lk_json_u64(&j, "failed", m->failed);
	lk_json_u64(&j, "peak_objects", m->peak_objects);
	lk_json_u64(&j, "peak_bytes", m->peak_bytes);
	lk_json_close(&j, '}');
	lk_json_u64(&j, "leaked_objects", m->leaked_objects);
	lk_json_u64(&j, "leaked_bytes", m->leaked_bytes);
	lk_json_key(&j, "leaks");
	lk_json_open(&j, '[', false);
	for (size_t i = 0; i < r->nleaks; i++) {
		const struct lk_import_live *b = &r->leaks[i];
		lk_json_open(&j, '{', true);
		hex(&j, "address", b->addr);
		lk_json_u64(&j, "size", b->size);
		lk_json_u64(&j, "line", b->line);
		seconds(&j, "time_s", b->ts_ns);
		caller(&j, m, b->caller);
		lk_json_close(&j, '}');
	}
	lk_json_close(&j, ']');
	for (int k = 0; k < _LK_WARN_MAX; k++)
		total += m->warn_count[k];
	lk_json_key(&j, "warning_counts");
	lk_json_open(&j, '{', true);
	for (int k = 0; k < _LK_WARN_MAX; k++)
		lk_json_u64(&j, lk_import_warn_name(k), m->warn_count[k]);
	lk_json_close(&j, '}');
	lk_json_u64(&j, "warnings_total", total);
	lk_json_key(&j, "warnings");
	lk_json_open(&j, '[', false);
	for (size_t i = 0; i < m->nwarnings; i++) {
		const struct lk_import_warning *w = &m->warnings[i];
		lk_json_open(&j, '{', true);
		lk_json_str(&j, "kind", lk_import_warn_name(w->kind));
		hex(&j, "address", w->addr);
		lk_json_u64(&j, "line", w->line);
		seconds(&j, "time_s", w->ts_ns);
		if (w->first_line)
			lk_json_u64(&j, "first_line", w->first_line);
		else
			lk_json_str(&j, "first_line", NULL);
		caller(&j, m, w->caller);
		lk_json_close(&j, '}');
	}
	lk_json_close(&j, ']');
	lk_json_close(&j, '}');
	fputc('\n', f);
}
