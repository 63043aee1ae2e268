/* debuginfo.c: finds modules' debug files for libdwfl, opening only regular files (debuginfo.h).
 *
 * It searches where libdwfl's dwfl_standard_find_debuginfo does (elfutils 0.188,
 * libdwfl/find-debuginfo.c), less the ".debug" name it makes up for a file without a debuglink:
 * a file that has no debuglink has a build-id in practice, which finds its debug file first. Every
 * candidate goes through lk_open_regular() and is checked on that descriptor, which is the one
 * libdwfl gets: a FIFO, a device or a directory at a searched path is passed over, and a file
 * swapped in after the check is never read.
 *
 * Never: open a path with a blocking open(2), hand libdwfl a name without a descriptor (libdwfl
 * opens such a name itself, with a blocking open), leave a module's alternate file unset once it
 * is not found (libdw would look for it itself: set_no_alt), or ask a debuginfod server unless
 * DEBUGINFOD_URLS is set (the commands unset it unless asked: cmd-report.c, cmd-run.c).
 */
#include <dlfcn.h>
#include <elf.h>
#include <stddef.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "debuginfo.h"
#include "util.h"

/* What to look for: the file whose build-id is id (or, without one, whose CRC is crc when it is
 * not 0), other than the file (dev, ino) that names it. */
struct want {
	const unsigned char *id;
	size_t id_len;
	uint32_t crc;
	dev_t dev;
	ino_t ino;
};

/* libdebuginfod, loaded on first use as libdwfl does (debuginfod.h's functions). */
struct debuginfod_fns {
	void *(*begin)(void);
	int (*find_debuginfo)(void *client, const unsigned char *id, int id_len, char **path);
	void (*end)(void *client);
};
static struct debuginfod_fns debuginfod;
static pthread_once_t debuginfod_once = PTHREAD_ONCE_INIT;

int lk_debuginfo_add_dir(struct lk_debuginfo *di, char *dir)
{
	if (di->n_dirs == di->dirs_cap) {
		size_t cap = di->dirs_cap ? 2 * di->dirs_cap : 4;
		char **v = reallocarray(di->dirs, cap, sizeof(*v));
		if (!v) {
			free(dir);
			return -ENOMEM;
		}
		di->dirs = v;
		di->dirs_cap = cap;
	}
	di->dirs[di->n_dirs++] = dir;
	return 0;
}

void lk_debuginfo_done(struct lk_debuginfo *di)
{
	for (size_t i = 0; i < di->n_dirs; i++)
		free(di->dirs[i]);
	free(di->dirs);
	if (di->debuginfod)
		debuginfod.end(di->debuginfod);
	if (di->no_alt)
		dwarf_end(di->no_alt);
	if (di->no_alt_elf)
		elf_end(di->no_alt_elf);
	free(di->no_alt_image);
	*di = (struct lk_debuginfo){ 0 };
}

int lk_debuginfo_find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			  char **file_name, Elf **elfp)
{
	(void)mod, (void)userdata, (void)modname, (void)base, (void)file_name, (void)elfp;
	errno = ENOENT;
	return -1;
}

/* Whether the whole file's CRC-32 (the debuglink's, which is zlib's) is crc. */
static bool crc_matches(int fd, uint32_t crc)
{
	unsigned char buf[65536];
	uLong sum = crc32(0, NULL, 0);
	off_t at = 0;
	ssize_t n;

	while ((n = pread(fd, buf, sizeof(buf), at)) > 0) {
		sum = crc32(sum, buf, (uInt)n);
		at += n;
	}
	return n == 0 && (uint32_t)sum == crc;
}

/* Whether the regular file fd (st) is the one wanted. */
static bool matches(int fd, const struct stat *st, const struct want *w)
{
	const void *id;
	bool ok = false;
	Elf *elf;

	if (st->st_dev == w->dev && st->st_ino == w->ino)
		return false; /* the file itself, by another name */
	if (w->id_len == 0)
		return w->crc == 0 || crc_matches(fd, w->crc);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf) {
		ssize_t n = dwelf_elf_gnu_build_id(elf, &id);
		ok = n > 0 && (size_t)n == w->id_len && memcmp(id, w->id, w->id_len) == 0;
		elf_end(elf);
	}
	return ok;
}

/* The descriptor of path if it is the file wanted (and *ret_name, its malloc'd copy); else -1. */
static int try_path(const char *path, const struct want *w, char **ret_name)
{
	struct stat st;
	int fd = lk_open_regular(AT_FDCWD, path, &st);

	if (fd < 0)
		return -1;
	if (matches(fd, &st, w) && (*ret_name = strdup(path)))
		return fd;
	close(fd);
	return -1;
}

static int try_pathf(const struct want *w, char **ret_name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int try_pathf(const struct want *w, char **ret_name, const char *fmt, ...)
{
	char *path;
	va_list ap;
	int fd = -1, n;

	va_start(ap, fmt);
	n = vasprintf(&path, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	fd = try_path(path, w, ret_name);
	free(path);
	return fd;
}

/* .build-id/xx/rest.debug in each debug directory, then in the system's. */
static int by_build_id(const struct lk_debuginfo *di, const struct want *w, char **ret_name)
{
	char hex[2 * 64 + 1];
	int fd = -1;

	if (w->id_len < 2 || w->id_len > 64)
		return -1;
	for (size_t i = 0; i < w->id_len; i++)
		sprintf(hex + 2 * i, "%02x", w->id[i]);
	for (size_t i = 0; fd < 0 && i <= di->n_dirs; i++)
		fd = try_pathf(w, ret_name, "%s/.build-id/%.2s/%s.debug",
			       i < di->n_dirs ? di->dirs[i] : LK_SYSTEM_DEBUG_DIR, hex, hex + 2);
	return fd;
}

/* A debuglink's name beside the file (dir), in its .debug directory, and under each debug
 * directory with the file's absolute directory appended (gdb's and libdwfl's places). */
static int by_debuglink(const struct lk_debuginfo *di, const char *dir, const char *link,
			const struct want *w, char **ret_name)
{
	int fd = try_pathf(w, ret_name, "%s/%s", dir, link);

	if (fd < 0)
		fd = try_pathf(w, ret_name, "%s/.debug/%s", dir, link);
	for (size_t i = 0; fd < 0 && dir[0] == '/' && i <= di->n_dirs; i++)
		fd = try_pathf(w, ret_name, "%s%s/%s",
			       i < di->n_dirs ? di->dirs[i] : LK_SYSTEM_DEBUG_DIR, dir, link);
	return fd;
}

/* An alternate file's recorded name (absolute, or relative to the file's directory dir), then its
 * base name in .dwz beside the file and in each debug directory's .dwz. */
static int by_altname(const struct lk_debuginfo *di, const char *dir, const char *name,
		      const struct want *w, char **ret_name)
{
	const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
	int fd = name[0] == '/' ? try_path(name, w, ret_name)
				: try_pathf(w, ret_name, "%s/%s", dir, name);

	if (fd < 0)
		fd = try_pathf(w, ret_name, "%s/.dwz/%s", dir, base);
	for (size_t i = 0; fd < 0 && i <= di->n_dirs; i++)
		fd = try_pathf(w, ret_name, "%s/.dwz/%s",
			       i < di->n_dirs ? di->dirs[i] : LK_SYSTEM_DEBUG_DIR, base);
	return fd;
}

static void load_debuginfod(void)
{
	void *h = dlopen("libdebuginfod.so.1", RTLD_LAZY | RTLD_LOCAL);

	if (!h)
		return;
	debuginfod.begin = (void *(*)(void))dlsym(h, "debuginfod_begin");
	debuginfod.find_debuginfo = (int (*)(void *, const unsigned char *, int, char **))dlsym(
		h, "debuginfod_find_debuginfo");
	debuginfod.end = (void (*)(void *))dlsym(h, "debuginfod_end");
	if (!debuginfod.begin || !debuginfod.find_debuginfo || !debuginfod.end)
		debuginfod = (struct debuginfod_fns){ 0 };
}

/* From a debuginfod server, into the user's cache, by build-id: only when DEBUGINFOD_URLS names
 * one (libdwfl's rule). The cache's file is the client's, not the profile's to choose. */
static int by_debuginfod(struct lk_debuginfo *di, const struct want *w, char **ret_name)
{
	const char *urls = getenv("DEBUGINFOD_URLS");
	char *path = NULL;
	int k;

	if (!urls || !*urls || w->id_len == 0)
		return -1;
	if (!di->debuginfod_tried) {
		di->debuginfod_tried = true;
		pthread_once(&debuginfod_once, load_debuginfod);
		if (debuginfod.begin)
			di->debuginfod = debuginfod.begin();
	}
	if (!di->debuginfod)
		return -1;
	k = debuginfod.find_debuginfo(di->debuginfod, w->id, (int)w->id_len, &path);
	if (k < 0)
		return -1;
	close(k); /* checked and handed on as any other candidate */
	k = path ? try_path(path, w, ret_name) : -1;
	free(path);
	return k;
}

/* An ELF file in memory with one section of DWARF, eight zero bytes of .debug_info: a unit that
 * no reference can resolve in, and no strings. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HOST_DATA ELFDATA2LSB
#else
#define HOST_DATA ELFDATA2MSB
#endif
struct empty_elf {
	Elf64_Ehdr eh;
	char shstr[24];
	uint8_t info[8];
	Elf64_Shdr sh[3];
};
static const struct empty_elf empty_elf = {
	.eh = { .e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64, HOST_DATA, EV_CURRENT },
		.e_type = ET_REL, .e_version = EV_CURRENT,
		.e_shoff = offsetof(struct empty_elf, sh), .e_ehsize = sizeof(Elf64_Ehdr),
		.e_shentsize = sizeof(Elf64_Shdr), .e_shnum = 3, .e_shstrndx = 1 },
	.shstr = "\0.shstrtab\0.debug_info",
	.sh = { { 0 },
		{ .sh_name = 1, .sh_type = SHT_STRTAB, .sh_offset = offsetof(struct empty_elf, shstr),
		  .sh_size = sizeof(empty_elf.shstr), .sh_addralign = 1 },
		{ .sh_name = 11, .sh_type = SHT_PROGBITS, .sh_offset = offsetof(struct empty_elf, info),
		  .sh_size = sizeof(empty_elf.info), .sh_addralign = 1 } },
};

/* Gives dw an alternate DWARF with nothing in it. libdw resolves a reference into the alternate
 * file (DW_FORM_GNU_ref_alt, strp_alt) with dwarf_getalt, which, when none was set, opens the
 * file that .gnu_debugaltlink names (beside the debug file, or an absolute path: the profile's
 * choice) with a blocking open(2). With this one set, such a reference fails as it would with the
 * file missing. One per lk_debuginfo, shared by its modules and ended after them. */
static void set_no_alt(struct lk_debuginfo *di, Dwarf *dw)
{
	if (!di->no_alt && (di->no_alt_image = malloc(sizeof(empty_elf)))) {
		memcpy(di->no_alt_image, &empty_elf, sizeof(empty_elf));
		di->no_alt_elf = elf_memory(di->no_alt_image, sizeof(empty_elf));
		if (di->no_alt_elf)
			di->no_alt = dwarf_begin_elf(di->no_alt_elf, DWARF_C_READ, NULL);
	}
	if (di->no_alt)
		dwarf_setalt(dw, di->no_alt);
}

int lk_debuginfo_find(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
		      const char *file_name, const char *debuglink, GElf_Word crc,
		      char **ret_name)
{
	struct lk_debuginfo *di = *userdata;
	struct want w = { .crc = crc };
	const char *altname = NULL;
	Dwarf *alt_of = NULL;
	Dwarf_Addr dwbias, bias;
	char *dir = NULL;
	struct stat st;
	int fd = -1;

	(void)modname, (void)base;
	*ret_name = NULL;
	errno = 0;
	if (!di)
		return -1;
	elf_version(EV_CURRENT);
	/* libdwfl asks again, for the alternate file, once the module's DWARF is set, which is
	 * when its debug file is known: dwbias is -1 until then (libdwfl.h). */
	dwfl_module_info(mod, NULL, NULL, NULL, &dwbias, NULL, NULL, NULL);
	if (dwbias != (Dwarf_Addr)-1) {
		Dwarf *dw = dwfl_module_getdwarf(mod, &bias); /* set already: no search */
		const void *id;
		ssize_t n = dw ? dwelf_dwarf_gnu_debugaltlink(dw, &altname, &id) : -1;
		if (n <= 0)
			return -1;
		alt_of = dw;
		w.id = id;
		w.id_len = (size_t)n;
		w.crc = 0;
	} else {
		GElf_Addr vaddr;
		int n = dwfl_module_build_id(mod, &w.id, &vaddr);
		w.id_len = n > 0 ? (size_t)n : 0;
	}
	if (file_name && stat(file_name, &st) == 0) {
		w.dev = st.st_dev;
		w.ino = st.st_ino;
	}
	if (file_name) { /* its directory: "/" for "/x", "." for "x" */
		const char *slash = strrchr(file_name, '/');
		dir = slash ? strndup(file_name, slash == file_name ? 1 : (size_t)(slash - file_name))
			    : strdup(".");
	}

	fd = by_build_id(di, &w, ret_name);
	if (fd < 0 && dir && altname)
		fd = by_altname(di, dir, altname, &w, ret_name);
	else if (fd < 0 && dir && debuglink && (w.id_len || w.crc))
		fd = by_debuglink(di, dir, debuglink, &w, ret_name);
	if (fd < 0)
		fd = by_debuginfod(di, &w, ret_name);
	if (fd < 0 && alt_of)
		set_no_alt(di, alt_of);
	free(dir);
	errno = 0; /* nothing found is no error: libdwfl reports "no DWARF" */
	return fd;
}
