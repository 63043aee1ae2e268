/* compress.h: gzip-compressing finished profiles (compress.c), for `leek run` and `leek compress`.
 *
 * libleek.so writes raw profiles, because a record must be durable the moment its tag byte is
 * stored; compressing is the CLI's job, once the writer is done (docs/design.md). The reader takes
 * either form (read-gz.h), so a compressed profile is one gzip stream of the raw bytes.
 */
#ifndef LEEK_COMPRESS_H
#define LEEK_COMPRESS_H

#include <stdint.h>

/* The level suits the data (compress.c, choose_level; measured in docs/format.md, "Compressed
 * profiles"). Level 6 for a profile that compresses well, which is where it costs little more than
 * level 1 and makes the file half the size (an exact-mode sqlite3 run: 61x in 0.41 s against 26x
 * in 0.30 s); level 1 for one that does not, where level 6 takes five times longer to save a tenth.
 * LK_COMPRESS_LEVEL asks for that choice; a zlib level 1..9 is used as it is. */
#define LK_COMPRESS_LEVEL 0
#define LK_COMPRESS_LEVEL_BEST 6
#define LK_COMPRESS_LEVEL_FAST 1
#define LK_COMPRESS_PROBE (1u << 20) /* bytes from the middle of the file that decide, */
#define LK_COMPRESS_PROBE_AT (8u << 20) /* or from here, in a file of twice this or more */
#define LK_COMPRESS_GOOD_RATIO 8     /* level 6 shrinks the probe at least this much: level 6 */

struct lk_compressed {
	char *path;                 /* malloc'ed: FILE.gz, or FILE.1.gz, ... if that was taken */
	uint64_t raw_bytes, gz_bytes;
};

/* Compresses the profile at path into FILE.gz beside it at zlib level `level` (LK_COMPRESS_LEVEL:
 * chosen from the data), as FILE.1.gz, FILE.2.gz, ... if that is taken (an existing file is never
 * overwritten), written under a temporary name, fsync'ed and renamed, with
 * the profile's permissions and times; then removes the raw file (unless flags has
 * LK_COMPRESS_KEEP_RAW). Returns 0 and fills *ret, or a
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
enum { LK_COMPRESS_KEEP_RAW = 1 << 0 }; /* the caller removes the raw file (it is reading it) */
int lk_compress_profile(const char *path, int level, unsigned flags, struct lk_compressed *ret,
			char **msg);

/* A compression that starts while the profile is written (`leek run`, run-follow.c): new opens
 * the profile and a temporary file, feed deflates the bytes before `limit` (written for good:
 * docs/format.md, "Reading a profile being written") once the level can be chosen, and finish
 * deflates the rest and does all lk_compress_profile() does, with its checks and results, the
 * level LK_COMPRESS_LEVEL. Each takes a negative errno on failure; finish and free always free s,
 * and leave no temporary file unless it was named. */
struct lk_compress_stream;
int lk_compress_stream_new(const char *path, struct lk_compress_stream **ret);
int lk_compress_stream_feed(struct lk_compress_stream *s, uint64_t limit);
int lk_compress_stream_finish(struct lk_compress_stream *s, const char *path, int level,
			      unsigned flags, struct lk_compressed *ret, char **msg);
struct lk_compress_stream *lk_compress_stream_free(struct lk_compress_stream *s);

#endif /* LEEK_COMPRESS_H */
