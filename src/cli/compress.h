/* compress.h: gzip-compressing finished profiles (compress.c), for `leek run` and `leek compress`.
 *
 * libleek.so writes raw profiles, because a record must be durable the moment its tag byte is
 * stored; compressing is the CLI's job, once the writer is done (docs/design.md). The reader takes
 * either form (read-gz.h), so a compressed profile is one gzip stream of the raw bytes.
 */
#ifndef LEEK_COMPRESS_H
#define LEEK_COMPRESS_H

#include <stdint.h>

/* zlib's level 1: an exact-mode profile to less than half, at a fifth of level 6's time, whose
 * file is only a tenth smaller (measured: docs/format.md, "Compressed profiles"). */
#define LK_COMPRESS_LEVEL 1

struct lk_compressed {
	char *path;                 /* malloc'ed: FILE.gz, or FILE.1.gz, ... if that was taken */
	uint64_t raw_bytes, gz_bytes;
};

/* Compresses the profile at path into FILE.gz beside it (FILE.1.gz, FILE.2.gz, ... if taken: an
 * existing file is never overwritten), written under a temporary name, fsync'ed and renamed, with
 * the profile's permissions and times; then removes the raw file. Returns 0 and fills *ret, or a
 * negative errno with the raw file in place and no other file left behind:
 *
 *   -EMEDIUMTYPE  not a leek profile (no LEEKPROF magic)
 *   -EALREADY     already gzip-compressed
 *   -EBUSY        still being written: the process in its header holds it open
 *   -ESTALE       the file changed while it was being compressed
 *   -EINVAL       not a regular file
 *   or the errno of open, read, write, fsync or rename (-ENOSPC, -EDQUOT, -EACCES, ...)
 *
 * *msg, if msg is not NULL, may then hold a malloc'ed one-line explanation for the caller to
 * print after the file's name (the pid of the writer, the name written when only the removal
 * failed). Never prints. */
int lk_compress_profile(const char *path, int level, struct lk_compressed *ret, char **msg);

#endif /* LEEK_COMPRESS_H */
