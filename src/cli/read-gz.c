/* read-gz.c: inflates a gzip profile for the reader's window, a buffer at a time (read-gz.h).
 *
 * The reader decides the file is gzip by its first two bytes, not by its name. This file only
 * turns compressed bytes into uncompressed ones: it never looks at what they mean, so every
 * check of the profile stays in read.c and read-record.c, and every offset the reader reports
 * is an offset in the uncompressed profile. It must never hold more than its input buffer and
 * zlib's state (about 110 KiB), and never loop without consuming input or producing output.
 */
#define ZLIB_CONST
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "read-gz.h"

#define IN_BUF (64 * 1024)

struct lk_gz {
	z_stream zs;
	int fd;                /* < 0: the input is mem, mem_left bytes */
	const uint8_t *mem;
	size_t mem_left;
	bool in_eof;           /* no input beyond zs.avail_in */
	bool between;          /* a member has ended; the next one, if any, not started */
	bool cut;              /* the input ended inside a member */
	int err;               /* sticky: returned by every call after the first error */
	char msg[128];         /* zlib's words for err */
	size_t in_size;
	uint8_t in[];          /* in_size bytes, for fd input */
};

struct lk_gz *lk_gz_new(int fd, const void *head, size_t nhead)
{
	size_t in_size = fd < 0 ? 0 : nhead > IN_BUF ? nhead : IN_BUF;
	struct lk_gz *z = calloc(1, sizeof(*z) + in_size);

	if (!z)
		return NULL;
	/* 16 + 15: a gzip wrapper (header, CRC-32 and length checked), the largest window. */
	if (inflateInit2(&z->zs, 16 + MAX_WBITS) != Z_OK) {
		free(z);
		return NULL;
	}
	z->fd = fd;
	z->in_size = in_size;
	if (fd >= 0) {
		memcpy(z->in, head, nhead);
		z->zs.next_in = z->in;
		z->zs.avail_in = (uInt)nhead;
	} else {
		z->mem = head;
		z->mem_left = nhead;
		z->in_eof = nhead == 0;
	}
	return z;
}

struct lk_gz *lk_gz_free(struct lk_gz *z)
{
	if (!z)
		return NULL;
	inflateEnd(&z->zs);
	free(z);
	return NULL;
}

bool lk_gz_cut(const struct lk_gz *z)
{
	return z->cut;
}

const char *lk_gz_error(const struct lk_gz *z)
{
	return z->msg;
}

static ssize_t fail(struct lk_gz *z, int err, const char *msg)
{
	snprintf(z->msg, sizeof(z->msg), "%s", msg ? msg : "unknown error");
	z->err = err;
	return err;
}

/* More input once zlib has used all it had: 0, or a negative errno. Sets in_eof at the end. */
static int refill(struct lk_gz *z)
{
	if (z->fd < 0) {
		size_t n = z->mem_left < (size_t)UINT_MAX ? z->mem_left : (size_t)UINT_MAX;
		z->zs.next_in = z->mem;
		z->zs.avail_in = (uInt)n;
		z->mem += n;
		z->mem_left -= n;
		z->in_eof = z->mem_left == 0;
		return 0;
	}
	for (;;) {
		ssize_t k = read(z->fd, z->in, z->in_size);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		z->zs.next_in = z->in;
		z->zs.avail_in = (uInt)k;
		z->in_eof = k == 0;
		return 0;
	}
}

ssize_t lk_gz_read(struct lk_gz *z, uint8_t *buf, size_t size)
{
	size_t out;
	int k;

	if (z->err)
		return z->err;
	if (size > (size_t)UINT_MAX)
		size = UINT_MAX;
	for (;;) {
		if (z->zs.avail_in == 0 && !z->in_eof) {
			k = refill(z);
			if (k < 0) {
				z->err = k;
				return k;
			}
			continue;
		}
		if (z->between) {
			if (z->zs.avail_in == 0)
				return 0; /* in_eof: the last member was complete */
			/* Another member (gzip -c a >x; gzip -c b >>x): one stream. */
			if (z->zs.next_in[0] != LK_GZ_MAGIC0)
				return fail(z, -EBADMSG, "bytes after the last member that are not "
					    "another gzip member");
			if (inflateReset(&z->zs) != Z_OK)
				return fail(z, -EBADMSG, "inflateReset failed");
			z->between = false;
		}
		z->zs.next_out = buf;
		z->zs.avail_out = (uInt)size;
		k = inflate(&z->zs, Z_NO_FLUSH);
		out = size - z->zs.avail_out;
		switch (k) {
		case Z_STREAM_END:
			z->between = true;
			break;
		case Z_OK:
		case Z_BUF_ERROR: /* no progress: all input used */
			if (out == 0 && z->zs.avail_in == 0 && z->in_eof) {
				z->cut = true;
				return 0;
			}
			if (k == Z_BUF_ERROR && out == 0 && z->zs.avail_in > 0)
				return fail(z, -EBADMSG, "inflate made no progress");
			break;
		case Z_MEM_ERROR:
			return fail(z, -ENOMEM, "out of memory");
		case Z_NEED_DICT: /* a zlib stream with a preset dictionary: not gzip's */
		default:          /* Z_DATA_ERROR, Z_STREAM_ERROR */
			if (out > 0) {
				/* What came before the damage first, the error (sticky) on the
				 * next call: the offset in the message is then exact. */
				fail(z, -EBADMSG, z->zs.msg);
				return (ssize_t)out;
			}
			return fail(z, -EBADMSG, k == Z_NEED_DICT ? "needs a dictionary" : z->zs.msg);
		}
		if (out > 0)
			return (ssize_t)out;
	}
}
