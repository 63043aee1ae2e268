/* test-ctl.c: `leek ctl` against a running service (ctl.c) under libleek.so: a dormant start
 * (LEEK_START=off), switching on and off, marks, a command the process is not yet there to carry
 * out, and what `leek ctl` refuses. The profile is read back with `leek dump` and `leek report`,
 * as a user reads it.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "files.h"
#include "harness.h"
#include "json-get.h"
#include "json.h"
#include "leek.h"
#include "leek/format.h"

/* The service, started in dir under libleek with extra environment entries (up to 3). */
static void start_service(struct proc *svc, const char *dir, const char *arg, const char *e1,
			  const char *e2)
{
	char out[300], prog[300];
	const char *env[] = { "LD_PRELOAD=" LIBLEEK_PATH, out, e1, e2, NULL };
	const char *argv[] = { prog, arg, NULL };

	snprintf(out, sizeof(out), "LEEK_OUTPUT=%s/svc.%%p.lk", dir);
	snprintf(prog, sizeof(prog), "%s/ctl", PROG_DIR);
	proc_start_with(svc, dir, argv, &(struct proc_opts){ .env = env, .cwd = dir, .timeout = 60 });
}

static void touch(const char *dir, const char *name)
{
	char path[300];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	write_file(path, "", 0);
}

/* Waits (up to 20 s) for dir/name. */
static void wait_for(const char *dir, const char *name)
{
	char path[300];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	for (int i = 0; i < 2000 && access(path, F_OK) != 0; i++)
		usleep(10000);
	if (access(path, F_OK) != 0)
		FAIL("%s did not appear in 20 s", path);
}

/* `leek ctl PID ARGS...`: its exit status; its stdout and stderr in *out if out. */
static int ctl(const char *dir, pid_t pid, const char *a1, const char *a2, const char *a3,
	       struct proc *out)
{
	char spid[32];
	const char *args[] = { "ctl", spid, a1, a2, a3, NULL };
	struct proc p;
	int status;

	snprintf(spid, sizeof(spid), "%d", (int)pid);
	leek_exec(&p, dir, NULL, args, 30);
	status = p.status;
	if (out)
		*out = p;
	else
		proc_free(&p);
	return status;
}

/* The service's profile, dumped: the text of `leek dump`. */
static char *dump(const char *dir, char **path)
{
	const char *args[] = { "dump", NULL, NULL };
	struct proc p;

	*path = find_one(dir, "svc.", ".lk");
	args[1] = *path;
	leek_exec(&p, dir, NULL, args, 60);
	ASSERT_EQ(p.status, 0);
	char *text = strdup(p.out);
	proc_free(&p);
	return text;
}

/* The time of the line of `leek dump` that holds what, in seconds; -1 if none. */
static double time_of(const char *text, const char *what)
{
	const char *l = strstr(text, what);

	while (l && l > text && l[-1] != '\n')
		l--;
	const char *t = l ? strstr(l, " t=") : NULL;
	return t ? strtod(t + 3, NULL) : -1;
}

static size_t count(const char *text, const char *what)
{
	size_t n = 0;

	for (const char *p = strstr(text, what); p; p = strstr(p + 1, what))
		n++;
	return n;
}

/* A dormant start, a mark, on, a mark, off: the CTL records in that order, every sample between
 * on and off, and the report's totals. */
TEST(ctl_dormant_on_off_marks)
{
	char dir[256];
	struct proc svc;
	char *path;

	tmp_dir(dir);
	start_service(&svc, dir, "run", "LEEK_START=off", NULL);
	wait_for(dir, "ready");
	ASSERT_EQ(ctl(dir, svc.pid, "mark", "before", NULL, NULL), 0);
	ASSERT_EQ(ctl(dir, svc.pid, "on", NULL, NULL, NULL), 0);
	usleep(400000);
	ASSERT_EQ(ctl(dir, svc.pid, "mark", "during", NULL, NULL), 0);
	ASSERT_EQ(ctl(dir, svc.pid, "off", NULL, NULL, NULL), 0);
	usleep(200000);
	touch(dir, "stop");
	proc_wait(&svc);
	ASSERT_EQ(svc.status, 0);

	char *text = dump(dir, &path);
	double off0 = time_of(text, " CTL "), before = time_of(text, "name=before");
	const char *on_line = strstr(text, " on\n"), *off_line = on_line ? strstr(on_line, " off\n")
									: NULL;
	ASSERT_TRUE(on_line && off_line);
	double on = time_of(on_line, " on\n"), off = time_of(off_line, " off\n");
	double during = time_of(text, "name=during");
	ASSERT_EQ(count(text, " CTL "), 5);
	ASSERT_TRUE(off0 >= 0 && off0 <= before && before <= on && on <= during && during <= off);
	ASSERT_TRUE(off - on >= 0.3); /* the 400 ms between them, less the tick of the clock */
	/* Every sample between on and off: the first after on, the last before off. */
	size_t n = count(text, " ALLOC ");
	ASSERT_TRUE(n >= 20); /* 0.4 s at about 250 MB/s, a sample every 512 KiB on average */
	for (const char *l = strstr(text, " ALLOC "); l; l = strstr(l + 1, " ALLOC ")) {
		double t = time_of(l, " ALLOC ");
		if (t < on || t > off)
			FAIL("an ALLOC at %.3f s, outside the on period %.3f to %.3f s", t, on, off);
	}

	const char *args[] = { "report", "-f", "json", path, NULL };
	struct proc rep;
	leek_exec(&rep, dir, NULL, args, 60);
	ASSERT_EQ(rep.status, 0);
	struct json *doc = NULL;
	char jerr[128];
	ASSERT_EQ(json_parse(rep.out, rep.out_len, &doc, jerr, sizeof(jerr)), 0);
	const struct json *t = json_get(doc, "totals");
	ASSERT_EQ(get_num(t, "off_periods"), 2);
	ASSERT_TRUE(get_bool(t, "off_at_end"));
	ASSERT_EQ(get_num(t, "marks_total"), 2);
	const struct json *marks = json_get(t, "marks");
	ASSERT_STREQ(get_str(json_at(marks, 0), "name"), "before");
	ASSERT_STREQ(get_str(json_at(marks, 1), "name"), "during");
	/* Off from the start to on, and from off to the end. */
	double dur = get_num(t, "duration_s");
	ASSERT_NEAR(get_num(t, "off_s"), (on - off0) + (dur - off), 0.002);
	json_free(doc);
	proc_free(&rep);

	/* Marks as moments: report --at MARK, diff --from MARK --to MARK, report --from MARK --to
	 * MARK, and a mark not there. */
	const char *inuse[] = { "report", "inuse", "--at", "during", path, NULL };
	leek_exec(&rep, dir, NULL, inuse, 60);
	ASSERT_EQ(rep.status, 0);
	ASSERT_CONTAINS(rep.out, "inuse: heap live at mark during");
	proc_free(&rep);
	const char *diff[] = { "diff", "-f", "json", "--from", "before", "--to", "during", path, NULL };
	leek_exec(&rep, dir, NULL, diff, 60);
	ASSERT_EQ(rep.status, 0);
	ASSERT_EQ(json_parse(rep.out, rep.out_len, &doc, jerr, sizeof(jerr)), 0);
	ASSERT_STREQ(get_str(doc, "from_mark"), "before");
	ASSERT_STREQ(get_str(doc, "at_mark"), "during");
	/* Allocated between the marks: what was sampled, all of it after on and before during. */
	size_t between = 0;
	for (const char *l = strstr(text, " ALLOC "); l; l = strstr(l + 1, " ALLOC "))
		between += time_of(l, " ALLOC ") <= during;
	ASSERT_EQ(get_num(json_get(doc, "allocated"), "samples"), (double)between);
	json_free(doc);
	proc_free(&rep);
	/* report --from MARK --to MARK: alloc counts exactly the samples between the marks, and
	 * leaks the same blocks less those freed by during (none of the service's live on). */
	const char *window[] = { "report", "alloc", "-f", "json", "--from", "before", "--to",
				 "during", path, NULL };
	leek_exec(&rep, dir, NULL, window, 60);
	ASSERT_EQ(rep.status, 0);
	ASSERT_EQ(json_parse(rep.out, rep.out_len, &doc, jerr, sizeof(jerr)), 0);
	ASSERT_STREQ(get_str(json_get(doc, "options"), "from_mark"), "before");
	ASSERT_STREQ(get_str(json_get(doc, "options"), "at_mark"), "during");
	ASSERT_EQ(get_num(json_get(doc, "view_total"), "samples"), (double)between);
	json_free(doc);
	proc_free(&rep);
	const char *window_text[] = { "report", "--from", "before", "--to", "during", path, NULL };
	leek_exec(&rep, dir, NULL, window_text, 60);
	ASSERT_EQ(rep.status, 0);
	ASSERT_CONTAINS(rep.out, "leaks: heap live at mark during and allocated after mark before");
	proc_free(&rep);
	const char *window_peak[] = { "report", "peak", "--from", "before", path, NULL };
	leek_exec(&rep, dir, NULL, window_peak, 60);
	ASSERT_EQ(rep.status, 1);
	ASSERT_CONTAINS(rep.err, "--from and --to belong to the leaks, inuse and alloc views");
	proc_free(&rep);
	const char *nomark[] = { "report", "inuse", "--at", "nosuch", path, NULL };
	leek_exec(&rep, dir, NULL, nomark, 60);
	ASSERT_EQ(rep.status, 2);
	ASSERT_CONTAINS(rep.err, "no mark 'nosuch' in the profile (its marks: before, during)");
	proc_free(&rep);
	const char *backwards[] = { "diff", "--from", "during", "--to", "before", path, NULL };
	leek_exec(&rep, dir, NULL, backwards, 60);
	ASSERT_EQ(rep.status, 2);
	ASSERT_CONTAINS(rep.err, "mark 'during' comes after mark 'before'");
	proc_free(&rep);

	free(text);
	free(path);
	proc_free(&svc);
	tmp_dir_remove(dir);
}

/* Exact mode, dormant to the end: no sample at all, a clean trailer. */
TEST(ctl_exact_dormant_records_nothing)
{
	char dir[256];
	struct proc svc;
	char *path;

	tmp_dir(dir);
	start_service(&svc, dir, "run", "LEEK_START=off", "LEEK_PERIOD=1");
	wait_for(dir, "ready");
	usleep(200000);
	touch(dir, "stop");
	proc_wait(&svc);
	ASSERT_EQ(svc.status, 0);
	char *text = dump(dir, &path);
	ASSERT_EQ(count(text, " ALLOC "), 0);
	ASSERT_EQ(count(text, " CTL "), 1);
	ASSERT_TRUE(strstr(text, "trailer=yes") != NULL);
	free(text);
	free(path);
	proc_free(&svc);
	tmp_dir_remove(dir);
}

/* Exact mode switched on: every allocation from then on is a sample. */
TEST(ctl_exact_on)
{
	char dir[256];
	struct proc svc;
	char *path;

	tmp_dir(dir);
	start_service(&svc, dir, "run", "LEEK_START=off", "LEEK_PERIOD=1");
	wait_for(dir, "ready");
	ASSERT_EQ(ctl(dir, svc.pid, "on", NULL, NULL, NULL), 0);
	usleep(200000);
	touch(dir, "stop");
	proc_wait(&svc);
	ASSERT_EQ(svc.status, 0);
	char *text = dump(dir, &path);
	size_t allocs = count(text, " ALLOC ");
	ASSERT_TRUE(allocs >= 64); /* one round of the loop at least */
	ASSERT_EQ(count(text, " FREE "), allocs); /* every block sampled is freed, and sampled */
	free(text);
	free(path);
	proc_free(&svc);
	tmp_dir_remove(dir);
}

/* A process that does not allocate cannot look: `leek ctl` says so (exit 3) and the command
 * stays, carried out at its next look. */
TEST(ctl_pending_then_carried_out)
{
	char dir[256];
	struct proc svc, out;
	char *path;

	tmp_dir(dir);
	start_service(&svc, dir, "wait", "LEEK_START=off", NULL);
	/* Its profile is there from the start: libleek opens it at start-up. */
	for (int i = 0; i < 2000 && count_files(dir, "svc.", ".lk") == 0; i++)
		usleep(10000);
	usleep(200000); /* past its start-up's allocations and their looks */
	ASSERT_EQ(ctl(dir, svc.pid, "--timeout=300ms", "on", NULL, &out), 3);
	ASSERT_CONTAINS(out.err, "not carried out within 300ms");
	proc_free(&out);
	touch(dir, "go");
	wait_for(dir, "ready");
	usleep(300000);
	touch(dir, "stop");
	proc_wait(&svc);
	ASSERT_EQ(svc.status, 0);
	char *text = dump(dir, &path);
	ASSERT_TRUE(strstr(text, " on\n") != NULL);
	ASSERT_TRUE(count(text, " ALLOC ") > 0);
	free(text);
	free(path);
	proc_free(&svc);
	tmp_dir_remove(dir);
}

/* What `leek ctl` refuses: no such process, a bad name, a file that is no profile. */
/* The objects of the site of hold's 4 KiB blocks in the last complete line of watch's JSON output
 * that has it; -1 if none yet. */
static double hold_objects(const char *out_path)
{
	char *text = read_file_or_empty(out_path, NULL), *line = text, *nl;
	double objects = -1;

	while ((nl = strchr(line, '\n'))) {
		struct json *doc;
		char err[128];
		if (json_parse(line, (size_t)(nl - line), &doc, err, sizeof(err)) < 0)
			FAIL("watch printed a line that is not JSON (%s): %.*s", err,
			     (int)(nl - line), line);
		const struct json *sites = json_get(doc, "sites");
		for (size_t i = 0; sites && i < sites->len; i++) {
			const struct json *site = json_at(sites, i);
			double n = get_num(site, "objects");
			if (!strcmp(get_str(site, "function"), "hold") && n > 0 &&
			    get_num(site, "bytes") == 4096 * n) /* not the calloc of the list */
				objects = n;
		}
		json_free(doc);
		line = nl + 1;
	}
	free(text);
	return objects;
}

/* sync with threads that sleep holding their blocks, their thread segments open (holders.c), in a
 * file that stays far below the 4 MiB at which libleek would end their bodies itself and below
 * its first growth step: only sync's ending of the bodies lets a follower past their SEGMENT
 * records. `leek watch` (exact mode, old reports of every block) must then count every held
 * block, exactly. */
TEST(ctl_sync_threads)
{
	char dir[256], out_path[300];
	struct proc svc, out, w;

	tmp_dir(dir);
	char prog[300], lkout[300];
	const char *env[] = { "LD_PRELOAD=" LIBLEEK_PATH, lkout, "LEEK_PERIOD=1", NULL };
	snprintf(lkout, sizeof(lkout), "LEEK_OUTPUT=%s/svc.%%p.lk", dir);
	snprintf(prog, sizeof(prog), "%s/holders", PROG_DIR);
	proc_start_with(&svc, dir, (const char *[]){ prog, NULL },
			&(struct proc_opts){ .env = env, .cwd = dir, .timeout = 60 });
	wait_for(dir, "ready");

	ASSERT_EQ(ctl(dir, svc.pid, "sync", NULL, NULL, &out), 0);
	ASSERT_CONTAINS(out.out, ": sync, carried out in ");
	const char *at = strstr(out.out, "whole up to offset ");
	ASSERT_TRUE(at != NULL);
	char *profile = find_one(dir, "svc.", ".lk");
	unsigned long long synced = strtoull(at + strlen("whole up to offset "), NULL, 10);
	struct stat st;
	ASSERT_EQ(stat(profile, &st), 0);
	ASSERT_TRUE(synced > LK_HEADER_FIXED_SIZE && synced <= (unsigned long long)st.st_size);
	proc_free(&out);

	char pid[32];
	snprintf(pid, sizeof(pid), "%d", (int)svc.pid);
	leek_start(&w, dir, NULL,
		   (const char *[]){ "watch", "--format", "json", "--every", "200ms", "--age", "0",
				     "--max-lag", "200ms", pid, NULL },
		   120);
	snprintf(out_path, sizeof(out_path), "%s", w.out_path);
	double objects = -1;
	for (int i = 0; i < 600 && (objects = hold_objects(out_path)) != 3 * 500; i++)
		usleep(100000);
	if (objects != 3 * 500) {
		kill(w.pid, SIGKILL); /* a failed test leaves nothing running */
		kill(svc.pid, SIGKILL);
		FAIL("watch counted %.0f blocks held by the sleeping threads, not 1500, in 60 s",
		     objects);
	}
	touch(dir, "stop");
	proc_wait(&svc);
	ASSERT_EQ(svc.status, 0);
	proc_wait(&w);
	ASSERT_EQ(w.status, 0);
	proc_free(&w);
	proc_free(&svc);
	free(profile);
	tmp_dir_remove(dir);
}

TEST(ctl_refuses)
{
	char dir[256], file[300];
	struct proc out, svc;

	tmp_dir(dir);
	/* A pid that has ended, and one that runs without libleek. */
	const char *true_argv[] = { "/bin/true", NULL };
	proc_run(&svc, dir, true_argv, NULL, 10);
	ASSERT_EQ(ctl(dir, svc.pid, "on", NULL, NULL, &out), 2);
	ASSERT_CONTAINS(out.err, "holds no leek profile");
	proc_free(&out);
	proc_free(&svc);
	ASSERT_EQ(ctl(dir, getpid(), "on", NULL, NULL, &out), 2);
	proc_free(&out);
	ASSERT_EQ(ctl(dir, getpid(), "mark", "two words", NULL, &out), 1);
	ASSERT_CONTAINS(out.err, "printable bytes, without spaces");
	proc_free(&out);
	ASSERT_EQ(ctl(dir, getpid(), "sideways", NULL, NULL, &out), 1);
	proc_free(&out);
	snprintf(file, sizeof(file), "%s/notes.lk", dir);
	write_file(file, "LEEKPROF is not enough to be a profile, but long enough to be read as one's header, and more and more", 104);
	const char *args[] = { "ctl", file, "on", NULL };
	leek_exec(&out, dir, NULL, args, 30);
	ASSERT_EQ(out.status, 2);
	ASSERT_CONTAINS(out.err, "a damaged header");
	proc_free(&out);
	/* A version 6 header: no control block to write to. */
	struct lk_file_header h = { .version = 6, .fixed_size = LK_HEADER_FIXED_SIZE,
				    .header_size = LK_HEADER_FIXED_SIZE, .pid = 1 };
	memcpy(h.magic, LK_FORMAT_MAGIC, 8);
	write_file(file, &h, sizeof(h));
	leek_exec(&out, dir, NULL, args, 30);
	ASSERT_EQ(out.status, 2);
	ASSERT_CONTAINS(out.err, "without a control block");
	proc_free(&out);
	/* A version 7 header whose control block is not there. */
	h.version = 7;
	h.flags = LK_HDR_CTL;
	h.header_size = LK_HEADER_FIXED_SIZE + LK_CTL_SIZE;
	write_file(file, &h, sizeof(h));
	leek_exec(&out, dir, NULL, args, 30);
	ASSERT_EQ(out.status, 2);
	ASSERT_CONTAINS(out.err, "damaged or cut off");
	proc_free(&out);
	tmp_dir_remove(dir);
}
