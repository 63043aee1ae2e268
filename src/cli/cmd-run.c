/* cmd-run.c: `leek run [OPTIONS] [--] COMMAND [ARGS...]`: profile a program, then summarize.
 *
 * leek talks to libleek.so only through the LEEK_* environment (src/common/options.h): it sets
 * LD_PRELOAD, LEEK_OUTPUT (made absolute: the program may chdir), LEEK_SESSION (a random number
 * that the profiles' headers carry, so leek can tell its own files from older ones afterwards)
 * and, when asked, LEEK_PERIOD, LEEK_SEED, LEEK_INHERIT, LEEK_FREE_STACKS and the rotation's
 * LEEK_MAX_SIZE, LEEK_MAX_AGE and LEEK_KEEP. While the program
 * runs leek forwards signals and waits, and a thread of its own reads and compresses the
 * program's profile as it grows (run-follow.c) unless --no-follow; leek must never exit before its program or hide
 * its status. Then it summarizes each profile the run wrote (report.c, as `leek report` would rank
 * its sites) and compresses it into FILE.zst (compress.c) unless --no-compress, each from where the
 * follower got to. Nothing after the program's exit changes leek's status: a profile that cannot
 * be compressed stays raw, with a warning. With --push URL, `leek push --session` (cmd-push.c)
 * runs beside the program, without libleek, and is stopped with SIGTERM and waited for once the
 * program has ended, before the summary compresses the profiles it reads.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>

#include "commands.h"
#include "compress.h"
#include "report.h"
#include "run.h"
#include "util.h"

static const char *arg_output = NULL;
static const char *arg_period = NULL, *arg_seed = NULL;
static bool arg_no_children = false;
static bool arg_free_stacks = false; /* LEEK_FREE_STACKS=1: off unless asked (options.h) */
/* LEEK_MAX_SIZE, LEEK_MAX_AGE, LEEK_KEEP as given: libleek checks them (options.h) */
static const char *arg_max_size = NULL, *arg_max_age = NULL, *arg_keep = NULL;
/* LEEK_GUARD: --guard's slots; NULL: not asked. 64 with no count: GWP-ASan keeps 16 in a
 * browser's every process; 64 costs 129 pages of address space and at most 64 resident. */
static const char *arg_guard = NULL;
#define GUARD_DEFAULT "64"
static bool arg_compress = true;
static bool arg_follow = true;
/* --push URL: `leek push` beside the program (cmd-push.c), with the --push-* options given as
 * push's own (--push-every 30s: --every 30s). */
static const char *arg_push = NULL;
#define PUSH_MAX_ARGS 80
static const char *push_args[PUSH_MAX_ARGS];
static size_t push_nargs;
static const char *saved_preload; /* LD_PRELOAD before leek set it: the agent's own */
static bool had_preload;

/* One forwarded signal set, shared by the handler and the code that installs it. */
static const int forwarded[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
#define N_FORWARDED (sizeof(forwarded) / sizeof(forwarded[0]))
static struct sigaction saved_actions[N_FORWARDED];
static volatile sig_atomic_t child_pid;

static void forward_signal(int sig, siginfo_t *si, void *uc)
{
	int saved_errno = errno;

	/* The terminal (SI_KERNEL) sends Ctrl-C, Ctrl-\ and hangups to the whole foreground
	 * process group, the program included: forwarding those would deliver them twice. */
	if (child_pid > 0 && si->si_code != SI_KERNEL)
		kill((pid_t)child_pid, sig);
	errno = saved_errno;
}

static void install_forwarding(void)
{
	struct sigaction sa = {
		.sa_sigaction = forward_signal,
		.sa_flags = SA_SIGINFO | SA_RESTART,
	};

	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < N_FORWARDED; i++)
		sigaddset(&sa.sa_mask, forwarded[i]);
	for (size_t i = 0; i < N_FORWARDED; i++) {
		sigaction(forwarded[i], NULL, &saved_actions[i]);
		if (saved_actions[i].sa_handler != SIG_IGN) /* nohup's choices stand */
			sigaction(forwarded[i], &sa, NULL);
	}
}

static void restore_signals(void)
{
	for (size_t i = 0; i < N_FORWARDED; i++)
		sigaction(forwarded[i], &saved_actions[i], NULL);
}

/* Checks the options that name numbers; 0, or LK_EXIT_USAGE after printing why. */
static int parse_numbers(char period[static 32])
{
	uint64_t v;

	if (arg_period) {
		if (lk_parse_size(arg_period, &v) < 0 || v == 0) {
			lk_msg("--period: '%s' is not a size in bytes (e.g. 1, 4096, 512K, 1M)",
			       arg_period);
			return LK_EXIT_USAGE;
		}
		snprintf(period, 32, "%" PRIu64, v);
	}
	if (arg_seed && lk_parse_u64(arg_seed, &v) < 0) {
		lk_msg("--seed: '%s' is not a number", arg_seed);
		return LK_EXIT_USAGE;
	}
	return 0;
}

/* The absolute output pattern: -o, else $LEEK_OUTPUT, else the default, in the current
 * directory unless absolute. */
static int output_pattern(char *pattern, size_t size)
{
	const char *out = arg_output;
	char cwd[4096];

	if (!out)
		out = getenv("LEEK_OUTPUT");
	if (!out || !*out)
		out = "leek.%e.%p.lk";
	if (out[0] == '/')
		cwd[0] = 0;
	else if (!getcwd(cwd, sizeof(cwd)))
		return lk_error(-errno, "cannot get the current directory");
	if (snprintf(pattern, size, "%s%s%s", cwd, *cwd ? "/" : "", out) >= (int)size) {
		lk_msg("output path too long: %s", out);
		return -ENAMETOOLONG;
	}
	return 0;
}

/* Sets the environment the program inherits; 0 or a negative errno after printing why. */
static int setup_env(const char *pattern, const char *period, uint64_t *ret_session)
{
	_cleanup_(freep) char *lib = NULL, *preload = NULL;
	const char *old = getenv("LD_PRELOAD");
	uint64_t session = 0;
	char num[32];
	int r;

	r = lk_run_find_library(&lib);
	if (r < 0)
		return r;
	if (strpbrk(lib, ": ")) {
		lk_msg("%s: a path with ':' or ' ' cannot go in LD_PRELOAD", lib);
		return -EINVAL;
	}
	if (!old)
		old = "";
	if (asprintf(&preload, "%s%s%s", lib, *old ? ":" : "", old) < 0)
		return lk_error(-ENOMEM, "cannot set LD_PRELOAD");

	if (getrandom(&session, sizeof(session), 0) != sizeof(session))
		session = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
	session |= 1; /* 0 means "no session" */
	snprintf(num, sizeof(num), "%" PRIu64, session);

	if (setenv("LD_PRELOAD", preload, 1) < 0 || setenv("LEEK_OUTPUT", pattern, 1) < 0 ||
	    setenv("LEEK_SESSION", num, 1) < 0 ||
	    (arg_no_children && setenv("LEEK_INHERIT", "0", 1) < 0) ||
	    (arg_free_stacks && setenv("LEEK_FREE_STACKS", "1", 1) < 0) ||
	    (arg_max_size && setenv("LEEK_MAX_SIZE", arg_max_size, 1) < 0) ||
	    (arg_max_age && setenv("LEEK_MAX_AGE", arg_max_age, 1) < 0) ||
	    (arg_keep && setenv("LEEK_KEEP", arg_keep, 1) < 0) ||
	    (arg_guard && setenv("LEEK_GUARD", arg_guard, 1) < 0) ||
	    (*period && setenv("LEEK_PERIOD", period, 1) < 0) ||
	    (arg_seed && setenv("LEEK_SEED", arg_seed, 1) < 0))
		return lk_error(-errno, "cannot set the environment");
	*ret_session = session;
	return 0;
}

/* Starts `leek push --session SESSION --output PATTERN --pyroscope URL ...` (this binary) beside
 * the program, without libleek preloaded: its pid, or -1 after a message. */
static pid_t start_push(const char *pattern, uint64_t session)
{
	const char *argv[PUSH_MAX_ARGS + 16];
	char num[32];
	size_t n = 0;
	pid_t pid;

	snprintf(num, sizeof(num), "%" PRIu64, session);
	argv[n++] = "leek";
	argv[n++] = "push";
	argv[n++] = "--pyroscope";
	argv[n++] = arg_push;
	argv[n++] = "--session";
	argv[n++] = num;
	argv[n++] = "--output";
	argv[n++] = pattern;
	for (size_t i = 0; i < push_nargs; i++)
		argv[n++] = push_args[i];
	argv[n] = NULL;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		if (had_preload)
			setenv("LD_PRELOAD", saved_preload, 1);
		else
			unsetenv("LD_PRELOAD");
		execv("/proc/self/exe", (char *const *)argv);
		lk_error(-errno, "run: cannot start leek push");
		_exit(LK_EXIT_FILE);
	}
	if (pid < 0)
		lk_error(-errno, "run: cannot start leek push");
	return pid;
}

/* Runs argv and returns its exit status (128+N for signal N), or 126/127 and *exec_failed if it
 * could not be run. */
static int spawn_and_wait(char *argv[], const char *pattern, uint64_t session,
			  struct lk_run_follower **follower, bool *exec_failed)
{
	sigset_t block, old;
	siginfo_t info;
	int status, err = 0, pipefd[2];
	ssize_t k;
	pid_t pid;

	/* A pipe that exec closes: the child writes errno into it only if exec fails. */
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		lk_error(-errno, "pipe");
		return LK_EXIT_FILE;
	}
	sigemptyset(&block);
	for (size_t i = 0; i < N_FORWARDED; i++)
		sigaddset(&block, forwarded[i]);
	sigprocmask(SIG_BLOCK, &block, &old); /* no signal may slip between fork and child_pid */
	install_forwarding();
	fflush(NULL);

	pid = fork();
	if (pid == 0) {
		restore_signals();
		sigprocmask(SIG_SETMASK, &old, NULL);
		close(pipefd[0]);
		execvp(argv[0], argv);
		err = errno;
		(void)!write(pipefd[1], &err, sizeof(err));
		_exit(err == ENOENT ? 127 : 126);
	}
	if (pid < 0)
		err = -errno;
	else
		child_pid = pid;
	if (pid > 0) {
		/* Only leek from here, the program has its own copy of both. A closed pipe on
		 * stderr (`leek run ... 2>&1 | head`) must not kill leek before it returns the
		 * program's status and compresses its profile: writes fail with EPIPE instead. */
		signal(SIGPIPE, SIG_IGN);
		/* libdwfl would ask the debuginfod servers in DEBUGINFOD_URLS (Debian sets it for
		 * login shells) for every module without local debug info, on the follower and in
		 * the summary: seconds per module against a server that does not answer. `leek
		 * report --debuginfod` asks when wanted. */
		unsetenv("DEBUGINFOD_URLS");
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(pipefd[1]);
	if (pid < 0) {
		restore_signals();
		close(pipefd[0]);
		lk_error(err, "fork");
		*exec_failed = true;
		return LK_EXIT_FILE;
	}
	while ((k = read(pipefd[0], &err, sizeof(err))) < 0 && errno == EINTR)
		;
	close(pipefd[0]);
	/* The program runs: its profile is read as it grows. */
	if (k != (ssize_t)sizeof(err) && arg_follow)
		*follower = lk_run_follow_start(pattern, session, pid, arg_compress);
	pid_t agent = k != (ssize_t)sizeof(err) && arg_push ? start_push(pattern, session) : -1;

	/* Wait without reaping, stop forwarding, then reap: the handler can never signal a pid
	 * that the kernel has recycled. */
	while (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT) < 0 && errno == EINTR)
		;
	restore_signals();
	child_pid = 0;
	lk_run_follow_stop(*follower);
	if (agent > 0) { /* its last intervals, of the whole files, before they are compressed */
		int st;
		kill(agent, SIGTERM);
		while (waitpid(agent, &st, 0) < 0 && errno == EINTR)
			;
	}
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			lk_error(-errno, "waitpid");
			return LK_EXIT_FILE;
		}
	}

	if (k == (ssize_t)sizeof(err)) {
		*exec_failed = true;
		lk_error(-err, "cannot run '%s'", argv[0]);
		return err == ENOENT ? 127 : 126;
	}
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		lk_msg("program killed by signal SIG%s%s", sigabbrev_np(sig) ?: "?",
		       WCOREDUMP(status) ? " (core dumped)" : "");
		return 128 + sig;
	}
	return WEXITSTATUS(status);
}

/* Compressing one profile of the run, on a thread of its own while the summary reads the raw file
 * and symbolizes (in exact mode each takes seconds without the follower). The raw file goes once
 * both the compression and the summary's reading are done, on the job's thread: the kernel drops
 * the file's pages from its cache when the last name and descriptor go, milliseconds for an
 * exact-mode profile of tens of megabytes, which the summary need not wait for. */
struct compress_job {
	const char *path;
	struct lk_compress_stream *comp; /* the follower's start on it, or NULL */
	int k, unlinked;                 /* unlinked: 0, or -errno if the raw file could not go */
	struct lk_compressed c;
	char *msg;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool read; /* the summary has read the raw file, and closed it */
};

static void compress_job_read(struct compress_job *j)
{
	pthread_mutex_lock(&j->mu);
	j->read = true;
	pthread_cond_signal(&j->cv);
	pthread_mutex_unlock(&j->mu);
}

static void *compress_job_run(void *arg)
{
	struct compress_job *j = arg;

	j->k = lk_compress_stream_finish(j->comp, j->path, LK_COMPRESS_LEVEL, LK_COMPRESS_KEEP_RAW,
					 &j->c, &j->msg);
	j->comp = NULL; /* finished or freed */
	pthread_mutex_lock(&j->mu);
	while (!j->read)
		pthread_cond_wait(&j->cv, &j->mu);
	pthread_mutex_unlock(&j->mu);
	if (j->k == 0 && unlink(j->path) < 0)
		j->unlinked = -errno;
	return NULL;
}

/* The malloc'ed path of the profile's .zst once the job is done and the raw file removed, or NULL
 * if it stays raw (one line says why). A failure that the next profiles would meet too (no space,
 * no permission) sets *stop, and they stay raw without more warnings. */
static char *compress_result(struct compress_job *j, size_t left, bool *stop)
{
	_cleanup_(freep) char *msg = j->msg;
	const char *path = j->path;
	int k = j->k;

	if (k == 0 && j->unlinked < 0) {
		k = j->unlinked;
		lk_msg("warning: %s: compressed into %s, but cannot remove the raw file: %s", path,
		       j->c.path, strerror(-k));
		free(j->c.path);
		return NULL;
	}
	if (k == 0)
		return j->c.path;
	/* A process that outlived the program (a daemon) is still writing it: not a failure. */
	if (k == -EBUSY) {
		lk_msg("%s: %s, so it stays uncompressed ('leek compress' it once that process "
		       "has ended)", path, msg);
		return NULL;
	}
	*stop = k != -ESTALE && k != -EMEDIUMTYPE && k != -EALREADY && k != -EINVAL &&
		k != -ENOENT && left > 0;
	if (*stop)
		lk_msg("warning: %s: cannot compress it (%s), so it stays uncompressed, as do the "
		       "%zu profile%s after it", path, msg ? msg : strerror(-k), left,
		       left == 1 ? "" : "s");
	else
		lk_msg("warning: %s: cannot compress it (%s), so it stays uncompressed", path,
		       msg ? msg : strerror(-k));
	return NULL;
}

/* The end-of-run summary of one profile: totals, the peak and when, the heap at exit and its
 * top sites (report.c, symbolized like `leek report`). The raw file is read while a thread
 * compresses it: the summary costs no inflating, and names the file that stays. */
static void summarize_one(struct lk_symbolizer *sym, struct lk_run_follower *follower,
			  uint32_t index, const char *path, size_t top, size_t left, bool show,
			  bool *stop)
{
	struct lk_profile_follow *f = lk_run_follow_take(follower, path);
	const struct lk_report_opts ro = { .view = LK_VIEW_LEAKS, .top = top, .shown_only = true };
	_cleanup_(lk_report_freep) struct lk_report *r = NULL;
	_cleanup_(lk_profile_freep) struct lk_profile *p = NULL;
	_cleanup_(freep) char *err = NULL, *packed = NULL;
	struct compress_job job = { .path = path, .comp = lk_run_follow_take_comp(follower, path),
				    .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
	bool compress = arg_compress && !*stop, threaded = false;
	const char *shown;
	pthread_t th;
	int k;

	if (compress)
		threaded = pthread_create(&th, NULL, compress_job_run, &job) == 0;
	/* What the follower has not read yet; if it did not follow this file, the whole file in the
	 * follower's one pass, since the summary has no timeline to cut (run.h) and a first pass
	 * would only count the records; if that fails, the two passes of `leek report`, whose
	 * message says what is wrong and where. */
	if (show && sym && !f)
		lk_profile_follow_open(path, UINT64_MAX, &lk_run_summary_opts, &f, NULL);
	k = show && sym && f ? lk_profile_follow_finish(f, &p, NULL) : -ENOMEM;
	lk_profile_follow_free(f);
	if (show && sym && k < 0)
		k = lk_profile_load(path, &lk_run_summary_opts, &p, &err);
	compress_job_read(&job);
	/* The report while the job ends (k < 0 without sym), under the raw file's name until the job
	 * says which. */
	if (k >= 0)
		k = lk_report_new(&ro, &r);
	if (k >= 0)
		k = lk_report_add_modules(sym, index, p);
	if (k >= 0)
		k = lk_report_add(r, sym, index, path, p, &err);
	if (k >= 0)
		k = lk_report_finish(r, &err);
	if (threaded)
		pthread_join(th, NULL);
	else if (compress)
		compress_job_run(&job);
	lk_compress_stream_free(job.comp); /* not compressed (a stop): its temporary file goes */
	pthread_cond_destroy(&job.cv);
	pthread_mutex_destroy(&job.mu);
	if (compress)
		packed = compress_result(&job, left, stop);
	shown = packed ? packed : path;
	if (!show)
		return; /* an older segment: compressed, summarized with its newest */
	if (!sym) {
		lk_msg("%s: written (out of memory for its summary)", shown);
		return;
	}
	if (k >= 0 && packed)
		k = lk_report_rename(r, r->nprocs - 1, packed);
	if (k < 0)
		lk_error_of(shown, k, err);
	else
		lk_text_run_summary(stderr, r);
}

/* Whether list[i] is the newest segment of its process's profile (a file that is not rotated
 * is its own newest); *older: how many older segments of it the list holds. */
static bool newest_segment(const struct lk_follow_profile *list, size_t n, size_t i, size_t *older)
{
	bool newest = true;

	if (older)
		*older = 0;
	for (size_t j = 0; j < n; j++) {
		if (j == i || list[j].pid != list[i].pid || list[j].origin_ns != list[i].origin_ns)
			continue;
		if (list[j].segment > list[i].segment)
			newest = false;
		else if (older && list[j].segment < list[i].segment)
			(*older)++;
	}
	return newest;
}

static void summarize(const char *pattern, uint64_t session, struct lk_run_follower *follower)
{
	_cleanup_(lk_symbolizer_freep) struct lk_symbolizer *sym = NULL;
	struct lk_follow_profile *list = NULL;
	size_t n = lk_follow_find_profiles(pattern, session, 0, false, &list);
	const char *const *warnings;
	size_t nwarnings;
	bool stop = false;

	if (n == 0) {
		lk_msg("no profile was written (see the message above, if libleek printed one)");
		free(list);
		return;
	}
	if (!(sym = lk_run_follow_take_sym(follower)) && lk_symbolizer_new(&sym) < 0)
		sym = NULL;
	/* A rotated profile's segments (LEEK_MAX_SIZE, LEEK_MAX_AGE) are one process's: each is
	 * compressed, and the newest, whose live view is whole, summarized. */
	size_t procs = 0, shown = 0;
	for (size_t i = 0; i < n; i++)
		procs += newest_segment(list, n, i, NULL);
	for (size_t i = 0; i < n; i++) {
		size_t older = 0;
		bool show = newest_segment(list, n, i, &older);
		if (show && older)
			lk_msg("%s: segment %" PRIu32 " of pid %" PRIu64 "'s rotated profile, %zu "
			       "older segment%s kept; the summary is this segment's: its live "
			       "view is whole, its totals its own", list[i].path, list[i].segment,
			       list[i].pid, older, older == 1 ? "" : "s");
		summarize_one(sym, follower, (uint32_t)i, list[i].path, procs == 1 ? 5 : 3,
			      procs - shown - show, show, &stop);
		shown += show;
		free(list[i].path);
	}
	n = procs;
	nwarnings = sym ? lk_symbolizer_warnings(sym, &warnings) : 0;
	for (size_t i = 0; i < nwarnings; i++)
		lk_msg("warning: %s", warnings[i]);
	if (n == 1)
		lk_msg("1 profile written; 'leek report FILE' shows more (views: leaks, peak, "
		       "growth, timeline, ...)");
	else
		lk_msg("%zu profiles written; 'leek report FILE...' shows each, with --merge all "
		       "as one", n);
	free(list);
}

int lk_cmd_run(int argc, char *argv[])
{
	enum { ARG_SEED = 0x100, ARG_NO_CHILDREN, ARG_NO_COMPRESS, ARG_NO_FOLLOW, ARG_MAX_MEMORY,
	       ARG_FREE_STACKS, ARG_MAX_SIZE, ARG_MAX_AGE, ARG_KEEP, ARG_GUARD, ARG_PUSH,
	       ARG_PUSH_OPT };
	static const struct option options[] = {
		{ "period", required_argument, NULL, 'p' },
		{ "output", required_argument, NULL, 'o' },
		{ "seed", required_argument, NULL, ARG_SEED },
		{ "no-children", no_argument, NULL, ARG_NO_CHILDREN },
		{ "free-stacks", no_argument, NULL, ARG_FREE_STACKS },
		{ "max-size", required_argument, NULL, ARG_MAX_SIZE },
		{ "max-age", required_argument, NULL, ARG_MAX_AGE },
		{ "keep", required_argument, NULL, ARG_KEEP },
		{ "guard", optional_argument, NULL, ARG_GUARD },
		{ "no-compress", no_argument, NULL, ARG_NO_COMPRESS },
		{ "no-follow", no_argument, NULL, ARG_NO_FOLLOW },
		{ "max-memory", required_argument, NULL, ARG_MAX_MEMORY },
		{ "push", required_argument, NULL, ARG_PUSH },
		{ "push-name", required_argument, NULL, ARG_PUSH_OPT },
		{ "push-label", required_argument, NULL, ARG_PUSH_OPT },
		{ "push-every", required_argument, NULL, ARG_PUSH_OPT },
		{ "push-tenant", required_argument, NULL, ARG_PUSH_OPT },
		{ "push-auth-file", required_argument, NULL, ARG_PUSH_OPT },
		{ "push-auth-env", required_argument, NULL, ARG_PUSH_OPT },
		{ "push-cacert", required_argument, NULL, ARG_PUSH_OPT },
		{ "push-timeout", required_argument, NULL, ARG_PUSH_OPT },
		{ "push-queue", required_argument, NULL, ARG_PUSH_OPT },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	struct lk_run_follower *follower = NULL;
	char pattern[4096], period[32] = "";
	bool exec_failed = false;
	uint64_t session = 0;
	int c, r, li;

	optind = 0;
	while ((c = getopt_long(argc, argv, "+p:o:h", options, &li)) >= 0) {
		switch (c) {
		case ARG_PUSH:
			arg_push = optarg;
			break;
		case ARG_PUSH_OPT: { /* --push-X V: push's --X V, checked by push itself */
			static char opts[PUSH_MAX_ARGS / 2][32];
			if (push_nargs + 2 > PUSH_MAX_ARGS) {
				lk_msg("run: too many --push-* options");
				return LK_EXIT_USAGE;
			}
			char *opt = opts[push_nargs / 2];
			snprintf(opt, sizeof(opts[0]), "--%s", options[li].name + strlen("push-"));
			push_args[push_nargs++] = opt;
			push_args[push_nargs++] = optarg;
			break;
		}
		case 'p':
			arg_period = optarg;
			break;
		case 'o':
			arg_output = optarg;
			break;
		case ARG_SEED:
			arg_seed = optarg;
			break;
		case ARG_NO_CHILDREN:
			arg_no_children = true;
			break;
		case ARG_FREE_STACKS:
			arg_free_stacks = true;
			break;
		case ARG_MAX_SIZE:
			arg_max_size = optarg;
			break;
		case ARG_MAX_AGE:
			arg_max_age = optarg;
			break;
		case ARG_KEEP:
			arg_keep = optarg;
			break;
		case ARG_GUARD: {
			char *end;
			errno = 0;
			unsigned long v = optarg ? strtoul(optarg, &end, 10) : 64;
			if (optarg && (errno || end == optarg || *end || optarg[0] == '-' || v < 1 ||
				       v > 16384)) {
				lk_msg("run: --guard=%s: not a count from 1 to 16384", optarg);
				return LK_EXIT_USAGE;
			}
			arg_guard = optarg ? optarg : GUARD_DEFAULT;
			break;
		}
		case ARG_NO_COMPRESS:
			arg_compress = false;
			break;
		case ARG_NO_FOLLOW:
			arg_follow = false;
			break;
		case ARG_MAX_MEMORY:
			if (lk_cmd_max_memory("run", optarg))
				return LK_EXIT_USAGE;
			break;
		case 'h':
			return lk_cmd_usage(stdout, "run", LK_EXIT_OK);
		default:
			return lk_cmd_usage(stderr, "run", LK_EXIT_USAGE);
		}
	}
	if (lk_cmd_need_operands(argc, "run", "command"))
		return LK_EXIT_USAGE;

	r = parse_numbers(period);
	if (r)
		return r;
	if (output_pattern(pattern, sizeof(pattern)) < 0)
		return LK_EXIT_USAGE;
	r = lk_run_check_target(argv[optind]);
	if (r)
		return r;
	if (push_nargs && !arg_push) {
		lk_msg("run: --push-* options need --push URL");
		return LK_EXIT_USAGE;
	}
	saved_preload = getenv("LD_PRELOAD");
	had_preload = saved_preload != NULL;
	if (had_preload && !(saved_preload = strdup(saved_preload)))
		return lk_error(-ENOMEM, "run"), LK_EXIT_FILE;
	if (setup_env(pattern, period, &session) < 0)
		return LK_EXIT_FILE;
	r = spawn_and_wait(argv + optind, pattern, session, &follower, &exec_failed);
	if (!exec_failed) /* else nothing ran, nothing to summarize */
		summarize(pattern, session, follower);
	lk_run_follow_free(follower);
	return r;
}
