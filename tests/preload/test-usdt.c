/* test-usdt.c: leek's USDT probes (src/preload/probes.h), leek:sample and leek:free.
 *
 * notes: the library's .note.stapsdt has both probes, provider leek, with their arguments' count
 * and sizes and a semaphore each (or no leek probe at all in a library built without them).
 * bpftrace_lists and perf_lists: the tools that consume them list them (skipped without the tool).
 * bpftrace_fires: with bpftrace attached, tests/preload/usdt.c's run fires leek:sample once for
 * every ALLOC its profile records, with the same size and stack id, and leek:free once for every
 * FREE; in exact mode and at a period, where the weight is size/p(size). Skipped where the kernel
 * allows no uprobes (no uprobe PMU, or no CAP_SYS_ADMIN), or without bpftrace.
 */
#include <errno.h>
#include <elf.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "files.h"
#include "harness.h"
#include "proc.h"
#include "runner.h"

#define BPFTRACE "/usr/bin/bpftrace"
#define PERF "/usr/bin/perf"

struct probe_seen {
	unsigned count;    /* notes of this name */
	unsigned bad_args; /* notes whose arguments are not what the probe passes */
	uint64_t sem;      /* the semaphore's address; 0: none (or notes that disagree: ~0) */
};

/* "8@%rax 8@-1232(%rbp) 4@%r14d": true if there are n arguments, of the sizes in want. */
static bool args_are(const char *args, unsigned n, const int *want)
{
	unsigned i = 0;

	for (const char *s = args; *s; i++) {
		char *end;
		long size = strtol(s, &end, 10);
		if (*end != '@' || i >= n || size != want[i])
			return false;
		s = strchr(end, ' ');
		if (!s)
			return i + 1 == n;
		s++;
	}
	return false;
}

/* Every leek note of the file at path: leek:sample and leek:free in sample and free, and how many
 * notes had another provider or name (other). */
static void read_notes(const char *path, struct probe_seen *sample, struct probe_seen *free_,
		       unsigned *other)
{
	static const int sample_args[] = { 8, 8, 8, 4 }, free_args[] = { 8, 8 };
	size_t len;
	char *elf = read_file(path, &len);
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)elf;

	ASSERT_TRUE(len > sizeof(*eh) && !memcmp(eh->e_ident, ELFMAG, SELFMAG));
	ASSERT_TRUE(eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) <= len);
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(elf + eh->e_shoff);
	const char *names = elf + sh[eh->e_shstrndx].sh_offset;

	*sample = *free_ = (struct probe_seen){ 0 };
	*other = 0;
	for (unsigned i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type != SHT_NOTE || strcmp(names + sh[i].sh_name, ".note.stapsdt"))
			continue;
		ASSERT_TRUE(sh[i].sh_offset + sh[i].sh_size <= len);
		const char *p = elf + sh[i].sh_offset, *end = p + sh[i].sh_size;
		while (p + sizeof(Elf64_Nhdr) <= end) {
			const Elf64_Nhdr *nh = (const Elf64_Nhdr *)p;
			const char *name = p + sizeof(*nh);
			const char *desc = name + ((nh->n_namesz + 3) & ~3u);
			p = desc + ((nh->n_descsz + 3) & ~3u);
			ASSERT_TRUE(p <= end);
			if (nh->n_type != 3 || strcmp(name, "stapsdt")) /* NT_STAPSDT */
				continue;
			uint64_t addr[3]; /* the probe's pc, .stapsdt.base, the semaphore */
			memcpy(addr, desc, sizeof(addr));
			const char *prov = desc + sizeof(addr), *probe = prov + strlen(prov) + 1;
			const char *args = probe + strlen(probe) + 1;
			ASSERT_TRUE(args < desc + nh->n_descsz);
			struct probe_seen *s = NULL;
			bool ok = false;
			if (!strcmp(prov, "leek") && !strcmp(probe, "sample"))
				s = sample, ok = args_are(args, 4, sample_args);
			else if (!strcmp(prov, "leek") && !strcmp(probe, "free"))
				s = free_, ok = args_are(args, 2, free_args);
			if (!s) {
				++*other;
				continue;
			}
			if (!ok)
				fprintf(stderr, "leek:%s: arguments '%s'\n", probe, args);
			s->bad_args += !ok;
			s->sem = !s->count || s->sem == addr[2] ? addr[2] : ~0ull;
			s->count++;
		}
	}
	free(elf);
}

TEST(notes)
{
	struct probe_seen sample, free_;
	unsigned other;

	read_notes(LIBLEEK_PATH, &sample, &free_, &other);
	ASSERT_EQ(other, 0);
	if (!LEEK_USDT) { /* -Dusdt=disabled, or no sys/sdt.h: nothing at all */
		ASSERT_EQ(sample.count, 0);
		ASSERT_EQ(free_.count, 0);
		return;
	}
	/* One note a place the probe is in (sampler.c's slow paths, as LTO inlined them). */
	ASSERT_TRUE(sample.count >= 2);
	ASSERT_TRUE(free_.count >= 3);
	ASSERT_EQ(sample.bad_args, 0);
	ASSERT_EQ(free_.bad_args, 0);
	/* A semaphore each, the same at every place of one probe, and two of them. */
	ASSERT_TRUE(sample.sem != 0 && sample.sem != ~0ull);
	ASSERT_TRUE(free_.sem != 0 && free_.sem != ~0ull);
	ASSERT_TRUE(sample.sem != free_.sem);
}

static void need_usdt(void)
{
	if (!LEEK_USDT)
		SKIP("libleek.so was built without USDT probes (-Dusdt=disabled or no sys/sdt.h)");
}

static void need_tool(const char *path, const char *package)
{
	if (access(path, X_OK))
		SKIP("%s is not installed (Debian's %s)", path, package);
}

TEST(bpftrace_lists)
{
	char dir[256], pattern[600];
	struct proc p = { 0 };

	need_usdt();
	need_tool(BPFTRACE, "bpftrace");
	tmp_dir(dir);
	snprintf(pattern, sizeof(pattern), "usdt:%s:*", LIBLEEK_PATH);
	proc_run(&p, dir, (const char *const[]){ BPFTRACE, "-l", pattern, NULL }, NULL, 60);
	ASSERT_EQ(p.status, 0);
	char want[600];
	snprintf(want, sizeof(want), "usdt:%s:leek:sample\n", LIBLEEK_PATH);
	ASSERT_CONTAINS(p.out, want);
	snprintf(want, sizeof(want), "usdt:%s:leek:free\n", LIBLEEK_PATH);
	ASSERT_CONTAINS(p.out, want);
	proc_free(&p);
	tmp_dir_remove(dir);
}

/* perf finds SDT events in the files of its build-id cache: a cache in a directory of the test's
 * (HOME), so that the user's is left alone. */
TEST(perf_lists)
{
	char dir[256], home[300];
	struct proc p = { 0 };

	need_usdt();
	need_tool(PERF, "linux-perf");
	tmp_dir(dir);
	snprintf(home, sizeof(home), "HOME=%s", dir);
	const char *env[] = { home, NULL };
	proc_run(&p, dir, (const char *const[]){ PERF, "buildid-cache", "--add", LIBLEEK_PATH, NULL },
		 env, 60);
	ASSERT_EQ(p.status, 0);
	proc_free(&p);
	proc_run(&p, dir, (const char *const[]){ PERF, "list", "sdt", NULL }, env, 60);
	ASSERT_EQ(p.status, 0);
	ASSERT_CONTAINS(p.out, "sdt_leek:sample");
	ASSERT_CONTAINS(p.out, "sdt_leek:free");
	proc_free(&p);
	tmp_dir_remove(dir);
}

/* What a uprobe needs here: the kernel's uprobe PMU (bpftrace attaches through perf_event_open,
 * with the semaphore raised by the kernel: ref_ctr_offset, Linux 4.20) and CAP_SYS_ADMIN. */
static void need_uprobes(void)
{
	if (access("/sys/bus/event_source/devices/uprobe", F_OK))
		SKIP("this kernel has no uprobe PMU (/sys/bus/event_source/devices/uprobe): "
		     "the probes cannot fire here");
	size_t len;
	char *status = read_file("/proc/self/status", &len), *cap = strstr(status, "CapEff:");
	bool admin = cap && (strtoull(cap + 7, NULL, 16) >> 21 & 1); /* CAP_SYS_ADMIN */
	free(status);
	if (!admin)
		SKIP("no CAP_SYS_ADMIN: bpftrace cannot attach uprobes");
	/* A plain uprobe (on libleek's malloc, no USDT in it) for a moment: what a container's
	 * seccomp, a lockdown or missing BPF support forbids shows here, and is no fault of the
	 * probes. */
	char dir[256], script[600];
	struct proc p = { 0 };
	snprintf(script, sizeof(script), "uprobe:%s:malloc { } BEGIN { exit(); }", LIBLEEK_PATH);
	tmp_dir(dir);
	proc_run(&p, dir, (const char *const[]){ BPFTRACE, "-e", script, NULL }, NULL, 60);
	if (p.status != 0)
		SKIP("bpftrace cannot attach a uprobe here (exit %d): %.300s", p.status, p.err);
	proc_free(&p);
	tmp_dir_remove(dir);
}

struct event {
	char kind; /* 'S' or 'F' */
	uint64_t addr, size, weight, stack;
};

static int by_size_stack(const void *a, const void *b)
{
	const struct event *x = a, *y = b;

	if (x->size != y->size)
		return x->size < y->size ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

/* bpftrace prints the events its perf ring holds when it gets to them: stopped as soon as the
 * program has exited, it may not have printed the last ones yet (under load, most of them: 18 of
 * 78). So it is stopped once it has printed as many leek:sample and leek:free lines of r's process
 * as r's profile has ALLOCs and FREEs, or after 60 s; the test then counts what it printed. */
static void wait_printed(const struct proc *bt, const struct run *r)
{
	size_t want_s = 0, want_f = 0;
	char s_line[32], f_line[32];

	if (!WIFEXITED(r->status) || WEXITSTATUS(r->status) != 0)
		return; /* the test fails on that once bpftrace is stopped */
	for (size_t k = 0; k < r->nprof; k++) {
		const struct profile *p = &r->prof[k];
		if (p->h.pid != (uint32_t)r->pid)
			continue;
		for (size_t i = 0; i < p->nblocks; i++) {
			want_s += !p->blocks[i].inherited;
			want_f += !p->blocks[i].inherited && p->blocks[i].freed;
		}
	}
	snprintf(s_line, sizeof(s_line), "S %d ", (int)r->pid);
	snprintf(f_line, sizeof(f_line), "F %d ", (int)r->pid);
	for (int i = 0; i < 600; i++) {
		size_t n, ns = 0, nf = 0;
		char *out = read_file_or_empty(bt->out_path, &n);
		for (char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
			ns += !strncmp(l, s_line, strlen(s_line));
			nf += !strncmp(l, f_line, strlen(f_line));
		}
		free(out);
		if (ns >= want_s && nf >= want_f)
			return;
		usleep(100 * 1000);
	}
}

/* usdt.c under libleek (env: LEEK_PERIOD=...) while bpftrace prints every leek probe of a process
 * named usdt (other tests' programs fire them too: the semaphores are up in every process that
 * maps this libleek.so while bpftrace listens). Then its events against the profile: one
 * leek:sample for each ALLOC, with its size and stack id, and one leek:free for each FREE. period:
 * LEEK_PERIOD, for the weights. */
static void fires(const char *period_env, uint64_t period)
{
	char dir[256], script[2048], ready[400];
	struct proc bt = { 0 };
	struct run r;

	need_usdt();
	need_tool(BPFTRACE, "bpftrace");
	need_uprobes();
	snprintf(script, sizeof(script),
		 "BEGIN { printf(\"ready\\n\"); }\n"
		 "usdt:%s:leek:sample /comm == \"usdt\"/ { printf(\"S %%d %%lu %%lu %%lu %%lu\\n\","
		 " pid, arg0, arg1, arg2, arg3); }\n"
		 "usdt:%s:leek:free /comm == \"usdt\"/ { printf(\"F %%d %%lu %%lu\\n\", pid, arg0,"
		 " arg1); }\n",
		 LIBLEEK_PATH, LIBLEEK_PATH);
	tmp_dir(dir);
	proc_start(&bt, dir, (const char *const[]){ BPFTRACE, "-e", script, NULL }, NULL, 120);
	/* BEGIN fires once every probe is attached. */
	snprintf(ready, sizeof(ready), "%s", bt.out_path);
	for (int i = 0;; i++) {
		size_t n;
		char *out = read_file_or_empty(ready, &n);
		bool up = strstr(out, "ready\n") != NULL;
		free(out);
		if (up)
			break;
		if (kill(bt.pid, 0) || i == 600) {
			kill(bt.pid, SIGKILL);
			proc_wait(&bt);
			FAIL("bpftrace did not attach; stderr:\n%.2000s", bt.err);
		}
		usleep(100 * 1000);
	}

	run_prog(&r, &(struct run_opts){ .env = { period_env } }, (const char *const[]){ "usdt", NULL });
	wait_printed(&bt, &r);
	kill(bt.pid, SIGINT);
	proc_wait(&bt);
	expect_exit0(&r);
	expect_clean(&r, 1, 0);
	const struct profile *p = main_profile(&r);
	ASSERT_TRUE(!strstr(bt.out, "Lost")); /* perf's ring lost none of them */

	/* The events of r's process. */
	size_t cap = 0, ns = 0, nf = 0;
	for (const char *s = bt.out; (s = strchr(s, '\n')); s++)
		cap++;
	struct event *ev = calloc(cap + 1, sizeof(*ev));
	ASSERT_TRUE(ev);
	for (char *line = bt.out; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		struct event e = { 0 };
		int pid;
		if (sscanf(line, "S %d %lu %lu %lu %lu", &pid, &e.addr, &e.size, &e.weight,
			   &e.stack) == 5 && pid == r.pid) {
			e.kind = 'S';
			ev[ns++] = e;
		} else if (sscanf(line, "F %d %lu %lu", &pid, &e.addr, &e.size) == 3 && pid == r.pid) {
			nf++;
		}
	}

	/* One leek:sample an ALLOC, the same sizes and stacks. */
	size_t nalloc = 0, nfreed = 0;
	struct event *want = calloc(p->nblocks + 1, sizeof(*want));
	ASSERT_TRUE(want);
	for (size_t i = 0; i < p->nblocks; i++) {
		if (p->blocks[i].inherited)
			continue;
		want[nalloc++] = (struct event){ .size = p->blocks[i].size,
						 .stack = p->blocks[i].stack };
		nfreed += p->blocks[i].freed;
	}
	fprintf(stderr, "%s: %zu ALLOC, %zu FREE; %zu leek:sample, %zu leek:free\n", period_env,
		nalloc, nfreed, ns, nf);
	ASSERT_TRUE(nalloc >= 40); /* usdt.c's own, in exact mode or at a period of bytes */
	ASSERT_EQ(ns, nalloc);
	ASSERT_EQ(nf, nfreed);
	qsort(ev, ns, sizeof(*ev), by_size_stack);
	qsort(want, nalloc, sizeof(*want), by_size_stack);
	for (size_t i = 0; i < ns; i++) {
		if (ev[i].size != want[i].size || ev[i].stack != want[i].stack)
			FAIL("leek:sample %zu: size %lu stack %lu, the profile's %lu and %lu", i,
			     ev[i].size, ev[i].stack, want[i].size, want[i].stack);
		/* The weight: size / (1 - exp(-size/T)), rounded; size itself in exact mode. */
		double w = period <= 1 ? (double)ev[i].size
				       : (double)ev[i].size / -expm1(-(double)ev[i].size / (double)period);
		if (fabs((double)ev[i].weight - w) > 1)
			FAIL("leek:sample of %lu bytes: weight %lu, expected %.1f", ev[i].size,
			     ev[i].weight, w);
	}
	free(ev);
	free(want);
	proc_free(&bt);
	tmp_dir_remove(dir);
	run_cleanup(&r);
}

TEST(bpftrace_fires_exact)
{
	fires("LEEK_PERIOD=1", 1);
}

/* A period of 512 bytes: most of usdt.c's blocks (1000 bytes and more) are sampled, with weights
 * above their size. */
TEST(bpftrace_fires_sampled)
{
	fires("LEEK_PERIOD=512", 512);
}
