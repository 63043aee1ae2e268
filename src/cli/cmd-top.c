/* cmd-top.c: `leek top [OPTIONS] FILE|PID`: a live full-screen view of a running process's
 * profile, refreshed every --interval, like top(1): the top live sites, their change since the
 * view opened, bytes allocated, growth verdict, and the heap estimate and RSS as sparklines
 * (src/cli/live/screen.c). Keys sort by live, allocated or growth, show a site's stack, and quit.
 *
 * Each refresh reads the profile again up to what its size proves written (src/cli/live/), as
 * `leek watch` does; the watched process is only read. When it ends, the last view is of the
 * whole file, and stays until q.
 *
 * Never: print to stdout while the screen is up (messages wait until it is closed), or exit from
 * anywhere but the end of lk_cmd_top().
 */
#include <curses.h>
#include <errno.h>
#include <getopt.h>
#include <langinfo.h>
#include <locale.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "input.h"
#include "live.h"
#include "screen.h"
#include "util.h"

#define DEFAULT_INTERVAL_NS 2000000000ull /* top's own default is 3 s; 2 s keeps a leak's growth
					   * visible, and a refresh reads the file again */
#define DEFAULT_WAIT_NS (10 * 1000000000ull) /* as `leek watch --wait` */
#define DEFAULT_MAX_LAG_NS DEFAULT_INTERVAL_NS /* a SYNC each refresh, whose reply the next one
						* reads: a view is at most two refreshes behind */

static uint64_t arg_interval = DEFAULT_INTERVAL_NS, arg_wait = DEFAULT_WAIT_NS;
static uint64_t arg_max_lag = DEFAULT_MAX_LAG_NS;
static bool arg_ascii;
static struct lk_input arg_input = { .command = "top" };

#define HELP_SHOWN (-1)

static void input_donep(struct lk_input **in)
{
	lk_input_done(*in);
}

static int parse_args(int argc, char *argv[])
{
	enum { ARG_INTERVAL = 0x100, ARG_WAIT, ARG_ASCII, ARG_MAX_LAG };
	static const struct option options[] = {
		{ "interval", required_argument, NULL, ARG_INTERVAL },
		{ "wait", required_argument, NULL, ARG_WAIT },
		{ "max-lag", required_argument, NULL, ARG_MAX_LAG },
		{ "ascii", no_argument, NULL, ARG_ASCII },
		{ "alloc-fn", required_argument, NULL, LK_INPUT_ALLOC_FN },
		{ "no-auto-wrappers", no_argument, NULL, LK_INPUT_NO_AUTO_WRAPPERS },
		{ "help", no_argument, NULL, 'h' },
		LK_INPUT_OPTIONS,
		{},
	};
	int c, k;

	optind = 0;
	while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
		switch (c) {
		case ARG_INTERVAL:
			if ((k = lk_duration_arg("top", "--interval", optarg, 1, &arg_interval)))
				return k;
			break;
		case ARG_WAIT:
			if ((k = lk_duration_arg("top", "--wait", optarg, 0, &arg_wait)))
				return k;
			break;
		case ARG_MAX_LAG:
			if ((k = lk_duration_arg("top", "--max-lag", optarg, 0, &arg_max_lag)))
				return k;
			break;
		case ARG_ASCII:
			arg_ascii = true;
			break;
		case 'h':
			return lk_cmd_usage(stdout, "top", HELP_SHOWN);
		default:
			if ((k = lk_input_option(&arg_input, c, optarg)))
				return k;
		}
	}
	if (lk_cmd_need_operands(argc, "top", "profile or pid"))
		return LK_EXIT_USAGE;
	if (argc - optind > 1) {
		lk_msg("top: one profile or pid at a time");
		return LK_EXIT_USAGE;
	}
	return 0;
}

struct top {
	struct lk_live_source *src;
	struct lk_screen *screen;
	struct lk_screen_state st;
	struct lk_live_view *view;
	struct lk_live_opts opts;
	char *err;   /* the first failure to read the profile, printed after the screen closes */
	int status;
};

static void draw(struct top *t)
{
	if (t->view) {
		t->st.view = t->view;
		lk_screen_draw(t->screen, &t->st);
		return;
	}
	erase();
	mvprintw(0, 0, "leek top - %s - waiting for its first records (q quits)", t->src->path);
	refresh();
}

/* A new view, if the profile has one; false once nothing will change any more. */
static bool refresh_view(struct top *t)
{
	struct lk_live_view *v = NULL;
	char *err = NULL;
	int r;

	if (t->view && t->view->ended)
		return false;
	r = lk_live_poll(t->src);
	if (r >= 0)
		r = lk_live_view_make(t->src, &t->opts, &v, &err);
	if (r == -EAGAIN)
		return true;
	if (r < 0) {
		if (!t->err && asprintf(&t->err, "%s: %s", t->src->path,
					err && *err ? err : strerror(-r)) < 0)
			t->err = NULL;
		free(err);
		t->status = LK_EXIT_FILE;
		return false;
	}
	lk_live_view_free(t->view);
	t->view = v;
	return true;
}

static void loop(struct top *t)
{
	uint64_t next = 0;
	bool live = true;

	for (;;) {
		uint64_t now = lk_monotonic_ns();
		if (live && now >= next) {
			live = refresh_view(t);
			draw(t);
			next = lk_monotonic_ns() + arg_interval;
			now = lk_monotonic_ns();
		}
		timeout(live ? (int)((next - now) / 1000000 + 1) : -1);
		int ch = getch();
		switch (ch) {
		case 'q':
		case 'Q':
			return;
		case 'l':
			t->st.sort = LK_SORT_LIVE;
			break;
		case 'a':
			t->st.sort = LK_SORT_ALLOC;
			break;
		case 'g':
			t->st.sort = LK_SORT_GROWTH;
			break;
		case KEY_UP:
		case 'k':
			if (t->st.selected)
				t->st.selected--;
			break;
		case KEY_DOWN:
		case 'j':
			if (t->st.selected + 1 < lk_screen_sites(t->screen))
				t->st.selected++;
			break;
		case 's':
		case '\n':
		case KEY_ENTER:
			t->st.show_stack = !t->st.show_stack;
			break;
		case ERR: /* the interval has passed */
			continue;
		default: /* KEY_RESIZE and the rest: drawn again */
			break;
		}
		draw(t);
	}
}

int lk_cmd_top(int argc, char *argv[])
{
	_cleanup_(input_donep) struct lk_input *in = &arg_input;
	_cleanup_(lk_symbolizer_freep) struct lk_symbolizer *sym = NULL;
	struct top t = { .status = LK_EXIT_OK };
	const char *arg, *why = NULL;
	int k;

	k = parse_args(argc, argv);
	if (k == HELP_SHOWN)
		return LK_EXIT_OK;
	if (k)
		return k;
	arg = argv[optind];
	setlocale(LC_CTYPE, "");
	k = lk_input_symbolizer(in, &sym);
	if (k)
		return k;
	k = lk_live_open(arg, arg_wait, sym, &t.src);
	if (k == -ENOENT && strspn(arg, "0123456789") == strlen(arg))
		return lk_msg("top: process %s has no leek profile (is it run with libleek, and has "
			      "it allocated yet? --wait)", arg), LK_EXIT_FILE;
	if (k == -ESRCH)
		return lk_msg("top: no process %s", arg), LK_EXIT_FILE;
	if (k == -EMEDIUMTYPE)
		return lk_msg("top: %s: not a raw leek profile being written", arg), LK_EXIT_FILE;
	if (k < 0)
		return lk_error(k, "top: cannot open '%s'", arg), LK_EXIT_FILE;
	t.opts = (struct lk_live_opts){
		.kind = LK_LIVE_ALL,
		.all_sites = true, /* sorted by bytes allocated, the churn's sites come first */
		.ascii = arg_ascii || strcmp(nl_langinfo(CODESET), "UTF-8") != 0,
		.filter = &in->filter,
		.segment_only = in->segment_only,
	};
	t.st.path = t.src->path;
	if (arg_max_lag && (k = lk_live_sync(t.src, arg_max_lag, &why)) < 0)
		lk_msg("top: %s: cannot ask its process how far it is written (%s): the view trails "
		       "the file by up to a step of its growth (--max-lag 0 does not ask)",
		       t.src->path, why ? why : strerror(-k));
	k = lk_screen_open(t.opts.ascii, &t.screen);
	if (k < 0) {
		lk_live_close(t.src);
		return lk_error(k, "top: cannot take the terminal"), LK_EXIT_USAGE;
	}
	loop(&t);
	lk_screen_close(t.screen);
	if (t.err)
		lk_msg("top: %s", t.err);
	free(t.err);
	lk_live_view_free(t.view);
	lk_live_close(t.src);
	return t.status;
}
