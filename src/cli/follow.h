/* follow.h: what every command that reads a profile while its process writes it shares
 * (follow.c): how far the file is written for good, found from its size alone, and which file a
 * running process writes, found through /proc/PID/maps. `leek run`'s follower (run-follow.c) and
 * `leek watch` and `leek top` (src/cli/live/) use them.
 */
#ifndef LEEK_FOLLOW_H
#define LEEK_FOLLOW_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* The file's size at the last look, and the offset below which every byte is written for good
 * (docs/format.md, "Reading a profile being written"). Zero to begin with. */
struct lk_follow_limit {
	uint64_t seen, limit;
	uint64_t whole; /* a SYNC's reply: every record that starts before it ends by it */
};

/* One look at the file's size: the limit moves up to what that size proves written (never
 * down). Returns the limit. */
uint64_t lk_follow_limit_update(struct lk_follow_limit *l, uint64_t size);
/* libleek's reply to a SYNC (ctl.h): every byte below synced is whole. Taken if it is within the
 * file's size at the last look (size), else ignored. Returns the limit. */
uint64_t lk_follow_limit_synced(struct lk_follow_limit *l, uint64_t synced, uint64_t size);

/* A profile found: the file, and its header's start time and pid. */
struct lk_follow_profile {
	char *path;
	uint64_t start_ns, pid;
	uint32_t segment;   /* a rotated segment's number (LEEK_MAX_SIZE); 0 for a first file */
	uint64_t origin_ns; /* what the segments of one process share: segment 0's start_realtime */
};

/* Every regular file that matches the output pattern (%p, %e: anything; a .N suffix, and a
 * rotated segment's .segN, are part of it), belongs to this user
 * (the effective uid) and whose header carries the session (and the pid, unless 0), oldest
 * first, in a malloc'd *ret of malloc'd paths. quiet: no message about a directory that cannot
 * be listed, or about a file of another user's that carries the session (ignored). */
size_t lk_follow_find_profiles(const char *pattern, uint64_t session, uint64_t pid, bool quiet,
			       struct lk_follow_profile **ret);

/* The raw profile that process pid writes. libleek holds no descriptor of it between writes, and
 * maps none, so it is found as libleek names it: LEEK_OUTPUT and LEEK_SESSION from the process's
 * /proc/PID/environ (its environment at exec), relative to /proc/PID/cwd, then the newest file of
 * that pattern with the pid and session in its header (lk_follow_find_profiles). A process that
 * changed either variable, or its directory before its first allocation, is not found: give the
 * file instead. 0 and a malloc'd path in *ret; -ESRCH no such process; -ENOENT no profile (not
 * yet: a profile is named once its process has something to write); -EACCES its environment
 * cannot be read (another user's). */
int lk_follow_find_pid(pid_t pid, char **ret);

/* Whether pid is alive: neither gone nor a zombie (an exited child not yet reaped). */
bool lk_follow_pid_alive(pid_t pid);

#endif /* LEEK_FOLLOW_H */
