/* out-format.c: numbers, estimates and frames as the text outputs print them (out-format.h).
 *
 * Never: print a string from a profile or a debug file unescaped (lk_print_escaped: a file name
 * could hold terminal escapes), or a number without its unit.
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "funcs.h"
#include "out-format.h"
#include "site.h"
#include "util.h"

static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };

/* The unit of |v| (a power of 1024) and how many decimals keep 3 significant digits. (Unlike
 * lk_format_bytes(), always 2 decimals: an estimate is rarely good to 4 digits, and an interval
 * prints both ends in one unit.) */
static unsigned unit_of(double v, double *scale, int *decimals)
{
	unsigned u = 0;

	v = fabs(v);
	*scale = 1;
	while (v / *scale >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		*scale *= 1024;
		u++;
	}
	v /= *scale;
	*decimals = u == 0 ? 0 : v < 10 ? 2 : v < 100 ? 1 : 0;
	return u;
}

const char *lk_fmt_bytes(char *buf, size_t size, double v)
{
	double scale;
	int dec;
	unsigned u = unit_of(v, &scale, &dec);

	snprintf(buf, size, "%.*f %s", dec, v / scale, units[u]);
	return buf;
}

/* "[37.2, 43.1] MiB", both ends in the unit of the upper one; "exact" when there is no
 * uncertainty. */
const char *lk_fmt_interval(char *buf, size_t size, const struct lk_estimate *e)
{
	double scale;
	int dec;
	unsigned u;

	if (e->samples == 0 || e->lo == e->hi) {
		snprintf(buf, size, e->samples ? "exact" : "-");
		return buf;
	}
	u = unit_of(e->hi, &scale, &dec);
	snprintf(buf, size, "[%.*f, %.*f] %s", dec, e->lo / scale, dec, e->hi / scale, units[u]);
	return buf;
}

const char *lk_fmt_change(char *buf, size_t size, double v)
{
	double scale;
	int dec;
	unsigned u = unit_of(v, &scale, &dec);

	if (round(v / scale * 100) == 0) /* nothing, or less than the last digit shown */
		snprintf(buf, size, "0 B");
	else
		snprintf(buf, size, "%+.*f %s", dec, v / scale, units[u]);
	return buf;
}

const char *lk_fmt_change_interval(char *buf, size_t size, double lo, double hi)
{
	double scale;
	int dec;
	unsigned u = unit_of(fmax(fabs(lo), fabs(hi)), &scale, &dec);

	if (lo == hi) {
		snprintf(buf, size, "exact");
		return buf;
	}
	snprintf(buf, size, "[%+.*f, %+.*f] %s", dec, lo / scale + 0.0, dec, hi / scale + 0.0,
		 units[u]);
	return buf;
}

const char *lk_fmt_count(char *buf, size_t size, double v)
{
	if (v < 9999.5)
		snprintf(buf, size, "%.0f", v);
	else if (v < 999950)
		snprintf(buf, size, "%.1fk", v / 1e3);
	else if (v < 999950000)
		snprintf(buf, size, "%.1fM", v / 1e6);
	else
		snprintf(buf, size, "%.1fG", v / 1e9);
	return buf;
}

const char *lk_fmt_time(char *buf, size_t size, double ns)
{
	if (fabs(ns) < 1e6)
		snprintf(buf, size, "%.0f us", ns / 1e3);
	else if (fabs(ns) < 1e9)
		snprintf(buf, size, "%.0f ms", ns / 1e6);
	else if (fabs(ns) < 600e9)
		snprintf(buf, size, "%.2f s", ns / 1e9);
	else
		snprintf(buf, size, "%.1f min", ns / 60e9);
	return buf;
}

void lk_text_escaped(FILE *f, const char *s)
{
	lk_print_escaped(f, s, strlen(s));
}

/* "56.42 MiB [53.00, 59.80] MiB, 412 samples", with a '~' for too few. */
void lk_text_estimate(FILE *f, const struct lk_estimate *e)
{
	char a[32], b[48];

	if (e->samples == 0) {
		fputs("0 B, no sample", f);
		return;
	}
	fprintf(f, "%s%s %s, %" PRIu64 " sample%s", e->too_few ? "~" : "",
		lk_fmt_bytes(a, sizeof(a), e->value), lk_fmt_interval(b, sizeof(b), e), e->samples,
		e->samples == 1 ? "" : "s");
}

/* function (file:line) [module], the file and module as base names unless full. */
void lk_text_frame(FILE *f, const struct lk_sym_frame *fr, bool full)
{
	lk_text_escaped(f, fr->function);
	if (fr->file) {
		fputs(" (", f);
		lk_text_escaped(f, full ? fr->file : lk_site_basename(fr->file));
		if (fr->line)
			fprintf(f, ":%" PRIu32, fr->line);
		fputc(')', f);
	}
	if (fr->module) {
		fputs(" [", f);
		lk_text_escaped(f, full ? fr->module : lk_site_basename(fr->module));
		fputc(']', f);
	}
}


void lk_text_stack(FILE *f, const struct lk_sym_frame *const *stack, const uint32_t *funcs,
		   size_t n, size_t site_frame, size_t nstacks)
{
	for (size_t i = 0; i < n; i++) {
		const struct lk_sym_frame *fr = stack[i];
		fputs(i == site_frame ? "    > " : "      ", f);
		lk_text_frame(f, fr, true);
		if (i < site_frame)
			fputs(!funcs || funcs[i] & LK_FUNC_ALLOC ? "  (allocator)" : "  (wrapper)", f);
		if (fr->inlined)
			fputs("  (inlined)", f);
		fputc('\n', f);
	}
	if (nstacks > 1)
		fprintf(f, "      (the largest of %zu stacks with this site)\n", nstacks);
}
