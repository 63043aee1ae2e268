/* proc.c: starts programs for the report tests and collects their output (see proc.h).
 *
 * The driver's side: it runs without LD_PRELOAD and may allocate as it likes. A failure leaves
 * the temporary directory behind on purpose, and every message names it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "proc.h"

extern char **environ;

void tmp_dir(char *dir)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(dir, 256, "%s/leek-report-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		FAIL("mkdtemp %s: %s", dir, strerror(errno));
}

void tmp_dir_remove(const char *dir)
{
	char path[512];
	DIR *d = opendir(dir);
	struct dirent *de;

	while (d && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

char *read_file(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t n = 0, cap = 65536;
	char *buf;
	ssize_t k;

	if (fd < 0)
		FAIL("%s: %s", path, strerror(errno));
	buf = malloc(cap);
	while (buf && (k = read(fd, buf + n, cap - n - 1)) > 0) {
		n += (size_t)k;
		if (cap - n < 2)
			buf = realloc(buf, cap *= 2);
	}
	close(fd);
	if (!buf)
		FAIL("out of memory");
	buf[n] = 0;
	if (len)
		*len = n;
	return buf;
}

void write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0 || write(fd, data, len) != (ssize_t)len || close(fd) < 0)
		FAIL("cannot write %s: %s", path, strerror(errno));
}

char *find_one(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char *found = NULL;

	if (!d)
		FAIL("%s: %s", dir, strerror(errno));
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, prefix, strlen(prefix)) != 0)
			continue;
		if (found)
			FAIL("%s: two files start with %s: %s and %s", dir, prefix, found,
			     de->d_name);
		if (asprintf(&found, "%s/%s", dir, de->d_name) < 0)
			FAIL("out of memory");
	}
	closedir(d);
	return found;
}

static bool env_dropped(const char *e)
{
	return !strncmp(e, "LD_PRELOAD=", 11) || !strncmp(e, "LEEK_", 5) ||
	       !strncmp(e, "MALLOC_PERTURB_=", 16) || !strncmp(e, "MALLOC_CHECK_=", 14);
}

void proc_start(struct proc *p, const char *dir, const char *const *argv, const char *const *env,
		unsigned timeout)
{
	static unsigned seq;
	size_t nenv = 0, n = 0, nextra = 0;

	memset(p, 0, sizeof(*p));
	p->timeout = timeout ? timeout : 60;
	seq++;
	snprintf(p->argv0, sizeof(p->argv0), "%s", argv[0]);
	snprintf(p->out_path, sizeof(p->out_path), "%s/stdout.%u", dir, seq);
	snprintf(p->err_path, sizeof(p->err_path), "%s/stderr.%u", dir, seq);
	while (environ[nenv])
		nenv++;
	while (env && env[nextra])
		nextra++;
	const char **envp = calloc(nenv + nextra + 1, sizeof(*envp));
	if (!envp)
		FAIL("out of memory");
	for (size_t i = 0; i < nenv; i++)
		if (!env_dropped(environ[i]))
			envp[n++] = environ[i];
	for (size_t i = 0; i < nextra; i++)
		envp[n++] = env[i];
	envp[n] = NULL;

	fflush(NULL);
	clock_gettime(CLOCK_MONOTONIC, &p->start);
	p->pid = fork();
	if (p->pid < 0)
		FAIL("fork: %s", strerror(errno));
	if (p->pid == 0) {
		setpgid(0, 0);
		int fd = open(p->out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		int fd2 = open(p->err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		int fd0 = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd < 0 || fd2 < 0 || fd0 < 0 || dup2(fd0, 0) < 0 || dup2(fd, 1) < 0 ||
		    dup2(fd2, 2) < 0)
			_exit(125);
		/* The harness's alarm must not follow the program, and neither may a signal
		 * that whoever started the tests ignores or blocks (a shell's background job
		 * ignores SIGINT): the signal tests need the default actions. */
		static const int reset[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2,
					     SIGPIPE };
		sigset_t none;
		alarm(0);
		for (size_t i = 0; i < sizeof(reset) / sizeof(reset[0]); i++)
			signal(reset[i], SIG_DFL);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execve(argv[0], (char *const *)argv, (char *const *)envp);
		_exit(124);
	}
	setpgid(p->pid, p->pid);
	free(envp);
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
			FAIL("pid %d did not finish in %u s; killed. Output in %s", (int)p->pid,
			     p->timeout, p->out_path);
		}
		nanosleep(&nap, NULL);
		if (nap.tv_nsec < 4 * 1000 * 1000)
			nap.tv_nsec *= 2; /* quick programs are the rule: poll every 4 ms at most */
	}
	clock_gettime(CLOCK_MONOTONIC, &now);
	p->seconds = (double)(now.tv_sec - p->start.tv_sec) +
		     (double)(now.tv_nsec - p->start.tv_nsec) * 1e-9;
	kill(-p->pid, SIGKILL); /* stragglers of the process group, if any */
	p->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	p->out = read_file(p->out_path, &p->out_len);
	p->err = read_file(p->err_path, &p->err_len);
	if (WIFEXITED(status) && (p->status == 124 || p->status == 125) && !p->err_len)
		FAIL("cannot start %s (exit %d: %s)", p->argv0, p->status,
		     p->status == 124 ? "execve failed" : "cannot redirect its output");
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

size_t count_files(const char *dir, const char *prefix, const char *suffix)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = 0, sl = strlen(suffix);

	if (!d)
		FAIL("%s: %s", dir, strerror(errno));
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		n += !strncmp(de->d_name, prefix, strlen(prefix)) && len >= sl &&
		     !strcmp(de->d_name + len - sl, suffix);
	}
	closedir(d);
	return n;
}
