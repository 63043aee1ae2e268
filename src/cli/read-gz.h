/* read-gz.h: a gzip stream as the reader's input (read-gz.c): what read.c refills its window from
 * when a profile starts with the gzip magic (docs/format.md, "Compressed profiles").
 *
 *   gz = lk_gz_new(fd, head, nhead);          head: bytes already read from fd (the magic)
 *   while ((n = lk_gz_read(gz, buf, size)) > 0)
 *           use n uncompressed bytes;
 *   n == 0: the end; lk_gz_cut(gz) says whether the stream was cut short (no end of member)
 *
 * Any number of gzip members, one after the other, read as one stream (gzip(1) allows that).
 * Memory is fixed: an input buffer and zlib's state, whatever the size of the file.
 */
#ifndef LEEK_READ_GZ_H
#define LEEK_READ_GZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define LK_GZ_MAGIC0 0x1f
#define LK_GZ_MAGIC1 0x8b

struct lk_gz;

/* Reads the compressed stream from fd (which stays the caller's), after the nhead bytes at head
 * that the caller has already read from it; or, with fd < 0, from the nhead bytes at head alone,
 * which are used in place and must outlive the stream. NULL when out of memory. */
struct lk_gz *lk_gz_new(int fd, const void *head, size_t nhead);
struct lk_gz *lk_gz_free(struct lk_gz *z); /* accepts NULL, returns NULL */

/* Up to size uncompressed bytes into buf: how many (> 0), 0 at the end of the input, or a
 * negative errno: -EBADMSG corrupt data (lk_gz_error() says how), -ENOMEM, or read(2)'s errno.
 * An error is returned again by every later call. */
ssize_t lk_gz_read(struct lk_gz *z, uint8_t *buf, size_t size);

/* After lk_gz_read() returned 0: true if the input ended inside a member (a file cut short, as a
 * compression interrupted by a crash leaves it), false after a complete member. */
bool lk_gz_cut(const struct lk_gz *z);

/* zlib's words for the last -EBADMSG ("invalid block type", "incorrect data check", ...). */
const char *lk_gz_error(const struct lk_gz *z);

#endif /* LEEK_READ_GZ_H */
