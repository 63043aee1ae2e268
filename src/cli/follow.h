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
};

/* One look at the file's size: the limit moves up to what that size proves written (never
 * down). Returns the limit. */
uint64_t lk_follow_limit_update(struct lk_follow_limit *l, uint64_t size);

/* The raw profile that process pid writes, found among the files it maps (libleek keeps its
 * profile's current window mapped, and no descriptor between uses): the mapped regular file,
 * owned by this user, whose header has leek's magic and pid. 0 and a malloc'd path in *ret;
 * -ESRCH no such process; -ENOENT it maps no profile (not yet: a process maps its profile once it
 * writes its first record); -EACCES its maps cannot be read. */
int lk_follow_find_pid(pid_t pid, char **ret);

/* Whether pid is alive: neither gone nor a zombie (an exited child not yet reaped). */
bool lk_follow_pid_alive(pid_t pid);

#endif /* LEEK_FOLLOW_H */
