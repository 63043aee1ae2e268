/* screen.c: `leek top`'s screen (ncursesw): the heap estimate and RSS as sparklines, and the live
 * sites with their change since the view opened, bytes allocated, and growth verdict, sorted by
 * the key the user chose; one site's stack on demand.
 *
 * The change since the view opened is kept per site key (function, file, line, module: the same
 * key `leek diff` matches sites by), from the first view in which the site showed: a site that
 * came later counts from zero.
 *
 * Never: read the profile (cmd-top.c hands it each view), or touch the terminal outside
 * lk_screen_open/close.
 */
#define _XOPEN_SOURCE_EXTENDED 1
#include <curses.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "out-format.h"
#include "screen.h"

struct base {
	char *function, *file, *module; /* the site's key, copied: a report's frames go with it */
	uint32_t line;
	double live;                    /* its live bytes when first seen */
};

struct lk_screen {
	SCREEN *term;
	struct base *base;
	size_t nbase, cap;
	bool ascii;
	size_t *order; /* sites in the chosen order */
	size_t norder;
};

int lk_screen_open(bool ascii, struct lk_screen **ret)
{
	struct lk_screen *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->ascii = ascii;
	/* newterm, not initscr, which exits the program when it cannot. */
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO) ||
	    !(s->term = newterm(NULL, stdout, stdin))) {
		free(s);
		return -ENOTTY;
	}
	set_term(s->term);
	cbreak();
	noecho();
	keypad(stdscr, TRUE);
	curs_set(0);
	*ret = s;
	return 0;
}

void lk_screen_close(struct lk_screen *s)
{
	if (!s)
		return;
	endwin();
	delscreen(s->term);
	for (size_t i = 0; i < s->nbase; i++) {
		free(s->base[i].function);
		free(s->base[i].file);
		free(s->base[i].module);
	}
	free(s->base);
	free(s->order);
	free(s);
}

/* The site's live bytes when first seen (0 for a site it now sees first, which it keeps). */
static double base_of(struct lk_screen *s, const struct lk_report_site *site)
{
	const struct lk_sym_frame *f = site->stack[site->site_frame];

	for (size_t i = 0; i < s->nbase; i++)
		if (s->base[i].line == f->line && !strcmp(s->base[i].function, f->function) &&
		    !strcmp(s->base[i].file ?: "", f->file ?: "") &&
		    !strcmp(s->base[i].module ?: "", f->module ?: ""))
			return s->base[i].live;
	if (s->nbase == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		struct base *b = realloc(s->base, cap * sizeof(*b));
		if (!b)
			return 0;
		s->base = b;
		s->cap = cap;
	}
	s->base[s->nbase++] = (struct base){ strdup(f->function), f->file ? strdup(f->file) : NULL,
					     f->module ? strdup(f->module) : NULL, f->line,
					     site->live_bytes.value };
	return site->live_bytes.value;
}

static const char *sort_name(enum lk_screen_sort k)
{
	return k == LK_SORT_ALLOC ? "allocated" : k == LK_SORT_GROWTH ? "growth" : "live";
}

static double sort_key(const struct lk_report_site *x, enum lk_screen_sort k)
{
	return k == LK_SORT_ALLOC ? x->alloc_bytes.value
	       : k == LK_SORT_GROWTH ? x->growth.slope_bytes_s
				     : x->live_bytes.value;
}

static const struct lk_report_site *sort_sites;
static enum lk_screen_sort sort_by;

static int cmp_order(const void *a, const void *b)
{
	double x = sort_key(&sort_sites[*(const size_t *)a], sort_by);
	double y = sort_key(&sort_sites[*(const size_t *)b], sort_by);

	return x > y ? -1 : x < y ? 1 : 0;
}

/* n values as a line of w block characters (or ASCII levels), from the lowest value (the lowest
 * block) to the highest (a full one): a heap that grows by a tenth still shows its slope. */
static void sparkline(const struct lk_screen *s, int row, int col, int w, const double *v, size_t n)
{
	static const char *const blocks[] = { " ", "\u2581", "\u2582", "\u2583", "\u2584",
					       "\u2585", "\u2586", "\u2587", "\u2588" };
	static const char ascii[] = " .:-=+*#%@";
	double max = 0, min = n ? v[0] : 0;

	for (size_t i = 0; i < n; i++) {
		max = v[i] > max ? v[i] : max;
		min = v[i] < min ? v[i] : min;
	}
	move(row, col);
	for (int c = 0; c < w && n; c++) {
		size_t i = (size_t)c * n / (size_t)w;
		double f = max > min ? (v[i] - min) / (max - min) : max > 0;
		if (s->ascii)
			addch((chtype)ascii[1 + (int)lround(f * 8)]);
		else
			addstr(blocks[1 + (int)lround(f * 7)]);
	}
}

void lk_screen_draw(struct lk_screen *s, const struct lk_screen_state *st)
{
	const struct lk_report *r = st->view->r;
	const struct lk_profile_totals *t = &r->totals;
	double heap[LK_TIMELINE_BUCKETS], rss[LK_TIMELINE_BUCKETS];
	size_t nt = r->ntimeline < LK_TIMELINE_BUCKETS ? r->ntimeline : LK_TIMELINE_BUCKETS;
	char a[32], b[48], c[32], d[32], e[32];
	int rows, cols, row = 0;

	getmaxyx(stdscr, rows, cols);
	erase();
	mvprintw(row++, 0, "leek top - pid %u - %s - %s%s", r->nprocs ? r->procs[0].pid : 0,
		 st->path, lk_fmt_time(a, sizeof(a), (double)st->view->end_ns),
		 !st->view->ended ? "" : st->view->trailer ? " - exited" : " - ended (crash, kill)");
	mvprintw(row++, 0, "heap %s %s  high-water %s  RSS %s  sort: %s",
		 lk_fmt_bytes(a, sizeof(a), t->live_bytes_end.value),
		 lk_fmt_interval(b, sizeof(b), &t->live_bytes_end),
		 lk_fmt_bytes(c, sizeof(c), t->peak_bytes.value),
		 nt ? lk_fmt_bytes(d, sizeof(d), (double)r->timeline[nt - 1].rss_bytes) : "-",
		 sort_name(st->sort));
	for (size_t i = 0; i < nt; i++) {
		heap[i] = r->timeline[i].heap_bytes;
		rss[i] = (double)r->timeline[i].rss_bytes;
	}
	mvprintw(row, 0, "heap ");
	sparkline(s, row++, 5, cols - 6 < 64 ? cols - 6 : 64, heap, nt);
	mvprintw(row, 0, "RSS  ");
	sparkline(s, row++, 5, cols - 6 < 64 ? cols - 6 : 64, rss, nt);
	row++;
	mvprintw(row++, 0, "%11s %11s %11s  %-8s %11s  %s", "live", "change", "allocated", "trend",
		 "slope/s", "site");

	free(s->order);
	s->norder = 0;
	s->order = malloc((r->nsites ? r->nsites : 1) * sizeof(*s->order));
	if (!s->order)
		return;
	for (size_t i = 0; i < r->nsites; i++) {
		s->order[s->norder++] = i;
		base_of(s, &r->sites[i]); /* every site's first sight, shown or not */
	}
	sort_sites = r->sites;
	sort_by = st->sort;
	qsort(s->order, s->norder, sizeof(*s->order), cmp_order);

	size_t sel = st->selected < s->norder ? st->selected : s->norder ? s->norder - 1 : 0;
	for (size_t k = 0; k < s->norder && row < rows - 1; k++) {
		const struct lk_report_site *x = &r->sites[s->order[k]];
		const struct lk_sym_frame *f = x->stack[x->site_frame];
		double change = x->live_bytes.value - base_of(s, x);
		if (k == sel)
			attron(A_REVERSE);
		mvprintw(row++, 0, "%11s %11s %11s  %-8s %11s  %s (%s:%u)",
			 lk_fmt_bytes(a, sizeof(a), x->live_bytes.value),
			 lk_fmt_change(b, sizeof(b), change),
			 lk_fmt_bytes(c, sizeof(c), x->alloc_bytes.value),
			 lk_trend_name(x->growth.trend),
			 lk_fmt_change(e, sizeof(e), x->growth.slope_bytes_s), f->function,
			 lk_site_basename(f->file), f->line);
		if (k == sel)
			attroff(A_REVERSE);
		if (k == sel && st->show_stack)
			for (size_t i = 0; i < x->nframes && row < rows - 1; i++)
				mvprintw(row++, 4, "%s %s (%s:%u)", i == x->site_frame ? ">" : " ",
					 x->stack[i]->function, lk_site_basename(x->stack[i]->file),
					 x->stack[i]->line);
	}
	if (!r->nsites)
		mvprintw(row++, 0, "  (no live site yet)");
	mvprintw(rows - 1, 0, "q quit  l live  a allocated  g growth  up/down select  s stack");
	refresh();
}

size_t lk_screen_sites(const struct lk_screen *s)
{
	return s->norder;
}
