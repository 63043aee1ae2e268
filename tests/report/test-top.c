/* test-top.c: `leek top` on tests/fixtures/fx-service.c, in a detached tmux session (its own
 * server socket), reading the screen with `tmux capture-pane`. Skipped without tmux.
 *
 * The service leaks (fx_leak), holds a pool (fx_pool) and churns 40 MB/s (fx_churn): sorted by
 * live the pool comes first, by allocated the churn, by growth the leak, whatever the sampling
 * (the gaps are tens of standard errors). Every check polls the screen with a generous timeout.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "files.h"
#include "harness.h"
#include "leek.h"

#ifndef FX_SERVICE
#error "meson passes FX_SERVICE, tests/fixtures/fx-service"
#endif

#define WAIT_S 60

static const char *tmux;
static char sock[64];

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void find_tmux(void)
{
	static const char *const where[] = { "/usr/bin/tmux", "/usr/local/bin/tmux", "/bin/tmux" };

	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++)
		if (access(where[i], X_OK) == 0) {
			tmux = where[i];
			snprintf(sock, sizeof(sock), "leek-test-top-%d", (int)getpid());
			return;
		}
	SKIP("tmux is not installed");
}

/* tmux -L SOCK ARGS...: its stdout (malloc'd). */
static char *run_tmux(const char *dir, const char *a1, const char *a2, const char *a3,
		      const char *a4)
{
	const char *argv[12] = { tmux, "-L", sock, "-f", "/dev/null", a1, a2, a3, a4, NULL };
	struct proc p;
	char *out;

	proc_run(&p, dir, argv, (const char *[]){ "HOME=/", NULL }, 30);
	out = strdup(p.out ? p.out : "");
	proc_free(&p);
	return out;
}

static char *screen(const char *dir)
{
	return run_tmux(dir, "capture-pane", "-p", "-t", "top");
}

/* The first site row under the header line (the one that starts with "live"). */
static char *first_row(const char *text)
{
	const char *h = strstr(text, "allocated  trend");
	const char *row = h ? strchr(h, '\n') : NULL;

	return row ? strndup(row + 1, strcspn(row + 1, "\n")) : strdup("");
}

/* Waits until the screen holds every string of want (NULL-terminated) and, if row_has is not
 * NULL, its first site row holds row_has. Returns the screen. */
static char *wait_screen(const char *dir, const char *const *want, const char *row_has)
{
	double until = now_s() + WAIT_S;

	for (;;) {
		char *s = screen(dir), *row = first_row(s);
		bool ok = !row_has || strstr(row, row_has);
		for (size_t i = 0; ok && want[i]; i++)
			ok = strstr(s, want[i]) != NULL;
		free(row);
		if (ok)
			return s;
		if (now_s() > until)
			FAIL("the screen never showed what was wanted (%s, first row %s):\n%s",
			     want[0], row_has ? row_has : "-", s);
		free(s);
		nanosleep(&(struct timespec){ 0, 100000000L }, NULL);
	}
}

TEST(keys_and_screen)
{
	char dir[300], preload[400], output[400], tally[400], cmd[1200];
	const char *env[] = { preload, output, "LEEK_PERIOD=4096", "LEEK_SEED=1", NULL };
	struct proc s;
	char *text;

	find_tmux();
	if (!leek_library)
		SKIP("no libleek.so in this build");
	tmp_dir(dir);
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", leek_library);
	snprintf(output, sizeof(output), "LEEK_OUTPUT=%s/svc.%%p.lk", dir);
	snprintf(tally, sizeof(tally), "%s/tally", dir);
	proc_start(&s, dir, (const char *[]){ FX_SERVICE, "300", "100K", "1M", "40M", tally, NULL },
		   env, 120);
	/* All of it ends by itself, should the test fail; --foreground keeps top in the terminal's
	 * process group, where it may read keys (else SIGTTIN stops it). */
	snprintf(cmd, sizeof(cmd),
		 "timeout --foreground 400 env LANG=C.UTF-8 LC_ALL=C.UTF-8 %s top --interval 300ms "
		 "--wait 60s %d; echo TOP-EXIT=$?; sleep 30",
		 leek_bin, (int)s.pid);
	{
		const char *argv[] = { tmux, "-L", sock, "-f", "/dev/null", "new-session", "-d",
				       "-s", "top", "-x", "120", "-y", "40", cmd, NULL };
		struct proc t;
		proc_run(&t, dir, argv, (const char *[]){ "HOME=/", NULL }, 30);
		if (t.status != 0)
			FAIL("tmux new-session: exit %d: %s", t.status, t.err);
		proc_free(&t);
	}

	/* Sorted by live: the pool first; the leak's change since the view opened grows. */
	text = wait_screen(dir, (const char *[]){ "sort: live", "fx_leak (fx-service.c:", "heap ",
						  "RSS ", NULL },
			   "fx_pool");
	free(text);
	text = wait_screen(dir, (const char *[]){ "growing", NULL }, NULL);
	ASSERT_CONTAINS(text, "q quit");
	free(text);

	free(run_tmux(dir, "send-keys", "-t", "top", "a"));
	text = wait_screen(dir, (const char *[]){ "sort: allocated", NULL }, "fx_churn");
	free(text);
	free(run_tmux(dir, "send-keys", "-t", "top", "g"));
	text = wait_screen(dir, (const char *[]){ "sort: growth", NULL }, "fx_leak");
	free(text);
	free(run_tmux(dir, "send-keys", "-t", "top", "s"));
	text = wait_screen(dir, (const char *[]){ "> fx_leak (fx-service.c:", "main (fx-service.c:",
						  NULL },
			   "fx_leak");
	free(text);
	free(run_tmux(dir, "send-keys", "-t", "top", "q"));
	text = wait_screen(dir, (const char *[]){ "TOP-EXIT=0", NULL }, NULL);
	free(text);

	free(run_tmux(dir, "kill-server", NULL, NULL, NULL));
	kill(s.pid, SIGTERM);
	proc_wait(&s);
	proc_free(&s);
	tmp_dir_remove(dir);
}

/* A missing file exits 2, a bad option 1. */
TEST(errors)
{
	char dir[300], path[400];
	struct proc p;

	tmp_dir(dir);
	snprintf(path, sizeof(path), "%s/none.lk", dir);
	leek_exec(&p, dir, NULL, (const char *[]){ "top", path, NULL }, 30);
	ASSERT_EQ(p.status, 2);
	proc_free(&p);
	leek_exec(&p, dir, NULL, (const char *[]){ "top", "--interval", "0", path, NULL }, 30);
	ASSERT_EQ(p.status, 1);
	ASSERT_CONTAINS(p.err, "top: --interval '0': too short (at least 1ns)\n");
	proc_free(&p);
	tmp_dir_remove(dir);
}
