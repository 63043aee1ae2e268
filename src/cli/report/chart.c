/* chart.c: the timeline view's chart: the heap estimate as bars, RSS as dots, in 80 columns.
 *
 *     64 MiB ┤                              •••••••••••••
 *            │               ▂▄▆██████████████████████████
 *       0 B  ┼────────────────────────────────────────────
 *            0 s         0.40 s        0.80 s       1.57 s
 *
 * One column per timeline point (LK_TIMELINE_BUCKETS = 64 of them), HEIGHT rows, each cell cut in
 * eighths with the Unicode block elements; --ascii (or a locale that is not UTF-8) draws '#' and
 * '*' instead. The bar is the highest estimate within the column's interval, so a short peak
 * still shows. The y axis is in binary units with a round step.
 *
 * Never: print wider than 80 columns, or divide by a zero scale (an empty heap draws a flat 1 KiB
 * chart).
 */
#include <math.h>
#include <string.h>

#include "report.h"
#include "util.h"

#define HEIGHT 16
#define COLUMNS 64
#define LABEL 10 /* width of the y labels */

struct glyphs {
	const char *eighths[9]; /* 0 to 8 eighths of a cell filled */
	const char *dot, *vbar, *tick, *corner, *hbar;
};

static const struct glyphs unicode = {
	{ " ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█" }, "•", "│", "┤", "┼", "─",
};
static const struct glyphs ascii = {
	{ " ", " ", " ", ".", ".", "#", "#", "#", "#" }, "*", "|", "+", "+", "-",
};

/* A round top for the y axis: 4 steps of 1, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a power of ten, in
 * the binary unit that shows max below 1024. */
static double nice_top(double max, double *unit, const char **unit_name)
{
	static const char *const names[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	static const double steps[] = { 1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10 };
	double u = 1, step;
	unsigned i = 0;

	if (!(max > 1024))
		max = 1024;
	while (max / u >= 1024 && i + 1 < sizeof(names) / sizeof(names[0])) {
		u *= 1024;
		i++;
	}
	step = max / u / 4;
	double p = pow(10, floor(log10(step)));
	for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++)
		if (steps[k] * p >= step * (1 - 1e-9)) {
			step = steps[k] * p;
			break;
		}
	*unit = u;
	*unit_name = names[i];
	return 4 * step * u;
}

static void print_label(FILE *f, double v, double unit, const char *unit_name)
{
	char buf[32];
	double x = v / unit;

	if (x == 0)
		snprintf(buf, sizeof(buf), "0 B");
	else if (x == floor(x))
		snprintf(buf, sizeof(buf), "%.0f %s", x, unit_name);
	else
		snprintf(buf, sizeof(buf), "%.1f %s", x, unit_name);
	fprintf(f, "%*s ", LABEL, buf);
}

/* "1.57 s", "250 ms", "2.5 min": t in the unit that suits the whole axis (span). */
static void format_time(char *buf, size_t size, uint64_t t, uint64_t span)
{
	if (t == 0)
		snprintf(buf, size, "0");
	else if (span < 1000000)
		snprintf(buf, size, "%.0f us", (double)t / 1e3);
	else if (span < 1000000000)
		snprintf(buf, size, "%.0f ms", (double)t / 1e6);
	else if (span < 600000000000)
		snprintf(buf, size, "%.2f s", (double)t / 1e9);
	else
		snprintf(buf, size, "%.1f min", (double)t / 60e9);
}

static void x_axis(FILE *f, uint64_t span)
{
	char line[LABEL + 2 + COLUMNS + 16], buf[32];
	size_t width = LABEL + 1 + COLUMNS + 1;

	memset(line, ' ', sizeof(line));
	for (unsigned q = 0; q <= 4; q++) {
		size_t len, col = LABEL + 1 + q * COLUMNS / 4;
		format_time(buf, sizeof(buf), span * q / 4, span);
		len = strlen(buf);
		if (q == 4)
			col = width - len; /* the last label ends with the axis */
		else if (q > 0)
			col -= len / 2;
		memcpy(line + col, buf, len);
	}
	line[width] = 0;
	while (width > 0 && line[width - 1] == ' ')
		line[--width] = 0;
	fprintf(f, "%s\n", line);
}

void lk_chart_timeline(FILE *f, const struct lk_timeline_point *p, size_t n, bool use_ascii)
{
	const struct glyphs *g = use_ascii ? &ascii : &unicode;
	double max = 0, unit, top;
	const char *unit_name;
	unsigned level[COLUMNS], rss_row[COLUMNS];

	if (n == 0) {
		fputs("(no timeline: the profile holds no timed record)\n", f);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		max = fmax(max, fmax(p[i].heap_max, (double)p[i].rss_bytes));
	}
	top = nice_top(max, &unit, &unit_name);
	for (unsigned c = 0; c < COLUMNS; c++) {
		const struct lk_timeline_point *q = &p[(size_t)c * n / COLUMNS];
		double eighths = q->heap_max / top * HEIGHT * 8, rows = (double)q->rss_bytes / top * HEIGHT;
		level[c] = (unsigned)fmin(HEIGHT * 8, round(eighths));
		/* The row the RSS falls in, counted from the top; HEIGHT: no RSS known. */
		rss_row[c] = q->rss_bytes ? HEIGHT - 1 - (unsigned)fmin(HEIGHT - 1, floor(rows)) : HEIGHT;
	}
	for (unsigned r = 0; r < HEIGHT; r++) {
		if (r % 4 == 0)
			print_label(f, top * (HEIGHT - r) / HEIGHT, unit, unit_name);
		else
			fprintf(f, "%*s ", LABEL, "");
		fputs(r % 4 == 0 ? g->tick : g->vbar, f);
		for (unsigned c = 0, blanks = 0; c < COLUMNS; c++) {
			int filled = (int)level[c] - (int)(HEIGHT - 1 - r) * 8;
			const char *cell = rss_row[c] == r ? g->dot
					   : g->eighths[filled < 0 ? 0 : filled > 8 ? 8 : filled];
			if (strcmp(cell, " ") == 0) { /* no blanks at the end of a line */
				blanks++;
				continue;
			}
			fprintf(f, "%*s%s", (int)blanks, "", cell);
			blanks = 0;
		}
		fputc('\n', f);
	}
	print_label(f, 0, unit, unit_name);
	fputs(g->corner, f);
	for (unsigned c = 0; c < COLUMNS; c++)
		fputs(g->hbar, f);
	fputc('\n', f);
	x_axis(f, p[n - 1].t_ns);
	fprintf(f, "%*s %s estimated heap (bytes requested; highest in each interval)   %s RSS\n",
		LABEL, "", g->eighths[8], g->dot);
}
