/* binaries.c: `leek import --binary FILE`: the program and libraries a trace's callers are in,
 * and those callers symbolized as `leek report` symbolizes (src/cli/symbols, libdwfl).
 *
 * glibc writes a caller as an address relative to its module's dli_fbase, the address where the
 * module's lowest PT_LOAD segment is mapped (page-aligned): for a PIE or a library that is the
 * load bias, so the address is a p_vaddr; for a non-PIE executable (ET_EXEC, mapped at its link
 * address, e.g. 0x400000) it is the executable's first address, which has to be added back. glibc
 * before 2.26 wrote the absolute address instead, "[0x40054d]" or "./prog:[0x40054d]"; for an
 * ET_EXEC binary an address inside its segments is taken as that. An absolute address of a PIE
 * or a library cannot be resolved: its load address is in no trace.
 *
 * A caller's module is matched with a --binary by file name ("./prog" and "/tmp/b/prog" are the
 * same "prog"), since the trace has the path the program was started with and the user the one
 * they have now. Each binary is registered with the symbolizer at base 0, so that a p_vaddr is
 * the address looked up.
 *
 * Never: print (the symbolizer's warnings are the command's to show), or trust the file's
 * headers beyond what was read and checked.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "import.h"
#include "site.h"
#include "symbolize.h"
#include "util.h"

/* Reads the ELF header and the PT_LOAD program headers of path. */
static int read_elf(struct lk_import_binary *b)
{
	_cleanup_(closep) int fd = lk_open_regular(AT_FDCWD, b->path, NULL);
	Elf64_Ehdr eh;
	Elf64_Phdr ph;

	if (fd < 0)
		return fd;
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum > 4096)
		return -ENOEXEC;
	b->exec = eh.e_type == ET_EXEC;
	b->first_vaddr = UINT64_MAX;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) !=
		    (ssize_t)sizeof(ph))
			return -ENOEXEC;
		if (ph.p_type != PT_LOAD || ph.p_vaddr > UINT64_MAX - ph.p_memsz)
			continue;
		if (b->nseg < 16) {
			b->seg_start[b->nseg] = ph.p_vaddr;
			b->seg_len[b->nseg++] = ph.p_memsz;
		}
		if (ph.p_vaddr < b->first_vaddr)
			b->first_vaddr = ph.p_vaddr;
		if (ph.p_vaddr + ph.p_memsz > b->end_vaddr)
			b->end_vaddr = ph.p_vaddr + ph.p_memsz;
	}
	if (b->nseg == 0)
		return -ENOEXEC;
	b->first_vaddr &= ~(uint64_t)0xfff; /* the mapping starts at a page */
	return 0;
}

int lk_import_binaries_open(struct lk_import_binaries *bs, char *const *paths, size_t n,
                            const char **bad)
{
	int r;

	*bs = (struct lk_import_binaries){0};
	if (n == 0)
		return 0;
	bs->b = calloc(n, sizeof(*bs->b));
	if (!bs->b)
		return -ENOMEM;
	r = lk_symbolizer_new(&bs->sym);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		struct lk_import_binary *b = &bs->b[bs->n++];
		struct lk_module_seg seg[16];
		*bad = paths[i];
		b->path = realpath(paths[i], NULL);
		if (!b->path)
			return -errno;
		b->name = lk_site_basename(b->path);
		if ((r = read_elf(b)) < 0)
			return r;
		for (uint32_t k = 0; k < b->nseg; k++)
			seg[k] = (struct lk_module_seg){b->seg_start[k], b->seg_len[k]};
		r = lk_symbolizer_add_module(bs->sym, 0, i + 1, b->path, NULL, 0, 0, seg, b->nseg);
		if (r < 0)
			return r;
	}
	return 0;
}

void lk_import_binaries_done(struct lk_import_binaries *bs)
{
	for (size_t i = 0; i < bs->n; i++)
		free(bs->b[i].path);
	free(bs->b);
	lk_symbolizer_free(bs->sym);
	*bs = (struct lk_import_binaries){0};
}

static bool inside(const struct lk_import_binary *b, uint64_t addr)
{
	for (uint32_t k = 0; k < b->nseg; k++)
		if (addr >= b->seg_start[k] && addr - b->seg_start[k] < b->seg_len[k])
			return true;
	return false;
}

int lk_import_binaries_resolve(struct lk_import_binaries *bs, struct lk_import_caller *c)
{
	const struct lk_sym_frame *chain;
	size_t n;
	int r;

	c->binary = -1;
	if (!c->has_addr)
		return 0;
	for (size_t i = 0; i < bs->n && c->binary < 0; i++) {
		const struct lk_import_binary *b = &bs->b[i];
		if (c->module) {
			if (strcmp(lk_site_basename(c->module), b->name) != 0)
				continue;
			c->binary = (int)i;
			c->vaddr =
			    b->exec && inside(b, c->addr) ? c->addr : c->addr + b->first_vaddr;
		} else if (b->exec && inside(b, c->addr)) {
			c->binary = (int)i;
			c->vaddr = c->addr;
		}
	}
	if (c->binary < 0 || c->vaddr == 0)
		return 0;
	/* A caller is a return address: the call is just before it, as `leek report` looks up. */
	r = lk_symbolize(bs->sym, 0, (uint64_t)c->binary + 1, c->vaddr - 1, &chain, &n);
	if (r == -ENOMEM)
		return r;
	if (r < 0 || n == 0)
		return 0;
	c->function = chain[0].function;
	c->file = chain[0].file;
	c->line = chain[0].line;
	return 0;
}
