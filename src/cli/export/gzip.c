/* gzip.c: a gzip stream (RFC 1952) into a FILE, with zlib's deflate: pprof's files are gzipped
 * profile.proto messages (profile.proto: "On-disk, the serialized proto must be gzip-compressed").
 *
 * Bytes go in as they come, in any number of writes, gathered into 64 KiB for deflate, and out
 * in 64 KiB pieces: protobuf-c appends a message a field at a time, a few bytes each, and a
 * deflate() call for each costs a call and a CRC update a field. The memory is deflate's own
 * (about 256 KiB) and the two buffers, whatever the size of the stream. Errors wait in
 * g->err, so a caller that cannot take an error in the middle (a protobuf-c buffer's append)
 * checks once at the end.
 *
 * Never: print, or go on writing after an error.
 */
#include <errno.h>
#include <string.h>

#include "export-internal.h"

/* 15 bits of window, and 16 for gzip's header and trailer rather than zlib's (zlib.h). */
#define GZIP_WINDOW_BITS (15 + 16)

int lk_gzip_open(struct lk_gzip *g, FILE *f, int level)
{
	memset(&g->z, 0, sizeof(g->z));
	g->f = f;
	g->err = 0;
	g->nin = 0;
	if (deflateInit2(&g->z, level, Z_DEFLATED, GZIP_WINDOW_BITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	return 0;
}

/* Runs deflate with flush until it needs more input (or, for Z_FINISH, has ended the stream). */
static void pump(struct lk_gzip *g, int flush)
{
	int r;

	do {
		g->z.next_out = g->out;
		g->z.avail_out = sizeof(g->out);
		r = deflate(&g->z, flush);
		if (r == Z_STREAM_ERROR) {
			g->err = -ENOMEM; /* a state zlib cannot go on from */
			return;
		}
		size_t n = sizeof(g->out) - g->z.avail_out;
		if (n && fwrite(g->out, 1, n, g->f) != n) {
			g->err = -EIO;
			return;
		}
	} while (g->z.avail_out == 0 || (flush == Z_FINISH && r != Z_STREAM_END));
}

/* Deflates what is gathered in g->in. */
static void drain(struct lk_gzip *g, int flush)
{
	g->z.next_in = g->in;
	g->z.avail_in = (uInt)g->nin;
	pump(g, flush);
	g->nin = 0;
}

void lk_gzip_write(struct lk_gzip *g, const void *p, size_t n)
{
	const unsigned char *b = p;

	while (n && !g->err) {
		size_t k = sizeof(g->in) - g->nin < n ? sizeof(g->in) - g->nin : n;
		memcpy(g->in + g->nin, b, k);
		g->nin += k;
		b += k;
		n -= k;
		if (g->nin == sizeof(g->in))
			drain(g, Z_NO_FLUSH);
	}
}

int lk_gzip_close(struct lk_gzip *g)
{
	if (!g->err)
		drain(g, Z_FINISH);
	deflateEnd(&g->z);
	return g->err;
}
