/* leek.h: runs this build's leek binary from a test (tests/unit/test-cli.c, tests/report), as
 * proc.h runs any program.
 */
#ifndef LEEK_TEST_LEEK_H
#define LEEK_TEST_LEEK_H

#include <stdbool.h>
#include <stdint.h>

#include "proc.h"

extern const char *const leek_bin;     /* the built leek */
extern const char *const leek_library; /* the built libleek.so; NULL in a sanitizer build, where
					* no program can run under it */

/* `leek ARGS...` (args after the program's name, ending with NULL) in dir, as proc_start()
 * starts a program, in the C locale and with LEEK_LIBRARY=leek_library if there is one: the
 * entries of env (NULL-terminated, may be NULL) come first and may replace either. timeout in
 * seconds, 0: 60. */
void leek_start(struct proc *p, const char *dir, const char *const *env, const char *const *args,
		unsigned timeout);
/* The same with proc_start_with()'s options (o->env as env above). */
void leek_start_with(struct proc *p, const char *dir, const char *const *args,
		     const struct proc_opts *o);
/* Both, and waits for it (proc_wait). */
void leek_exec(struct proc *p, const char *dir, const char *const *env, const char *const *args,
	       unsigned timeout);

/* Whether msg (a message of leek's or of its reader's) holds "offset N", N not followed by
 * another digit: where leek says that a profile goes wrong. */
bool leek_says_offset(const char *msg, uint64_t n);

#endif /* LEEK_TEST_LEEK_H */
