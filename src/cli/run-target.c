/* run-target.c: checks `leek run`'s program before it runs, and finds libleek.so (run.h).
 *
 * It reads at most the ELF header, the program headers and a script's first line, through
 * pread on a file opened O_NONBLOCK and only if regular, so that a FIFO or a device named as
 * the command can never make leek hang. When it cannot tell (no read permission, not ELF, not
 * a script), it says nothing and lets exec decide.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>

#include "run.h"
#include "util.h"

#if __SIZEOF_POINTER__ == 8
#define OUR_CLASS ELFCLASS64
#else
#define OUR_CLASS ELFCLASS32
#endif

#define NOT_PROFILABLE ": LD_PRELOAD cannot interpose its malloc, so leek cannot profile it"

static bool find_interp(int fd, const ElfW(Ehdr) *eh)
{
	size_t phnum = eh->e_phnum;
	ElfW(Phdr) ph[64];

	if (phnum == PN_XNUM) { /* the real count is in section 0's sh_info (elf(5)) */
		ElfW(Shdr) sh;
		if (pread(fd, &sh, sizeof(sh), (off_t)eh->e_shoff) != (ssize_t)sizeof(sh))
			return false;
		phnum = sh.sh_info;
	}
	if (eh->e_phentsize != sizeof(ElfW(Phdr)))
		return false;
	for (size_t i = 0; i < phnum; i += 64) {
		size_t n = phnum - i < 64 ? phnum - i : 64;
		off_t at = (off_t)(eh->e_phoff + i * sizeof(ph[0]));
		ssize_t k = pread(fd, ph, n * sizeof(ph[0]), at);
		if (k < (ssize_t)sizeof(ph[0]))
			return false;
		for (size_t j = 0; j < (size_t)k / sizeof(ph[0]); j++)
			if (ph[j].p_type == PT_INTERP)
				return true;
	}
	return false;
}

static int our_machine(void)
{
	ElfW(Ehdr) eh;
	int fd = lk_open_regular(AT_FDCWD, "/proc/self/exe", NULL);

	if (fd < 0)
		return -1;
	ssize_t k = pread(fd, &eh, sizeof(eh), 0);
	close(fd);
	return k == (ssize_t)sizeof(eh) ? eh.e_machine : -1;
}

/* 0, or the exit status after printing why `what` (the program, or its script's interpreter)
 * cannot be profiled. */
static int check_file(const char *path, const char *script, int depth)
{
	union {
		ElfW(Ehdr) eh;
		char line[256];
	} u = { 0 };
	_cleanup_(closep) int fd = lk_open_regular(AT_FDCWD, path, NULL);
	const char *of = script ? ", the interpreter of " : "";

	if (fd < 0)
		return 0;
	ssize_t k = pread(fd, &u, sizeof(u) - 1, 0);
	if (k >= 2 && u.line[0] == '#' && u.line[1] == '!') {
		/* A script: its interpreter is what gets preloaded (one level, like most uses). */
		char *interp = u.line + 2 + strspn(u.line + 2, " \t");
		interp[strcspn(interp, " \t\n")] = 0;
		return depth == 0 && *interp ? check_file(interp, path, 1) : 0;
	}
	if (k < (ssize_t)sizeof(u.eh) || memcmp(u.eh.e_ident, ELFMAG, SELFMAG) != 0)
		return 0;

	if (u.eh.e_ident[EI_CLASS] != OUR_CLASS) {
		lk_msg("%s%s%s is a %d-bit program, but libleek.so is %d-bit" NOT_PROFILABLE, path,
		       of, script ? script : "", u.eh.e_ident[EI_CLASS] == ELFCLASS32 ? 32 : 64,
		       OUR_CLASS == ELFCLASS64 ? 64 : 32);
		return LK_EXIT_FILE;
	}
	int machine = our_machine();
	if (machine >= 0 && u.eh.e_machine != machine) {
		lk_msg("%s%s%s is built for another architecture (ELF machine %u)" NOT_PROFILABLE,
		       path, of, script ? script : "", u.eh.e_machine);
		return LK_EXIT_FILE;
	}
	if ((u.eh.e_type == ET_EXEC || u.eh.e_type == ET_DYN) && !find_interp(fd, &u.eh)) {
		lk_msg("%s%s%s is statically linked" NOT_PROFILABLE, path, of,
		       script ? script : "");
		return LK_EXIT_FILE;
	}
	return 0;
}

/* The loader ignores LD_PRELOAD for a program whose exec changes its ids or grants it
 * capabilities (secure-execution mode, ld.so(8)). */
static int check_secure(const char *path)
{
	struct statvfs vfs;
	struct stat st;
	const char *why = NULL;

	if (stat(path, &st) < 0)
		return 0;
	if (statvfs(path, &vfs) == 0 && vfs.f_flag & ST_NOSUID)
		return 0;
	if (st.st_mode & S_ISUID && st.st_uid != geteuid())
		why = "setuid";
	else if (st.st_mode & S_ISGID && st.st_gid != getegid())
		why = "setgid";
	else if (getxattr(path, "security.capability", NULL, 0) > 0)
		why = "given file capabilities";
	if (!why)
		return 0;
	lk_msg("%s is %s: the dynamic loader ignores LD_PRELOAD for it (secure-execution mode), "
	       "so leek cannot profile it", path, why);
	return LK_EXIT_FILE;
}

int lk_run_check_target(const char *cmd)
{
	char buf[PATH_MAX];
	const char *path = cmd, *dirs = getenv("PATH");
	int r;

	if (!strchr(cmd, '/')) {
		/* execvp's search: empty entries mean the current directory. */
		if (!dirs)
			dirs = "/bin:/usr/bin";
		for (path = NULL; !path && dirs;) {
			const char *colon = strchr(dirs, ':');
			int n = colon ? (int)(colon - dirs) : (int)strlen(dirs);
			struct stat st;
			if (snprintf(buf, sizeof(buf), "%.*s%s%s", n, dirs, n ? "/" : "", cmd) <
				    (int)sizeof(buf) &&
			    stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0)
				path = buf;
			dirs = colon ? colon + 1 : NULL;
		}
		if (!path) {
			lk_msg("%s: command not found", cmd);
			return 127;
		}
	} else if (access(path, F_OK) < 0) {
		lk_error(-errno, "%s", path);
		return 127;
	}
	r = check_secure(path);
	return r ? r : check_file(path, NULL, 0);
}

static bool try_library(const char *path, char **ret)
{
	if (access(path, R_OK) < 0)
		return false;
	*ret = strdup(path);
	return *ret != NULL;
}

int lk_run_find_library(char **ret)
{
	char exe[PATH_MAX], path[PATH_MAX + 64];
	const char *env = getenv("LEEK_LIBRARY");
	ssize_t n;

	if (env && *env) {
		if (try_library(env, ret))
			return 0;
		return lk_error(-errno, "LEEK_LIBRARY=%s", env);
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = 0;
		*strrchr(exe, '/') = 0; /* readlink gives an absolute path */
		snprintf(path, sizeof(path), "%s/../preload/libleek.so", exe); /* build tree */
		if (try_library(path, ret))
			return 0;
		/* Installed: <prefix>/<bindir>/leek and <prefix>/<libdir>/leek/libleek.so. */
		size_t e = strlen(exe), b = strlen(LEEK_BINDIR);
		if (LEEK_BINDIR[0] != '/' && LEEK_PKGLIBDIR[0] != '/' && e > b &&
		    exe[e - b - 1] == '/' && strcmp(exe + e - b, LEEK_BINDIR) == 0) {
			snprintf(path, sizeof(path), "%.*s/%s/libleek.so", (int)(e - b - 1), exe,
				 LEEK_PKGLIBDIR);
			if (try_library(path, ret))
				return 0;
		}
	}
	if (LEEK_PKGLIBDIR[0] == '/')
		snprintf(path, sizeof(path), "%s/libleek.so", LEEK_PKGLIBDIR);
	else
		snprintf(path, sizeof(path), "%s/%s/libleek.so", LEEK_PREFIX, LEEK_PKGLIBDIR);
	if (try_library(path, ret))
		return 0;
	lk_msg("cannot find libleek.so (looked beside this leek and in %s); set LEEK_LIBRARY",
	       path);
	return -ENOENT;
}
