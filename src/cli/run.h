/* run.h: what `leek run` must know before it starts a program (run-target.c), and how it finds
 * and follows the profiles of its run (run-follow.c; follow.h finds them).
 *
 * Refusing early is the point: LD_PRELOAD silently does nothing for a static, setuid or foreign
 * program, and a run that writes no profile without saying why is worse than no run.
 */
#ifndef LEEK_RUN_H
#define LEEK_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "follow.h"
#include "profile.h"

/* Finds the file that execvp() would run for cmd and checks that libleek.so can be preloaded
 * into it. 0 if so (or if leek cannot tell, and exec will decide); otherwise, after printing
 * why, the exit status to use: 127 not found, 2 cannot be profiled. */
int lk_run_check_target(const char *cmd);

/* The libleek.so to preload: $LEEK_LIBRARY, else the build tree's, else the installed one
 * (found relative to this binary, so a moved prefix works, then at the configured path).
 * 0 and a malloc'd path, or -ENOENT after printing where it looked. */
int lk_run_find_library(char **ret);

/* How the summary after the run reads a profile, whether the follower read it or the summary
 * reads it all: at the end, with no list of the blocks live then (it shows none). */
/* segment_only: the summary is the newest segment's (it has the whole live view), read while
 * the other segments are being compressed and renamed; `leek report` reads the chain. */
static const struct lk_profile_opts lk_run_summary_opts = { .at_ns = UINT64_MAX,
							      .no_live_list = true,
							      .segment_only = true };

/* The follower: a thread that reads the profile of pid while the program runs, and compresses
 * it too if asked (run-follow.c). start: NULL if no thread could be made (the summary then reads
 * everything after the exit). stop: once the program has ended; the thread is joined. take: the
 * followed profile if it is the file at path, for lk_profile_follow_finish(), else NULL; take_gz:
 * its compression, for lk_compress_stream_finish(), else NULL. All accept NULL. */
struct lk_run_follower;
struct lk_compress_stream;
struct lk_run_follower *lk_run_follow_start(const char *pattern, uint64_t session, pid_t pid,
					    bool compress);
void lk_run_follow_stop(struct lk_run_follower *w);
struct lk_profile_follow *lk_run_follow_take(struct lk_run_follower *w, const char *path);
struct lk_compress_stream *lk_run_follow_take_comp(struct lk_run_follower *w, const char *path);
/* The symbolizer in which the follower opened the modules that the followed profile's stacks
 * name (any profile can use it: files are shared by path and build-id), or NULL. */
struct lk_symbolizer *lk_run_follow_take_sym(struct lk_run_follower *w);
void lk_run_follow_free(struct lk_run_follower *w);

#endif /* LEEK_RUN_H */
