/* z-build.h: gzip members and zstd frames built in memory for the tests that read compressed
 * profiles, with zlib and libzstd themselves rather than leek's own code (compress.c, read-z.c),
 * so that those tests check leek against independent code; and the same libraries' decoders, to
 * tell what a stream holds and to read back what leek wrote.
 *
 * A zstd frame is made the way a stream is compressed (input with ZSTD_e_continue, then
 * ZSTD_e_end), as compress.c does: no content size in its header, and the same bytes whatever the
 * input's chunks. With `flush`, a block ends every `flush` bytes (ZSTD_e_flush), so that a small
 * profile makes a frame of many blocks, which a decoder can deliver one at a time.
 *
 * Test-only: a library error fails the test (harness.h); out-of-memory aborts (build-profile.h).
 */
#ifndef LEEK_TEST_Z_BUILD_H
#define LEEK_TEST_Z_BUILD_H

#include <stdbool.h>
#include <stddef.h>

#include "build-profile.h"

/* Appends len bytes of data (NULL if len is 0) to out as one gzip member at zlib's level. */
void pb_gzip(struct pbuf *out, const void *data, size_t len, int level);

/* How many bytes zlib gets out of the first n bytes of a gzip stream (the members it holds, one
 * after the other), appended to out unless it is NULL; *whole: whether those n bytes end with a
 * complete member. Stops at the first error. */
size_t pb_gunzip(struct pbuf *out, const void *gz, size_t n, bool *whole);

/* Appends len bytes of data (NULL if len is 0) to out as one zstd frame at zstd's level, with its
 * content checksum, a block ending every flush bytes (0: where zstd likes). */
void pb_zstd_flushed(struct pbuf *out, const void *data, size_t len, int level, size_t flush);
void pb_zstd(struct pbuf *out, const void *data, size_t len, int level);
/* pb_zstd() with a window of 2^window_log bytes, where zstd's level would choose another. */
void pb_zstd_window(struct pbuf *out, const void *data, size_t len, int level, int window_log);

/* How many bytes zstd gets out of the first n bytes of a zstd stream (its frames, one after the
 * other), appended to out unless it is NULL; *whole: whether those n bytes end with a complete
 * frame. Fails the test on an error (corrupt data, a wrong checksum). */
size_t pb_unzstd(struct pbuf *out, const void *z, size_t n, bool *whole);

#endif /* LEEK_TEST_Z_BUILD_H */
