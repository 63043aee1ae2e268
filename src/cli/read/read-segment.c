/* read-segment.c: a SEGMENT record's body (format.h, version 6): read and checked, then decoded
 * one record at a time as read-merge.c hands them out (lk_seg_next(), read-internal.h).
 *
 * A body is read whole when its SEGMENT record is read: the main stream goes on after it, and its
 * records go out among the main stream's later ones. It is checked at once, record by record (its
 * tags, lengths and varints, its ALLOCs against the blocks its SEGMENT reserved, a FREE of one of
 * its own blocks before its ALLOC), so that decoding it again later cannot fail, and a damaged
 * body is reported where the file is read, at the offset of the record at fault.
 *
 * Following a profile being written (lk_reader_follow), a body is not covered by the file-size
 * rule that makes the main stream's bytes safe to read: its thread writes it long after the file
 * has grown past it. So it is read from the file itself (pread), whatever the limit, and only
 * once it is complete: its records end at SEG_END, or fill it to its end (a zero tag in it is
 * where its thread may still write). Then it is read a second time, and that copy is the one
 * used: a copy may see a tag before it sees a byte stored before the tag, but the second one
 * starts after the first saw the last tag, so it sees every byte stored before that tag. A body
 * not complete yet stops the reader before its SEGMENT record, for now.
 *
 * Memory: a body's length is checked against LK_SEG_MAX before anything is allocated, and the
 * bodies held at once against LK_READ_SEG_OPEN_MAX and LK_READ_SEG_BYTES_MAX. Never prints.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "read-internal.h"

/* One record of a body, its fields as written: ALLOC's x is its size and y its stack, FREE's x
 * its block_code. */
struct body_rec {
	uint64_t dt, x, y;
	uint32_t len;
};

enum { BODY_RECORD, BODY_END, BODY_CUT, BODY_BIG_VARINT, BODY_FOREIGN };

/* Decodes the record at p, which the body's end `end` must hold whole: BODY_RECORD; BODY_END at
 * a zero tag or SEG_END; BODY_CUT when it crosses end; BODY_BIG_VARINT; BODY_FOREIGN for a tag
 * that no body may hold. */
static int body_record(const uint8_t *p, const uint8_t *end, struct body_rec *br)
{
	uint64_t v[3] = { 0 };
	const uint8_t *q = p + 1;
	unsigned nv;

	switch (p[0]) {
	case LK_REC_END:
	case LK_REC_SEG_END:
		return BODY_END;
	case LK_REC_ALLOC_FIXED:
		if (end - p < LK_ALLOC_FIXED_SIZE)
			return BODY_CUT;
		*br = (struct body_rec){ .x = p[1] | (uint64_t)p[2] << 8,
					 .y = p[3] | (uint64_t)p[4] << 8, .len = LK_ALLOC_FIXED_SIZE };
		return BODY_RECORD;
	case LK_REC_FREE_FIXED:
		if (end - p < LK_FREE_FIXED_SIZE)
			return BODY_CUT;
		*br = (struct body_rec){ .x = p[1] | (uint64_t)p[2] << 8, .len = LK_FREE_FIXED_SIZE };
		return BODY_RECORD;
	case LK_REC_ALLOC:
		nv = 3;
		break;
	case LK_REC_FREE:
		nv = 2;
		break;
	default:
		return BODY_FOREIGN;
	}
	for (unsigned i = 0; i < nv; i++) {
		int k = lk_varint_get(q, end, &v[i]);
		if (k == 0)
			return BODY_CUT;
		if (k < 0)
			return BODY_BIG_VARINT;
		q += k;
	}
	*br = (struct body_rec){ .dt = v[0], .x = v[1], .y = v[2], .len = (uint32_t)(q - p) };
	return BODY_RECORD;
}

static bool is_alloc(uint8_t tag)
{
	return tag == LK_REC_ALLOC || tag == LK_REC_ALLOC_FIXED;
}

/* Whether a copy of a body being written holds all its records: they end at SEG_END, or fill it
 * to its end. A zero tag is where its thread may still write; a record that does not decode may
 * be one seen before all of its bytes were (the reading at the end decides). */
static bool body_complete(const uint8_t *p, size_t len)
{
	struct body_rec br;
	size_t pos = 0;

	while (pos < len) {
		int k = body_record(p + pos, p + len, &br);
		if (k == BODY_END)
			return p[pos] == LK_REC_SEG_END;
		if (k != BODY_RECORD)
			return false;
		pos += br.len;
	}
	return true;
}

/* A FREE's block in a body whose last ALLOC numbered `last`, if the body may free it then:
 * not 0, and none of the segment's own blocks that it has yet to allocate. */
static inline bool free_ok(uint64_t first, uint64_t blocks, uint64_t last, uint64_t block)
{
	return block != 0 && !(block - first < blocks && block > last);
}

/* ALLOC_FIXED and FREE_FIXED, nearly all of an exact profile's body records, from pos on,
 * checked in place as scan() checks them: where the first record that is not one, or that fails
 * a check, starts. *allocs and *prev follow. */
static uint32_t scan_fixed(const struct lk_seg *s, uint32_t pos, uint64_t blocks, uint64_t *allocs,
			   uint64_t *prev)
{
	const uint8_t *body = s->body;
	uint64_t first = s->first, n = *allocs, pr = *prev;
	uint32_t len = s->len;

	while (pos < len) {
		uint8_t tag = body[pos];
		if (tag == LK_REC_ALLOC_FIXED && len - pos >= LK_ALLOC_FIXED_SIZE && n < blocks) {
			n++;
			pos += LK_ALLOC_FIXED_SIZE;
			continue;
		}
		if (tag != LK_REC_FREE_FIXED || len - pos < LK_FREE_FIXED_SIZE)
			break;
		uint64_t block = lk_free_block(first - 1 + n, pr,
					       body[pos + 1] | (uint64_t)body[pos + 2] << 8);
		if (!free_ok(first, blocks, first - 1 + n, block))
			break;
		pr = block;
		pos += LK_FREE_FIXED_SIZE;
	}
	*allocs = n;
	*prev = pr;
	return pos;
}

/* Checks every record of the body, so that lk_seg_next() can decode them without a check, and
 * finds where they end and how many ALLOCs there are (at most `blocks`). The fixed records go
 * through scan_fixed(); any other record, and a fixed one that fails a check, through
 * body_record() and the checks here, which name what is wrong. */
static int scan(struct lk_reader *r, struct lk_seg *s, uint64_t blocks)
{
	uint64_t base = s->first - 1, last, prev = base, allocs = 0;
	const uint8_t *end = s->body + s->len;
	uint32_t pos = 0;
	struct body_rec br;

	for (; (pos = scan_fixed(s, pos, blocks, &allocs, &prev)) < s->len; pos += br.len) {
		const uint8_t *p = s->body + pos;
		uint8_t tag = *p;
		uint64_t at = s->offset + pos, block;
		int k;

		last = base + allocs;
		k = body_record(p, end, &br);
		if (k == BODY_END)
			break;
		if (k == BODY_FOREIGN)
			return lk_reader_fail_at(r, at, "record tag 0x%02x in the body of the SEGMENT at "
						 "offset %" PRIu64 ", which holds only ALLOC, FREE, "
						 "ALLOC_FIXED, FREE_FIXED and SEG_END", tag, s->order);
		if (k == BODY_CUT)
			return lk_reader_fail_at(r, at, "%s record crosses the end of its SEGMENT's body "
						 "at offset %" PRIu64, lk_rec_tag_name(tag),
						 s->offset + s->len);
		if (k == BODY_BIG_VARINT)
			return lk_reader_fail_at(r, at, "%s record holds a varint over 64 bits",
						 lk_rec_tag_name(tag));
		if (is_alloc(tag)) {
			if (++allocs > blocks)
				return lk_reader_fail_at(r, at, "%s beyond the %" PRIu64 " block%s that "
							 "its SEGMENT (offset %" PRIu64 ") reserved",
							 lk_rec_tag_name(tag), blocks,
							 blocks == 1 ? "" : "s",
							 s->order);
			continue;
		}
		/* A block of its own must be allocated before it is freed: its thread's records are in
		 * its order, so no other record can come between. */
		block = lk_free_block(last, prev, br.x);
		if (!free_ok(s->first, blocks, last, block))
			return lk_reader_fail_at(r, at, "%s of block %" PRIu64 " that no record "
						 "allocated", lk_rec_tag_name(tag), block);
		prev = block;
	}
	s->end = pos;
	s->nalloc = allocs;
	return 0;
}

struct lk_seg *lk_seg_free(struct lk_seg *s)
{
	if (s) {
		free(s->body);
		free(s->kids.v);
		free(s);
	}
	return NULL;
}

/* Copies n bytes into a zeroed buffer, but for the zero ones of each 4 KiB: the end of a body that
 * its thread left unfilled (it stopped, or crashed) then takes no memory. */
static void copy_nonzero(uint8_t *to, const uint8_t *from, size_t n)
{
	while (n > 0) {
		size_t k = n < 4096 ? n : 4096;
		if (from[0] || memcmp(from, from + 1, k - 1) != 0)
			memcpy(to, from, k);
		to += k;
		from += k;
		n -= k;
	}
}

/* Through the window: the record's hdr bytes, skip bytes, then the body. 1, or < 0. */
static int read_window(struct lk_reader *r, struct lk_seg *s, const struct lk_record *rec,
		       size_t hdr, uint64_t skip)
{
	uint64_t done = 0, total = skip + s->len;

	lk_reader_consume(r, hdr);
	while (done < total) {
		int k = lk_reader_fill(r, 1);
		if (k < 0)
			return k;
		size_t n = lk_reader_avail(r);
		if (n > total - done)
			n = (size_t)(total - done);
		if (n == 0)
			return lk_reader_cut(r, rec->offset, "SEGMENT record's body of %" PRIu32
					     " bytes", s->len);
		if (done + n > skip) { /* the part of these bytes that is the body's */
			size_t in = done >= skip ? 0 : (size_t)(skip - done);
			copy_nonzero(s->body + (done + in - skip), r->p + in, n - in);
		}
		lk_reader_consume(r, n);
		done += n;
	}
	return 1;
}

/* All of [offset, offset + n) from fd, or less at its end: the bytes read, or -errno. */
static ssize_t pread_full(int fd, uint8_t *buf, size_t n, uint64_t offset)
{
	size_t done = 0;

	while (done < n) {
		ssize_t k = pread(fd, buf + done, n - done, (off_t)(offset + done));
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			break;
		done += (size_t)k;
	}
	return (ssize_t)done;
}

/* Followed: the body from the file itself, complete and read twice (above), then the stream
 * moved past it. 1; 0 if it is not complete yet (nothing consumed); or < 0. */
static int read_followed(struct lk_reader *r, struct lk_seg *s, const struct lk_record *rec)
{
	bool last = r->limit == UINT64_MAX; /* its writer has stopped: read as a whole file */
	uint64_t end = s->offset + s->len;

	for (int copy = 0; copy < (last ? 1 : 2); copy++) {
		ssize_t k = pread_full(r->fd, s->body, s->len, s->offset);
		if (k < 0)
			return lk_reader_fail(r, (int)k, "read failed at offset %" PRIu64 ": %s",
					      s->offset, strerror((int)-k));
		if ((size_t)k < s->len && last)
			return lk_reader_cut(r, rec->offset, "SEGMENT record's body of %" PRIu32
					     " bytes", s->len);
		if ((size_t)k < s->len || (!last && !body_complete(s->body, s->len)))
			return 0;
	}
	/* The window's bytes from here on were read before the body was: read them again. */
	if (lseek(r->fd, (off_t)end, SEEK_SET) < 0)
		return lk_reader_fail(r, -errno, "read failed at offset %" PRIu64 ": %s", end,
				      strerror(errno));
	r->p = r->end = r->buf;
	r->offset = end;
	r->eof = false;
	return 1;
}

int lk_seg_read(struct lk_reader *r, const struct lk_record *rec, size_t hdr, uint64_t skip,
		uint64_t t)
{
	struct lk_merge *m = &r->merge;
	uint64_t length = rec->segment.length; /* at most LK_SEG_MAX: checked by the caller */
	struct lk_seg *s;
	int k;

	if (m->count >= LK_READ_SEG_OPEN_MAX)
		return lk_reader_fail_at(r, rec->offset, "more than %d thread segments open at once",
					 LK_READ_SEG_OPEN_MAX);
	if (m->bytes + length > LK_READ_SEG_BYTES_MAX)
		return lk_reader_fail_at(r, rec->offset, "more than %u bytes of thread segments open "
					 "at once", LK_READ_SEG_BYTES_MAX);
	s = calloc(1, sizeof(*s));
	if (s)
		s->body = calloc(length + LK_SEG_PAD, 1);
	if (!s || !s->body) {
		lk_seg_free(s);
		return lk_reader_fail(r, -ENOMEM, "out of memory");
	}
	s->len = (uint32_t)length;
	s->offset = rec->segment.body_offset;
	s->order = rec->offset;
	s->tid = rec->segment.tid;
	s->first = s->next_alloc = rec->segment.first_block;
	s->last = s->prev = s->first - 1;
	s->time = t;
	k = r->followed && r->fd >= 0 ? read_followed(r, s, rec) : read_window(r, s, rec, hdr, skip);
	if (k > 0 && scan(r, s, rec->segment.blocks) < 0)
		k = r->err;
	if (k <= 0) { /* 0: followed, and the body not complete yet */
		lk_seg_free(s);
		return k;
	}
	lk_seg_next(s);
	if (s->has_head) {
		m->count++;
		m->bytes += length;
	} else {
		s = lk_seg_free(s); /* no record: nothing to merge */
	}
	m->pend_seg = s;
	return 1;
}
