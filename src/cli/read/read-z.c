/* read-z.c: decompresses a zstd or gzip profile for the reader's window, a buffer at a time
 * (read-z.h).
 *
 * The reader decides the file is compressed by its first bytes, not by its name. This file only
 * turns compressed bytes into uncompressed ones: it never looks at what they mean, so every
 * check of the profile stays in read.c and read-record.c, and every offset the reader reports
 * is an offset in the uncompressed profile. It must never hold more than its input buffer and
 * the codec's state (zlib's 45 KiB; zstd's, with the window its frame names, capped by
 * LK_ZSTD_WINDOW_LOG_MAX), and never loop without consuming input or producing output.
 */
#define ZLIB_CONST
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "read-z.h"

#define IN_BUF (64 * 1024)
#define ZSTD_HEAD_MIN 5     /* a frame's magic and its header's first byte: what zstd reads first */
#define ZSTD_BLOCK_HEADER 3 /* RFC 8878, 3.1.1.2 */

struct lk_unz {
	enum lk_codec codec;
	z_stream zs;           /* gzip */
	ZSTD_DStream *ds;      /* zstd */
	size_t zstd_hint;      /* the input zstd's last call asked for; 0 at a frame's start */
	const uint8_t *next_in; /* unused input: avail_in bytes */
	size_t avail_in;
	int fd;                /* < 0: the input is mem, mem_left bytes */
	const uint8_t *mem;
	size_t mem_left;
	bool in_eof;           /* no input beyond avail_in */
	bool between;          /* a member or frame has ended; the next one, if any, not started */
	bool cut;              /* the input ended inside a member or frame */
	int err;               /* sticky: returned by every call after the first error */
	char msg[128];         /* the codec's words for err */
	size_t in_size;
	uint8_t in[];          /* in_size bytes, for fd input */
};

enum lk_codec lk_codec_of(const void *head, size_t n)
{
	const uint8_t *p = head;

	if (n >= 2 && p[0] == 0x1f && p[1] == 0x8b)
		return LK_CODEC_GZIP;
	if (n >= 4 && p[0] == 0x28 && p[1] == 0xb5 && p[2] == 0x2f && p[3] == 0xfd)
		return LK_CODEC_ZSTD;
	return LK_CODEC_NONE;
}

const char *lk_codec_name(enum lk_codec c)
{
	return c == LK_CODEC_GZIP ? "gzip" : c == LK_CODEC_ZSTD ? "zstd" : "raw";
}

static int codec_init(struct lk_unz *z)
{
	if (z->codec == LK_CODEC_GZIP)
		/* 16 + 15: a gzip wrapper (header, CRC-32 and length checked), the largest window. */
		return inflateInit2(&z->zs, 16 + MAX_WBITS) == Z_OK ? 0 : -ENOMEM;
	if (z->codec != LK_CODEC_ZSTD || !(z->ds = ZSTD_createDStream()))
		return -ENOMEM;
	if (ZSTD_isError(ZSTD_DCtx_setParameter(z->ds, ZSTD_d_windowLogMax, LK_ZSTD_WINDOW_LOG_MAX)))
		return -ENOMEM;
	return 0;
}

struct lk_unz *lk_unz_new(enum lk_codec codec, int fd, const void *head, size_t nhead)
{
	size_t in_size = fd < 0 ? 0 : nhead > IN_BUF ? nhead : IN_BUF;
	struct lk_unz *z = calloc(1, sizeof(*z) + in_size);

	if (!z)
		return NULL;
	z->codec = codec;
	if (codec_init(z) < 0) {
		z->codec = LK_CODEC_NONE; /* no zlib state to end; a zstd one, if any, is freed */
		return lk_unz_free(z);
	}
	z->fd = fd;
	z->in_size = in_size;
	if (fd >= 0) {
		memcpy(z->in, head, nhead);
		z->next_in = z->in;
		z->avail_in = nhead;
	} else {
		z->mem = head;
		z->mem_left = nhead;
		z->in_eof = nhead == 0;
	}
	return z;
}

struct lk_unz *lk_unz_free(struct lk_unz *z)
{
	if (!z)
		return NULL;
	if (z->codec == LK_CODEC_GZIP)
		inflateEnd(&z->zs);
	ZSTD_freeDStream(z->ds); /* accepts NULL */
	free(z);
	return NULL;
}

enum lk_codec lk_unz_codec(const struct lk_unz *z)
{
	return z->codec;
}

bool lk_unz_cut(const struct lk_unz *z)
{
	return z->cut;
}

const char *lk_unz_error(const struct lk_unz *z)
{
	return z->msg;
}

static ssize_t fail(struct lk_unz *z, int err, const char *msg)
{
	snprintf(z->msg, sizeof(z->msg), "%s", msg ? msg : "unknown error");
	z->err = err;
	return err;
}

/* What came before damage first, the error (sticky) on the next call: the offset in the
 * reader's message is then exact. */
static ssize_t fail_after(struct lk_unz *z, size_t out, int err, const char *msg)
{
	fail(z, err, msg);
	return out > 0 ? (ssize_t)out : err;
}

/* More input once the codec has used all it had: 0, or a negative errno. Sets in_eof at the
 * end. */
static int refill(struct lk_unz *z)
{
	if (z->fd < 0) {
		/* zlib counts in uInt; a larger buffer is handed over in parts. */
		size_t n = z->mem_left < (size_t)UINT_MAX ? z->mem_left : (size_t)UINT_MAX;
		z->next_in = z->mem;
		z->avail_in = n;
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
		z->next_in = z->in;
		z->avail_in = (size_t)k;
		z->in_eof = k == 0;
		return 0;
	}
}

/* One inflate() into buf: bytes out (>= 0; sets between at a member's end), or an error. */
static ssize_t step_gzip(struct lk_unz *z, uint8_t *buf, size_t size)
{
	size_t out;
	int k;

	if (z->between) {
		/* Another member (gzip -c a >x; gzip -c b >>x): one stream. */
		if (z->next_in[0] != 0x1f)
			return fail(z, -EBADMSG, "bytes after the last member that are not another "
				    "gzip member");
		if (inflateReset(&z->zs) != Z_OK)
			return fail(z, -EBADMSG, "inflateReset failed");
		z->between = false;
	}
	z->zs.next_in = z->next_in;
	z->zs.avail_in = (uInt)z->avail_in;
	z->zs.next_out = buf;
	z->zs.avail_out = (uInt)size;
	k = inflate(&z->zs, Z_NO_FLUSH);
	out = size - z->zs.avail_out;
	z->next_in = z->zs.next_in;
	z->avail_in = z->zs.avail_in;
	switch (k) {
	case Z_STREAM_END:
		z->between = true;
		return (ssize_t)out;
	case Z_OK:
	case Z_BUF_ERROR: /* no progress: all input used */
		if (k == Z_BUF_ERROR && out == 0 && z->avail_in > 0)
			return fail(z, -EBADMSG, "inflate made no progress");
		return (ssize_t)out;
	case Z_MEM_ERROR:
		return fail(z, -ENOMEM, "out of memory");
	case Z_NEED_DICT: /* a zlib stream with a preset dictionary: not gzip's */
		return fail_after(z, out, -EBADMSG, "needs a dictionary");
	default:          /* Z_DATA_ERROR, Z_STREAM_ERROR */
		return fail_after(z, out, -EBADMSG, z->zs.msg);
	}
}

/* One ZSTD_decompressStream() into buf, the same way. A frame's end is its last block decoded
 * and flushed (the call returns 0); whatever follows starts the next frame, or is refused by
 * zstd as an unknown frame.
 *
 * A call that fails hands back none of what it decoded before the failure, so zstd is never
 * given more input than its hint for the next step less the next block's 3-byte header: a call
 * then completes at most one block (or header, or checksum), and the one that meets damage has
 * decoded nothing else. Every record before a damaged block is read, and the offset in the
 * reader's message is where that block's output would begin. */
static ssize_t step_zstd(struct lk_unz *z, uint8_t *buf, size_t size)
{
	size_t feed = z->avail_in, want = z->zstd_hint ? z->zstd_hint : ZSTD_HEAD_MIN;

	want = want > ZSTD_BLOCK_HEADER ? want - ZSTD_BLOCK_HEADER : want;
	if (feed > want)
		feed = want;
	ZSTD_inBuffer in = { z->next_in, feed, 0 };
	ZSTD_outBuffer out = { buf, size, 0 };
	size_t k = ZSTD_decompressStream(z->ds, &out, &in);

	z->next_in += in.pos;
	z->avail_in -= in.pos;
	if (ZSTD_isError(k)) {
		int err = ZSTD_getErrorCode(k) == ZSTD_error_memory_allocation ? -ENOMEM : -EBADMSG;
		return fail_after(z, out.pos, err, ZSTD_getErrorName(k));
	}
	z->zstd_hint = k;
	if (k == 0 || in.pos > 0 || out.pos > 0)
		z->between = k == 0; /* 0 can come on a call that only ends the flush */
	else if (z->avail_in > 0)
		return fail(z, -EBADMSG, "zstd made no progress");
	return (ssize_t)out.pos;
}

ssize_t lk_unz_read(struct lk_unz *z, uint8_t *buf, size_t size)
{
	ssize_t out;

	if (z->err)
		return z->err;
	if (size > (size_t)UINT_MAX)
		size = UINT_MAX;
	for (;;) {
		if (z->avail_in == 0 && !z->in_eof) {
			int k = refill(z);
			if (k < 0) {
				z->err = k;
				return k;
			}
			continue;
		}
		if (z->avail_in == 0 && z->between)
			return 0; /* in_eof: the last member or frame was complete */
		out = z->codec == LK_CODEC_GZIP ? step_gzip(z, buf, size) : step_zstd(z, buf, size);
		if (out != 0)
			return out;
		if (z->avail_in == 0 && z->in_eof) {
			if (z->between)
				return 0;
			z->cut = true;
			return 0;
		}
	}
}
