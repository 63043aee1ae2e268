/* run.h: what `leek run` must know before it starts a program (run-target.c).
 *
 * Refusing early is the point: LD_PRELOAD silently does nothing for a static, setuid or foreign
 * program, and a run that writes no profile without saying why is worse than no run.
 */
#ifndef LEEK_RUN_H
#define LEEK_RUN_H

/* Finds the file that execvp() would run for cmd and checks that libleek.so can be preloaded
 * into it. 0 if so (or if leek cannot tell, and exec will decide); otherwise, after printing
 * why, the exit status to use: 127 not found, 2 cannot be profiled. */
int lk_run_check_target(const char *cmd);

/* The libleek.so to preload: $LEEK_LIBRARY, else the build tree's, else the installed one
 * (found relative to this binary, so a moved prefix works, then at the configured path).
 * 0 and a malloc'd path, or -ENOENT after printing where it looked. */
int lk_run_find_library(char **ret);

#endif /* LEEK_RUN_H */
