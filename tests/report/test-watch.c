/* test-watch.c: `leek watch` on tests/fixtures/fx-service.c, a service with a known leak, a warm
 * pool and churn that writes its own tally, run under libleek.so with LEEK_PERIOD=4096.
 *
 * Every wait polls watch's output with a generous timeout (WAIT_S) and never assumes how fast
 * anything runs: a report is asked for again (SIGHUP) until the records it needs are readable,
 * since watch shows only what the file's size proves written (docs/design.md). Estimates are
 * checked against the tally within 4 standard errors, the standard error taken from the report's
 * own 95% interval (docs/sampling.md section 5): a correct estimate misses that by chance in less
 * than 1 run in 10 000, whatever the interleaving of the service's allocations.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "files.h"
#include "harness.h"
#include "json-get.h"
#include "leek.h"

#ifndef FX_SERVICE
#error "meson passes FX_SERVICE, tests/fixtures/fx-service"
#endif

#define WAIT_S 60     /* the most a report may take to come, on a loaded machine */
#define POOL (1 << 20) /* the service's pool, bytes */

static void sleep_ms(long ms)
{
	nanosleep(&(struct timespec){ ms / 1000, ms % 1000 * 1000000L }, NULL);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* fx-service SECONDS 100K POOL CHURN DIR/tally [crash], under libleek, its profile DIR/svc.PID.lk. */
static void start_service(struct proc *p, const char *dir, const char *seconds, const char *churn,
			  bool crash)
{
	char preload[400], output[400], tally[400];
	const char *env[] = { preload, output, "LEEK_PERIOD=4096", "LEEK_SEED=1", NULL };
	const char *argv[] = { FX_SERVICE, seconds, "100K", "1M", churn, tally,
			       crash ? "crash" : NULL, NULL };

	if (!leek_library)
		SKIP("no libleek.so in this build");
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", leek_library);
	snprintf(output, sizeof(output), "LEEK_OUTPUT=%s/svc.%%p.lk", dir);
	snprintf(tally, sizeof(tally), "%s/tally", dir);
	proc_start(p, dir, argv, env, 120);
}

static uint64_t tally_of(const char *dir, const char *key)
{
	char path[400], *text, *at;
	unsigned long long v;

	snprintf(path, sizeof(path), "%s/tally", dir);
	text = read_file(path, NULL);
	at = strstr(text, key);
	if (!at || sscanf(at + strlen(key), " %llu", &v) != 1)
		FAIL("no %s in the tally:\n%s", key, text);
	free(text);
	return v;
}

/* Watch's output lines so far, parsed; *n of them. Lines not ended yet wait for the next look. */
static struct json **lines_of(const struct proc *w, size_t *n)
{
	char *text = read_file_or_empty(w->out_path, NULL), *line = text, *nl;
	struct json **v = NULL;
	char err[256];

	*n = 0;
	while ((nl = strchr(line, '\n'))) {
		struct json *doc;
		if (json_parse(line, (size_t)(nl - line), &doc, err, sizeof(err)) < 0)
			FAIL("watch printed a line that is not JSON (%s): %.*s", err,
			     (int)(nl - line), line);
		v = realloc(v, (*n + 1) * sizeof(*v));
		v[(*n)++] = doc;
		line = nl + 1;
	}
	free(text);
	return v;
}

static void lines_free(struct json **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		json_free(v[i]);
	free(v);
}

static const struct json *site_of(const struct json *report, const char *function)
{
	const struct json *sites = json_get(report, "sites");

	for (size_t i = 0; sites && i < sites->len; i++)
		if (strcmp(get_str(json_at(sites, i), "function"), function) == 0)
			return json_at(sites, i);
	return NULL;
}

/* What a line must be to end a wait. */
typedef bool line_pred(const struct json *line);

/* Waits for a line after the first `after` with that reason, which pred (if not NULL) accepts;
 * every resend_ms (if not 0) sends sig to watch again. Returns the line (the caller frees it). */
static struct json *wait_line(struct proc *w, size_t after, const char *reason, line_pred *pred,
			      int sig, long resend_ms)
{
	double until = now_s() + WAIT_S, last = 0;

	for (;;) {
		size_t n;
		struct json **v = lines_of(w, &n);
		for (size_t i = after; i < n; i++)
			if (strcmp(get_str(v[i], "reason"), reason) == 0 && (!pred || pred(v[i]))) {
				struct json *found = v[i];
				v[i] = NULL;
				lines_free(v, n);
				return found;
			}
		lines_free(v, n);
		if (now_s() > until) {
			char *err = read_file_or_empty(w->err_path, NULL);
			FAIL("no %s report from watch in %d s; stderr:\n%s", reason, WAIT_S, err);
		}
		if (sig && resend_ms && now_s() - last >= resend_ms / 1000.0) {
			kill(w->pid, sig);
			last = now_s();
		}
		sleep_ms(50);
	}
}

static size_t count_lines(struct proc *w)
{
	size_t n;
	struct json **v = lines_of(w, &n);

	lines_free(v, n);
	return n;
}

/* Waits until watch has blocked the signals it reads (/proc/PID/status, SigBlk): a signal sent
 * before that would take its default action, and end it. */
static void wait_signals_taken(const struct proc *w)
{
	double until = now_s() + WAIT_S;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/status", (int)w->pid);
	for (;;) {
		char *text = read_file_or_empty(path, NULL), *at = strstr(text, "SigBlk:");
		unsigned long long mask = 0;
		if (at)
			sscanf(at + 7, " %llx", &mask);
		free(text);
		if (mask & (1ull << (SIGHUP - 1)) && mask & (1ull << (SIGUSR2 - 1)))
			return;
		if (now_s() > until)
			FAIL("watch took no signal in %d s", WAIT_S);
		sleep_ms(20);
	}
}

/* est within 4 standard errors of truth, the standard error from the 95% interval; name says
 * whose. */
static void expect_estimate_of(const struct json *v, const char *name, const char *key,
			       double truth)
{
	double est = get_num(v, key), lo, hi;

	get_ci95(v, key, &lo, &hi);
	double se = (hi - lo) / (2 * 1.96);
	if (fabs(est - truth) > 4 * se + 1)
		FAIL("%s %s: %.0f, [%.0f, %.0f]: more than 4 standard errors (%.0f) from the "
		     "tally's %.0f", name, key, est, lo, hi, se, truth);
}

static void expect_estimate(const struct json *site, const char *key, double truth)
{
	expect_estimate_of(site, get_str(site, "function"), key, truth);
}

static bool has_leak(const struct json *l)
{
	return site_of(l, "fx_leak") != NULL;
}

static bool pool_known(const struct json *l)
{
	return json_get(l, "known_bytes") && !site_of(l, "fx_pool");
}

static bool has_frees(const struct json *l)
{
	return json_get(l, "frees")->len > 0;
}

/* The service runs 3 s and exits; watch follows it by pid, and its last report, of the whole
 * file, matches the tally: the leak and the pool within their intervals. Exit status 0. */
TEST(exit_matches_tally)
{
	char dir[300], pid[16];
	struct proc s, w;

	tmp_dir(dir);
	start_service(&s, dir, "3", "20M", false);
	snprintf(pid, sizeof(pid), "%d", (int)s.pid);
	leek_start(&w, dir, NULL,
		   (const char *[]){ "watch", "--format", "json", "--wait", "60s", pid, NULL }, 120);
	proc_wait(&s);
	ASSERT_EQ(s.status, 0);
	proc_wait(&w);
	if (w.status != 0)
		FAIL("watch exited %d; stderr:\n%s", w.status, w.err);
	struct json *last = wait_line(&w, 0, "exit", NULL, 0, 0);
	ASSERT_STREQ(get_str(last, "report"), "all");
	ASSERT_TRUE(get_bool(last, "ended"));
	ASSERT_TRUE(get_bool(last, "trailer"));
	ASSERT_EQ(get_u64(last, "pid"), (uint64_t)s.pid);
	const struct json *leak = site_of(last, "fx_leak"), *pool = site_of(last, "fx_pool");
	ASSERT_TRUE(leak && pool);
	expect_estimate(leak, "bytes", (double)tally_of(dir, "leaked_bytes"));
	expect_estimate(pool, "bytes", (double)tally_of(dir, "pool_bytes"));
	ASSERT_STREQ(get_str(leak, "trend"), "growing");
	ASSERT_TRUE(!site_of(last, "fx_churn") || get_num(site_of(last, "fx_churn"), "bytes") < 4096 * 4);
	json_free(last);
	proc_free(&w);
	proc_free(&s);
	tmp_dir_remove(dir);
}

/* SIGHUP, SIGUSR1 twice, SIGUSR2, then the service's clean exit. After the first SIGUSR1 the pool
 * (allocated before the first report's cut) is known: later old reports leave it out and count it.
 * The frees are all of fx_churn's 256-byte blocks. */
TEST(signals)
{
	char dir[300], pid[16];
	struct proc s, w;
	struct json *l;
	size_t n;

	tmp_dir(dir);
	start_service(&s, dir, "300", "40M", false); /* ends by itself, should a test fail */
	snprintf(pid, sizeof(pid), "%d", (int)s.pid);
	leek_start(&w, dir, NULL,
		   (const char *[]){ "watch", "--format", "json", "--every", "1h", "--age", "200ms",
				     "--wait", "60s", pid, NULL },
		   120);
	wait_signals_taken(&w);

	l = wait_line(&w, 0, "SIGHUP", has_leak, SIGHUP, 500);
	ASSERT_STREQ(get_str(l, "report"), "all");
	ASSERT_TRUE(!get_bool(l, "ended"));
	ASSERT_TRUE(site_of(l, "fx_pool") != NULL);
	json_free(l);

	n = count_lines(&w);
	kill(w.pid, SIGUSR1);
	l = wait_line(&w, n, "SIGUSR1", NULL, 0, 0);
	ASSERT_STREQ(get_str(l, "report"), "old");
	ASSERT_TRUE(json_get(l, "known_bytes") == NULL); /* nothing known before it */
	json_free(l);

	n = count_lines(&w);
	l = wait_line(&w, n, "SIGUSR1", pool_known, SIGUSR1, 1000);
	double known = get_num(l, "known_bytes");
	ASSERT_TRUE(known >= POOL / 2); /* the pool, at least, within far more than 4 se */
	json_free(l);

	n = count_lines(&w);
	l = wait_line(&w, n, "SIGUSR2", has_frees, SIGUSR2, 1000);
	const struct json *frees = json_get(l, "frees");
	for (size_t i = 0; i < frees->len; i++) {
		const struct json *f = json_at(frees, i);
		ASSERT_STREQ(get_str(f, "function"), "fx_churn");
		ASSERT_EQ(get_u64(f, "size"), 256);
		ASSERT_TRUE(get_num(f, "lifetime_s") >= 0);
		ASSERT_TRUE(get_num(f, "free_s") >= get_num(f, "alloc_s"));
		ASSERT_TRUE(json_get(f, "free_stack")->type == JSON_NULL);
	}
	ASSERT_TRUE(frees->len <= 32);
	json_free(l);

	kill(s.pid, SIGTERM);
	proc_wait(&s);
	ASSERT_EQ(s.status, 0);
	proc_wait(&w);
	ASSERT_EQ(w.status, 0);
	l = wait_line(&w, 0, "exit", NULL, 0, 0);
	ASSERT_TRUE(get_bool(l, "trailer"));
	expect_estimate(site_of(l, "fx_leak"), "bytes", (double)tally_of(dir, "leaked_bytes"));
	json_free(l);
	proc_free(&w);
	proc_free(&s);
	tmp_dir_remove(dir);
}

/* A service that crashes: the last report says it ended without a trailer, and watch exits 3. */
TEST(crash_status)
{
	char dir[300], pid[16];
	struct proc s, w;

	tmp_dir(dir);
	start_service(&s, dir, "1", "20M", true);
	snprintf(pid, sizeof(pid), "%d", (int)s.pid);
	leek_start(&w, dir, NULL,
		   (const char *[]){ "watch", "--format", "json", "--wait", "60s", pid, NULL }, 120);
	proc_wait(&s);
	ASSERT_EQ(s.status, 128 + SIGABRT);
	proc_wait(&w);
	if (w.status != 3)
		FAIL("watch exited %d, not 3; stderr:\n%s", w.status, w.err);
	struct json *l = wait_line(&w, 0, "exit", NULL, 0, 0);
	ASSERT_TRUE(get_bool(l, "ended"));
	ASSERT_TRUE(!get_bool(l, "trailer"));
	ASSERT_TRUE(site_of(l, "fx_pool") != NULL);
	json_free(l);
	proc_free(&w);
	proc_free(&s);
	tmp_dir_remove(dir);
}

/* By file, in text: old reports every 300 ms (--age 0: every live block), a high-water report,
 * and SIGTERM: a last report and exit status 4, the service still running. */
TEST(file_every_stop)
{
	char dir[300], *profile = NULL, *out = NULL;
	struct proc s, w;
	double until = now_s() + WAIT_S;

	tmp_dir(dir);
	start_service(&s, dir, "300", "40M", false); /* ends by itself, should a test fail */
	while (!(profile = count_files(dir, "svc.", ".lk") ? find_one(dir, "svc.", ".lk") : NULL)) {
		if (now_s() > until)
			FAIL("the service wrote no profile in %d s", WAIT_S);
		sleep_ms(50);
	}
	leek_start(&w, dir, NULL,
		   (const char *[]){ "watch", "--every", "300ms", "--age", "0", "--high-water=64K",
				     profile, NULL },
		   120);
	wait_signals_taken(&w);
	for (;;) {
		free(out);
		out = read_file_or_empty(w.out_path, NULL);
		const char *first = strstr(out, "leek watch: old sites");
		if (first && strstr(first + 1, "leek watch: old sites") &&
		    strstr(out, "leek watch: sites at the heap's high-water mark") &&
		    strstr(out, "fx_leak"))
			break;
		if (now_s() > until)
			FAIL("not two old reports and a high-water one in %d s:\n%s", WAIT_S, out);
		sleep_ms(100);
	}
	ASSERT_CONTAINS(out, "leek watch: following ");
	ASSERT_CONTAINS(out, "(every)");
	ASSERT_CONTAINS(out, "fx_pool (fx-service.c:");
	kill(w.pid, SIGTERM);
	proc_wait(&w);
	ASSERT_EQ(w.status, 4);
	ASSERT_CONTAINS(w.out, "leek watch: every live site");
	ASSERT_CONTAINS(w.out, "(SIGTERM)");
	kill(s.pid, SIGTERM);
	proc_wait(&s);
	free(out);
	free(profile);
	proc_free(&w);
	proc_free(&s);
	tmp_dir_remove(dir);
}

/* The tally's elapsed_s, to a tenth of a second (it is rewritten about once a second). */
static double elapsed_of(const char *dir)
{
	char path[400], *text, *at;
	double v = 0;

	snprintf(path, sizeof(path), "%s/tally", dir);
	text = read_file_or_empty(path, NULL);
	if ((at = strstr(text, "elapsed_s")))
		sscanf(at + 9, " %lf", &v);
	free(text);
	return v;
}

/* A service that allocates slowly, whose file stays within its first 64 KiB for minutes: the
 * file's size proves nothing written (docs/design.md), and only a SYNC (`leek ctl PID sync`, and
 * watch's --max-lag) lets a report read it. With --max-lag 0 watch has no report to give; with
 * --max-lag 1s, a SIGHUP's report reaches the records the service wrote before the tally that
 * was read before the signal. Nothing here depends on speed: SIGHUP is sent again until such a
 * report comes. */
TEST(sync_bounds_lag)
{
	char dir[300], pid[16];
	struct proc s, w, c;
	struct json *l;

	tmp_dir(dir);
	start_service(&s, dir, "300", "10K", false); /* about 300 bytes of records a second */
	snprintf(pid, sizeof(pid), "%d", (int)s.pid);

	leek_start(&w, dir, NULL,
		   (const char *[]){ "watch", "--format", "json", "--every", "1h", "--max-lag", "0",
				     "--wait", "60s", pid, NULL },
		   120);
	wait_signals_taken(&w);
	while (elapsed_of(dir) < 2)
		sleep_ms(100);
	kill(w.pid, SIGHUP);
	sleep_ms(3000);
	ASSERT_EQ(count_lines(&w), 0);
	kill(w.pid, SIGTERM);
	proc_wait(&w);
	ASSERT_CONTAINS(w.err, "nothing of");
	proc_free(&w);

	leek_exec(&c, dir, NULL, (const char *[]){ "ctl", pid, "sync", "--timeout", "60s", NULL },
		  120);
	if (c.status != 0)
		FAIL("leek ctl sync exited %d:\n%s", c.status, c.err);
	ASSERT_CONTAINS(c.out, ": sync, carried out in ");
	ASSERT_CONTAINS(c.out, "the file is whole up to offset ");
	proc_free(&c);

	leek_start(&w, dir, NULL,
		   (const char *[]){ "watch", "--format", "json", "--every", "1h", "--max-lag", "1s",
				     "--wait", "60s", pid, NULL },
		   120);
	wait_signals_taken(&w);
	double until = now_s() + WAIT_S;
	for (;;) {
		double e = elapsed_of(dir);
		size_t n = count_lines(&w);
		kill(w.pid, SIGHUP);
		l = wait_line(&w, n, "SIGHUP", NULL, 0, 0);
		if (site_of(l, "fx_leak") && get_num(l, "t_s") >= e) {
			expect_estimate(site_of(l, "fx_pool"), "bytes", (double)POOL);
			json_free(l);
			break;
		}
		json_free(l);
		if (now_s() > until)
			FAIL("no SIGHUP report reached the tally's time in %d s", WAIT_S);
		sleep_ms(200);
	}
	kill(s.pid, SIGTERM);
	proc_wait(&s);
	proc_wait(&w);
	ASSERT_EQ(w.status, 0);
	proc_free(&w);
	proc_free(&s);
	tmp_dir_remove(dir);
}

/* --from MARK: the blocks allocated at or before the mark are known from the start, as after
 * SIGUSR1: old reports leave the pool out (allocated before the mark) and count it, and keep the
 * leak, which goes on after it. A mark that is not in the profile is an error that names it. */
static bool leak_not_pool(const struct json *l)
{
	return has_leak(l) && pool_known(l);
}

TEST(from_mark)
{
	char dir[300], pid[16];
	struct proc s, w, c;
	struct json *l;

	tmp_dir(dir);
	start_service(&s, dir, "300", "1M", false);
	snprintf(pid, sizeof(pid), "%d", (int)s.pid);
	while (elapsed_of(dir) < 1)
		sleep_ms(100);
	leek_exec(&c, dir, NULL, (const char *[]){ "ctl", pid, "mark", "deploy", "--timeout", "60s",
						   NULL },
		  120);
	if (c.status != 0)
		FAIL("leek ctl mark exited %d:\n%s", c.status, c.err);
	proc_free(&c);

	leek_start(&w, dir, NULL,
		   (const char *[]){ "watch", "--format", "json", "--every", "300ms", "--age", "0",
				     "--from", "deploy", "--wait", "60s", pid, NULL },
		   120);
	l = wait_line(&w, 0, "every", leak_not_pool, 0, 0);
	ASSERT_STREQ(get_str(l, "report"), "old");
	expect_estimate_of(l, "the report", "known_bytes", (double)POOL);
	json_free(l);
	kill(w.pid, SIGTERM);
	proc_wait(&w);
	ASSERT_EQ(w.status, 4);
	proc_free(&w);

	leek_start(&w, dir, NULL,
		   (const char *[]){ "watch", "--format", "json", "--every", "300ms", "--age", "0",
				     "--from", "nosuch", "--wait", "60s", pid, NULL },
		   120);
	double until = now_s() + WAIT_S;
	char *err;
	while (!strstr((err = read_file_or_empty(w.err_path, NULL)), "no mark 'nosuch'")) {
		free(err);
		if (now_s() > until)
			FAIL("watch --from nosuch did not say the mark is missing in %d s", WAIT_S);
		sleep_ms(100);
	}
	ASSERT_CONTAINS(err, "deploy"); /* the marks it has */
	free(err);
	kill(w.pid, SIGTERM);
	proc_wait(&w);
	proc_free(&w);
	kill(s.pid, SIGTERM);
	proc_wait(&s);
	proc_free(&s);
	tmp_dir_remove(dir);
}

/* Usage errors exit 1; a profile or a process that cannot be followed, 2, saying why. */
TEST(errors)
{
	static const char *const usage[][6] = {
		{ "watch", NULL },
		{ "watch", "--every", "0", "x", NULL },
		{ "watch", "--age", "soon", "x", NULL },
		{ "watch", "--format", "html", "x", NULL },
		{ "watch", "--high-water=lots", "x", NULL },
		{ "watch", "--frees", "0", "x", NULL },
		{ "watch", "a", "b", NULL },
		{ "watch", "--from", "not a mark", "x", NULL },
		{ "watch", "--max-lag", "soon", "x", NULL },
	};
	char dir[300], path[400];
	struct proc p;

	tmp_dir(dir);
	for (size_t i = 0; i < sizeof(usage) / sizeof(usage[0]); i++) {
		leek_exec(&p, dir, NULL, usage[i], 30);
		if (p.status != 1)
			FAIL("leek watch %s %s: exit %d, not 1", usage[i][1] ? usage[i][1] : "",
			     usage[i][1] && usage[i][2] ? usage[i][2] : "", p.status);
		/* The durations' two messages, as every command says them (util.h) */
		if (i == 1)
			ASSERT_CONTAINS(p.err, "watch: --every '0': too short (at least 1ns)\n");
		if (i == 8)
			ASSERT_CONTAINS(p.err, "watch: --max-lag 'soon': not a duration (e.g. 500ms, "
					       "30s, 10m)\n");
		proc_free(&p);
	}
	snprintf(path, sizeof(path), "%s/none.lk", dir);
	leek_exec(&p, dir, NULL, (const char *[]){ "watch", path, NULL }, 30);
	ASSERT_EQ(p.status, 2);
	ASSERT_CONTAINS(p.err, "none.lk");
	proc_free(&p);

	snprintf(path, sizeof(path), "%s/text", dir);
	write_file(path, "not a profile at all\n", 21);
	leek_exec(&p, dir, NULL, (const char *[]){ "watch", path, NULL }, 30);
	ASSERT_EQ(p.status, 2);
	ASSERT_CONTAINS(p.err, "not a raw leek profile");
	proc_free(&p);

	/* A process without libleek: no profile to find. */
	struct proc sleeper;
	char pid[16];
	proc_start(&sleeper, dir, (const char *[]){ "/bin/sleep", "30", NULL }, NULL, 60);
	snprintf(pid, sizeof(pid), "%d", (int)sleeper.pid);
	leek_exec(&p, dir, NULL, (const char *[]){ "watch", "--wait", "0", pid, NULL }, 30);
	ASSERT_EQ(p.status, 2);
	ASSERT_CONTAINS(p.err, "no leek profile");
	proc_free(&p);
	kill(sleeper.pid, SIGKILL);
	proc_wait(&sleeper);
	proc_free(&sleeper);

	leek_exec(&p, dir, NULL, (const char *[]){ "watch", "--wait", "0", "999999999", NULL }, 30);
	ASSERT_EQ(p.status, 2);
	ASSERT_CONTAINS(p.err, "no process 999999999");
	proc_free(&p);
	tmp_dir_remove(dir);
}
