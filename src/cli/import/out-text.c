/* out-text.c: `leek import`'s report as text: what the trace held, the leaks by address (as
 * glibc's mtrace script lists them, with the line and time of each allocation), and the
 * warnings.
 *
 * Never: print a string from the trace without escaping it (a caller is bytes of the trace), or
 * more than TEXT_WARNINGS warnings (-v shows each as it happens, JSON the first
 * LK_IMPORT_WARNINGS_KEPT).
 */
#include <inttypes.h>
#include <string.h>

#include "import.h"
#include "util.h"

#define TEXT_WARNINGS 20 /* a screen: the first ones show where a damaged trace goes wrong */

const char *lk_import_caller_format(const struct lk_import_caller *c, char *buf, size_t size)
{
	if (c->function && c->file && c->line)
		snprintf(buf, size, "%s at %s:%" PRIu32, c->function, c->file, c->line);
	else if (c->function)
		snprintf(buf, size, "%s (%s)", c->function, c->orig);
	else
		snprintf(buf, size, "%s", c->orig);
	return buf;
}

static void print_caller(FILE *f, const struct lk_import_match *m, uint64_t id)
{
	char buf[1024];

	if (id == 0 || id >= m->callers.n) {
		fputs("-", f);
		return;
	}
	lk_import_caller_format(&m->callers.c[id], buf, sizeof(buf));
	lk_print_escaped(f, buf, strlen(buf));
}

static void print_time(FILE *f, uint64_t ns)
{
	if (ns == UINT64_MAX)
		fprintf(f, "%17s", "-");
	else
		fprintf(f, "%10" PRIu64 ".%06" PRIu64, ns / 1000000000u, ns % 1000000000u / 1000);
}

void lk_import_text(FILE *f, const struct lk_import_result *r)
{
	const struct lk_import_match *m = r->m;
	char b1[32];

	lk_print_escaped(f, r->input, strlen(r->input));
	fprintf(f,
	        ": %s trace, %" PRIu64 " lines: %" PRIu64 " malloc records, %" PRIu64
	        " other records skipped, %" PRIu64 " malformed lines skipped\n",
	        lk_import_format_name(r->format), m->lines, m->records, m->skipped, m->malformed);
	fprintf(f,
	        "%" PRIu64 " allocations, %" PRIu64 " frees, %" PRIu64 " reallocs, %" PRIu64
	        " failed; peak live %" PRIu64 " objects, %s\n",
	        m->allocs, m->frees, m->reallocs, m->failed, m->peak_objects,
	        lk_format_bytes(b1, sizeof(b1), (double)m->peak_bytes));
	fprintf(f, "Leaked: %" PRIu64 " objects, %" PRIu64 " bytes (%s)\n", m->leaked_objects,
	        m->leaked_bytes, lk_format_bytes(b1, sizeof(b1), (double)m->leaked_bytes));
	if (r->nleaks == 0) {
		fputs("No memory leaks.\n", f);
	} else {
		fprintf(f, "\n%18s %12s %10s", "Address", "Size", "Line");
		if (m->has_ts)
			fprintf(f, " %17s", "Time");
		fputs("  Caller\n", f);
		for (size_t i = 0; i < r->nleaks; i++) {
			const struct lk_import_live *b = &r->leaks[i];
			fprintf(f, "%#018" PRIx64 " %12" PRIu64 " %10" PRIu64, b->addr, b->size,
			        b->line);
			if (m->has_ts) {
				fputc(' ', f);
				print_time(f, b->ts_ns);
			}
			fputs("  ", f);
			print_caller(f, m, b->caller);
			fputc('\n', f);
		}
	}

	uint64_t total = 0;
	for (int k = 0; k < _LK_WARN_MAX; k++)
		total += m->warn_count[k];
	if (total == 0)
		return;
	fprintf(f, "\nWarnings: %" PRIu64 " (", total);
	const char *sep = "";
	for (int k = 0; k < _LK_WARN_MAX; k++)
		if (m->warn_count[k]) {
			fprintf(f, "%s%s %" PRIu64, sep, lk_import_warn_name(k), m->warn_count[k]);
			sep = ", ";
		}
	fputs(")\n", f);
	for (size_t i = 0; i < m->nwarnings && i < TEXT_WARNINGS; i++) {
		const struct lk_import_warning *w = &m->warnings[i];
		fprintf(f, "  line %" PRIu64 ": %s 0x%" PRIx64, w->line,
		        lk_import_warn_name(w->kind), w->addr);
		if (w->first_line)
			fprintf(f, " (%s line %" PRIu64 ")",
			        w->kind == LK_WARN_DOUBLE_FREE ? "first freed on" : "allocated on",
			        w->first_line);
		if (w->caller) {
			fputs(" by ", f);
			print_caller(f, m, w->caller);
		}
		fputc('\n', f);
	}
	if (total > TEXT_WARNINGS)
		fprintf(f,
		        "  ... %" PRIu64 " more (-v shows each one, --format json the first %d)\n",
		        total - TEXT_WARNINGS, LK_IMPORT_WARNINGS_KEPT);
}
