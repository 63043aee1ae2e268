/* run-follow.c: `leek run` finds the profiles of its run, and reads the program's own profile
 * while the program writes it, so that the summary after the exit has only the last part left.
 *
 * The follower is a thread of `leek run` at SCHED_IDLE: it runs only on a CPU that nothing else
 * wants, so a busy program never waits for it. Every LK_FOLLOW_POLL_MS it looks at the size of the
 * program's profile. libleek grows the file only once every record that ends a record's length
 * (LK_READ_RECORD_MAX) before its old end is stored, and by LK_GROW_MAX at most (docs/format.md,
 * "Reading a profile being written"). So every byte below the size at the last look, less
 * LK_READ_RECORD_MAX, is written for good once the size has grown since, and every byte below
 * the size now, less LK_GROW_MAX and LK_READ_RECORD_MAX, always is: the higher of the two is the
 * follower's limit (lk_profile_follow_step). The last megabyte waits for the summary. A thread
 * segment's body is the exception: its thread writes it after the file has grown past it, so the
 * reader waits at its SEGMENT record until the body is complete, and the compressor is fed only
 * what the reader has read.
 *
 * It follows the newest profile of the program's pid: the one of the program that exec ran, not
 * that of a shell that exec'd it. Anything that goes wrong only ends the following: the summary
 * then reads the file from the start, as it would without it, and reports what it finds.
 *
 * Never: write to the profile, print, or hold up the program's exit.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "compress.h"
#include "follow.h"
#include "run.h"
#include "symbolize.h"
#include "util.h"

#define LK_FOLLOW_POLL_MS 10    /* how often the size is looked at: 1 MiB steps of a fast writer */
#define LK_FOLLOW_RESCAN 50     /* looks between two searches for a newer profile of the pid */
#define LK_FOLLOW_STEP (1 << 20) /* bytes read between two checks for the program's exit */
#define LK_FOLLOW_MODULES 1024   /* module ids opened ahead: a program's first ones; any later
				  * module is opened by the summary, as it would be anyway */

struct lk_run_follower {
	const char *pattern;
	uint64_t session, pid;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;                 /* under mu: the program has ended */

	/* The thread's until it is joined, then the summary's. */
	char *path;                /* the profile followed, or NULL */
	struct stat st;            /* its identity */
	int fd;                    /* for its size */
	struct lk_follow_limit lim; /* its size at the last look; what is safe to read */
	struct lk_profile_follow *f; /* NULL until its header is below the limit; after a failure */
	bool failed;               /* give up on this file */
	bool compress;             /* and compress it as well */
	struct lk_compress_stream *comp; /* NULL until the profile is found, or after a failure */
	struct lk_symbolizer *sym; /* the modules its stacks name, opened ahead; NULL */
	uint32_t sym_profile;      /* the number this file's modules have in sym */
	size_t modules_seen;       /* the modules registered in sym */
	size_t stacks_seen;        /* the stacks whose modules are opened */
	bool prepared[LK_FOLLOW_MODULES]; /* by module id: opened */
};

static void drop(struct lk_run_follower *w)
{
	w->f = lk_profile_follow_free(w->f);
	w->comp = lk_compress_stream_free(w->comp);
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
	free(w->path);
	w->path = NULL;
	w->lim = (struct lk_follow_limit){ 0 };
	w->failed = false;
	w->sym_profile--; /* a new file's modules: new keys in the symbolizer, which stays */
	w->modules_seen = w->stacks_seen = 0;
	memset(w->prepared, 0, sizeof(w->prepared));
}

/* Opens ahead the modules that the stacks read since the last call name (lk_symbolizer_prepare),
 * for the summary: symbolizing, a large library's debug sections inflated first, is most of what
 * it does after the program's exit. On this idle thread it costs the program nothing. */
static void prepare_modules(struct lk_run_follower *w)
{
	const struct lk_profile *p = w->f ? lk_profile_follow_partial(w->f) : NULL;
	const struct lk_module_info_rec *m;
	const struct lk_stack_stats *st;
	size_t nm, ns;

	if (!p || (!w->sym && lk_symbolizer_new(&w->sym) < 0))
		return;
	nm = lk_profile_modules(p, &m);
	for (; w->modules_seen < nm; w->modules_seen++) { /* each as it comes: no file opened */
		const struct lk_module_info_rec *r = &m[w->modules_seen];
		lk_symbolizer_add_module(w->sym, w->sym_profile, r->id, r->path, r->build_id,
					 r->build_id_len, r->base, r->seg, r->nseg);
	}
	ns = lk_profile_stacks(p, &st);
	for (; w->stacks_seen < ns; w->stacks_seen++) {
		const struct lk_stack_stats *s = &st[w->stacks_seen];
		for (uint32_t i = 0; i < s->nframes; i++) {
			uint64_t id = s->modules[i];
			if (id && id < LK_FOLLOW_MODULES && !w->prepared[id])
				w->prepared[id] = lk_symbolizer_prepare(w->sym, w->sym_profile, id) == 0;
		}
	}
}

static bool newer(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec != b->tv_sec ? a->tv_sec > b->tv_sec : a->tv_nsec > b->tv_nsec;
}

/* The profile of the pid that changed last, if it is not the one followed already: a program
 * that exec'd another left its profile unchanged since (both have the pid and the start time). */
static void look_for_profile(struct lk_run_follower *w)
{
	struct lk_follow_profile *list;
	size_t n = lk_follow_find_profiles(w->pattern, w->session, w->pid, true, &list), best = n;
	struct stat st, best_st = { 0 };
	int fd;

	for (size_t i = 0; i < n; i++)
		if (stat(list[i].path, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
		    (best == n || newer(&st.st_mtim, &best_st.st_mtim))) {
			best = i;
			best_st = st;
		}
	if (best < n && !(w->path && !strcmp(w->path, list[best].path)) &&
	    (fd = lk_open_regular(AT_FDCWD, list[best].path, &st)) >= 0) {
		if (st.st_uid == geteuid()) { /* still the file that was found */
			drop(w);
			w->path = list[best].path;
			list[best].path = NULL;
			w->st = st;
			w->fd = fd;
			if (w->compress && lk_compress_stream_new(w->path, &w->comp) < 0)
				w->comp = NULL; /* compressed after the exit, as without one */
		} else {
			close(fd);
		}
	}
	for (size_t i = 0; i < n; i++)
		free(list[i].path);
	free(list);
}

/* One look at the file's size, and the reading it allows, in steps of LK_FOLLOW_STEP while the
 * program runs. */
static void follow_some(struct lk_run_follower *w)
{
	struct stat st;

	if (fstat(w->fd, &st) < 0 || st.st_ino != w->st.st_ino || st.st_dev != w->st.st_dev)
		return;
	lk_follow_limit_update(&w->lim, (uint64_t)st.st_size); /* follow.c */
	if (!w->f) {
		struct lk_file_header h;
		if (w->lim.limit < LK_HEADER_FIXED_SIZE ||
		    pread(w->fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
		    le32toh(h.header_size) > w->lim.limit - LK_HEADER_FIXED_SIZE)
			return; /* its header is not all below the limit yet */
		if (lk_profile_follow_open(w->path, w->lim.limit, &lk_run_summary_opts, &w->f,
					   NULL) < 0) {
			w->failed = true;
			return;
		}
	}
	for (;;) {
		uint64_t from = lk_profile_follow_offset(w->f), at = from + LK_FOLLOW_STEP;
		if (at > w->lim.limit)
			at = w->lim.limit;
		if (lk_profile_follow_step(w->f, at, NULL) < 0) {
			w->f = lk_profile_follow_free(w->f);
			w->failed = true;
			return;
		}
		/* Up to what the reader has read, not to `at`: a thread segment's body below `at`
		 * may not be written yet, and the reader goes past a body only once it is whole. */
		if (w->comp && lk_compress_stream_feed(w->comp, lk_profile_follow_offset(w->f)) < 0)
			w->comp = lk_compress_stream_free(w->comp);
		pthread_mutex_lock(&w->mu);
		bool stop = w->stop;
		pthread_mutex_unlock(&w->mu);
		/* The program has ended, all below the limit is read, or a record stops it. */
		if (stop || at == w->lim.limit || lk_profile_follow_offset(w->f) == from)
			break;
	}
	prepare_modules(w);
}

static void *follower_run(void *arg)
{
	struct lk_run_follower *w = arg;
	const struct sched_param idle = { 0 };
	unsigned looks = 0;

	pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle); /* best effort */
	pthread_mutex_lock(&w->mu);
	while (!w->stop) {
		struct timespec until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += LK_FOLLOW_POLL_MS * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&w->cv, &w->mu, &until);
		if (w->stop)
			break;
		pthread_mutex_unlock(&w->mu);
		/* Every look until the profile is there, then every tenth (a program that has not
		 * allocated yet may take long), and every LK_FOLLOW_RESCAN-th for an exec's. */
		if ((!w->path && (looks < 100 || looks % 10 == 0)) || looks % LK_FOLLOW_RESCAN == 0)
			look_for_profile(w);
		looks++;
		if (w->path && !w->failed)
			follow_some(w);
		pthread_mutex_lock(&w->mu);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

struct lk_run_follower *lk_run_follow_start(const char *pattern, uint64_t session, pid_t pid,
					    bool compress)
{
	struct lk_run_follower *w = calloc(1, sizeof(*w));
	pthread_condattr_t ca;

	if (!w)
		return NULL;
	*w = (struct lk_run_follower){ .pattern = pattern, .session = session,
				       .pid = (uint64_t)pid, .fd = -1, .compress = compress,
				       .sym_profile = UINT32_MAX };
	pthread_mutex_init(&w->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&w->th, NULL, follower_run, w) != 0) {
		pthread_cond_destroy(&w->cv);
		pthread_mutex_destroy(&w->mu);
		free(w);
		return NULL;
	}
	return w;
}

void lk_run_follow_stop(struct lk_run_follower *w)
{
	if (!w)
		return;
	/* Back to the normal policy first: on a busy machine an idle thread might wait long for a
	 * CPU, and `leek run` waits for it. */
	pthread_setschedparam(w->th, SCHED_OTHER, &(const struct sched_param){ 0 });
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->th, NULL);
	/* Its descriptor of the profile goes now: the file's last one, once the summary has read
	 * it, is the compression's, which removes the file on its own thread (cmd-run.c). */
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
}

/* Whether the file at path is the one followed, by name and by identity: the name may have been
 * reused since. */
static bool follows(const struct lk_run_follower *w, const char *path)
{
	struct stat st;

	return w && w->path && !strcmp(w->path, path) && stat(path, &st) == 0 &&
	       st.st_ino == w->st.st_ino && st.st_dev == w->st.st_dev;
}

struct lk_profile_follow *lk_run_follow_take(struct lk_run_follower *w, const char *path)
{
	struct lk_profile_follow *f = NULL;

	if (follows(w, path)) { /* NULL after a failure */
		f = w->f;
		w->f = NULL;
	}
	return f;
}

struct lk_compress_stream *lk_run_follow_take_comp(struct lk_run_follower *w, const char *path)
{
	struct lk_compress_stream *comp = NULL;

	if (follows(w, path)) {
		comp = w->comp;
		w->comp = NULL;
	}
	return comp;
}

struct lk_symbolizer *lk_run_follow_take_sym(struct lk_run_follower *w)
{
	struct lk_symbolizer *sym = w ? w->sym : NULL;

	if (w)
		w->sym = NULL;
	return sym;
}

void lk_run_follow_free(struct lk_run_follower *w)
{
	if (!w)
		return;
	drop(w);
	lk_symbolizer_free(w->sym);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	free(w);
}
