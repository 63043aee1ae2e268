/* test-symbolize.c: src/cli/symbols/symbolize.c against real code whose inlining is known.
 *
 * The fixtures (tests/fixtures) record the return addresses of their allocation calls and the
 * lines those calls are on. The modules are described from dl_iterate_phdr exactly as libleek
 * records them (base, PT_LOAD segments, build-id note, path), and each frame's return address
 * minus one must come back as the right chain of functions, files and lines: from the test
 * program, from a dlopen'ed library, from its stripped copy (symbol table only) and from its
 * separate debug file found by build-id. Every test unsets DEBUGINFOD_URLS: nothing here may
 * touch the network.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture.h"
#include "harness.h"
#include "symbolize.h"
#include "util.h"

struct mod {
	uint64_t base;
	uint32_t nseg;
	struct lk_module_seg seg[LK_MAX_SEGMENTS];
	uint8_t build_id[LK_MAX_BUILD_ID];
	size_t build_id_len;
	char path[PATH_MAX];
};

struct mods {
	struct mod m[256];
	size_t n;
};

static void read_build_id(struct mod *m, const struct dl_phdr_info *info)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		const uint8_t *end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
			const uint8_t *name = p + sizeof(*n);
			const uint8_t *desc = name + ((n->n_namesz + 3) & ~3u);
			if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
			    !memcmp(name, "GNU", 4) && n->n_descsz <= LK_MAX_BUILD_ID) {
				memcpy(m->build_id, desc, n->n_descsz);
				m->build_id_len = n->n_descsz;
				return;
			}
			p = desc + ((n->n_descsz + 3) & ~3u);
		}
	}
}

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct mods *ms = data;
	struct mod *m;

	if (ms->n == sizeof(ms->m) / sizeof(ms->m[0]))
		return 1;
	m = &ms->m[ms->n++];
	memset(m, 0, sizeof(*m));
	m->base = info->dlpi_addr;
	if (info->dlpi_name && info->dlpi_name[0]) {
		snprintf(m->path, sizeof(m->path), "%s", info->dlpi_name);
	} else {
		ssize_t n = readlink("/proc/self/exe", m->path, sizeof(m->path) - 1);
		m->path[n > 0 ? n : 0] = 0;
	}
	for (int i = 0; i < info->dlpi_phnum && m->nseg < LK_MAX_SEGMENTS; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD)
			m->seg[m->nseg++] = (struct lk_module_seg){ ph->p_vaddr, ph->p_memsz };
	}
	read_build_id(m, info);
	return 0;
}

static struct mods *load_modules(void)
{
	static struct mods ms;

	ms.n = 0;
	dl_iterate_phdr(phdr_cb, &ms);
	ASSERT_TRUE(ms.n > 0);
	return &ms;
}

/* Registers m, a module of this process, as module id of profile in s, under path. */
static void add_as(struct lk_symbolizer *s, uint32_t profile, uint64_t id, const char *path,
		   const struct mod *m)
{
	ASSERT_OK(lk_symbolizer_add_module(s, profile, id, path, m->build_id, m->build_id_len,
					   m->base, m->seg, m->nseg));
}

/* Registers every loaded object as ids 1, 2, ... of that profile. */
static void add_all(struct lk_symbolizer *s, uint32_t profile, const struct mods *ms)
{
	for (size_t i = 0; i < ms->n; i++)
		add_as(s, profile, i + 1, ms->m[i].path, &ms->m[i]);
}

static const struct mod *find_mod(const struct mods *ms, uintptr_t pc)
{
	for (size_t i = 0; i < ms->n; i++)
		for (uint32_t j = 0; j < ms->m[i].nseg; j++)
			if (pc - (ms->m[i].base + ms->m[i].seg[j].start) < ms->m[i].seg[j].len)
				return &ms->m[i];
	return NULL;
}

static struct lk_symbolizer *new_symbolizer(void)
{
	struct lk_symbolizer *s = NULL;

	unsetenv("DEBUGINFOD_URLS");
	ASSERT_OK(lk_symbolizer_new(&s));
	ASSERT_TRUE(s);
	return s;
}

static void *lib_open(void)
{
	void *h = dlopen(FIXTURE_LIB, RTLD_NOW);

	if (!h)
		FAIL("dlopen: %s", dlerror());
	return h;
}

/* Calls fix_lib_outer; returns the library's sites. */
static const struct fix_lib_sites *lib_call(void *h)
{
	void *(*outer)(size_t) = (void *(*)(size_t))dlsym(h, "fix_lib_outer");
	void *(*mangled)(size_t) = (void *(*)(size_t))dlsym(h, "_ZN3fix7mangledEm");
	void *(*rust)(size_t) = (void *(*)(size_t))dlsym(h, FIX_RUST_SYMBOL);
	const struct fix_lib_sites *sites = dlsym(h, "fix_lib_sites");

	ASSERT_TRUE(outer && mangled && rust && sites);
	free(outer(8));
	free(mangled(8));
	free(rust(8));
	ASSERT_TRUE(sites->leaf.ret && sites->mangled.ret && sites->rust.ret);
	return sites;
}

static void assert_file(const char *file, const char *name)
{
	char path[PATH_MAX], want[PATH_MAX], got[PATH_MAX];

	ASSERT_TRUE(file);
	ASSERT_TRUE(file[0] == '/');
	ASSERT_TRUE(!strstr(file, "/../") && !strstr(file, "/./")); /* tidied: build/../src */
	snprintf(path, sizeof(path), "%s/%s", FIXTURE_SRCDIR, name);
	ASSERT_TRUE(realpath(path, want));
	ASSERT_TRUE(realpath(file, got)); /* the same file, whatever symlinks the paths took */
	ASSERT_STREQ(got, want);
}

/* The three frames of fix_lib_outer's allocation: fix_leaf in fix_mid in fix_lib_outer. */
static void assert_lib_chain(const struct lk_sym_frame *f, size_t n,
			     const struct fix_lib_sites *sites, const char *module)
{
	ASSERT_EQ(n, 3);
	ASSERT_STREQ(f[0].function, "fix_leaf");
	ASSERT_TRUE(f[0].inlined);
	ASSERT_EQ(f[0].line, sites->leaf.line);
	ASSERT_STREQ(f[1].function, "fix_mid");
	ASSERT_TRUE(f[1].inlined);
	ASSERT_EQ(f[1].line, sites->mid_line);
	ASSERT_STREQ(f[2].function, "fix_lib_outer");
	ASSERT_TRUE(!f[2].inlined);
	ASSERT_EQ(f[2].line, sites->outer_line);
	for (size_t i = 0; i < n; i++) {
		assert_file(f[i].file, "fixture-lib.c");
		ASSERT_STREQ(f[i].module, module);
	}
}

static bool can_demangle(void)
{
	return dlsym(RTLD_DEFAULT, "__cxa_demangle") || dlopen("libstdc++.so.6", RTLD_LAZY);
}

/* A debug directory holding .build-id/xx/rest.debug -> FIXTURE_DEBUG for build-id id. */
struct debug_dir {
	char root[64], sub[128], link[256];
};

static void debug_dir_make(struct debug_dir *d, const uint8_t *id, size_t len)
{
#ifdef FIXTURE_DEBUG
	char hex[2 * LK_MAX_BUILD_ID + 1];
	int n;

	for (size_t i = 0; i < len; i++)
		sprintf(hex + 2 * i, "%02x", id[i]);
	snprintf(d->root, sizeof(d->root), "/tmp/leek-symbolize-XXXXXX");
	ASSERT_TRUE(mkdtemp(d->root));
	n = snprintf(d->sub, sizeof(d->sub), "%s/.build-id", d->root);
	ASSERT_TRUE(n > 0 && (size_t)n < sizeof(d->sub));
	ASSERT_OK(mkdir(d->sub, 0700));
	n = snprintf(d->sub, sizeof(d->sub), "%s/.build-id/%.2s", d->root, hex);
	ASSERT_TRUE(n > 0 && (size_t)n < sizeof(d->sub));
	ASSERT_OK(mkdir(d->sub, 0700));
	n = snprintf(d->link, sizeof(d->link), "%s/%s.debug", d->sub, hex + 2);
	ASSERT_TRUE(n > 0 && (size_t)n < sizeof(d->link));
	ASSERT_OK(symlink(FIXTURE_DEBUG, d->link));
#endif
}

static void debug_dir_remove(struct debug_dir *d)
{
	char build_id[96];

	unlink(d->link);
	rmdir(d->sub);
	snprintf(build_id, sizeof(build_id), "%s/.build-id", d->root);
	rmdir(build_id);
	rmdir(d->root);
}

/* The fixture library's module (sites: its call sites) as this process loaded it, with its
 * build-id. */
static const struct mod *lib_mod(const struct fix_lib_sites *sites)
{
	const struct mod *m = find_mod(load_modules(), sites->leaf.ret - 1);

	ASSERT_TRUE(m && m->build_id_len);
	return m;
}

/* The fixture library's module and a debug directory d holding its debug file by its build-id,
 * given to s: where the symbolizer finds DWARF that the module's own path lacks. */
static const struct mod *lib_debug_dir(struct lk_symbolizer *s, const struct fix_lib_sites *sites,
				       struct debug_dir *d)
{
	const struct mod *m = lib_mod(sites);

	debug_dir_make(d, m->build_id, m->build_id_len);
	ASSERT_OK(lk_symbolizer_add_debug_dir(s, d->root));
	return m;
}

TEST(program_inline_chain)
{
	_cleanup_(lk_symbolizer_freep) struct lk_symbolizer *s = new_symbolizer();
	const struct lk_sym_frame *f;
	const char *const *w;
	size_t n;
	uint64_t id;

	free(fix_prog_outer(16));
	struct mods *ms = load_modules();
	add_all(s, 0, ms);
	uintptr_t pc = fix_prog_sites.inner.ret - 1;
	ASSERT_OK(lk_symbolizer_find_module(s, 0, pc, &id));
	ASSERT_EQ(id, 1); /* dl_iterate_phdr reports the program first */
	ASSERT_OK(lk_symbolize(s, 0, id, pc, &f, &n));

	ASSERT_EQ(n, 2);
	ASSERT_STREQ(f[0].function, "fix_prog_inner");
	ASSERT_TRUE(f[0].inlined);
	ASSERT_EQ(f[0].line, fix_prog_sites.inner.line);
	ASSERT_TRUE(f[0].column > 0);
	ASSERT_STREQ(f[1].function, "fix_prog_outer");
	ASSERT_TRUE(!f[1].inlined);
	ASSERT_EQ(f[1].line, fix_prog_sites.outer_line);
	for (size_t i = 0; i < n; i++) {
		assert_file(f[i].file, "fixture-prog.c");
		ASSERT_STREQ(f[i].module, ms->m[0].path);
		ASSERT_EQ(f[i].offset, pc - ms->m[0].base);
	}
	ASSERT_EQ(lk_symbolizer_warnings(s, &w), 0);
}

TEST(dlopen_inline_chain)
{
	_cleanup_(lk_symbolizer_freep) struct lk_symbolizer *s = new_symbolizer();
	const struct fix_lib_sites *sites = lib_call(lib_open());
	const struct lk_sym_frame *f;
	const char *const *w;
	size_t n;
	uint64_t id;

	struct mods *ms = load_modules();
	add_all(s, 0, ms);
	uintptr_t pc = sites->leaf.ret - 1;
	const struct mod *m = find_mod(ms, pc);
	ASSERT_TRUE(m);
	ASSERT_STREQ(m->path, FIXTURE_LIB);
	ASSERT_OK(lk_symbolizer_find_module(s, 0, pc, &id));
	ASSERT_EQ(id, (uint64_t)(m - ms->m) + 1);
	ASSERT_OK(lk_symbolize(s, 0, id, pc, &f, &n));
	assert_lib_chain(f, n, sites, FIXTURE_LIB);
	ASSERT_EQ(f[0].offset, pc - m->base);

	/* A real function with DWARF and nothing inlined: one frame. */
	ASSERT_OK(lk_symbolize(s, 0, id, sites->mangled.ret - 1, &f, &n));
	ASSERT_EQ(n, 1);
	ASSERT_TRUE(!f[0].inlined);
	ASSERT_EQ(f[0].line, sites->mangled.line);
	assert_file(f[0].file, "fixture-lib.c");
	ASSERT_EQ(lk_symbolizer_warnings(s, &w), 0);
}

/* One answer per (file, address in the file): the same pointer again, also for the same library
 * mapped elsewhere by another process (profile), under another id. */
TEST(cache_shared_between_profiles)
{
	_cleanup_(lk_symbolizer_freep) struct lk_symbolizer *s = new_symbolizer();
	const struct fix_lib_sites *sites = lib_call(lib_open());
	const struct lk_sym_frame *f1, *f2, *f3;
	size_t n1, n2, n3;
	uint64_t id, shift = 0x100000000ull;

	struct mods *ms = load_modules();
	uintptr_t pc = sites->leaf.ret - 1;
	const struct mod *m = find_mod(ms, pc);
	ASSERT_TRUE(m);
	add_as(s, 0, 7, m->path, m);
	ASSERT_OK(lk_symbolizer_add_module(s, 1, 3, m->path, m->build_id, m->build_id_len,
					   m->base + shift, m->seg, m->nseg));
	ASSERT_OK(lk_symbolize(s, 0, 7, pc, &f1, &n1));
	ASSERT_OK(lk_symbolize(s, 0, 7, pc, &f2, &n2));
	ASSERT_TRUE(f1 == f2);
	ASSERT_EQ(n1, n2);
	ASSERT_OK(lk_symbolizer_find_module(s, 1, pc + shift, &id));
	ASSERT_EQ(id, 3);
	ASSERT_OK(lk_symbolize(s, 1, 3, pc + shift, &f3, &n3));
	ASSERT_TRUE(f1 == f3);
	assert_lib_chain(f3, n3, sites, FIXTURE_LIB);
}

TEST(stripped_copy_uses_symbol_table)
{
#ifdef FIXTURE_STRIPPED
	_cleanup_(lk_symbolizer_freep) struct lk_symbolizer *s = new_symbolizer();
	const struct fix_lib_sites *sites = lib_call(lib_open());
	const struct lk_sym_frame *f;
	const char *const *w;
	size_t n;

	const struct mod *m = lib_mod(sites);
	add_as(s, 0, 1, FIXTURE_STRIPPED, m);
	ASSERT_OK(lk_symbolize(s, 0, 1, sites->leaf.ret - 1, &f, &n));
	ASSERT_EQ(n, 1);
	ASSERT_STREQ(f[0].function, "fix_lib_outer");
	ASSERT_TRUE(f[0].symbol == f[0].function); /* nothing to demangle: the same string */
	ASSERT_TRUE(!f[0].file);
	ASSERT_EQ(f[0].line, 0);
	ASSERT_TRUE(!f[0].inlined);
	ASSERT_STREQ(f[0].module, FIXTURE_STRIPPED);

	ASSERT_OK(lk_symbolize(s, 0, 1, sites->mangled.ret - 1, &f, &n));
	ASSERT_EQ(n, 1);
	if (can_demangle())
		ASSERT_STREQ(f[0].function, "fix::mangled(unsigned long)");
	else
		ASSERT_STREQ(f[0].function, "_ZN3fix7mangledEm");
	ASSERT_STREQ(f[0].symbol, "_ZN3fix7mangledEm"); /* pprof's system_name */

	/* Rust: the hash and rustc's ".llvm." suffix dropped, the escapes decoded. */
	ASSERT_OK(lk_symbolize(s, 0, 1, sites->rust.ret - 1, &f, &n));
	ASSERT_EQ(n, 1);
	if (can_demangle())
		ASSERT_STREQ(f[0].function, "<fix::Pool<T,A> as core::clone::Clone>::clone");
	else
		ASSERT_STREQ(f[0].function, FIX_RUST_SYMBOL);
	ASSERT_EQ(lk_symbolizer_warnings(s, &w), 0);
#else
	SKIP("no objcopy");
#endif
}

/* --debug-dir: the stripped copy's DWARF is found by its build-id. */
TEST(debug_dir_by_build_id)
{
#ifdef FIXTURE_STRIPPED
	_cleanup_(lk_symbolizer_freep) struct lk_symbolizer *s = new_symbolizer();
	const struct fix_lib_sites *sites = lib_call(lib_open());
	const struct lk_sym_frame *f;
	const char *const *w;
	struct debug_dir d;
	size_t n;

	const struct mod *m = lib_debug_dir(s, sites, &d);
	add_as(s, 0, 1, FIXTURE_STRIPPED, m);
	ASSERT_OK(lk_symbolize(s, 0, 1, sites->leaf.ret - 1, &f, &n));
	assert_lib_chain(f, n, sites, FIXTURE_STRIPPED);
	ASSERT_EQ(lk_symbolizer_warnings(s, &w), 0);
	debug_dir_remove(&d);
#else
	SKIP("no objcopy");
#endif
}

/* A temporary directory, and the files and directories made in it, removed in reverse. */
struct tmp_tree {
	char root[64];
	char made[8][256];
	bool is_dir[8];
	size_t n;
};

static const char *tree_path(struct tmp_tree *t, const char *name, bool dir)
{
	char path[sizeof(t->made[0])];

	ASSERT_TRUE(t->n < sizeof(t->made) / sizeof(t->made[0]));
	snprintf(path, sizeof(path), "%s/%s", t->root, name);
	memcpy(t->made[t->n], path, sizeof(path));
	t->is_dir[t->n] = dir;
	return t->made[t->n++];
}

static void tree_copy(struct tmp_tree *t, const char *from, const char *name)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC);
	int out = open(tree_path(t, name, false), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	ssize_t n;

	ASSERT_TRUE(in >= 0 && out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		ASSERT_EQ(write(out, buf, (size_t)n), n);
	ASSERT_EQ(n, 0);
	close(in);
	ASSERT_OK(close(out));
}

static void tree_fifo(struct tmp_tree *t, const char *name)
{
	ASSERT_OK(mkfifo(tree_path(t, name, false), 0600));
}

static void tree_dir(struct tmp_tree *t, const char *name)
{
	ASSERT_OK(mkdir(tree_path(t, name, true), 0700));
}

static void tree_remove(struct tmp_tree *t)
{
	while (t->n--)
		(t->is_dir[t->n] ? rmdir : unlink)(t->made[t->n]);
	rmdir(t->root);
}

static void tree_make(struct tmp_tree *t)
{
	memset(t, 0, sizeof(*t));
	snprintf(t->root, sizeof(t->root), "/tmp/leek-symbolize-XXXXXX");
	ASSERT_TRUE(mkdtemp(t->root));
}

/* A stripped copy finds its DWARF through its .gnu_debuglink, in its own directory. */
TEST(debuglink_beside_the_file)
{
#ifdef FIXTURE_LINKED
	_cleanup_(lk_symbolizer_freep) struct lk_symbolizer *s = new_symbolizer();
	const struct fix_lib_sites *sites = lib_call(lib_open());
	const struct lk_sym_frame *f;
	const char *const *w;
	struct tmp_tree t;
	size_t n;

	const struct mod *m = lib_mod(sites);
	tree_make(&t);
	tree_copy(&t, FIXTURE_LINKED, "lib.so");
	tree_copy(&t, FIXTURE_DEBUG, "libleekfix.debug"); /* the debuglink's name */
	add_as(s, 0, 1, t.made[0], m);
	ASSERT_OK(lk_symbolize(s, 0, 1, sites->leaf.ret - 1, &f, &n));
	assert_lib_chain(f, n, sites, t.made[0]);
	ASSERT_EQ(lk_symbolizer_warnings(s, &w), 0);
	tree_remove(&t);
#else
	SKIP("no objcopy");
#endif
}

/* A FIFO at every path the symbolizer looks at for a module (the module's own path, its debuglink
 * beside it and in .debug, a debug directory's build-id paths) would block an open(2) for good.
 * Each is passed over: the module path says so, and the stripped copy answers from its symbol
 * table. A hang here is the harness's timeout. */
TEST(fifos_never_opened)
{
#ifdef FIXTURE_LINKED
	_cleanup_(lk_symbolizer_freep) struct lk_symbolizer *s = new_symbolizer();
	const struct fix_lib_sites *sites = lib_call(lib_open());
	const struct lk_sym_frame *f;
	const char *const *w;
	char hex[2 * LK_MAX_BUILD_ID + 1], name[2 * LK_MAX_BUILD_ID + 32];
	struct tmp_tree t;
	size_t n;

	const struct mod *m = lib_mod(sites);
	for (size_t i = 0; i < m->build_id_len; i++)
		sprintf(hex + 2 * i, "%02x", m->build_id[i]);
	tree_make(&t);
	tree_copy(&t, FIXTURE_LINKED, "lib.so");
	tree_fifo(&t, "libleekfix.debug");
	tree_dir(&t, ".debug");
	tree_fifo(&t, ".debug/libleekfix.debug");
	tree_dir(&t, ".build-id");
	snprintf(name, sizeof(name), ".build-id/%.2s", hex);
	tree_dir(&t, name);
	snprintf(name, sizeof(name), ".build-id/%.2s/%s.debug", hex, hex + 2);
	tree_fifo(&t, name);
	tree_fifo(&t, "fifo.so");
	ASSERT_OK(lk_symbolizer_add_debug_dir(s, t.root));

	add_as(s, 0, 1, t.made[0], m);
	ASSERT_OK(lk_symbolize(s, 0, 1, sites->leaf.ret - 1, &f, &n));
	ASSERT_EQ(n, 1);
	ASSERT_STREQ(f[0].function, "fix_lib_outer");
	ASSERT_TRUE(f[0].symbol == f[0].function); /* nothing to demangle: the same string */
	ASSERT_TRUE(!f[0].file);
	ASSERT_EQ(lk_symbolizer_warnings(s, &w), 0);

	/* The module's path is the FIFO, and no file has its build-id: a name from the address. */
	static const uint8_t other[20] = { 0x5a, 0x5a, 0x5a };
	ASSERT_OK(lk_symbolizer_add_module(s, 0, 2, t.made[t.n - 1], other, sizeof(other),
					   m->base, m->seg, m->nseg));
	ASSERT_OK(lk_symbolize(s, 0, 2, sites->leaf.ret - 1, &f, &n));
	ASSERT_EQ(n, 1);
	ASSERT_CONTAINS(f[0].function, "fifo.so+0x");
	ASSERT_EQ(lk_symbolizer_warnings(s, &w), 1);
	ASSERT_CONTAINS(w[0], "fifo.so: not a regular file: no symbols");
	tree_remove(&t);
#else
	SKIP("no objcopy");
#endif
}

/* dwz: two copies of the library share their DWARF through an alternate file, which each names
 * (.gnu_debugaltlink, an absolute path) and refers into (DW_FORM_GNU_ref_alt, strp_alt). Found,
 * it answers; a FIFO in its place is never opened, by leek or by libdw itself (dwarf_getalt), and
 * the lookup still ends. */
TEST(dwz_alternate_file)
{
#ifdef DWZ_PATH
	const struct fix_lib_sites *sites = lib_call(lib_open());
	const struct lk_sym_frame *f;
	char cmd[1024], real[300];
	struct tmp_tree t;
	size_t n;

	const struct mod *m = lib_mod(sites);
	tree_make(&t);
	tree_copy(&t, FIXTURE_LIB, "a.so");
	tree_copy(&t, FIXTURE_LIB, "b.so");
	const char *alt = tree_path(&t, "common.debug", false);
	snprintf(cmd, sizeof(cmd), "'%s' -q -m '%s' -M '%s' '%s' '%s'", DWZ_PATH, alt, alt,
		 t.made[0], t.made[1]);
	ASSERT_EQ(system(cmd), 0);

	struct lk_symbolizer *s = new_symbolizer();
	add_as(s, 0, 1, t.made[0], m);
	ASSERT_OK(lk_symbolize(s, 0, 1, sites->leaf.ret - 1, &f, &n));
	assert_lib_chain(f, n, sites, t.made[0]); /* names from the alternate file */
	lk_symbolizer_free(s);

	snprintf(real, sizeof(real), "%s.real", alt);
	ASSERT_OK(rename(alt, real));
	ASSERT_OK(mkfifo(alt, 0600));
	s = new_symbolizer();
	add_as(s, 0, 1, t.made[0], m);
	ASSERT_OK(lk_symbolize(s, 0, 1, sites->leaf.ret - 1, &f, &n));
	ASSERT_TRUE(n >= 1);
	ASSERT_OK(lk_symbolize(s, 0, 1, sites->mangled.ret - 1, &f, &n));
	lk_symbolizer_free(s);
	unlink(real);
	tree_remove(&t);
#else
	SKIP("no dwz");
#endif
}

/* The file on disk is another build: still used, with one warning for the module. */
TEST(build_id_mismatch_warns_once)
{
	_cleanup_(lk_symbolizer_freep) struct lk_symbolizer *s = new_symbolizer();
	const struct fix_lib_sites *sites = lib_call(lib_open());
	static const uint8_t wrong[20] = { 0xab, 0xab, 0xab, 0xab };
	const struct lk_sym_frame *f;
	const char *const *w;
	size_t n;

	const struct mod *m = lib_mod(sites);
	ASSERT_OK(lk_symbolizer_add_module(s, 0, 1, m->path, wrong, sizeof(wrong), m->base, m->seg,
					   m->nseg));
	ASSERT_OK(lk_symbolize(s, 0, 1, sites->leaf.ret - 1, &f, &n));
	assert_lib_chain(f, n, sites, FIXTURE_LIB);
	ASSERT_OK(lk_symbolize(s, 0, 1, sites->mangled.ret - 1, &f, &n));
	ASSERT_EQ(lk_symbolizer_warnings(s, &w), 1);
	ASSERT_CONTAINS(w[0], "module " FIXTURE_LIB ": build-id on disk (");
	ASSERT_CONTAINS(w[0], "does not match the profile (abababab00");
	ASSERT_CONTAINS(w[0], "symbols may be wrong");
}

/* The path now names another file (here: the test program), but a debug directory holds the
 * recorded build: that is what answers. */
TEST(build_id_mismatch_prefers_debug_file)
{
#ifdef FIXTURE_DEBUG
	_cleanup_(lk_symbolizer_freep) struct lk_symbolizer *s = new_symbolizer();
	const struct fix_lib_sites *sites = lib_call(lib_open());
	const struct lk_sym_frame *f;
	const char *const *w;
	struct debug_dir d;
	size_t n;

	const struct mod *m = lib_debug_dir(s, sites, &d);
	const char *prog = load_modules()->m[0].path; /* dl_iterate_phdr reports the program first */

	add_as(s, 0, 1, prog, m);
	ASSERT_OK(lk_symbolize(s, 0, 1, sites->leaf.ret - 1, &f, &n));
	assert_lib_chain(f, n, sites, prog);
	ASSERT_EQ(lk_symbolizer_warnings(s, &w), 1);
	ASSERT_CONTAINS(w[0], "does not match the profile");
	ASSERT_CONTAINS(w[0], ": using ");
	ASSERT_CONTAINS(w[0], d.root);
	debug_dir_remove(&d);
#else
	SKIP("no objcopy");
#endif
}

TEST(missing_file)
{
	_cleanup_(lk_symbolizer_freep) struct lk_symbolizer *s = new_symbolizer();
	const struct fix_lib_sites *sites = lib_call(lib_open());
	const struct lk_sym_frame *f;
	const char *const *w;
	char want[64];
	size_t n;

	const struct mod *m = lib_mod(sites);
	add_as(s, 0, 1, "/nonexistent/libleekfix.so", m);
	ASSERT_OK(lk_symbolize(s, 0, 1, sites->leaf.ret - 1, &f, &n));
	ASSERT_EQ(n, 1);
	snprintf(want, sizeof(want), "libleekfix.so+%#llx",
		 (unsigned long long)(sites->leaf.ret - 1 - m->base));
	ASSERT_STREQ(f[0].function, want);
	ASSERT_TRUE(!f[0].file);
	ASSERT_STREQ(f[0].module, "/nonexistent/libleekfix.so");
	ASSERT_EQ(lk_symbolizer_warnings(s, &w), 1);
	ASSERT_CONTAINS(w[0], "module /nonexistent/libleekfix.so: ");
	ASSERT_CONTAINS(w[0], "no symbols");
}

/* Gone from disk, but its debug file is at hand: no warning, every frame. */
TEST(missing_file_debug_file_at_hand)
{
#ifdef FIXTURE_DEBUG
	_cleanup_(lk_symbolizer_freep) struct lk_symbolizer *s = new_symbolizer();
	const struct fix_lib_sites *sites = lib_call(lib_open());
	const struct lk_sym_frame *f;
	const char *const *w;
	struct debug_dir d;
	size_t n;

	const struct mod *m = lib_debug_dir(s, sites, &d);
	add_as(s, 0, 1, "/nonexistent/libleekfix.so", m);
	ASSERT_OK(lk_symbolize(s, 0, 1, sites->leaf.ret - 1, &f, &n));
	assert_lib_chain(f, n, sites, "/nonexistent/libleekfix.so");
	ASSERT_EQ(lk_symbolizer_warnings(s, &w), 0);
	debug_dir_remove(&d);
#else
	SKIP("no objcopy");
#endif
}

/* A module opened ahead (lk_symbolizer_prepare, by `leek run` while the program runs) answers as
 * it would have, and whatever is wrong with its file is said at its first lookup, once: a module
 * opened ahead and never looked up says nothing. */
TEST(prepare_ahead)
{
	_cleanup_(lk_symbolizer_freep) struct lk_symbolizer *s = new_symbolizer();
	_cleanup_(lk_symbolizer_freep) struct lk_symbolizer *plain = new_symbolizer();
	const struct fix_lib_sites *sites = lib_call(lib_open());
	const struct lk_sym_frame *f, *g;
	const char *const *w;
	size_t n, k;

	const struct mod *m = lib_mod(sites);
	add_as(s, 0, 1, m->path, m);
	add_as(plain, 0, 1, m->path, m);
	add_as(s, 0, 2, "/nonexistent/libleekfix.so", m);
	add_as(s, 0, 3, "/nonexistent/other.so", m);
	ASSERT_EQ(lk_symbolizer_prepare(s, 0, 9), -ENOENT);
	ASSERT_EQ(lk_symbolizer_prepare(s, 1, 1), -ENOENT);
	ASSERT_OK(lk_symbolizer_prepare(s, 0, 1));
	ASSERT_OK(lk_symbolizer_prepare(s, 0, 2));
	ASSERT_OK(lk_symbolizer_prepare(s, 0, 3));
	ASSERT_OK(lk_symbolizer_prepare(s, 0, 1)); /* again: nothing more */
	ASSERT_EQ(lk_symbolizer_warnings(s, &w), 0);

	ASSERT_OK(lk_symbolize(s, 0, 1, sites->leaf.ret - 1, &f, &n));
	assert_lib_chain(f, n, sites, m->path);
	ASSERT_OK(lk_symbolize(plain, 0, 1, sites->leaf.ret - 1, &g, &k));
	ASSERT_EQ(n, k);
	for (size_t i = 0; i < n; i++) {
		ASSERT_STREQ(f[i].function, g[i].function);
		ASSERT_EQ(f[i].line, g[i].line);
	}
	ASSERT_EQ(lk_symbolizer_warnings(s, &w), 0);

	ASSERT_OK(lk_symbolize(s, 0, 2, sites->leaf.ret - 1, &f, &n));
	ASSERT_EQ(n, 1);
	ASSERT_TRUE(!f[0].file);
	ASSERT_EQ(lk_symbolizer_warnings(s, &w), 1);
	ASSERT_CONTAINS(w[0], "module /nonexistent/libleekfix.so: ");
	ASSERT_CONTAINS(w[0], "no symbols");
	ASSERT_OK(lk_symbolize(s, 0, 2, sites->mangled.ret - 1, &f, &n));
	ASSERT_EQ(lk_symbolizer_warnings(s, &w), 1); /* once */
}

/* The vDSO and other modules without a file: module+offset, silently. */
TEST(no_file_is_silent)
{
	_cleanup_(lk_symbolizer_freep) struct lk_symbolizer *s = new_symbolizer();
	static const struct lk_module_seg seg = { 0, 0x2000 };
	static const uint8_t id[20] = { 1, 2, 3 };
	const struct lk_sym_frame *f;
	const char *const *w;
	size_t n;

	ASSERT_OK(lk_symbolizer_add_module(s, 0, 1, "linux-vdso.so.1", id, sizeof(id),
					   0x7fff0000000, &seg, 1));
	ASSERT_OK(lk_symbolizer_add_module(s, 0, 2, "/proc/self/exe", NULL, 0, 0x500000, &seg, 1));
	ASSERT_OK(lk_symbolize(s, 0, 1, 0x7fff0000a2b, &f, &n));
	ASSERT_EQ(n, 1);
	ASSERT_STREQ(f[0].function, "linux-vdso.so.1+0xa2b");
	ASSERT_STREQ(f[0].module, "linux-vdso.so.1");
	ASSERT_TRUE(!f[0].file);
	ASSERT_EQ(f[0].offset, 0xa2b);
	ASSERT_OK(lk_symbolize(s, 0, 2, 0x500010, &f, &n));
	ASSERT_STREQ(f[0].function, "exe+0x10"); /* never leek's own /proc/self/exe */
	ASSERT_EQ(lk_symbolizer_warnings(s, &w), 0);
}

/* dlclose then dlopen may put another module where one was: the latest loaded one wins. */
TEST(find_module_ranges)
{
	_cleanup_(lk_symbolizer_freep) struct lk_symbolizer *s = new_symbolizer();
	static const struct lk_module_seg a[] = { { 0, 0x1000 }, { 0x3000, 0x500 } };
	static const struct lk_module_seg b[] = { { 0, 0x4000 } };
	uint64_t id;

	ASSERT_OK(lk_symbolizer_add_module(s, 0, 1, "/lib/a.so", NULL, 0, 0x10000, a, 2));
	ASSERT_OK(lk_symbolizer_add_module(s, 0, 2, "/lib/c.so", NULL, 0, 0x80000, b, 1));
	ASSERT_OK(lk_symbolizer_find_module(s, 0, 0x10000, &id));
	ASSERT_EQ(id, 1);
	ASSERT_OK(lk_symbolizer_find_module(s, 0, 0x134ff, &id));
	ASSERT_EQ(id, 1);
	ASSERT_EQ(lk_symbolizer_find_module(s, 0, 0x11000, &id), -ENOENT); /* the gap */
	ASSERT_EQ(lk_symbolizer_find_module(s, 0, 0x13500, &id), -ENOENT);
	ASSERT_EQ(lk_symbolizer_find_module(s, 0, 0xffff, &id), -ENOENT);
	ASSERT_EQ(lk_symbolizer_find_module(s, 1, 0x10000, &id), -ENOENT); /* another profile */
	ASSERT_OK(lk_symbolizer_find_module(s, 0, 0x83fff, &id));
	ASSERT_EQ(id, 2);

	ASSERT_OK(lk_symbolizer_unload_module(s, 0, 1));
	ASSERT_OK(lk_symbolizer_add_module(s, 0, 3, "/lib/b.so", NULL, 0, 0x10000, b, 1));
	ASSERT_OK(lk_symbolizer_find_module(s, 0, 0x11000, &id));
	ASSERT_EQ(id, 3);
	ASSERT_OK(lk_symbolizer_find_module(s, 0, 0x10000, &id));
	ASSERT_EQ(id, 3);
	/* Both loaded at once (a profile can say so): the later one. */
	ASSERT_OK(lk_symbolizer_add_module(s, 0, 4, "/lib/d.so", NULL, 0, 0x10800, a, 1));
	ASSERT_OK(lk_symbolizer_find_module(s, 0, 0x10900, &id));
	ASSERT_EQ(id, 4);
	ASSERT_OK(lk_symbolizer_find_module(s, 0, 0x13000, &id));
	ASSERT_EQ(id, 3);
	ASSERT_OK(lk_symbolizer_unload_module(s, 0, 3));
	ASSERT_EQ(lk_symbolizer_find_module(s, 0, 0x13000, &id), -ENOENT);
	ASSERT_OK(lk_symbolizer_find_module(s, 0, 0x10900, &id));
	ASSERT_EQ(id, 4);
}

TEST(errors)
{
	_cleanup_(lk_symbolizer_freep) struct lk_symbolizer *s = new_symbolizer();
	static const uint8_t id[LK_MAX_BUILD_ID + 1];
	const struct lk_sym_frame *f = NULL;
	size_t n = 99;
	uint64_t mid = 99;

	ASSERT_TRUE(lk_symbolizer_free(NULL) == NULL);
	ASSERT_OK(lk_symbolizer_add_module(s, 0, 1, "/lib/a.so", NULL, 0, 0, NULL, 0));
	ASSERT_EQ(lk_symbolizer_add_module(s, 0, 1, "/lib/a.so", NULL, 0, 0, NULL, 0), -EEXIST);
	ASSERT_OK(lk_symbolizer_add_module(s, 1, 1, "/lib/a.so", NULL, 0, 0, NULL, 0));
	ASSERT_EQ(lk_symbolizer_add_module(s, 0, 1ull << 32, "/lib/a.so", NULL, 0, 0, NULL, 0),
		  -ERANGE);
	ASSERT_EQ(lk_symbolizer_add_module(s, 0, 2, "/lib/a.so", id, sizeof(id), 0, NULL, 0),
		  -EINVAL);
	ASSERT_EQ(lk_symbolizer_add_module(s, 0, 2, "/lib/a.so", NULL, 0, 0, NULL,
					   LK_MAX_SEGMENTS + 1),
		  -EINVAL);
	ASSERT_EQ(lk_symbolize(s, 0, 2, 0x1000, &f, &n), -ENOENT);
	ASSERT_EQ(lk_symbolize(s, 2, 1, 0x1000, &f, &n), -ENOENT);
	ASSERT_TRUE(f == NULL && n == 99);
	ASSERT_EQ(lk_symbolizer_find_module(s, 0, 0, &mid), -ENOENT);
	ASSERT_EQ(mid, 99);
	ASSERT_EQ(lk_symbolizer_unload_module(s, 0, 9), -ENOENT);
	ASSERT_EQ(lk_symbolizer_add_debug_dir(s, "/nonexistent/debug"), -ENOENT);
}
