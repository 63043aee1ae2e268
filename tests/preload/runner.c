/* runner.c: starts a test program under libleek and loads its profiles (see runner.h).
 *
 * This is the driver's side: it runs without LD_PRELOAD and may allocate as it likes. Failures go
 * through lk_test_fail (harness.h), which leaves the test at once; the temporary directory is
 * then left behind on purpose, and every message names it.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "files.h"
#include "harness.h"
#include "proc.h"
#include "read.h"
#include "runner.h"

#ifndef LIBLEEK_PATH
#error "meson passes LIBLEEK_PATH, the built libleek.so"
#endif
#ifndef PROG_DIR
#error "meson passes PROG_DIR, where the test programs are built"
#endif

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		FAIL("out of memory");
	return p;
}

static void *xrealloc(void *p, size_t n, size_t size)
{
	p = reallocarray(p, n ? n : 1, size);
	if (!p)
		FAIL("out of memory");
	return p;
}

static char *xstrdup(const char *s)
{
	char *d = strdup(s);

	if (!d)
		FAIL("out of memory");
	return d;
}

/* ---- loading a profile ---- */

static const struct module *module_at(const struct profile *p, uint64_t pc)
{
	for (size_t i = 0; i < p->nmodules; i++) {
		const struct module *m = &p->modules[i];
		if (!m->loaded)
			continue;
		for (uint32_t s = 0; s < m->nseg; s++)
			if (pc - (m->base + m->seg[s].start) < m->seg[s].len)
				return m;
	}
	return NULL;
}

static char *stack_modules(const struct profile *p, const uint64_t *frames, uint32_t n)
{
	size_t len = 0, cap = 256;
	char *s = xcalloc(1, cap);

	for (uint32_t i = 0; i < n; i++) {
		const struct module *m = module_at(p, frames[i] - 1); /* return address - 1: the call */
		if (!m)
			continue;
		size_t plen = strlen(m->path);
		bool seen = false;
		for (const char *q = s; (q = strstr(q, m->path)); q += plen)
			if ((q == s || q[-1] == '\n') && q[plen] == '\n')
				seen = true;
		if (seen)
			continue;
		if (len + plen + 2 > cap) {
			cap = (len + plen + 2) * 2;
			s = xrealloc(s, cap, 1);
		}
		memcpy(s + len, m->path, plen);
		len += plen;
		s[len++] = '\n';
		s[len] = 0;
	}
	return s;
}

/* Blocks are numbered by their ALLOC and INHERIT records (format.h), in the main stream's order
 * and in ranges that SEGMENT records reserve for their threads: each number once, and each kept
 * with its place in blocks. */
static void add_block(struct profile *p, uint64_t block, uint64_t size, uint64_t stack,
		      bool inherited, uint64_t offset)
{
	const char *what = inherited ? "INHERIT" : "ALLOC";

	if (block == 0 || lk_u64map_get(&p->index, block))
		FAIL("%s: %s at offset %llu is block %llu, which has a number already", p->path, what,
		     (unsigned long long)offset, (unsigned long long)block);
	if (stack > p->nstacks)
		FAIL("%s: %s at offset %llu names stack %llu before it was written", p->path, what,
		     (unsigned long long)offset, (unsigned long long)stack);
	if (p->nblocks % 1024 == 0)
		p->blocks = xrealloc(p->blocks, p->nblocks + 1024, sizeof(*p->blocks));
	p->blocks[p->nblocks++] = (struct block){ size, stack, inherited, false };
	if (lk_u64map_put(&p->index, block, p->nblocks) < 0)
		FAIL("%s: out of memory for block numbers", p->path);
}

static void load_record(struct profile *p, const struct lk_record *rec)
{
	unsigned long long off = (unsigned long long)rec->offset;
	uint64_t k;

	if (rec->tag <= LK_REC_MAX_KNOWN)
		p->ntag[rec->tag]++;
	switch (rec->tag) {
	case LK_REC_ALLOC:
		add_block(p, rec->alloc.block, rec->alloc.size, rec->alloc.stack, false, rec->offset);
		p->stackless += rec->alloc.stack == 0;
		break;
	case LK_REC_INHERIT:
		add_block(p, rec->inherit.block, rec->inherit.size, rec->inherit.stack, true,
			  rec->offset);
		break;
	case LK_REC_FREE:
		k = rec->free.block;
		uint64_t *at = lk_u64map_get(&p->index, k);
		if (!at || p->blocks[*at - 1].freed)
			FAIL("%s: FREE at offset %llu of block %llu, which is not live", p->path, off,
			     (unsigned long long)k);
		p->blocks[*at - 1].freed = true;
		if (rec->free.stack > p->nstacks)
			FAIL("%s: FREE at offset %llu names stack %llu before it was written", p->path,
			     off, (unsigned long long)rec->free.stack);
		p->free_stacks += rec->free.stack != 0;
		break;
	case LK_REC_STACK:
		if (rec->stack.id != p->nstacks + 1)
			FAIL("%s: STACK at offset %llu has id %llu, expected %zu", p->path, off,
			     (unsigned long long)rec->stack.id, p->nstacks + 1);
		if (p->nstacks % 256 == 0)
			p->stacks = xrealloc(p->stacks, p->nstacks + 256, sizeof(*p->stacks));
		p->stacks[p->nstacks].nframes = rec->stack.nframes;
		p->stacks[p->nstacks].frames = xcalloc(rec->stack.nframes + 1, sizeof(uint64_t));
		memcpy(p->stacks[p->nstacks].frames, rec->stack.frames,
		       rec->stack.nframes * sizeof(uint64_t));
		p->stacks[p->nstacks++].modules = stack_modules(p, rec->stack.frames, rec->stack.nframes);
		break;
	case LK_REC_MODULE:
		if (rec->module.id != p->nmodules + 1)
			FAIL("%s: MODULE at offset %llu has id %llu, expected %zu", p->path, off,
			     (unsigned long long)rec->module.id, p->nmodules + 1);
		if (p->nmodules % 64 == 0)
			p->modules = xrealloc(p->modules, p->nmodules + 64, sizeof(*p->modules));
		struct module *m = &p->modules[p->nmodules++];
		m->id = rec->module.id;
		m->base = rec->module.base;
		m->nseg = rec->module.nseg < LK_MAX_SEGMENTS ? rec->module.nseg : LK_MAX_SEGMENTS;
		memcpy(m->seg, rec->module.seg, m->nseg * sizeof(m->seg[0]));
		m->path = xstrdup(rec->module.path);
		m->loaded = true;
		break;
	case LK_REC_UNLOAD:
		if (rec->unload.id == 0 || rec->unload.id > p->nmodules ||
		    !p->modules[rec->unload.id - 1].loaded)
			FAIL("%s: UNLOAD at offset %llu of module %llu, which is not loaded", p->path, off,
			     (unsigned long long)rec->unload.id);
		p->modules[rec->unload.id - 1].loaded = false;
		break;
	case LK_REC_ERROR:
		if (rec->error.stack > p->nstacks || rec->error.alloc_stack > p->nstacks ||
		    rec->error.free_stack > p->nstacks)
			FAIL("%s: ERROR at offset %llu names a stack before it was written", p->path,
			     off);
		if (p->nerrors < sizeof(p->errors) / sizeof(p->errors[0]))
			p->errors[p->nerrors] = (struct error){
				rec->error.kind, rec->error.addr, rec->error.block_addr,
				rec->error.block_size, rec->error.block, rec->error.alloc_stack,
				rec->error.free_stack, rec->error.stack, rec->error.tid
			};
		p->nerrors++;
		break;
	case LK_REC_TRAILER:
		p->trailer = true;
		for (uint32_t i = 0; i < rec->counters.n; i++)
			if (rec->counters.v[i].id <= LK_CNT_MAX)
				p->counters[rec->counters.v[i].id] = rec->counters.v[i].value;
		break;
	default:
		break;
	}
}

static void load_profile(struct profile *p, const char *path)
{
	struct lk_reader *rd = lk_reader_new();
	struct lk_record rec;
	int r;

	memset(p, 0, sizeof(*p));
	lk_u64map_init(&p->index, (size_t)1 << 32);
	p->path = xstrdup(path);
	if (!rd)
		FAIL("out of memory");
	r = lk_reader_open(rd, path);
	if (r < 0)
		FAIL("%s: cannot open: %s", path, lk_reader_error(rd));
	const struct lk_profile_header *h = lk_reader_header(rd);
	p->h = h->h;
	p->segment = h->segment;
	p->origin_ns = h->origin_ns;
	p->exe = xstrdup(h->exe);
	while ((r = lk_reader_next(rd, &rec)) > 0)
		load_record(p, &rec);
	if (r < 0)
		FAIL("%s: %s", path, lk_reader_error(rd));
	if (p->trailer != lk_reader_has_trailer(rd))
		FAIL("%s: a TRAILER record was read but lk_reader_has_trailer says %d", path,
		     lk_reader_has_trailer(rd));
	lk_reader_free(rd);
}

/* ---- running ---- */

static int cmp_names(const void *a, const void *b)
{
	return strcmp(((const struct profile *)a)->path, ((const struct profile *)b)->path);
}

static void load_profiles(struct run *r)
{
	DIR *d = opendir(r->dir);
	struct dirent *de;
	char path[512];

	if (!d)
		FAIL("%s: %s", r->dir, strerror(errno));
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		if (de->d_name[0] == '.' || !strncmp(de->d_name, "stdout.", 7) ||
		    !strncmp(de->d_name, "stderr.", 7) || /* proc.c's */
		    (len > 7 && !strcmp(de->d_name + len - 7, ".expect"))) /* a program's own notes */
			continue;
		snprintf(path, sizeof(path), "%s/%s", r->dir, de->d_name);
		r->prof = xrealloc(r->prof, r->nprof + 1, sizeof(*r->prof));
		load_profile(&r->prof[r->nprof++], path);
	}
	closedir(d);
	qsort(r->prof, r->nprof, sizeof(*r->prof), cmp_names);
}

void run_prog(struct run *r, const struct run_opts *o, const char *const *argv)
{
	char prog[512], preload[1024], *output = NULL;
	const char *env[2 + sizeof(o->env) / sizeof(o->env[0]) + 1];
	size_t n = 0;
	struct proc p;

	memset(r, 0, sizeof(*r));
	r->in_flight = o->in_flight;
	r->stackless_extra = o->stackless_extra;
	tmp_dir(r->dir);
	snprintf(prog, sizeof(prog), "%s/%s", PROG_DIR, argv[0]);
	if (asprintf(&output, o->output ? "LEEK_OUTPUT=%s" : "LEEK_OUTPUT=%s/leek.%%p.lk",
		     o->output ? o->output : r->dir) < 0)
		FAIL("asprintf: out of memory");
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", o->preload ? o->preload : LIBLEEK_PATH);
	if (!o->preload || *o->preload)
		env[n++] = preload;
	env[n++] = output;
	for (size_t i = 0; i < sizeof(o->env) / sizeof(o->env[0]) && o->env[i]; i++) {
		env[n++] = o->env[i];
		r->exact |= !strcmp(o->env[i], "LEEK_PERIOD=1");
	}
	env[n] = NULL;

	proc_start_with(&p, r->dir, argv,
			&(struct proc_opts){ .env = env,
					     .timeout = o->timeout ? o->timeout : 30,
					     .exe = o->exe ? o->exe : prog,
					     .cwd = o->in_dir ? r->dir : NULL,
					     .limit_as = o->limit_as,
					     .limit_fsize = o->limit_fsize });
	r->pid = p.pid;
	proc_wait(&p);
	free(output);
	r->status = p.wstatus;
	r->out = p.out; /* now r's */
	r->err = p.err;
	load_profiles(r);
}

void run_cleanup(struct run *r)
{
	tmp_dir_remove(r->dir);
	for (size_t i = 0; i < r->nprof; i++) {
		struct profile *p = &r->prof[i];
		for (size_t k = 0; k < p->nstacks; k++) {
			free(p->stacks[k].modules);
			free(p->stacks[k].frames);
		}
		for (size_t k = 0; k < p->nmodules; k++)
			free(p->modules[k].path);
		free(p->stacks);
		free(p->modules);
		free(p->blocks);
		lk_u64map_done(&p->index);
		free(p->exe);
		free(p->path);
	}
	free(r->prof);
	free(r->out);
	free(r->err);
	memset(r, 0, sizeof(*r));
}

/* ---- checks ---- */

void expect_exit0(const struct run *r)
{
	if (WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0)
		return;
	if (WIFSIGNALED(r->status))
		FAIL("pid %d killed by SIG%s; files in %s; stderr:\n%.4000s", (int)r->pid,
		     sigabbrev_np(WTERMSIG(r->status)), r->dir, r->err);
	FAIL("pid %d exited with %d; files in %s; stderr:\n%.4000s", (int)r->pid,
	     WEXITSTATUS(r->status), r->dir, r->err);
}

void expect_clean(const struct run *r, size_t nprof, uint64_t allowed)
{
	expect_exit0(r);
	if (r->nprof != nprof)
		FAIL("%zu profiles in %s, expected %zu", r->nprof, r->dir, nprof);
	for (size_t i = 0; i < r->nprof; i++) {
		const struct profile *p = &r->prof[i];
		if (!p->trailer)
			FAIL("%s has no trailer", p->path);
		check_counters(r, p, allowed);
	}
}

const struct profile *main_profile(const struct run *r)
{
	const struct profile *p = prof_by_pid(r, r->pid);

	if (!p)
		FAIL("no profile of pid %d in %s", (int)r->pid, r->dir);
	return p;
}

const struct profile *prof_by_pid(const struct run *r, pid_t pid)
{
	const struct profile *found = NULL;

	for (size_t i = 0; i < r->nprof; i++)
		if (r->prof[i].h.pid == (uint32_t)pid) {
			if (found)
				FAIL("two profiles for pid %d: %s and %s", (int)pid, found->path,
				     r->prof[i].path);
			found = &r->prof[i];
		}
	return found;
}

void prof_count_size(const struct profile *p, uint64_t size, uint64_t *allocs, uint64_t *inherits,
		     uint64_t *frees)
{
	*allocs = *inherits = *frees = 0;
	for (size_t i = 0; i < p->nblocks; i++) {
		const struct block *b = &p->blocks[i];
		if (b->size != size)
			continue;
		if (b->inherited)
			++*inherits;
		else
			++*allocs;
		*frees += b->freed;
	}
}

bool stack_in_module(const struct profile *p, uint64_t id, const char *needle)
{
	return id && id <= p->nstacks && strstr(p->stacks[id - 1].modules, needle);
}

unsigned check_tallies(const struct run *r)
{
	unsigned checked = 0;

	if (!r->exact)
		FAIL("tallies are exact-mode facts; run with LEEK_PERIOD=1");
	for (const char *line = r->out; line && *line; line = strchr(line, '\n'), line += !!line) {
		long pid;
		unsigned long long size, want[3], got[3];
		if (sscanf(line, "tally %ld %llu %llu %llu %llu", &pid, &size, &want[0], &want[1],
			   &want[2]) != 5)
			continue;
		const struct profile *p = prof_by_pid(r, (pid_t)pid);
		if (!p)
			FAIL("no profile for pid %ld in %s (tally line \"%.60s\")", pid, r->dir, line);
		uint64_t a, i, f;
		prof_count_size(p, size, &a, &i, &f);
		got[0] = a, got[1] = i, got[2] = f;
		if (got[0] != want[0] || got[1] != want[1] || got[2] != want[2])
			FAIL("%s: blocks of %llu bytes: %llu ALLOC, %llu INHERIT, %llu freed; the program "
			     "made %llu, inherited %llu, freed %llu",
			     p->path, size, got[0], got[1], got[2], want[0], want[1], want[2]);
		checked++;
	}
	return checked;
}

static bool within(uint64_t a, uint64_t b, uint64_t d)
{
	return a > b ? a - b <= d : b - a <= d;
}

void check_counters(const struct run *r, const struct profile *p, uint64_t allowed)
{
	static const int losses[] = { LK_CNT_ARENA_FULL, LK_CNT_INTERN_FULL, LK_CNT_RECORDS_DROPPED,
				      LK_CNT_BAD_FREE, LK_CNT_MODULES_DROPPED, LK_CNT_FILE_LIMIT,
				      LK_CNT_FILE_CUT };
	bool dropped = p->counters[LK_CNT_RECORDS_DROPPED] || p->counters[LK_CNT_FILE_LIMIT];

	if (!p->trailer)
		return;
	if (dropped) {
		/* Records were not written: the trailer counts every sample and free taken. */
		if (p->counters[LK_CNT_SAMPLES] < p->ntag[LK_REC_ALLOC] ||
		    p->counters[LK_CNT_FREES] < p->ntag[LK_REC_FREE])
			FAIL("%s: trailer counts %llu samples and %llu frees, fewer than the file's "
			     "%llu ALLOC and %llu FREE records", p->path,
			     (unsigned long long)p->counters[LK_CNT_SAMPLES],
			     (unsigned long long)p->counters[LK_CNT_FREES],
			     (unsigned long long)p->ntag[LK_REC_ALLOC],
			     (unsigned long long)p->ntag[LK_REC_FREE]);
	} else {
		if (!within(p->counters[LK_CNT_SAMPLES], p->ntag[LK_REC_ALLOC], r->in_flight))
			FAIL("%s: trailer counts %llu samples, the file holds %llu ALLOC records",
			     p->path, (unsigned long long)p->counters[LK_CNT_SAMPLES],
			     (unsigned long long)p->ntag[LK_REC_ALLOC]);
		if (!within(p->counters[LK_CNT_FREES], p->ntag[LK_REC_FREE], r->in_flight))
			FAIL("%s: trailer counts %llu frees, the file holds %llu FREE records",
			     p->path, (unsigned long long)p->counters[LK_CNT_FREES],
			     (unsigned long long)p->ntag[LK_REC_FREE]);
		if (p->stackless !=
		    p->counters[LK_CNT_UNWIND_FAILED] + p->counters[LK_CNT_INTERN_FULL])
			FAIL("%s: %llu ALLOC records without a stack, but the trailer counts %llu "
			     "unwind failures and %llu intern-full",
			     p->path, (unsigned long long)p->stackless,
			     (unsigned long long)p->counters[LK_CNT_UNWIND_FAILED],
			     (unsigned long long)p->counters[LK_CNT_INTERN_FULL]);
	}
	for (size_t i = 0; i < sizeof(losses) / sizeof(losses[0]); i++)
		if (p->counters[losses[i]] && !(allowed >> losses[i] & 1))
			FAIL("%s: trailer counter %s = %llu, expected 0", p->path,
			     lk_counter_name((uint64_t)losses[i]), (unsigned long long)p->counters[losses[i]]);
	/* Stacks: the unwinder fails on almost nothing a test program does. */
	if (p->stackless * 100 > p->ntag[LK_REC_ALLOC] + 200 + 100ull * r->stackless_extra)
		FAIL("%s: %llu of %llu samples have no stack", p->path, (unsigned long long)p->stackless,
		     (unsigned long long)p->ntag[LK_REC_ALLOC]);
	(void)r;
}

unsigned count_lines(const char *s)
{
	unsigned n = 0;

	for (; s && *s; s++)
		if (*s == '\n' || !s[1])
			n++;
	return n;
}
