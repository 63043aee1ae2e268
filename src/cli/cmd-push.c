/* cmd-push.c: `leek push --pyroscope URL [OPTIONS] FILE|PID|--session ID`: an agent beside the
 * profiled process that sends its heap profile to Grafana Pyroscope's ingest API (POST /ingest)
 * at every --every, and a last interval when the process ends or push is stopped (docs/push.md).
 *
 * It follows each profile as `leek watch` does (src/cli/live/source.c: the file's safe limit, a
 * SYNC before each interval, rotation), with one follower for the profile's whole run that reads
 * each record once: an interval is its snapshot (lk_profile_follow_snapshot), so it costs the
 * records written since the last, the blocks live and the stacks sent, never the file read
 * again (docs/push.md, "What is sent"). With --session it follows every profile of a `leek run`
 * session, found again at every look (run-follow.c's lk_follow_find_profiles), so that children
 * that start later are pushed too. Each interval of each profile is one request (push/delta.c
 * makes its pprof, push/sender.c sends it from its own thread): name=APP{labels}, from and until
 * in Unix seconds, contiguous per profile: each from is the last until, the first the profile's
 * start.
 *
 * Signals arrive through a signalfd, read in the main loop, as in cmd-watch.c. SIGINT and SIGTERM
 * end push after a last interval of each profile still followed, and a wait of up to
 * --flush-timeout for what is queued.
 *
 * Never: write to a profile but through the SYNC of source.c, signal the profiled process, wait
 * on the network in the main loop, or put a credential on a command line or in a message.
 */
#include <ctype.h>
#include <curl/curl.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "live.h"
#include "push.h"
#include "util.h"

/* Exit statuses beyond util.h's (`leek help push`). */
#define PUSH_EXIT_LOST 3 /* an interval was dropped or rejected: the backend lacks part of it */

#define DEFAULT_EVERY_NS (15 * 1000000000ull) /* Pyroscope's clients' upload rate (15 s) */
#define MIN_EVERY_NS 1000000000ull /* from and until are whole seconds: 1 s at least */
#define MIN_WAIT_NS 1000000ull /* --timeout, --backoff: curl counts milliseconds (and takes 0 as
				* no timeout), and a backoff of 0 would retry at once */
#define DEFAULT_TIMEOUT_NS (10 * 1000000000ull) /* one request, whole: well under --every, so a
						 * backend that hangs costs less than an interval */
#define DEFAULT_CONNECT_NS (3 * 1000000000ull) /* a connect: a LAN's or a region's backend
						 * answers in well under a second */
#define DEFAULT_BACKOFF_NS 1000000000ull /* the first retry after 1 s, doubled at each */
#define DEFAULT_BACKOFF_MAX_NS (60 * 1000000000ull) /* up to a minute: a restarting backend
						     * is found within a minute of its return */
#define DEFAULT_QUEUE 240 /* intervals waiting, all profiles together: an hour of one profile at
			   * 15 s (a backend's restart or upgrade), a few MiB of bodies (docs/push.md) */
#define DEFAULT_FLUSH_NS (10 * 1000000000ull) /* at the end, for what is queued */
#define POLL_NS 1000000000ull /* how often the files and the session are looked at */
#define WAIT_NS (10 * 1000000000ull) /* for a pid's profile, as `leek watch --wait` */
#define MAX_LAG_NS POLL_NS /* a SYNC at every look (`leek watch --max-lag`): an interval holds
			   * what was written up to a look or two before its end, and no interval
			   * waits for a reply (a process that does not allocate never gives one) */
#define MAX_LABELS 32

static const char *arg_url, *arg_name, *arg_tenant, *arg_auth_file, *arg_auth_env, *arg_cacert;
static const char *arg_output = "leek.%e.%p.lk"; /* `leek run`'s default */
static const char *arg_labels[MAX_LABELS];
static size_t arg_nlabels;
static uint64_t arg_every = DEFAULT_EVERY_NS, arg_timeout = DEFAULT_TIMEOUT_NS;
static uint64_t arg_backoff = DEFAULT_BACKOFF_NS, arg_backoff_max = DEFAULT_BACKOFF_MAX_NS;
static uint64_t arg_queue = DEFAULT_QUEUE, arg_flush = DEFAULT_FLUSH_NS, arg_session;
static bool arg_quiet;

#define HELP_SHOWN (-1)

/* A label's key as Pyroscope takes it (a Prometheus label name), and a value with none of the
 * characters that delimit the name's {k=v,...}. */
static bool label_key_ok(const char *k, size_t n)
{
	if (n == 0 || !(isalpha((unsigned char)k[0]) || k[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)k[i]) || k[i] == '_' || k[i] == '.'))
			return false;
	return true;
}

static bool label_value_ok(const char *v)
{
	return *v && !strpbrk(v, "{},=\"\\\n") && strlen(v) <= 256;
}

static int parse_args(int argc, char *argv[])
{
	enum { ARG_PYROSCOPE = 0x100, ARG_NAME, ARG_LABEL, ARG_EVERY, ARG_TENANT, ARG_AUTH_FILE,
	       ARG_AUTH_ENV, ARG_CACERT, ARG_TIMEOUT, ARG_BACKOFF, ARG_BACKOFF_MAX, ARG_QUEUE,
	       ARG_FLUSH, ARG_SESSION, ARG_OUTPUT, ARG_QUIET };
	static const struct option options[] = {
		{ "pyroscope", required_argument, NULL, ARG_PYROSCOPE },
		{ "name", required_argument, NULL, ARG_NAME },
		{ "label", required_argument, NULL, ARG_LABEL },
		{ "every", required_argument, NULL, ARG_EVERY },
		{ "tenant", required_argument, NULL, ARG_TENANT },
		{ "auth-file", required_argument, NULL, ARG_AUTH_FILE },
		{ "auth-env", required_argument, NULL, ARG_AUTH_ENV },
		{ "cacert", required_argument, NULL, ARG_CACERT },
		{ "timeout", required_argument, NULL, ARG_TIMEOUT },
		{ "backoff", required_argument, NULL, ARG_BACKOFF },
		{ "backoff-max", required_argument, NULL, ARG_BACKOFF_MAX },
		{ "queue", required_argument, NULL, ARG_QUEUE },
		{ "flush-timeout", required_argument, NULL, ARG_FLUSH },
		{ "session", required_argument, NULL, ARG_SESSION },
		{ "output", required_argument, NULL, ARG_OUTPUT },
		{ "quiet", no_argument, NULL, ARG_QUIET },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	int c, k;

	optind = 0;
	while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
		switch (c) {
		case ARG_PYROSCOPE:
			if (strncmp(optarg, "http://", 7) != 0 && strncmp(optarg, "https://", 8) != 0) {
				lk_msg("push: --pyroscope '%s': not an http:// or https:// URL", optarg);
				return LK_EXIT_USAGE;
			}
			arg_url = optarg;
			break;
		case ARG_NAME:
			if (!label_value_ok(optarg)) {
				lk_msg("push: --name '%s': empty, or holds one of {},=\"\\", optarg);
				return LK_EXIT_USAGE;
			}
			arg_name = optarg;
			break;
		case ARG_LABEL: {
			const char *eq = strchr(optarg, '=');
			if (!eq || !label_key_ok(optarg, (size_t)(eq - optarg)) || !label_value_ok(eq + 1)) {
				lk_msg("push: --label '%s': not KEY=VALUE (KEY letters, digits, _ and ., "
				       "not first a digit; VALUE without {},=\"\\)", optarg);
				return LK_EXIT_USAGE;
			}
			if (arg_nlabels == MAX_LABELS) {
				lk_msg("push: more than %d --label", MAX_LABELS);
				return LK_EXIT_USAGE;
			}
			arg_labels[arg_nlabels++] = optarg;
			break;
		}
		case ARG_EVERY:
			if ((k = lk_duration_arg("push", "--every", optarg, MIN_EVERY_NS, &arg_every)))
				return k;
			break;
		case ARG_TENANT:
			if (!label_value_ok(optarg) || strpbrk(optarg, "\r ")) {
				lk_msg("push: --tenant '%s': not a tenant id", optarg);
				return LK_EXIT_USAGE;
			}
			arg_tenant = optarg;
			break;
		case ARG_AUTH_FILE:
			arg_auth_file = optarg;
			break;
		case ARG_AUTH_ENV:
			arg_auth_env = optarg;
			break;
		case ARG_CACERT:
			arg_cacert = optarg;
			break;
		case ARG_TIMEOUT:
			if ((k = lk_duration_arg("push", "--timeout", optarg, MIN_WAIT_NS, &arg_timeout)))
				return k;
			break;
		case ARG_BACKOFF:
			if ((k = lk_duration_arg("push", "--backoff", optarg, MIN_WAIT_NS, &arg_backoff)))
				return k;
			break;
		case ARG_BACKOFF_MAX:
			if ((k = lk_duration_arg("push", "--backoff-max", optarg, MIN_WAIT_NS,
						 &arg_backoff_max)))
				return k;
			break;
		case ARG_FLUSH:
			if ((k = lk_duration_arg("push", "--flush-timeout", optarg, 0, &arg_flush)))
				return k;
			break;
		case ARG_QUEUE:
			if (lk_parse_u64(optarg, &arg_queue) < 0 || arg_queue == 0 || arg_queue > 100000) {
				lk_msg("push: --queue '%s': not a count from 1 to 100000", optarg);
				return LK_EXIT_USAGE;
			}
			break;
		case ARG_SESSION:
			if (lk_parse_u64(optarg, &arg_session) < 0 || arg_session == 0) {
				lk_msg("push: --session '%s': not a session number (LEEK_SESSION)", optarg);
				return LK_EXIT_USAGE;
			}
			break;
		case ARG_OUTPUT:
			arg_output = optarg;
			break;
		case ARG_QUIET:
			arg_quiet = true;
			break;
		case 'h':
			return lk_cmd_usage(stdout, "push", HELP_SHOWN);
		default:
			return LK_EXIT_USAGE;
		}
	}
	if (!arg_url) {
		lk_msg("push: --pyroscope URL is needed");
		return LK_EXIT_USAGE;
	}
	if (arg_auth_file && arg_auth_env) {
		lk_msg("push: --auth-file or --auth-env, not both");
		return LK_EXIT_USAGE;
	}
	if (arg_session && optind < argc) {
		lk_msg("push: --session or a profile or pid, not both");
		return LK_EXIT_USAGE;
	}
	if (!arg_session && lk_cmd_need_operands(argc, "push", "profile, pid or --session"))
		return LK_EXIT_USAGE;
	if (argc - optind > 1) {
		lk_msg("push: one profile or pid at a time (--session for a process tree)");
		return LK_EXIT_USAGE;
	}
	if (arg_backoff_max < arg_backoff)
		arg_backoff_max = arg_backoff;
	return 0;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *base64(const char *s, size_t n)
{
	char *out = malloc(4 * ((n + 2) / 3) + 1), *o = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)(unsigned char)s[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)(unsigned char)s[i + 1] << 8;
		if (i + 2 < n)
			v |= (unsigned char)s[i + 2];
		*o++ = b64[v >> 18 & 63];
		*o++ = b64[v >> 12 & 63];
		*o++ = i + 1 < n ? b64[v >> 6 & 63] : '=';
		*o++ = i + 2 < n ? b64[v & 63] : '=';
	}
	*o = 0;
	return out;
}

/* The Authorization header from --auth-file's first line or --auth-env's value: USER:PASSWORD
 * is basic authentication, anything else a bearer token. 0 and *ret (NULL without either); < 0
 * after a message that names the file or variable, never its content. */
static int auth_header(char **ret)
{
	_cleanup_(freep) char *line = NULL;
	const char *src = arg_auth_file ? arg_auth_file : arg_auth_env;
	size_t cap = 0;

	*ret = NULL;
	if (arg_auth_file) {
		FILE *f = fopen(arg_auth_file, "re");
		if (!f)
			return lk_error(-errno, "push: --auth-file '%s'", arg_auth_file);
		ssize_t n = getline(&line, &cap, f);
		fclose(f);
		if (n <= 0) {
			lk_msg("push: --auth-file '%s' is empty", arg_auth_file);
			return -EINVAL;
		}
	} else if (arg_auth_env) {
		const char *v = getenv(arg_auth_env);
		if (!v || !*v) {
			lk_msg("push: --auth-env %s: the variable is not set", arg_auth_env);
			return -EINVAL;
		}
		line = strdup(v);
		if (!line)
			return -ENOMEM;
	} else {
		return 0;
	}
	line[strcspn(line, "\r\n")] = 0;
	if (!*line || strpbrk(line, "\t ") == line) {
		lk_msg("push: %s '%s': no credential in it", arg_auth_file ? "--auth-file" : "--auth-env",
		       src);
		return -EINVAL;
	}
	if (strchr(line, ':')) {
		_cleanup_(freep) char *enc = base64(line, strlen(line));
		if (!enc || asprintf(ret, "Authorization: Basic %s", enc) < 0)
			return -ENOMEM;
	} else if (asprintf(ret, "Authorization: Bearer %s", line) < 0) {
		return -ENOMEM;
	}
	explicit_bzero(line, strlen(line));
	return 0;
}

/* One profile followed. */
struct target {
	struct lk_live_source *src;
	struct lk_push_deltas d;
	char *name;          /* APP{k=v,...}, URL-escaped for the query */
	uint64_t from_s;     /* the next interval's from */
	uint32_t segment;    /* the segment the deltas are of */
	pid_t pid;           /* its process, and the start its segments share: who it is, once */
	uint64_t origin_ns;  /* done (--session's look for new profiles) */
	uint64_t records;    /* the follower's records behind the intervals made (of the segment) */
	bool done;           /* its last interval is queued; src and d are freed */
};

struct push {
	struct target *t;
	size_t n;
	struct lk_symbolizer *sym;
	struct lk_push_sender *sender;
	char host[256];
	uint64_t failed_intervals; /* that could not be made (a profile unreadable) */
	uint64_t records;          /* records behind the intervals made, all profiles: each read
				    * once (the end's line says it; test-push checks it) */
	struct lk_push_stats shown; /* the counts the last status line showed */
};

static uint64_t realtime_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec;
}

/* A string for a label value: the characters that would end the value become _. */
static void sanitize(char *s)
{
	for (; *s; s++)
		if (strchr("{},=\"\\", *s) || (unsigned char)*s < 0x20)
			*s = '_';
}

/* The profile's executable (from its header) and its start. */
static int read_header(const struct lk_live_source *s, char **exe, uint64_t *start_ns)
{
	struct lk_file_header h;
	uint32_t n;

	if (pread(s->fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
		return -EIO;
	n = le32toh(h.exe_len);
	if (n > 4096)
		n = 4096;
	*exe = calloc(1, n + 1);
	if (!*exe)
		return -ENOMEM;
	if (n && pread(s->fd, *exe, n, sizeof(h)) != (ssize_t)n)
		**exe = 0;
	(*exe)[strnlen(*exe, n)] = 0;
	*start_ns = le64toh(h.start_realtime_ns);
	return 0;
}

/* APP{executable=...,pid=...,host=...,LABELS}, escaped for a URL's query. */
static int make_name(struct push *p, struct target *t)
{
	_cleanup_(freep) char *exe = NULL, *name = NULL;
	uint64_t start_ns;
	char *app, *base;
	size_t len = 0;
	FILE *f;
	int r = read_header(t->src, &exe, &start_ns);

	if (r < 0)
		return r;
	t->from_s = t->src->origin_ns ? t->src->origin_ns / 1000000000ull : start_ns / 1000000000ull;
	sanitize(exe);
	base = strrchr(exe, '/');
	base = base ? base + 1 : exe;
	f = open_memstream(&name, &len);
	if (!f)
		return -ENOMEM;
	fprintf(f, "%s{executable=%s,pid=%d,host=%s", arg_name ? arg_name : *base ? base : "leek",
		*exe ? exe : "unknown", (int)t->src->pid, p->host);
	for (size_t i = 0; i < arg_nlabels; i++)
		fprintf(f, ",%s", arg_labels[i]);
	fputc('}', f);
	if (fclose(f) != 0)
		return -ENOMEM;
	app = curl_easy_escape(NULL, name, (int)len);
	if (!app)
		return -ENOMEM;
	t->name = strdup(app);
	curl_free(app);
	return t->name ? 0 : -ENOMEM;
}

static int add_target(struct push *p, const char *arg, uint64_t wait_ns)
{
	struct target *t = reallocarray(p->t, p->n + 1, sizeof(*t));
	int r;

	if (!t)
		return -ENOMEM;
	p->t = t;
	t = &p->t[p->n];
	*t = (struct target){ 0 };
	r = lk_live_open(arg, wait_ns, p->sym, &t->src);
	if (r < 0)
		return r;
	lk_live_sync(t->src, MAX_LAG_NS, NULL); /* not writable: the limit follows the size alone */
	r = make_name(p, t);
	if (r < 0) {
		lk_live_close(t->src);
		free(t->name);
		return r;
	}
	lk_push_deltas_init(&t->d, (uint32_t)p->n);
	t->segment = t->src->segment;
	t->pid = t->src->pid;
	t->origin_ns = t->src->origin_ns;
	p->n++;
	return 0;
}

/* Its last interval is queued: what following it took is freed (a session may see thousands of
 * short processes), its name too. */
static void target_done(struct target *t)
{
	if (t->done)
		return;
	t->done = true;
	lk_live_close(t->src);
	t->src = NULL;
	lk_push_deltas_done(&t->d);
	free(t->name);
	t->name = NULL;
}

/* The session's profiles not followed yet: each first file (a rotated one's later segments are
 * reached through it, source.c). */
static void find_session(struct push *p)
{
	struct lk_follow_profile *list = NULL;
	size_t n = lk_follow_find_profiles(arg_output, arg_session, 0, true, &list);

	for (size_t i = 0; i < n; i++) {
		bool known = list[i].segment != 0;
		for (size_t j = 0; j < p->n && !known; j++)
			known = p->t[j].pid == (pid_t)list[i].pid &&
				p->t[j].origin_ns == list[i].origin_ns;
		if (!known) {
			int r = add_target(p, list[i].path, 0);
			if (r < 0)
				lk_error(r, "push: cannot follow '%s'", list[i].path);
		}
		free(list[i].path);
	}
	free(list);
}

/* One interval of t, queued: the follower's snapshot (source.c follows the profile at every look,
 * each record once), never the file read again. */
static void interval(struct push *p, struct target *t)
{
	struct lk_live_source *s = t->src;
	const struct lk_profile *prof;
	_cleanup_(freep) char *err = NULL;
	char *url = NULL;
	void *body = NULL;
	size_t len = 0;
	uint64_t records;
	int r;

	if (s->segment != t->segment) { /* a rotation: the new segment's totals start over */
		lk_push_deltas_done(&t->d);
		lk_push_deltas_init(&t->d, t->d.number);
		t->segment = s->segment;
		t->records = 0; /* its follower's, from its start */
	}
	if (s->follow_failed) { /* a damaged record (or the budget): every interval says so */
		lk_error_of(s->path, s->follow_err, s->follow_msg);
		p->failed_intervals++;
		return;
	}
	if (!s->f && s->ended) {
		lk_msg("push: %s: its header is not whole", s->path);
		p->failed_intervals++;
		return;
	}
	if (!s->f || (!s->ended && s->lim.limit <= s->header_size))
		return; /* nothing written for good yet: the next interval covers this one */
	prof = lk_profile_follow_snapshot(s->f);
	if (!prof) { /* source.c's follower: at_ns is the end, no window; so never */
		lk_msg("push: %s: no snapshot of the profile", s->path);
		p->failed_intervals++;
		return;
	}
	records = lk_profile_totals(prof)->records;
	uint64_t until = realtime_s();
	if (until <= t->from_s)
		until = t->from_s + 1;
	r = lk_push_interval(&t->d, p->sym, s->path, prof, t->from_s, until, &body, &len, &err);
	if (r < 0) {
		lk_error_of(s->path, r, err);
		p->failed_intervals++;
		return; /* the state is as before: the next interval covers this one's time too */
	}
	if (asprintf(&url, "%s%singest?name=%s&from=%" PRIu64 "&until=%" PRIu64
		     "&format=pprof&spyName=leek", arg_url,
		     arg_url[strlen(arg_url) - 1] == '/' ? "" : "/", t->name, t->from_s, until) < 0) {
		free(body);
		p->failed_intervals++;
		return;
	}
	t->from_s = until;
	p->records += records - t->records;
	t->records = records;
	lk_push_sender_add(p->sender, url, body, len);
}

/* A line on stderr when the sender's troubles changed since the last one. */
static void status_line(struct push *p, bool always)
{
	struct lk_push_stats st;

	lk_push_sender_stats(p->sender, &st);
	if (!always && (arg_quiet || (st.failures == p->shown.failures &&
				      st.dropped == p->shown.dropped)))
		return;
	p->shown = st;
	lk_msg("push: %" PRIu64 " sent (%" PRIu64 " bytes), %zu waiting, %" PRIu64 " dropped, %" PRIu64
	       " retries, %" PRIu64 " rejected; last HTTP status %ld", st.sent, st.bytes, st.queued,
	       st.dropped, st.retries, st.rejected, st.last_status);
}

static int signals_open(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return -errno;
	int fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	return fd < 0 ? -errno : fd;
}

/* Waits up to timeout_ns for SIGINT, SIGTERM or SIGHUP: true if one came. */
static bool stop_signal(int fd, uint64_t timeout_ns)
{
	struct signalfd_siginfo si;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	if (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		return true;
	return poll(&pfd, 1, (int)((timeout_ns + 999999) / 1000000)) > 0 &&
	       read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si);
}

static void push_loop(struct push *p, int sfd)
{
	uint64_t next = lk_monotonic_ns() + arg_every;

	for (;;) {
		bool stop, all_done = p->n > 0 && !arg_session; /* a session: until a signal */
		if (arg_session)
			find_session(p);
		for (size_t i = 0; i < p->n; i++) {
			struct target *t = &p->t[i];
			if (t->done)
				continue;
			int r = lk_live_poll(t->src);
			if (r < 0) {
				lk_error(r, "push: %s", t->src->path);
				target_done(t);
				p->failed_intervals++;
			} else if (r == 0) { /* gone: its last interval, of the whole file */
				interval(p, t);
				target_done(t);
			}
			all_done &= t->done;
		}
		if (all_done)
			return;
		uint64_t now = lk_monotonic_ns();
		if (now >= next) {
			for (size_t i = 0; i < p->n; i++)
				if (!p->t[i].done)
					interval(p, &p->t[i]);
			status_line(p, false);
			while (next <= now)
				next += arg_every;
		}
		stop = stop_signal(sfd, next - now < POLL_NS ? next - now : POLL_NS);
		if (stop) { /* a last interval of each, of what is written so far */
			if (arg_session)
				find_session(p); /* a child that came and went since the last look */
			for (size_t i = 0; i < p->n; i++) {
				if (!p->t[i].done && lk_live_poll(p->t[i].src) >= 0)
					interval(p, &p->t[i]);
				target_done(&p->t[i]);
			}
			return;
		}
	}
}

int lk_cmd_push(int argc, char *argv[])
{
	_cleanup_(lk_symbolizer_freep) struct lk_symbolizer *sym = NULL;
	_cleanup_(closep) int sfd = -1;
	_cleanup_(freep) char *auth = NULL;
	struct push p = { 0 };
	struct lk_push_stats st = { 0 };
	int k;

	k = parse_args(argc, argv);
	if (k == HELP_SHOWN)
		return LK_EXIT_OK;
	if (k)
		return k;
	if (auth_header(&auth) < 0)
		return LK_EXIT_USAGE;
	if (gethostname(p.host, sizeof(p.host) - 1) < 0)
		strcpy(p.host, "unknown");
	sanitize(p.host);
	unsetenv("DEBUGINFOD_URLS"); /* symbolize with local files: never wait on a server */
	k = lk_symbolizer_new(&sym);
	if (k < 0)
		return lk_error(k, "push: cannot start the symbolizer"), LK_EXIT_FILE;
	p.sym = sym;
	sfd = signals_open();
	if (sfd < 0)
		return lk_error(sfd, "push: cannot take its signals"), LK_EXIT_FILE;
	if (!arg_session) {
		const char *arg = argv[optind];
		k = add_target(&p, arg, WAIT_NS);
		if (k == -ENOENT && strspn(arg, "0123456789") == strlen(arg))
			lk_msg("push: process %s maps no leek profile (is it run with libleek, and "
			       "has it allocated yet?)", arg);
		else if (k == -ESRCH)
			lk_msg("push: no process %s", arg);
		else if (k == -EMEDIUMTYPE)
			lk_msg("push: %s: not a raw leek profile (a compressed one is read with "
			       "`leek export --format pprof`)", arg);
		else if (k < 0)
			lk_error(k, "push: cannot open '%s'", arg);
		if (k < 0) {
			k = LK_EXIT_FILE;
			goto out;
		}
	}
	k = lk_push_sender_start(&(struct lk_push_sender_opts){
		.tenant = arg_tenant,
		.auth_header = auth,
		.cacert = arg_cacert,
		.timeout_ns = arg_timeout,
		.connect_timeout_ns = DEFAULT_CONNECT_NS < arg_timeout ? DEFAULT_CONNECT_NS
									: arg_timeout,
		.backoff_ns = arg_backoff,
		.backoff_max_ns = arg_backoff_max,
		.queue_max = (size_t)arg_queue,
	}, &p.sender);
	if (k < 0) {
		lk_error(k, "push: cannot start sending");
		k = LK_EXIT_FILE;
		goto out;
	}
	push_loop(&p, sfd);
	lk_push_sender_finish(p.sender, arg_flush, &st);
	lk_msg("push: %" PRIu64 " intervals sent (%" PRIu64 " bytes), %" PRIu64 " dropped (%" PRIu64
	       " left unsent at the end), %" PRIu64 " rejected, %" PRIu64 " retries; %" PRIu64
	       " records read", st.sent, st.bytes, st.dropped, st.unsent, st.rejected, st.retries,
	       p.records);
	k = st.dropped || st.rejected || p.failed_intervals ? PUSH_EXIT_LOST : LK_EXIT_OK;
out:
	for (size_t i = 0; i < p.n; i++)
		target_done(&p.t[i]);
	free(p.t);
	if (auth)
		explicit_bzero(auth, strlen(auth));
	return k;
}
