/* sym-file.c: the objects of the symbolizer (sym-internal.h): for each distinct file (path and
 * recorded build-id), the file opened with libdwfl at bias 0, so that libdwfl sees the file's own
 * addresses and the same library mapped at different addresses in several processes is parsed
 * once. A file on disk whose build-id is not the profile's is looked for again by build-id in the
 * debug directories, and a warning says which was used.
 *
 * Never: open anything but a regular file or let libdwfl open a file itself (the paths come from
 * the profile and from the files it names: a FIFO there would block for good, see debuginfo.h),
 * open /proc/self paths (they would name leek itself), or trust a file without comparing
 * build-ids.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "budget.h"
#include "sym-internal.h"
#include "util.h"

static void hex(char *buf, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sprintf(buf + 2 * i, "%02x", p[i]);
	buf[2 * n] = 0;
}

/* Reports file as the only module of a new Dwfl, at its own addresses (bias 0). libdwfl gets the
 * file open already, and only if it is a regular file: opened by libdwfl, a FIFO would block. */
static int report(struct lk_symbolizer *s, const char *file, Dwfl **ret_dwfl, Dwfl_Module **ret_mod,
		  const char **ret_why)
{
	int fd = lk_open_regular(AT_FDCWD, file, NULL);
	Dwfl *d = NULL;
	Dwfl_Module *m = NULL;
	Dwarf_Addr bias;
	void **userdata;

	if (fd < 0) {
		if (ret_why)
			*ret_why = fd == -EINVAL ? "not a regular file" : lk_sym_intern(s, strerror(-fd));
		return -ENOENT;
	}
	d = dwfl_begin(&s->callbacks);
	if (!d) {
		close(fd);
		s->nomem = -ENOMEM;
		return -ENOMEM;
	}
	dwfl_report_begin(d);
	m = dwfl_report_elf(d, file, file, fd, 0, true); /* takes fd only if it returns a module */
	if (!m)
		close(fd);
	if (!m || dwfl_report_end(d, NULL, NULL) != 0 || !dwfl_module_getelf(m, &bias)) {
		const char *e = dwfl_errmsg(-1);
		if (ret_why)
			*ret_why = e ? lk_sym_intern(s, e) : NULL;
		dwfl_end(d);
		return -ENOENT;
	}
	dwfl_module_info(m, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
	*userdata = &s->debuginfo; /* for lk_debuginfo_find */
	*ret_dwfl = d;
	*ret_mod = m;
	return 0;
}

/* The module's build-id (0 bytes if it has none). */
static size_t module_build_id(Dwfl_Module *m, const unsigned char **ret)
{
	GElf_Addr vaddr;
	int n = dwfl_module_build_id(m, ret, &vaddr);

	return n > 0 ? (size_t)n : 0;
}

static bool has_build_id(Dwfl_Module *m, const struct object *o)
{
	const unsigned char *bits;
	size_t n = module_build_id(m, &bits);

	return n == o->build_id_len && memcmp(bits, o->build_id, n) == 0;
}

/* The file carrying o's recorded build-id in a debug directory: .build-id/xx/rest.debug (a debug
 * file) or .build-id/xx/rest (the binary). Returns its path, or NULL. */
static const char *open_by_build_id(struct lk_symbolizer *s, struct object *o, Dwfl **ret_dwfl,
				    Dwfl_Module **ret_mod)
{
	char id[2 * LK_MAX_BUILD_ID + 1];

	if (o->build_id_len < 2)
		return NULL;
	hex(id, o->build_id, o->build_id_len);
	for (size_t i = 0; i <= s->debuginfo.n_dirs; i++) {
		const char *dir = i < s->debuginfo.n_dirs ? s->debuginfo.dirs[i] : LK_SYSTEM_DEBUG_DIR;
		for (int debug = 1; debug >= 0; debug--) {
			const char *path = lk_sym_internf(s, "%s/.build-id/%.2s/%s%s", dir, id, id + 2,
						   debug ? ".debug" : "");
			Dwfl *d;
			Dwfl_Module *m;
			if (!path || access(path, R_OK) < 0 || report(s, path, &d, &m, NULL) < 0)
				continue;
			if (has_build_id(m, o)) {
				*ret_dwfl = d;
				*ret_mod = m;
				return path;
			}
			dwfl_end(d);
		}
	}
	return NULL;
}

/* Finds o's file. No file is not an error: o then gives "label+0x1a2b" names. */
void lk_sym_open_object(struct lk_symbolizer *s, struct object *o)
{
	bool real_path = o->path[0] == '/' && strncmp(o->path, "/proc/self/", 11) != 0;
	const char *why = NULL, *alt;
	Dwfl *d = NULL;
	Dwfl_Module *m = NULL;

	o->opened = true;
	if (real_path && report(s, o->path, &o->dwfl, &o->mod, &why) == 0 &&
	    (o->build_id_len == 0 || has_build_id(o->mod, o)))
		return;

	alt = open_by_build_id(s, o, &d, &m);
	if (o->mod) {
		const unsigned char *bits;
		size_t n = module_build_id(o->mod, &bits);
		char disk[2 * LK_MAX_BUILD_ID + 1], want[2 * LK_MAX_BUILD_ID + 1];

		hex(disk, bits, n < LK_MAX_BUILD_ID ? n : LK_MAX_BUILD_ID); /* any note, any size */
		hex(want, o->build_id, o->build_id_len);
		lk_sym_warn(s, "module %s: build-id on disk (%s) does not match the profile (%s): %s%s",
		     o->path, n ? disk : "none", want, alt ? "using " : "symbols may be wrong",
		     alt ? alt : "");
	} else if (real_path && !alt) {
		lk_sym_warn(s, "module %s: %s: no symbols", o->path, why ? why : "cannot open");
	}
	if (alt) {
		if (o->dwfl)
			dwfl_end(o->dwfl);
		o->dwfl = d;
		o->mod = m;
	}
}

/* The object for (path, build-id), shared by every module that names the same file. */
int lk_sym_get_object(struct lk_symbolizer *s, const char *path, const uint8_t *build_id,
		      size_t build_id_len, struct object **ret)
{
	const char *p = lk_sym_intern(s, path);
	struct object *o, *first = NULL;
	uint64_t *v;
	int r;

	if (!p)
		return lk_sym_nomem_error(s);
	v = lk_u64map_get(&s->object_by_path, (uintptr_t)p);
	if (v)
		first = (struct object *)(uintptr_t)*v;
	for (o = first; o; o = o->next_same_path)
		if (o->build_id_len == build_id_len && memcmp(o->build_id, build_id, build_id_len) == 0) {
			*ret = o;
			return 0;
		}

	r = lk_budget_grow((void **)&s->objects, &s->objects_cap, s->n_objects + 1, sizeof(o));
	if (r < 0)
		return r;
	if (!(o = lk_sym_alloc(s, sizeof(*o))))
		return lk_sym_nomem_error(s);
	*o = (struct object){ .path = p, .build_id_len = (uint32_t)build_id_len, .next_same_path = first };
	const char *slash = strrchr(p, '/');
	o->label = slash && slash[1] ? slash + 1 : p[0] ? p : "[unknown]";
	memcpy(o->build_id, build_id, build_id_len);
	lk_u64map_init_budgeted(&o->cache, SIZE_MAX);
	r = lk_u64map_put(&s->object_by_path, (uintptr_t)p, (uintptr_t)o);
	if (r < 0)
		return r;
	s->objects[s->n_objects++] = o;
	*ret = o;
	return 0;
}
