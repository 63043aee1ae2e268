/* compress.h: zstd-compressing finished profiles (compress.c), for `leek run` and `leek compress`.
 *
 * libleek.so writes raw profiles, because a record must be durable the moment its tag byte is
 * stored; compressing is the CLI's job, once the writer is done (docs/design.md). The reader takes
 * either form (read-z.h), so a compressed profile is one zstd frame of the raw bytes.
 */
#ifndef LEEK_COMPRESS_H
#define LEEK_COMPRESS_H

#include <stdint.h>

/* The level suits the data (compress.c, choose_level; the sizes and times are in docs/format.md,
 * "Compressed profiles"). zstd's level 7 with a window of 8 MiB (2^LK_COMPRESS_WINDOW_LOG) for a
 * profile that compresses well: its window reaches the stacks and blocks that an exact-mode
 * profile names again and again, which gzip's 32 KiB cannot. On the profiles of issue 29's three
 * programs it takes a fifth fewer instructions than level 9 with its 4 MiB window did, for files
 * 8% smaller (sqlite3), 1% smaller (redis-server) and 0.6% larger (python3.11): the long matches
 * that the larger window finds are the cheap ones (docs/performance.md). A reader holds the
 * window: 8 MiB against 16 MiB for a window of 2^24, which gains another half percent. Level 1
 * for a profile that does not compress well, where level 7 is several times slower for little.
 * LK_COMPRESS_LEVEL asks for that choice; a zstd level 1..19 is used as it is, with zstd's own
 * window but for LK_COMPRESS_LEVEL_BEST. */
#define LK_COMPRESS_LEVEL 0
#define LK_COMPRESS_LEVEL_BEST 7
#define LK_COMPRESS_WINDOW_LOG 23 /* LK_COMPRESS_LEVEL_BEST's; the reader takes up to 2^27 */
#define LK_COMPRESS_LEVEL_FAST 1
#define LK_COMPRESS_PROBE (1u << 20) /* bytes from the middle of the file that decide, */
#define LK_COMPRESS_PROBE_AT (8u << 20) /* or from here, in a file of twice this or more */
#define LK_COMPRESS_GOOD_RATIO 8     /* the best level shrinks the probe this much: that level */

struct lk_compressed {
	char *path;                 /* malloc'ed: FILE.zst, or FILE.1.zst, ... if that was taken */
	uint64_t raw_bytes, packed_bytes;
};

/* Compresses the profile at path into FILE.zst beside it at zstd level `level` (LK_COMPRESS_LEVEL:
 * chosen from the data), as FILE.1.zst, FILE.2.zst, ... if that is taken (an existing file is
 * never overwritten), written under a temporary name, fsync'ed and renamed, mode 0600
 * (readable by its owner alone, as libleek creates profiles) with the profile's times; then removes the raw file (unless flags has
 * LK_COMPRESS_KEEP_RAW). Returns 0 and fills *ret, or a
 * negative errno with the raw file in place and no other file left behind:
 *
 *   -EMEDIUMTYPE  not a leek profile (no LEEKPROF magic)
 *   -EALREADY     already compressed (zstd or gzip)
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
 * the profile and a temporary file, feed compresses the bytes before `limit` (written for good:
 * docs/format.md, "Reading a profile being written") once the level can be chosen, and finish
 * compresses the rest and does all lk_compress_profile() does, with its checks and results, the
 * level LK_COMPRESS_LEVEL. Each takes a negative errno on failure; finish and free always free s,
 * and leave no temporary file unless it was named. */
struct lk_compress_stream;
int lk_compress_stream_new(const char *path, struct lk_compress_stream **ret);
int lk_compress_stream_feed(struct lk_compress_stream *s, uint64_t limit);
int lk_compress_stream_finish(struct lk_compress_stream *s, const char *path, int level,
			      unsigned flags, struct lk_compressed *ret, char **msg);
struct lk_compress_stream *lk_compress_stream_free(struct lk_compress_stream *s);

#endif /* LEEK_COMPRESS_H */
