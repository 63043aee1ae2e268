/* read-z.h: a compressed profile as the reader's input (read-z.c): what read.c refills its window
 * from when a profile starts with the magic of zstd (what `leek run` and `leek compress` write)
 * or of gzip (what they wrote before; docs/format.md, "Compressed profiles").
 *
 *   codec = lk_codec_of(head, nhead);         by the first LK_CODEC_MAGIC_MAX bytes, never the name
 *   z = lk_unz_new(codec, fd, head, nhead);   head: bytes already read from fd (the magic)
 *   while ((n = lk_unz_read(z, buf, size)) > 0)
 *           use n uncompressed bytes;
 *   n == 0: the end; lk_unz_cut(z) says whether the stream was cut short (no end of frame)
 *
 * Any number of gzip members or zstd frames, one after the other, read as one stream (gzip(1)
 * and zstd(1) both allow that). Memory is fixed by the codec, whatever the size of the file: an
 * input buffer and zlib's state, or zstd's state and its window, at most 2^LK_ZSTD_WINDOW_LOG_MAX
 * bytes (a frame that asks for more is refused as corrupt).
 */
#ifndef LEEK_READ_Z_H
#define LEEK_READ_Z_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum lk_codec {
	LK_CODEC_NONE,  /* not compressed, or not by a codec leek reads */
	LK_CODEC_GZIP,  /* 1f 8b */
	LK_CODEC_ZSTD,  /* 28 b5 2f fd: a zstd frame's magic number, little-endian */
};
#define LK_CODEC_MAGIC_MAX 4 /* the bytes that lk_codec_of() needs to tell */

/* 27: zstd's own default limit for a decoder (128 MiB), far above the 4 MiB window of the level
 * that compress.c uses: any zstd(1) file of ordinary levels is read, and a file that names a
 * larger window costs no more memory than that. */
#define LK_ZSTD_WINDOW_LOG_MAX 27

enum lk_codec lk_codec_of(const void *head, size_t n);
const char *lk_codec_name(enum lk_codec c); /* "gzip", "zstd", "raw" */

struct lk_unz;

/* Decompresses codec's stream from fd (which stays the caller's), after the nhead bytes at head
 * that the caller has already read from it; or, with fd < 0, from the nhead bytes at head alone,
 * which are used in place and must outlive the stream. NULL when out of memory (or codec is
 * LK_CODEC_NONE). */
struct lk_unz *lk_unz_new(enum lk_codec codec, int fd, const void *head, size_t nhead);
struct lk_unz *lk_unz_free(struct lk_unz *z); /* accepts NULL, returns NULL */
enum lk_codec lk_unz_codec(const struct lk_unz *z);

/* Up to size uncompressed bytes into buf: how many (> 0), 0 at the end of the input, or a
 * negative errno: -EBADMSG corrupt data (lk_unz_error() says how), -ENOMEM, or read(2)'s errno.
 * An error is returned again by every later call. */
ssize_t lk_unz_read(struct lk_unz *z, uint8_t *buf, size_t size);

/* After lk_unz_read() returned 0: true if the input ended inside a member or frame (a file cut
 * short, as a compression interrupted by a crash leaves it), false after a complete one. */
bool lk_unz_cut(const struct lk_unz *z);

/* The codec's words for the last -EBADMSG ("invalid block type", "Data corruption detected",
 * "Restored data doesn't match checksum", ...). */
const char *lk_unz_error(const struct lk_unz *z);

#endif /* LEEK_READ_Z_H */
