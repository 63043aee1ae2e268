/* debuginfo.h: libdwfl's find_elf and find_debuginfo callbacks, replaced by ones that open only
 * regular files (debuginfo.c), for the symbolizer (symbolize.c).
 *
 * A profile names its modules' paths, and the module files name their debug files
 * (.gnu_debuglink, .gnu_debugaltlink): whoever wrote the profile chooses both. libdwfl's own
 * callbacks open what they find with a blocking open(2), so a FIFO planted at any of those paths
 * would hang leek for good. These find the same files in the same places, through
 * lk_open_regular(), and check each one's build-id (or, for a file without one, its debuglink
 * CRC) on the descriptor they hand libdwfl.
 */
#ifndef LEEK_DEBUGINFO_H
#define LEEK_DEBUGINFO_H

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stddef.h>

#define LK_SYSTEM_DEBUG_DIR "/usr/lib/debug"

/* Where a symbolizer's modules look for debug files. Each Dwfl_Module that uses the callbacks
 * must have its userdata (dwfl_module_info) pointing at one of these, which outlives it. */
struct lk_debuginfo {
	char **dirs; /* absolute directories, searched before LK_SYSTEM_DEBUG_DIR; owned */
	size_t n_dirs, dirs_cap;
	bool debuginfod_tried;
	void *debuginfod; /* the libdebuginfod client, or NULL */
	Dwarf *no_alt;    /* the empty alternate DWARF of modules whose alternate file is not
			   * found (see lk_debuginfo_find); NULL until one is not */
	Elf *no_alt_elf;
	char *no_alt_image;
};

/* Adds an absolute directory (which the struct takes); 0 or -ENOMEM (dir then freed). */
int lk_debuginfo_add_dir(struct lk_debuginfo *di, char *dir);
void lk_debuginfo_done(struct lk_debuginfo *di);

/* find_elf: every module is reported with its file already open (dwfl_report_elf with a
 * descriptor), so there is never an ELF file to find: -1, nothing opened. */
int lk_debuginfo_find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			  char **file_name, Elf **elfp);

/* find_debuginfo: the module's separate debug file, or the alternate (dwz) file that its DWARF
 * names, as a descriptor of a regular file whose build-id matches, and its malloc'd name; -1 and
 * no name if none. Looks, in order: in each debug directory and LK_SYSTEM_DEBUG_DIR by build-id
 * (.build-id/xx/rest.debug); by the debuglink's name beside the file, in its .debug directory
 * and under each debug directory (the file's own directory appended); for an alternate file, at
 * its recorded name and in .dwz beside the file and in each debug directory; then, only when
 * DEBUGINFOD_URLS is set, from debuginfod servers through libdebuginfod, if it can be loaded.
 * A module whose alternate file is found nowhere gets an empty one (dwarf_setalt), so that libdw
 * never looks for it itself. */
int lk_debuginfo_find(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
		      const char *file_name, const char *debuglink, GElf_Word crc,
		      char **ret_name);

#endif /* LEEK_DEBUGINFO_H */
