/* zst-build.h: zstd frames built in memory for the tests that read compressed profiles, with
 * libzstd itself rather than leek's compress.c, so that those tests check leek against independent
 * code; and zstd's own decoder, to read back what leek wrote.
 *
 * A frame is made the way a stream is compressed (input with ZSTD_e_continue, then ZSTD_e_end), as
 * compress.c does: no content size in its header, and the same bytes whatever the input's chunks.
 * With `flush`, a block ends every `flush` bytes (ZSTD_e_flush), so that a small profile makes a
 * frame of many blocks, which a decoder can deliver one at a time.
 *
 * Test-only: include after harness.h (ASSERT_*) and build-profile.h (struct pbuf, pb_put).
 */
#ifndef LEEK_TEST_ZST_BUILD_H
#define LEEK_TEST_ZST_BUILD_H

#include <zstd.h>

/* Appends len bytes of data (NULL if len is 0) to out as one zstd frame at zstd's level, with its
 * content checksum, a block ending every flush bytes (0: where zstd likes). */
static inline void pb_zstd_flushed(struct pbuf *out, const void *data, size_t len, int level,
				   size_t flush)
{
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	ZSTD_inBuffer end = { NULL, 0, 0 };
	static uint8_t buf[1 << 17];
	size_t left, n;

	ASSERT_TRUE(cc != NULL);
	ASSERT_TRUE(!ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, level)));
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

static inline void pb_zstd(struct pbuf *out, const void *data, size_t len, int level)
{
	pb_zstd_flushed(out, data, len, level, 0);
}

/* How many bytes zstd gets out of the first n bytes of a zstd stream (its frames, one after the
 * other), appended to out unless it is NULL; *whole: whether those n bytes end with a complete
 * frame. Fails the test on an error (corrupt data, a wrong checksum). */
static inline size_t pb_unzstd(struct pbuf *out, const void *z, size_t n, bool *whole)
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

#endif /* LEEK_TEST_ZST_BUILD_H */
