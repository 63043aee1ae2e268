/* outfile.h: a command's output file (-o FILE), which appears whole or not at all.
 *
 * `leek report`, `leek export` and `leek diff` write -o FILE through this: the output goes to a
 * temporary file beside FILE, which is flushed, fsync'ed and renamed over FILE only once the
 * command has written all of it (lk_outfile_commit). Anything else, a profile that cannot be
 * read, an output that cannot be made, a write that fails, removes the temporary file
 * (lk_outfile_discard), so that FILE is either the whole new output or what it was before: never
 * a half-written one, nor an empty one over an older output. A process killed in between leaves
 * FILE as it was too, and its temporary file FILE.XXXXXX behind.
 *
 * Not every FILE can be replaced: "-" (and NULL) is stdout, and an existing FILE that is not a
 * regular file (/dev/null, a FIFO, /dev/stdout) is written to as it is, a stream that cannot be
 * taken back. A symbolic link stays one: the file it names is replaced.
 *
 * Never prints (the command says what failed, naming FILE) and never exits; the functions return
 * 0 or a negative errno. Not thread-safe: lk_outfile_open() reads the umask by setting it.
 */
#ifndef LEEK_OUTFILE_H
#define LEEK_OUTFILE_H

#include <stdio.h>
#include <sys/types.h>

struct lk_outfile {
	FILE *f;      /* where the output goes; NULL before lk_outfile_open() and after the end */
	char *target; /* the file renamed over: FILE, or the file FILE links to; NULL for a stream */
	char *tmp;    /* the temporary file's name while it is one; NULL for a stream */
};

/* Starts an output to path: stdout for NULL or "-"; an existing non-regular file opened for
 * writing; otherwise a new temporary file in path's directory, mode `mode` less the umask (0666
 * as open(2) would make FILE; 0600 for an output that holds what a profile holds: the command
 * line, the modules' load addresses). 0, or a negative errno (-EISDIR: path is a directory), and
 * *o is then as lk_outfile_discard() leaves it. */
int lk_outfile_open(struct lk_outfile *o, const char *path, mode_t mode);

/* The output is whole: flushes it and, for a temporary file, fsyncs it (so that a crash of the
 * system after the rename leaves the new file, not an empty one) and renames it over the target.
 * 0, or a negative errno (a failed write shows here: -ENOSPC, -EFBIG), and the temporary file is
 * then removed. Either way the output is ended. */
int lk_outfile_commit(struct lk_outfile *o);

/* Ends an output that is not to be kept: removes its temporary file (a stream keeps what it was
 * given). Accepts an output that was never opened, or is ended already; for _cleanup_. */
void lk_outfile_discard(struct lk_outfile *o);

#endif /* LEEK_OUTFILE_H */
