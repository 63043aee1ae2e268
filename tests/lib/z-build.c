/* z-build.c: gzip and zstd streams made and read with zlib and libzstd (see z-build.h). */
#include <stdint.h>
#include <zlib.h>
#include <zstd.h>

#include "harness.h"
#include "z-build.h"

void pb_gzip(struct pbuf *out, const void *data, size_t len, int level)
{
	z_stream zs = { 0 };
	uint8_t buf[65536];
	int k;

	ASSERT_EQ(deflateInit2(&zs, level, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
	zs.next_in = len ? (Bytef *)data : (Bytef *)"";
	zs.avail_in = (uInt)len;
	do {
		zs.next_out = buf;
		zs.avail_out = sizeof(buf);
		k = deflate(&zs, Z_FINISH);
		ASSERT_TRUE(k == Z_OK || k == Z_STREAM_END);
		pb_put(out, buf, sizeof(buf) - zs.avail_out);
	} while (k != Z_STREAM_END);
	deflateEnd(&zs);
}

size_t pb_gunzip(struct pbuf *out, const void *gz, size_t n, bool *whole)
{
	static uint8_t buf[1 << 16];
	z_stream zs = { 0 };
	size_t total = 0;
	int k = Z_OK;

	ASSERT_EQ(inflateInit2(&zs, 16 + MAX_WBITS), Z_OK);
	zs.next_in = (Bytef *)gz;
	zs.avail_in = (uInt)n;
	for (;;) {
		zs.next_out = buf;
		zs.avail_out = sizeof(buf);
		k = inflate(&zs, Z_NO_FLUSH);
		total += sizeof(buf) - zs.avail_out;
		if (out)
			pb_put(out, buf, sizeof(buf) - zs.avail_out);
		if (k == Z_STREAM_END && zs.avail_in > 0)
			inflateReset(&zs); /* the next member */
		else if (k != Z_OK || (zs.avail_out > 0 && zs.avail_in == 0))
			break; /* the end of a member or of the input, or no progress */
	}
	*whole = k == Z_STREAM_END;
	inflateEnd(&zs);
	return total;
}

static void zstd_frame(struct pbuf *out, const void *data, size_t len, int level, int window_log,
		       size_t flush)
{
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	ZSTD_inBuffer end = { NULL, 0, 0 };
	static uint8_t buf[1 << 17];
	size_t left, n;

	ASSERT_TRUE(cc != NULL);
	ASSERT_TRUE(!ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, level)));
	if (window_log)
		ASSERT_TRUE(!ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_windowLog, window_log)));
	ASSERT_TRUE(!ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1)));
	for (size_t off = 0; off < len; off += n) {
		n = flush && len - off > flush ? flush : len - off;
		ZSTD_inBuffer in = { (const uint8_t *)data + off, n, 0 };
		do {
			ZSTD_outBuffer o = { buf, sizeof(buf), 0 };
			left = ZSTD_compressStream2(cc, &o, &in,
						    flush ? ZSTD_e_flush : ZSTD_e_continue);
			ASSERT_TRUE(!ZSTD_isError(left));
			pb_put(out, buf, o.pos);
		} while (in.pos < in.size || (flush && left > 0));
	}
	do {
		ZSTD_outBuffer o = { buf, sizeof(buf), 0 };
		left = ZSTD_compressStream2(cc, &o, &end, ZSTD_e_end);
		ASSERT_TRUE(!ZSTD_isError(left));
		pb_put(out, buf, o.pos);
	} while (left > 0);
	ZSTD_freeCCtx(cc);
}

void pb_zstd_flushed(struct pbuf *out, const void *data, size_t len, int level, size_t flush)
{
	zstd_frame(out, data, len, level, 0, flush);
}

void pb_zstd(struct pbuf *out, const void *data, size_t len, int level)
{
	zstd_frame(out, data, len, level, 0, 0);
}

void pb_zstd_window(struct pbuf *out, const void *data, size_t len, int level, int window_log)
{
	zstd_frame(out, data, len, level, window_log, 0);
}

size_t pb_unzstd(struct pbuf *out, const void *z, size_t n, bool *whole)
{
	ZSTD_DStream *ds = ZSTD_createDStream();
	static uint8_t buf[1 << 17];
	ZSTD_inBuffer in = { z, n, 0 };
	size_t total = 0, k, last = 1; /* last: what the last call that did something returned */

	ASSERT_TRUE(ds != NULL);
	for (;;) {
		ZSTD_outBuffer o = { buf, sizeof(buf), 0 };
		size_t used = in.pos;
		k = ZSTD_decompressStream(ds, &o, &in);
		if (ZSTD_isError(k))
			FAIL("zstd: %s", ZSTD_getErrorName(k));
		/* A call with nothing to do after a frame asks for the next one. */
		if (o.pos > 0 || in.pos > used)
			last = k;
		total += o.pos;
		if (out)
			pb_put(out, buf, o.pos);
		if (o.pos < o.size && in.pos == in.size)
			break; /* all input used, all output flushed */
	}
	*whole = last == 0;
	ZSTD_freeDStream(ds);
	return total;
}
