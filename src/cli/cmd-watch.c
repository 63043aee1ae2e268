/* cmd-watch.c: `leek watch [OPTIONS] FILE|PID`: reports on a running process's profile while it
 * runs, and a last one when it ends.
 *
 * Every --every, the live sampled blocks older than --age, by site (src/cli/live/); on SIGHUP
 * every live site; on SIGUSR1 the old sites, after which the blocks they hold are known and left
 * out (counted); on SIGUSR2 the recent frees of sampled blocks; with --high-water the sites at each
 * new high of the heap estimate above MIN. When the process ends, or watch is told to stop
 * (SIGINT, SIGTERM), every live site, and the exit status says which (LK_EXIT_* below).
 *
 * Signals arrive through a signalfd, read in the main loop: no handler runs, so nothing here
 * needs to be async-signal-safe. The watched process is only read: its file, and /proc.
 *
 * Never: write to the profile, signal the watched process, or exit from anywhere but the end of
 * lk_cmd_watch().
 */
#include <errno.h>
#include <getopt.h>
#include <langinfo.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "input.h"
#include "live.h"
#include "util.h"

/* Exit statuses beyond util.h's (documented in `leek help watch` and README.md). */
#define WATCH_EXIT_CRASHED 3 /* the process ended without a trailer: a crash, a kill, an exec */
#define WATCH_EXIT_STOPPED 4 /* watch was stopped (SIGINT, SIGTERM) while the process ran */

#define DEFAULT_EVERY_NS (600 * 1000000000ull) /* the and the sampling debuggers' 10 min */
#define DEFAULT_AGE_NS (300 * 1000000000ull)   /* 5 min: past start-up and most caches' churn */
#define DEFAULT_POLL_NS 1000000000ull /* how often the file's size and the pid are looked at: a
				       * process's end is reported within a second */
#define DEFAULT_WAIT_NS (10 * 1000000000ull) /* for a pid's profile: its first record may wait
					      * for its first sample */
#define DEFAULT_MAX_LAG_NS (5 * 1000000000ull) /* a SYNC every 5 s at most: a report is never
					      * more than that behind, and the process pays a look
					      * with two pwrites more (docs/design.md) */
#define SYNC_WAIT_NS 500000000ull /* for the reply before a report: 5 RSS intervals of a process
				   * that samples; one that does not has written nothing new */
#define DEFAULT_FREES 32   /* SIGUSR2's list: a screen */
#define HIGH_WATER_STEP 1.1 /* a new high-water report once the heap's estimate is 10% above the
			     * last one's: a heap that grows steadily would otherwise report at
			     * every poll; a doubling heap reports about 7 times */

static uint64_t arg_every = DEFAULT_EVERY_NS, arg_age = DEFAULT_AGE_NS;
static uint64_t arg_poll = DEFAULT_POLL_NS, arg_wait = DEFAULT_WAIT_NS;
static uint64_t arg_high_water_min, arg_frees = DEFAULT_FREES, arg_max_lag = DEFAULT_MAX_LAG_NS;
static uint64_t arg_from_ns;
static const char *arg_from_mark;
static bool arg_from;
static bool arg_high_water, arg_ascii;
static enum lk_input_format arg_format = LK_FORMAT_TEXT;
static struct lk_input arg_input = { .command = "watch" };

#define HELP_SHOWN (-1)

static void input_donep(struct lk_input **in)
{
	lk_input_done(*in);
}

static int parse_args(int argc, char *argv[])
{
	enum { ARG_EVERY = 0x100, ARG_AGE, ARG_HIGH_WATER, ARG_FREES, ARG_POLL, ARG_WAIT, ARG_ASCII,
	       ARG_FROM, ARG_MAX_LAG };
	static const struct option options[] = {
		{ "every", required_argument, NULL, ARG_EVERY },
		{ "age", required_argument, NULL, ARG_AGE },
		{ "high-water", optional_argument, NULL, ARG_HIGH_WATER },
		{ "frees", required_argument, NULL, ARG_FREES },
		{ "poll", required_argument, NULL, ARG_POLL },
		{ "wait", required_argument, NULL, ARG_WAIT },
		{ "from", required_argument, NULL, ARG_FROM },
		{ "max-lag", required_argument, NULL, ARG_MAX_LAG },
		{ "format", required_argument, NULL, 'f' },
		{ "ascii", no_argument, NULL, ARG_ASCII },
		{ "help", no_argument, NULL, 'h' },
		LK_INPUT_OPTIONS,
		LK_INPUT_SITE_OPTIONS,
		{},
	};
	int c, k;

	optind = 0;
	while ((c = getopt_long(argc, argv, LK_INPUT_SITE_SHORT "f:h", options, NULL)) >= 0) {
		switch (c) {
		case ARG_EVERY:
			if ((k = lk_duration_arg("watch", "--every", optarg, 1, &arg_every)))
				return k;
			break;
		case ARG_AGE:
			if ((k = lk_duration_arg("watch", "--age", optarg, 0, &arg_age)))
				return k;
			break;
		case ARG_POLL:
			if ((k = lk_duration_arg("watch", "--poll", optarg, 1, &arg_poll)))
				return k;
			break;
		case ARG_WAIT:
			if ((k = lk_duration_arg("watch", "--wait", optarg, 0, &arg_wait)))
				return k;
			break;
		case ARG_MAX_LAG:
			if ((k = lk_duration_arg("watch", "--max-lag", optarg, 0, &arg_max_lag)))
				return k;
			break;
		case ARG_FROM:
			arg_from = true;
			if (lk_input_moment("watch", "--from", optarg, &arg_from_ns, &arg_from_mark))
				return LK_EXIT_USAGE;
			break;
		case ARG_HIGH_WATER:
			arg_high_water = true;
			if (optarg && lk_parse_size(optarg, &arg_high_water_min) < 0) {
				lk_msg("watch: --high-water=%s: not a size (e.g. 64M, 1G)", optarg);
				return LK_EXIT_USAGE;
			}
			break;
		case ARG_FREES:
			if (lk_parse_u64(optarg, &arg_frees) < 0 || arg_frees == 0 ||
			    arg_frees > LK_PROFILE_MAX_RECENT_FREES) {
				lk_msg("watch: --frees '%s': not a count from 1 to %u", optarg,
				       LK_PROFILE_MAX_RECENT_FREES);
				return LK_EXIT_USAGE;
			}
			break;
		case 'f':
			if (lk_input_format("watch", optarg, &arg_format))
				return LK_EXIT_USAGE;
			if (arg_format == LK_FORMAT_HTML) {
				lk_msg("watch: --format is text or json (one object a line)");
				return LK_EXIT_USAGE;
			}
			break;
		case ARG_ASCII:
			arg_ascii = true;
			break;
		case 'h':
			return lk_cmd_usage(stdout, "watch", HELP_SHOWN);
		default:
			if ((k = lk_input_option(&arg_input, c, optarg)))
				return k;
		}
	}
	if (lk_cmd_need_operands(argc, "watch", "profile or pid"))
		return LK_EXIT_USAGE;
	if (argc - optind > 1) {
		lk_msg("watch: one profile or pid at a time");
		return LK_EXIT_USAGE;
	}
	return 0;
}

struct watch {
	struct lk_live_source *src;
	struct lk_live_opts base;  /* what every report shares */
	bool known;                /* SIGUSR1 was seen: known_ns holds */
	int64_t known_ns;
	double high_water;         /* the heap estimate of the last high-water report */
	bool failed;               /* a report could not be read */
};

/* One report of kind k, printed and flushed. 0; -EAGAIN when nothing is written for good yet (a
 * message if asked for by a signal); < 0 after printing why. */
static int report(struct watch *w, enum lk_live_kind k, const char *label,
		  struct lk_live_view **keep)
{
	_cleanup_(freep) char *err = NULL;
	struct lk_live_opts o = w->base;
	struct lk_live_view *v = NULL;
	int r;

	o.kind = k;
	o.known = (w->known || (arg_from && !arg_from_mark)) && k == LK_LIVE_OLD;
	o.known_ns = w->known_ns;
	if (arg_from && !arg_from_mark && (!w->known || (int64_t)arg_from_ns > o.known_ns))
		o.known_ns = (int64_t)arg_from_ns;
	o.known_mark = k == LK_LIVE_OLD ? arg_from_mark : NULL;
	lk_live_sync_now(w->src, SYNC_WAIT_NS);
	r = lk_live_view_make(w->src, &o, &v, &err);
	if (r == -EAGAIN) {
		if (strcmp(label, "every") != 0)
			lk_msg("watch: %s: nothing of %s is written for good yet", label,
			       w->src->path);
		return r;
	}
	if (r < 0) {
		lk_error_of(w->src->path, r, err);
		w->failed = true;
		return r;
	}
	if (arg_format == LK_FORMAT_JSON)
		lk_live_json(stdout, v, label);
	else
		lk_live_text(stdout, v, label);
	fflush(stdout);
	if (keep)
		*keep = v;
	else
		lk_live_view_free(v);
	return 0;
}

/* SIGUSR1: the old sites, then their blocks are known: those allocated at or before the report's
 * end less --age (exactly the blocks it counted), left out of later old reports. */
static void report_known(struct watch *w)
{
	struct lk_live_view *v = NULL;

	if (report(w, LK_LIVE_OLD, "SIGUSR1", &v) < 0)
		return;
	int64_t cut = (int64_t)v->end_ns - (int64_t)arg_age;
	if (!w->known || cut > w->known_ns)
		w->known_ns = cut;
	w->known = true;
	lk_live_view_free(v);
}

static void check_high_water(struct watch *w)
{
	double now, peak;
	uint64_t t;

	lk_live_heap(w->src, &now, &peak, &t);
	if (peak < (double)arg_high_water_min || peak <= w->high_water * HIGH_WATER_STEP ||
	    peak <= 0)
		return;
	if (report(w, LK_LIVE_HIGH_WATER, "high-water", NULL) == 0)
		w->high_water = peak;
}

/* The signals watch acts on, blocked and read from a signalfd. */
static int signals_open(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGUSR1);
	sigaddset(set, SIGUSR2);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	if (sigprocmask(SIG_BLOCK, set, NULL) < 0)
		return -errno;
	int fd = signalfd(-1, set, SFD_CLOEXEC | SFD_NONBLOCK);
	return fd < 0 ? -errno : fd;
}

/* Waits up to timeout_ns for a signal: its number, or 0. */
static int next_signal(int fd, uint64_t timeout_ns)
{
	struct signalfd_siginfo si;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int ms = (int)((timeout_ns + 999999) / 1000000);

	if (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		return (int)si.ssi_signo;
	if (poll(&p, 1, ms) > 0 && read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		return (int)si.ssi_signo;
	return 0;
}

/* Follows until the process ends or watch is stopped; the exit status. */
static int watch_loop(struct watch *w, int sfd)
{
	uint64_t next_every = lk_monotonic_ns() + arg_every;

	for (;;) {
		int r = lk_live_poll(w->src), sig;
		if (r < 0)
			return lk_error(r, "watch: %s", w->src->path), LK_EXIT_FILE;
		if (r == 0) { /* gone: the file is read whole */
			struct lk_live_view *v = NULL;
			if (report(w, LK_LIVE_ALL, "exit", &v) < 0)
				return LK_EXIT_FILE;
			r = v->trailer ? LK_EXIT_OK : WATCH_EXIT_CRASHED;
			lk_live_view_free(v);
			return r;
		}
		if (arg_high_water)
			check_high_water(w);
		uint64_t now = lk_monotonic_ns();
		if (now >= next_every) {
			report(w, LK_LIVE_OLD, "every", NULL);
			while (next_every <= now)
				next_every += arg_every;
		}
		uint64_t wait = next_every - now < arg_poll ? next_every - now : arg_poll;
		while ((sig = next_signal(sfd, wait)) != 0) {
			wait = 0; /* every signal waiting, then the next look */
			switch (sig) {
			case SIGHUP:
				report(w, LK_LIVE_ALL, "SIGHUP", NULL);
				break;
			case SIGUSR1:
				report_known(w);
				break;
			case SIGUSR2:
				report(w, LK_LIVE_FREES, "SIGUSR2", NULL);
				break;
			default: /* SIGINT, SIGTERM: the last report, of what is written so far */
				lk_live_poll(w->src);
				report(w, LK_LIVE_ALL, sig == SIGINT ? "SIGINT" : "SIGTERM", NULL);
				return w->failed ? LK_EXIT_FILE : WATCH_EXIT_STOPPED;
			}
		}
	}
}

int lk_cmd_watch(int argc, char *argv[])
{
	_cleanup_(input_donep) struct lk_input *in = &arg_input;
	_cleanup_(lk_symbolizer_freep) struct lk_symbolizer *sym = NULL;
	_cleanup_(closep) int sfd = -1;
	struct watch w = { 0 };
	const char *arg, *why = NULL;
	sigset_t set;
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
	/* Before the profile is looked for: a signal sent once watch has started is never lost. */
	sfd = signals_open(&set);
	if (sfd < 0)
		return lk_error(sfd, "watch: cannot take its signals"), LK_EXIT_FILE;
	k = lk_live_open(arg, arg_wait, sym, &w.src);
	if (k == -ENOENT && strspn(arg, "0123456789") == strlen(arg))
		return lk_msg("watch: process %s maps no leek profile (is it run with libleek, and "
			      "has it allocated yet? --wait)", arg), LK_EXIT_FILE;
	if (k == -ESRCH)
		return lk_msg("watch: no process %s", arg), LK_EXIT_FILE;
	if (k == -EMEDIUMTYPE)
		return lk_msg("watch: %s: not a raw leek profile being written (a compressed one is "
			      "read with `leek report`)", arg), LK_EXIT_FILE;
	if (k < 0)
		return lk_error(k, "watch: cannot open '%s'", arg), LK_EXIT_FILE;
	w.base = (struct lk_live_opts){
		.age_ns = arg_age,
		.frees = (unsigned)arg_frees,
		.top = in->top_set ? in->top : arg_format == LK_FORMAT_JSON ? 0 : LK_INPUT_TOP_DEFAULT,
		.stacks = in->stacks,
		.ascii = arg_ascii || strcmp(nl_langinfo(CODESET), "UTF-8") != 0,
		.filter = &in->filter,
		.segment_only = in->segment_only,
	};
	if (arg_max_lag && (k = lk_live_sync(w.src, arg_max_lag, &why)) < 0)
		lk_msg("watch: %s: cannot ask its process how far it is written (%s): reports trail "
		       "the file by up to a step of its growth (--max-lag 0 does not ask)",
		       w.src->path, why ? why : strerror(-k));
	if (arg_format == LK_FORMAT_TEXT)
		fprintf(stdout, "leek watch: following %s (pid %d)\n\n", w.src->path,
			(int)w.src->pid);
	fflush(stdout);
	k = watch_loop(&w, sfd);
	lk_live_close(w.src);
	return lk_cmd_end_output("watch", "output", k);
}
