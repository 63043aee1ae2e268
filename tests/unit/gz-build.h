/* gz-build.h: gzip members built in memory for the tests that read compressed profiles, with zlib
 * itself rather than leek's own code, so that those tests check leek against independent code; and
 * zlib's inflater, to tell what a gzip stream holds.
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

/* How many bytes zlib gets out of the first n bytes of a gzip stream (the members it holds, one
 * after the other), appended to out unless it is NULL; *whole: whether those n bytes end with a
 * complete member. Stops at the first error. */
static inline size_t pb_gunzip(struct pbuf *out, const void *gz, size_t n, bool *whole)
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

#endif /* LEEK_TEST_GZ_BUILD_H */
