/* proc.c: starts programs for the tests and collects their output (see proc.h).
 *
 * The driver's side: it runs without LD_PRELOAD and may allocate as it likes. A failure leaves
 * the output files behind on purpose, and every message names them.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "files.h"
#include "harness.h"
#include "proc.h"

extern char **environ;

static bool env_dropped(const char *e)
{
	return !strncmp(e, "LD_PRELOAD=", 11) || !strncmp(e, "LEEK_", 5) ||
	       !strncmp(e, "MALLOC_PERTURB_=", 16) || !strncmp(e, "MALLOC_CHECK_=", 14);
}

/* Whether one of env (NULL-terminated, may be NULL) sets the variable of entry e. */
static bool env_hidden(const char *e, const char *const *env)
{
	size_t n = strcspn(e, "=");

	for (size_t i = 0; env && env[i]; i++)
		if (!strncmp(env[i], e, n) && env[i][n] == '=')
			return true;
	return false;
}

/* The soft limit of resource res set to v (0: left alone); false if it cannot be. */
static bool limit(int res, uint64_t v)
{
	struct rlimit rl;

	if (!v)
		return true;
	if (getrlimit(res, &rl) < 0)
		return false;
	rl.rlim_cur = v;
	return setrlimit(res, &rl) == 0;
}

/* In the child: never returns. Exit 125 if it cannot set itself up, 124 if execve fails. */
static _Noreturn void child(const struct proc *p, const char *exe, const char *const *argv,
			    const char *const *envp, const struct proc_opts *o)
{
	/* The harness's alarm must not follow the program, and neither may a signal that whoever
	 * started the tests ignores or blocks (a shell's background job ignores SIGINT): the signal
	 * tests need the default actions. */
	static const int reset[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE };
	int out, err, in;
	sigset_t none;

	setpgid(0, 0);
	out = open(p->out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	err = open(p->err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	in = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (out < 0 || err < 0 || in < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 ||
	    dup2(err, 2) < 0 || (o->cwd && chdir(o->cwd) < 0) ||
	    !limit(RLIMIT_AS, o->limit_as) || !limit(RLIMIT_FSIZE, o->limit_fsize))
		_exit(125);
	alarm(0);
	for (size_t i = 0; i < sizeof(reset) / sizeof(reset[0]); i++)
		signal(reset[i], SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* Only 0, 1 and 2: a program sees the descriptors it (or leek) opens, not the test's. */
	close_range(3, ~0u, CLOSE_RANGE_CLOEXEC);
	execve(exe, (char *const *)argv, (char *const *)envp);
	_exit(124);
}

void proc_start_with(struct proc *p, const char *dir, const char *const *argv,
		     const struct proc_opts *o)
{
	static unsigned seq;
	size_t nenv = 0, n = 0, nextra = 0;
	const char *exe = o->exe ? o->exe : argv[0];

	memset(p, 0, sizeof(*p));
	p->timeout = o->timeout ? o->timeout : 60;
	seq++;
	snprintf(p->argv0, sizeof(p->argv0), "%s", argv[0]);
	snprintf(p->out_path, sizeof(p->out_path), "%s/stdout.%u", dir, seq);
	snprintf(p->err_path, sizeof(p->err_path), "%s/stderr.%u", dir, seq);
	while (environ[nenv])
		nenv++;
	while (o->env && o->env[nextra])
		nextra++;
	const char **envp = calloc(nextra + nenv + 1, sizeof(*envp));
	if (!envp)
		FAIL("out of memory");
	for (size_t i = 0; i < nextra; i++)
		envp[n++] = o->env[i];
	for (size_t i = 0; i < nenv; i++)
		if (!env_dropped(environ[i]) && !env_hidden(environ[i], o->env))
			envp[n++] = environ[i];
	envp[n] = NULL;

	fflush(NULL);
	clock_gettime(CLOCK_MONOTONIC, &p->start);
	p->pid = fork();
	if (p->pid < 0)
		FAIL("fork: %s", strerror(errno));
	if (p->pid == 0)
		child(p, exe, argv, envp, o);
	setpgid(p->pid, p->pid);
	free(envp);
}

void proc_start(struct proc *p, const char *dir, const char *const *argv, const char *const *env,
		unsigned timeout)
{
	proc_start_with(p, dir, argv, &(struct proc_opts){ .env = env, .timeout = timeout });
}

void proc_wait(struct proc *p)
{
	struct timespec now, nap = { 0, 1000 * 1000 };
	int status;

	for (;;) {
		struct rusage ru;
		pid_t w = wait4(p->pid, &status, WNOHANG, &ru);
		if (w == p->pid) {
			p->max_rss_kb = ru.ru_maxrss;
			break;
		}
		if (w < 0 && errno != EINTR)
			FAIL("wait4: %s", strerror(errno));
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - p->start.tv_sec >= (time_t)p->timeout) {
			kill(-p->pid, SIGKILL);
			kill(p->pid, SIGKILL);
			waitpid(p->pid, &status, 0);
			FAIL("%s (pid %d) did not finish in %u s (a deadlock?); killed. Output in %s",
			     p->argv0, (int)p->pid, p->timeout, p->out_path);
		}
		nanosleep(&nap, NULL);
		if (nap.tv_nsec < 4 * 1000 * 1000)
			nap.tv_nsec *= 2; /* quick programs are the rule: poll every 4 ms at most */
	}
	kill(-p->pid, SIGKILL); /* stragglers of the process group, if any */
	p->wstatus = status;
	p->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	p->out = read_file(p->out_path, &p->out_len);
	p->err = read_file(p->err_path, &p->err_len);
	if (WIFEXITED(status) && (p->status == 124 || p->status == 125) && !p->err_len)
		FAIL("cannot start %s (exit %d: %s)", p->argv0, p->status,
		     p->status == 124 ? "execve failed"
				      : "cannot set up its output, directory or limits");
}

void proc_run(struct proc *p, const char *dir, const char *const *argv, const char *const *env,
	      unsigned timeout)
{
	proc_start(p, dir, argv, env, timeout);
	proc_wait(p);
}

void proc_free(struct proc *p)
{
	free(p->out);
	free(p->err);
	p->out = p->err = NULL;
}
