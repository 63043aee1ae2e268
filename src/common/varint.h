/* varint.h: LEB128 and zigzag coding for profile records (docs/format.md).
 *
 * Used by the preload writer and the CLI reader alike, so it stays header-only, libc-free and
 * allocation-free. The decoder never reads past the end it is given and never trusts the input.
 */
#ifndef LEEK_VARINT_H
#define LEEK_VARINT_H

#include <stddef.h>
#include <stdint.h>

/* Writes v at p; returns the bytes written (1..10). p must have LK_VARINT_MAX bytes of room. */
static inline size_t lk_varint_put(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

/* Reads one varint from [p, end). Returns the bytes consumed, 0 if the input ends first, or -1
 * if the encoding is longer than 10 bytes or overflows 64 bits. */
static inline int lk_varint_get(const uint8_t *p, const uint8_t *end, uint64_t *ret)
{
	uint64_t v = 0;

	for (int i = 0; i < 10; i++) {
		if (p + i >= end)
			return 0;
		uint8_t b = p[i];
		if (i == 9 && b > 1)
			return -1;
		v |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*ret = v;
			return i + 1;
		}
	}
	return -1;
}

static inline uint64_t lk_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t lk_unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

#endif /* LEEK_VARINT_H */
