/* ctl.h: the control block of a running process's profile (include/leek/format.h, struct
 * lk_ctl_block), as `leek ctl` writes commands into it and `leek watch` and `leek top` ask for a
 * SYNC (ctl.c).
 *
 * A command is posted (cmd, time and name, then seq + 1, under an exclusive flock(2) of the file
 * against other writers of the block) and then checked for until libleek has acknowledged it
 * (ack = seq), at its next look, with an RSS record (docs/design.md, "On and off"). The lock is
 * not held between the two, so a process that does not allocate, and never looks, holds up no
 * other `leek ctl`.
 */
#ifndef LEEK_CTL_H
#define LEEK_CTL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct lk_ctl {
	int fd;              /* the profile, open for writing; -1: none */
	off_t at;            /* the block's offset: header_size - LK_CTL_SIZE */
	uint32_t pid;        /* the header's */
	uint32_t seq;        /* the command posted and not acknowledged yet; 0: none */
	uint64_t posted_ns;  /* when (CLOCK_MONOTONIC) */
};

/* Opens the profile that process pid writes (the file it maps through /proc/PID/map_files, else
 * the one lk_follow_find_pid finds), or the file path, for its control block (pid 0: the header's
 * pid, whatever it is). 0; -ENOENT for no such profile (with a pid); -EINVAL for a file that is not
 * a profile with a control block (*why says what it is instead); open(2)'s errors. */
int lk_ctl_open(struct lk_ctl *c, uint32_t pid, const char *path, const char **why);
void lk_ctl_close(struct lk_ctl *c);

/* Posts cmd (with name for a mark), taking the lock within timeout_ns. replace: a command that an
 * earlier poster left unacknowledged is replaced (and *replaced is set); else -EBUSY leaves it.
 * 0; -EAGAIN (the lock), -EBADMSG (a damaged block), or write(2)'s errors. */
int lk_ctl_post(struct lk_ctl *c, uint32_t cmd, const char *name, uint64_t timeout_ns,
		bool replace, bool *replaced);

/* Whether the command posted was carried out: 1, with SYNC's reply in *synced if not NULL (read
 * under the lock, so that no other poster's name is read for it); 0 not yet (or the lock is busy
 * this instant); -ECANCELED another poster replaced it; -EBADMSG a damaged block. */
int lk_ctl_check(struct lk_ctl *c, uint64_t *synced);

#endif /* LEEK_CTL_H */
