/* test-hostile-profiles.c: what a hostile profile, another user, an odd environment or a closed
 * pipe can make the leek binary do, end to end.
 *
 * Profiles are built byte-exact with build-profile.h. Whatever a profile names, `leek report` and
 * `leek dump` must finish (a FIFO at a module's path would block an open(2) for good: each such
 * run has a timeout far above its need, and a hang fails the test), and nothing a profile or the
 * file system holds may reach the terminal as a control byte. `leek run` must ignore a profile
 * of another user's that carries its session, keep DEBUGINFOD_URLS from its own symbolizing (but
 * not from the program), return the program's status through a closed pipe, and write its .zst
 * files 0600 whatever the umask. The `leek run` tests need libleek.so and the fixtures, so they
 * are left out under a sanitizer; the rest runs under ASan too.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "build-profile.h"
#include "files.h"
#include "harness.h"
#include "leek.h"

#define TIMEOUT 30 /* seconds: each run here takes well under one */

static struct proc res;

/* `leek ARGS...` (NULL-terminated) in dir, with the extra environment env (may be NULL). */
static void leek_env(const char *dir, const char *const *env, const char *const *args)
{
	proc_free(&res);
	leek_exec(&res, dir, env, args, TIMEOUT);
}

#define LEEK(dir, ...)          leek_env(dir, NULL, (const char *const[]){ __VA_ARGS__, NULL })
#define LEEK_ENV(dir, env, ...) leek_env(dir, env, (const char *const[]){ __VA_ARGS__, NULL })

/* A profile of one process whose exe is exe and whose one module (id 1) is at path module, with
 * one stack in that module and one block live at the end: reporting it symbolizes the module. */
static void build_profile(struct pbuf *b, const char *exe, const char *module, uint64_t session)
{
	static const uint64_t frames[] = { 0x10000100, 0x10000200 };
	static uint64_t trailer[LK_CNT_MAX + 1];
	struct lk_module_info m = { .id = 1, .base = 0x10000000, .nseg = 1,
				    .seg = { { 0, 0x10000 } }, .path = module,
				    .path_len = (uint32_t)strlen(module) };

	*b = (struct pbuf){ 0 };
	trailer[LK_CNT_SAMPLES] = 1;
	pb_header(b, &(struct pb_header){ .pid = 4242, .ppid = 1, .period = 1,
					  .start_realtime_ns = 1700000000000000000,
					  .start_monotonic_ns = 1000000000, .session = session,
					  .exe = exe });
	PB_REC(b, lk_rec_module(rec, 0, &m));
	PB_REC(b, lk_rec_stack(rec, 1, frames, 2));
	pb_alloc(b, 1000, 42, 0x5000, 4096, 1);
	PB_REC(b, lk_rec_counters(rec, LK_REC_TRAILER, 1000, 1700000001000000000, trailer));
}

static void write_profile(const char *path, const char *exe, const char *module, uint64_t session)
{
	struct pbuf b;

	build_profile(&b, exe, module, session);
	write_file(path, b.p, b.len);
	free(b.p);
	free(b.map);
}

/* The first byte of s[0..len) that a terminal would act on: a control byte other than the newline
 * that ends each line, or DEL; -1 if none. */
static long control_byte(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (((unsigned char)s[i] < 0x20 && s[i] != '\n') || (unsigned char)s[i] == 0x7f)
			return (long)i;
	return -1;
}

#define ASSERT_NO_CONTROL(what, s, len)                                                            \
	do {                                                                                       \
		long _at = control_byte((s), (len));                                               \
		if (_at >= 0)                                                                      \
			FAIL("%s: control byte 0x%02x at %ld of:\n%s", what,                       \
			     (unsigned char)(s)[_at], _at, s);                                     \
	} while (0)

/* A module whose path is a FIFO: libdwfl would open it with a blocking open(2) and wait for a
 * writer for ever. `leek report` says the file is not regular and reports the address; `leek
 * dump` opens no module at all. */
TEST(module_fifo)
{
	char dir[256], fifo[300], path[300];

	tmp_dir(dir);
	snprintf(fifo, sizeof(fifo), "%s/lib.so", dir);
	snprintf(path, sizeof(path), "%s/p.lk", dir);
	ASSERT_OK(mkfifo(fifo, 0600));
	write_profile(path, "/usr/bin/prog", fifo, 7);

	LEEK(dir, "report", path);
	if (res.status != 0)
		FAIL("leek report: exit %d; stderr:\n%s", res.status, res.err);
	ASSERT_CONTAINS(res.err, "lib.so: not a regular file: no symbols");
	ASSERT_CONTAINS(res.out, "lib.so+0x");
	LEEK(dir, "report", "--format", "json", path);
	ASSERT_EQ(res.status, 0);
	LEEK(dir, "report", "--debug-dir", dir, path);
	ASSERT_EQ(res.status, 0);
	LEEK(dir, "dump", path);
	ASSERT_EQ(res.status, 0);
	ASSERT_CONTAINS(res.out, "path=");
	unlink(fifo);
	tmp_dir_remove(dir);
}

/* Escape and bell bytes in a module path, in the exe path of the header and in the profile's own
 * file name: an OSC sequence that would retitle the terminal (and worse, on some). Neither the
 * report nor any message may pass one on raw; the messages show them as \xNN, as the report
 * does. */
TEST(control_bytes_escaped)
{
	char dir[256], module[300], path[300], gone[320];

	tmp_dir(dir);
	snprintf(module, sizeof(module), "%s/\033]0;pwned\007.so", dir);
	snprintf(path, sizeof(path), "%s/p\033[2J.lk", dir);
	write_profile(path, "/bin/\033]0;exe\007", module, 7);

	LEEK(dir, "report", path);
	ASSERT_EQ(res.status, 0);
	ASSERT_CONTAINS(res.err, "warning: module ");
	ASSERT_CONTAINS(res.err, "\\x1b]0;pwned\\x07.so");
	ASSERT_NO_CONTROL("report's stderr", res.err, res.err_len);
	ASSERT_NO_CONTROL("report's stdout", res.out, res.out_len);
	LEEK(dir, "report", "--stacks", "--view", "alloc", path);
	ASSERT_EQ(res.status, 0);
	ASSERT_NO_CONTROL("report --stacks's stderr", res.err, res.err_len);
	ASSERT_NO_CONTROL("report --stacks's stdout", res.out, res.out_len);
	LEEK(dir, "dump", path);
	ASSERT_EQ(res.status, 0);
	ASSERT_NO_CONTROL("dump's stdout", res.out, res.out_len);
	LEEK(dir, "dump", "--summary", path);
	ASSERT_NO_CONTROL("dump --summary's stdout", res.out, res.out_len);

	/* The reader's own messages name the file: cut short, it has no trailer. */
	struct pbuf b;
	build_profile(&b, "/bin/x", module, 7);
	write_file(path, b.p, b.len - 4);
	LEEK(dir, "report", path);
	ASSERT_CONTAINS(res.err, "p\\x1b[2J.lk");
	ASSERT_NO_CONTROL("a cut profile's stderr", res.err, res.err_len);
	LEEK(dir, "dump", path);
	ASSERT_CONTAINS(res.err, "p\\x1b[2J.lk");
	ASSERT_NO_CONTROL("dump of a cut profile's stderr", res.err, res.err_len);
	ASSERT_NO_CONTROL("dump of a cut profile's stdout", res.out, res.out_len);
	write_file(path, b.p, 20); /* a header cut short: an error, not a report */
	LEEK(dir, "report", path);
	ASSERT_EQ(res.status, 2);
	ASSERT_NO_CONTROL("a broken profile's stderr", res.err, res.err_len);
	free(b.p);
	free(b.map);

	/* `leek compress` prints both names. */
	write_profile(path, "/bin/x", module, 7);
	LEEK(dir, "compress", path);
	ASSERT_EQ(res.status, 0);
	ASSERT_CONTAINS(res.out, "p\\x1b[2J.lk.zst");
	ASSERT_NO_CONTROL("compress's stdout", res.out, res.out_len);
	snprintf(gone, sizeof(gone), "%s.zst", path);
	unlink(gone);
	tmp_dir_remove(dir);
}

/* `leek compress` writes its .zst 0600 whatever the umask and the profile's mode: the profile
 * holds the command line and every module's load address. */
TEST(compress_writes_0600)
{
	char dir[256], path[300], zst[400];
	struct stat st;

	tmp_dir(dir);
	snprintf(path, sizeof(path), "%s/p.lk", dir);
	snprintf(zst, sizeof(zst), "%s.zst", path);
	write_profile(path, "/bin/x", "/nonexistent/lib.so", 7);
	ASSERT_OK(chmod(path, 0666));
	umask(0);
	LEEK(dir, "compress", path);
	ASSERT_EQ(res.status, 0);
	ASSERT_OK(stat(zst, &st));
	ASSERT_EQ(st.st_mode & 07777, 0600);
	unlink(zst);
	tmp_dir_remove(dir);
}

/* ---- leek run: needs libleek.so and the fixtures, so not under a sanitizer ---- */

#if defined(LIBLEEK_PATH) && defined(FX_DIR)
#define FX(name) FX_DIR "/" name

/* The run's .zst is 0600 with umask 0, whatever mode libleek gave the profile. */
TEST(run_writes_0600)
{
	char dir[256], out[300];
	struct stat st;
	char *path;

	tmp_dir(dir);
	snprintf(out, sizeof(out), "%s/x.%%p.lk", dir);
	umask(0);
	LEEK(dir, "run", "--period", "1", "-o", out, "--", FX("fx-exit"), "exit", "0");
	ASSERT_EQ(res.status, 0);
	ASSERT_EQ(count_files(dir, "x.", ".lk"), 0);
	path = find_one(dir, "x.", "");
	ASSERT_TRUE(path && strstr(path, ".lk.zst"));
	ASSERT_OK(stat(path, &st));
	ASSERT_EQ(st.st_mode & 07777, 0600);
	free(path);
	tmp_dir_remove(dir);
}

/* Another user reads the session from a profile of the run (its header is no secret) and plants
 * a file that carries it, as the fixture does here as root with uid 65534: `leek run` must not
 * summarize it, compress it (and remove it), or follow it. */
TEST(run_ignores_another_users_profile)
{
	char dir[256], out[300], template[300], planted[300], want[400];

	if (geteuid() != 0)
		SKIP("planting a file of another user's needs root (chown)");
	tmp_dir(dir);
	ASSERT_OK(chmod(dir, 0777)); /* the world-writable output directory */
	snprintf(out, sizeof(out), "%s/x.%%p.lk", dir);
	snprintf(template, sizeof(template), "%s/template", dir);
	snprintf(planted, sizeof(planted), "%s/x.planted.lk", dir);
	write_profile(template, "/usr/bin/planted", "/nonexistent/planted.so", 1);

	LEEK(dir, "run", "--period", "1", "-o", out, "--", FX("fx-env"), "plant", template, planted,
	     "65534");
	if (res.status != 0)
		FAIL("leek run: exit %d; stderr:\n%s", res.status, res.err);
	ASSERT_CONTAINS(res.err, "1 profile written");
	ASSERT_TRUE(!strstr(res.err, "planted,"));     /* no summary line for its exe */
	snprintf(want, sizeof(want), "warning: %s carries this run's session but belongs to uid "
		 "65534: ignored", planted);
	ASSERT_CONTAINS(res.err, want);
	ASSERT_EQ(access(planted, F_OK), 0); /* neither compressed nor removed */
	ASSERT_EQ(count_files(dir, "x.planted", ".zst"), 0);
	ASSERT_EQ(count_files(dir, "x.", ".lk.zst"), 1); /* the program's own */
	tmp_dir_remove(dir);
}

/* ---- DEBUGINFOD_URLS: a listener on the loopback that counts connections and closes each ---- */

struct listener {
	int fd;
	unsigned short port;
	atomic_uint connections;
	pthread_t th;
};

static void *listener_run(void *arg)
{
	struct listener *l = arg;
	int c;

	while ((c = accept(l->fd, NULL, NULL)) >= 0 || errno == EINTR || errno == ECONNABORTED) {
		if (c >= 0) {
			atomic_fetch_add(&l->connections, 1);
			close(c); /* the client fails at once, and asks no more of this server */
		}
	}
	return NULL;
}

/* Listens on l->port, or on a port of its choosing if that is 0 (it then sets l->port). */
static void listener_start(struct listener *l)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(l->port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int one = 1;

	l->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_TRUE(l->fd >= 0);
	ASSERT_OK(setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
	ASSERT_OK(bind(l->fd, (struct sockaddr *)&a, sizeof(a)));
	ASSERT_OK(listen(l->fd, 64));
	ASSERT_OK(getsockname(l->fd, (struct sockaddr *)&a, &len));
	l->port = ntohs(a.sin_port);
	atomic_store(&l->connections, 0);
	ASSERT_EQ(pthread_create(&l->th, NULL, listener_run, l), 0);
}

/* The connections it has accepted, once it has stopped (shutdown wakes accept). Called after the
 * client has exited: each connection it made has been accepted and closed, since closing is all
 * that ended it (a timeout aside: DEBUGINFOD_TIMEOUT, far above what accepting takes). */
static unsigned listener_stop(struct listener *l)
{
	shutdown(l->fd, SHUT_RDWR);
	pthread_join(l->th, NULL);
	close(l->fd);
	return atomic_load(&l->connections);
}

/* DEBUGINFOD_URLS (Debian's login shells set it) must not make `leek run` ask debuginfod servers
 * for the modules it symbolizes (a silent server cost 9.6 s a run), but the program inherits it
 * unchanged. The program allocates in a stripped library, whose debug file is nowhere here: a
 * lookup libdw would take to the server. Whether it would at all is checked with `leek report
 * --debuginfod` on the run's profile: without libdebuginfod, a run could never ask, and the test
 * would prove nothing. */
TEST(run_keeps_debuginfod_to_the_program)
{
	char dir[256], out[300], urls[100], cache[300], cache2[300], want[120];
	struct listener l = { .port = 0 };
	unsigned n;
	char *path;

#ifndef FIXTURE_STRIPPED
	SKIP("no objcopy, so no module without DWARF to look up");
#else
	if (!dlopen("libdebuginfod.so.1", RTLD_LAZY))
		SKIP("no libdebuginfod.so.1 (Debian: libdebuginfod1): libdw asks no server");
	unsetenv("DEBUGINFOD_URLS"); /* nothing of the outer environment's */
	unsetenv("DEBUGINFOD_CACHE_PATH");
	tmp_dir(dir);
	snprintf(out, sizeof(out), "%s/x.%%p.lk", dir);
	listener_start(&l);
	snprintf(urls, sizeof(urls), "DEBUGINFOD_URLS=http://127.0.0.1:%u/", l.port);
	/* Each run its own cache: a failed lookup is remembered there, and not asked again. */
	snprintf(cache, sizeof(cache), "DEBUGINFOD_CACHE_PATH=%s/cache", dir);
	snprintf(cache2, sizeof(cache2), "DEBUGINFOD_CACHE_PATH=%s/cache2", dir);
	const char *const env[] = { urls, cache, "DEBUGINFOD_TIMEOUT=10", NULL };
	const char *const env2[] = { urls, cache2, "DEBUGINFOD_TIMEOUT=10", NULL };

	LEEK_ENV(dir, env, "run", "--period", "1", "--no-compress", "-o", out, "--", FX("fx-env"),
		 "env", "DEBUGINFOD_URLS", FIXTURE_STRIPPED);
	n = listener_stop(&l);
	if (res.status != 0)
		FAIL("leek run: exit %d; stderr:\n%s", res.status, res.err);
	snprintf(want, sizeof(want), "%s\n", urls);
	ASSERT_CONTAINS(res.out, want); /* the program saw it */
	path = find_one(dir, "x.", "");
	ASSERT_TRUE(path);

	/* Would libdw have asked? The report of the same profile, allowed to. */
	listener_start(&l);
	LEEK_ENV(dir, env2, "report", "--debuginfod", path);
	unsigned control = listener_stop(&l);
	ASSERT_EQ(res.status, 0);
	if (control == 0)
		SKIP("libdw here asks no debuginfod server, even allowed to (%s)", path);
	if (n != 0)
		FAIL("leek run made %u connections to DEBUGINFOD_URLS's server", n);

	/* And `leek report` without --debuginfod asks nothing either. */
	listener_start(&l);
	LEEK_ENV(dir, env2, "report", path);
	ASSERT_EQ(listener_stop(&l), 0);
	free(path);
	tmp_dir_remove(dir);
#endif
}

/* `leek run ... 2>&1 | true`: the reader has gone by the time leek writes its summary. leek must
 * still return the program's status and compress its profile; the program gets SIGPIPE's default
 * action all the same. */
TEST(run_status_through_a_closed_pipe)
{
	extern char **environ;
	char dir[256], out[300];
	const char *argv[] = { leek_bin, "run", "--period", "1", "-o", out, "--", FX("fx-exit"),
			       "exit", "5", NULL };
	const char *envp[256];
	struct timespec nap = { 0, 10 * 1000 * 1000 };
	int pipefd[2], status = 0;
	size_t ne = 0;
	pid_t pid, w;

	tmp_dir(dir);
	snprintf(out, sizeof(out), "%s/x.%%p.lk", dir);
	for (char **e = environ; *e && ne + 3 < sizeof(envp) / sizeof(envp[0]); e++)
		if (strncmp(*e, "LD_PRELOAD=", 11) && strncmp(*e, "LEEK_", 5))
			envp[ne++] = *e;
	envp[ne++] = "LEEK_LIBRARY=" LIBLEEK_PATH;
	envp[ne] = NULL;
	ASSERT_OK(pipe2(pipefd, O_CLOEXEC));
	close(pipefd[0]); /* no reader at all, before leek starts */
	fflush(NULL);
	pid = fork();
	ASSERT_TRUE(pid >= 0);
	if (pid == 0) {
		alarm(0);
		signal(SIGPIPE, SIG_DFL);
		if (dup2(pipefd[1], 1) < 0 || dup2(pipefd[1], 2) < 0)
			_exit(125);
		execve(argv[0], (char *const *)argv, (char *const *)envp);
		_exit(124);
	}
	close(pipefd[1]);
	for (int i = 0; (w = waitpid(pid, &status, WNOHANG)) == 0 && i < TIMEOUT * 100; i++)
		nanosleep(&nap, NULL);
	if (w == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		FAIL("leek run did not finish in %d s", TIMEOUT);
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 5)
		FAIL("leek run: status %#x (exit %d, signal %d), expected exit 5", status,
		     WIFEXITED(status) ? WEXITSTATUS(status) : -1,
		     WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	ASSERT_EQ(count_files(dir, "x.", ".lk.zst"), 1);
	ASSERT_EQ(count_files(dir, "x.", ".lk"), 0);
	tmp_dir_remove(dir);

	/* SIGPIPE is leek's own business: the program still has the default action. */
	tmp_dir(dir);
	snprintf(out, sizeof(out), "%s/x.%%p.lk", dir);
	LEEK(dir, "run", "--no-compress", "-o", out, "--", FX("fx-env"), "sigpipe");
	ASSERT_EQ(res.status, 0);
	ASSERT_CONTAINS(res.out, "sigpipe default\n");
	tmp_dir_remove(dir);
}

/* A program loads a library from a path with escape bytes and removes the file: `leek run`'s
 * summary warns about the missing module, escaped. */
TEST(run_warning_escaped)
{
	char dir[256], out[300], copy[300];

	tmp_dir(dir);
	snprintf(out, sizeof(out), "%s/x.%%p.lk", dir);
	snprintf(copy, sizeof(copy), "%s/lib\033]0;pwned\007.so", dir);
	LEEK(dir, "run", "--period", "1", "--no-compress", "-o", out, "--", FX("fx-env"),
	     "dlopen-gone", FX_DLIB, copy);
	if (res.status != 0)
		FAIL("leek run: exit %d; stderr:\n%s", res.status, res.err);
	ASSERT_CONTAINS(res.err, "warning: module ");
	ASSERT_CONTAINS(res.err, "lib\\x1b]0;pwned\\x07.so");
	ASSERT_NO_CONTROL("leek run's stderr", res.err, res.err_len);
	tmp_dir_remove(dir);
}

#else
TEST(run_tests)
{
	SKIP("no libleek.so or fixtures in this build (a sanitizer build)");
}
#endif
