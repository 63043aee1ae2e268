/* gz-build.h: gzip members built in memory for the tests that read compressed profiles, with zlib
 * itself rather than leek's compress.c, so that those tests check leek against independent code.
 *
 * Test-only: include after harness.h (ASSERT_*) and build-profile.h (struct pbuf, pb_put).
 */
#ifndef LEEK_TEST_GZ_BUILD_H
#define LEEK_TEST_GZ_BUILD_H

#include <zlib.h>

/* Appends len bytes of data (NULL if len is 0) to out as one gzip member at zlib's level. */
static inline void pb_gzip(struct pbuf *out, const void *data, size_t len, int level)
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

#endif /* LEEK_TEST_GZ_BUILD_H */
