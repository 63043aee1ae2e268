/* read-record.c: decodes and checks the main stream's records, one at a time (read.h,
 * include/leek/format.h). A SEGMENT record's body is read-segment.c's, and the order in which a
 * version 6 profile's records go out read-merge.c's: lk_reader_next() hands them over as soon as
 * there is a segment to merge, and keeps the main stream's fast path to itself until then.
 *
 * Each decoder reads every field through a cursor that yields zeros once the window runs out or a
 * varint is malformed, checks each count against the format's limit before looping on it, then
 * checks the cursor once. Only then does it apply the record's meaning to the reader's state
 * (stack sequence, loaded modules, time, thread, block numbers), so a rejected record changes
 * nothing. A failure names the offset of the record's tag byte.
 *
 * ALLOC, FREE and THREAD, nearly all the records of a profile, first try a fast path
 * (fast_record()): all their fields found at once and decoded without a cursor. It takes only
 * records it can read whole and that are certainly valid, and hands anything else to the general
 * path, so the checks and the messages are the general path's.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "read-internal.h"

struct cursor {
	const uint8_t *p, *end;
	bool cut, bad; /* ran past the window; a varint over 64 bits */
};

static uint64_t get(struct cursor *c)
{
	uint64_t v = 0;
	int n;

	if (c->cut || c->bad)
		return 0;
	n = lk_varint_get(c->p, c->end, &v);
	if (n <= 0) {
		c->cut = n == 0;
		c->bad = n < 0;
		return 0;
	}
	c->p += n;
	return v;
}

static const uint8_t *get_bytes(struct cursor *c, uint64_t n)
{
	const uint8_t *p = c->p;

	if (c->cut || c->bad)
		return NULL;
	if ((uint64_t)(c->end - c->p) < n) {
		c->cut = true;
		return NULL;
	}
	c->p += n;
	return p;
}

/* The window holds LK_READ_RECORD_MAX bytes unless the file ends sooner, and no valid record
 * is longer, so running out of window means the file ends inside this record. */
static int check(struct lk_reader *r, const struct cursor *c, const char *what)
{
	if (c->bad)
		return lk_reader_fail_at(r, r->offset, "%s record holds a varint over 64 bits",
					 what);
	if (c->cut)
		return lk_reader_cut(r, r->offset, "%s record", what);
	return 0;
}

static int check_stack(struct lk_reader *r, const char *what, uint64_t stack)
{
	if (stack >= r->next_stack)
		return lk_reader_fail_at(r, r->offset, "%s names stack %" PRIu64
					 ", which is not defined yet", what, stack);
	return 0;
}

/* ALLOC and FREE are the thread's of the last THREAD record: there must be one. */
static int check_thread(struct lk_reader *r, const char *what)
{
	if (!r->thread)
		return lk_reader_fail_at(r, r->offset, "%s before any THREAD record", what);
	return 0;
}

/* FREE's block from its code (format.h): version 4's age or step (lk_free_block), version 3's
 * step alone. Either wraps like the writer's subtraction. */
static uint64_t freed_block(const struct lk_reader *r, uint64_t code)
{
	if (r->free_by_age)
		return lk_free_block(r->blocks, r->prev_free, code);
	return r->prev_free + (uint64_t)lk_unzigzag(code);
}

static int check_freed(struct lk_reader *r, uint64_t block)
{
	if (block == 0 || block > r->blocks)
		return lk_reader_fail_at(r, r->offset, "FREE of block %" PRIu64 ", but blocks 1 to %"
					 PRIu64 " are all the file has allocated", block, r->blocks);
	return 0;
}

/* ALLOC_FIXED and FREE_FIXED (format.h) are an ALLOC and a FREE at dt 0 with fixed-width fields:
 * the same decoders read them (fixed), and hand them on as ALLOC and FREE. */
static uint64_t get_fixed(struct cursor *c, unsigned n)
{
	const uint8_t *p = get_bytes(c, n);
	uint64_t v = 0;

	for (unsigned i = 0; p && i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static int decode_alloc(struct lk_reader *r, struct cursor *c, struct lk_record *rec, uint64_t *dt,
			bool fixed)
{
	const char *what = fixed ? "ALLOC_FIXED" : "ALLOC";
	int k;

	rec->tag = LK_REC_ALLOC;
	*dt = fixed ? 0 : get(c);
	rec->alloc.size = fixed ? get_fixed(c, 2) : get(c);
	rec->alloc.stack = fixed ? get_fixed(c, 2) : get(c);
	k = check(r, c, what);
	if (k == 0)
		k = check_thread(r, what);
	if (k == 0)
		k = check_stack(r, what, rec->alloc.stack);
	if (k < 0)
		return k;
	rec->alloc.tid = r->tid;
	rec->alloc.block = ++r->blocks;
	return 0;
}

/* FREE, FREE_FIXED (fixed) or FREE_STACK (with_stack): a FREE, and FREE_STACK's stack. */
static int decode_free(struct lk_reader *r, struct cursor *c, struct lk_record *rec, uint64_t *dt,
		       bool fixed, bool with_stack)
{
	const char *what = fixed ? "FREE_FIXED" : with_stack ? "FREE_STACK" : "FREE";
	uint64_t block;
	int k;

	rec->tag = LK_REC_FREE;
	*dt = fixed ? 0 : get(c);
	block = freed_block(r, fixed ? get_fixed(c, 2) : get(c));
	rec->free.stack = with_stack ? get(c) : 0;
	k = check(r, c, what);
	if (k == 0)
		k = check_thread(r, what);
	if (k == 0)
		k = check_freed(r, block);
	if (k == 0 && with_stack)
		k = check_stack(r, what, rec->free.stack);
	if (k < 0)
		return k;
	rec->free.tid = r->tid;
	rec->free.block = r->prev_free = block;
	return 0;
}

static int decode_thread(struct lk_reader *r, struct cursor *c, struct lk_record *rec)
{
	int k;

	rec->thread.tid = get(c);
	k = check(r, c, "THREAD");
	if (k < 0)
		return k;
	r->tid = rec->thread.tid;
	r->thread = true;
	return 0;
}

static int decode_stack(struct lk_reader *r, struct cursor *c, struct lk_record *rec)
{
	uint64_t id = get(c), n = get(c), prev = 0;
	int k;

	if (n > LK_MAX_FRAMES)
		return lk_reader_fail_at(r, r->offset, "STACK of %" PRIu64 " frames (at most %d)",
					 n, LK_MAX_FRAMES);
	for (uint64_t i = 0; i < n; i++) {
		prev += (uint64_t)lk_unzigzag(get(c)); /* wraps like the writer's subtraction */
		r->frames[i] = prev;
	}
	k = check(r, c, "STACK");
	if (k < 0)
		return k;
	if (id != r->next_stack)
		return lk_reader_fail_at(r, r->offset, "STACK id %" PRIu64
					 " out of sequence (expected %" PRIu64 ")", id,
					 r->next_stack);
	r->next_stack++;
	rec->stack.id = id;
	rec->stack.nframes = (uint32_t)n;
	rec->stack.frames = r->frames;
	return 0;
}

static int decode_module(struct lk_reader *r, struct cursor *c, struct lk_record *rec,
			 uint64_t *dt)
{
	uint64_t id, nseg, idlen, plen;
	const uint8_t *build_id, *path;
	int k;

	*dt = get(c);
	id = get(c);
	rec->module.base = get(c);
	nseg = get(c);
	if (nseg > LK_MAX_SEGMENTS)
		return lk_reader_fail_at(r, r->offset, "MODULE with %" PRIu64
					 " segments (at most %d)", nseg, LK_MAX_SEGMENTS);
	for (uint64_t i = 0; i < nseg; i++) {
		r->seg[i].start = get(c);
		r->seg[i].len = get(c);
	}
	idlen = get(c);
	if (idlen > LK_MAX_BUILD_ID)
		return lk_reader_fail_at(r, r->offset, "MODULE build-id of %" PRIu64
					 " bytes (at most %d)", idlen, LK_MAX_BUILD_ID);
	build_id = get_bytes(c, idlen);
	plen = get(c);
	if (plen > LK_MAX_PATH)
		return lk_reader_fail_at(r, r->offset, "MODULE path of %" PRIu64
					 " bytes (at most %d)", plen, LK_MAX_PATH);
	path = get_bytes(c, plen);
	k = check(r, c, "MODULE");
	if (k < 0)
		return k;

	if (id == 0 || id <= r->last_module)
		return lk_reader_fail_at(r, r->offset,
					 "MODULE id %" PRIu64 " is not above the previous one "
					 "(%" PRIu64 "): ids are assigned in order from 1 and "
					 "never reused", id, r->last_module);
	k = lk_u64map_put(&r->loaded, id, 1);
	if (k == -E2BIG)
		return lk_reader_fail_at(r, r->offset, "more than %d modules loaded at once",
					 LK_READ_MAX_LOADED);
	if (k < 0)
		return lk_reader_fail(r, k, "out of memory");
	r->last_module = id;
	memcpy(r->build_id, build_id, idlen);
	memcpy(r->path, path, plen);
	r->path[plen] = 0;
	rec->module.id = id;
	rec->module.nseg = (uint32_t)nseg;
	rec->module.seg = r->seg;
	rec->module.build_id_len = (uint32_t)idlen;
	rec->module.build_id = r->build_id;
	rec->module.path_len = (uint32_t)plen;
	rec->module.path = r->path;
	return 0;
}

static int decode_unload(struct lk_reader *r, struct cursor *c, struct lk_record *rec,
			 uint64_t *dt)
{
	int k;

	*dt = get(c);
	rec->unload.id = get(c);
	k = check(r, c, "UNLOAD");
	if (k < 0)
		return k;
	if (!lk_u64map_remove(&r->loaded, rec->unload.id, NULL))
		return lk_reader_fail_at(r, r->offset, "UNLOAD of module %" PRIu64
					 ", which is not loaded", rec->unload.id);
	return 0;
}

/* LOSS and TRAILER. */
static int decode_counters(struct lk_reader *r, struct cursor *c, struct lk_record *rec,
			   uint64_t *dt)
{
	const char *what = lk_rec_tag_name(rec->tag);
	uint64_t n;

	*dt = get(c);
	if (rec->tag == LK_REC_TRAILER)
		rec->counters.end_realtime_ns = get(c);
	n = get(c);
	if (n > LK_READ_MAX_COUNTERS)
		return lk_reader_fail_at(r, r->offset, "%s with %" PRIu64 " counters (at most %d)",
					 what, n, LK_READ_MAX_COUNTERS);
	for (uint64_t i = 0; i < n; i++) {
		r->counters[i].id = get(c);
		r->counters[i].value = get(c);
	}
	rec->counters.n = (uint32_t)n;
	rec->counters.v = r->counters;
	return check(r, c, what);
}

static int decode_inherit(struct lk_reader *r, struct cursor *c, struct lk_record *rec)
{
	int k;

	rec->inherit.size = get(c);
	rec->inherit.stack = get(c);
	rec->inherit.alloc_monotonic_ns = get(c);
	k = check(r, c, "INHERIT");
	if (k == 0)
		k = check_stack(r, "INHERIT", rec->inherit.stack);
	if (k < 0)
		return k;
	rec->inherit.block = ++r->blocks;
	return 0;
}

/* SEGMENT (version 6): its fields checked here, its body read by read-segment.c, which consumes
 * the record with it. 1; 0 while following, where the body is not complete yet; or < 0. */
static int decode_segment(struct lk_reader *r, struct cursor *c, struct lk_record *rec,
			  uint64_t *dt)
{
	uint64_t skip, length;
	int k;

	*dt = get(c);
	rec->segment.tid = get(c);
	rec->segment.blocks = get(c);
	skip = get(c);
	length = get(c);
	k = check(r, c, "SEGMENT");
	if (k < 0)
		return k;
	if (length > LK_SEG_MAX)
		return lk_reader_fail_at(r, r->offset, "SEGMENT body of %" PRIu64 " bytes (at most %u)",
					 length, LK_SEG_MAX);
	if (skip > LK_SEG_SKIP_MAX)
		return lk_reader_fail_at(r, r->offset, "SEGMENT skips %" PRIu64 " bytes before its "
					 "body (at most %d)", skip, LK_SEG_SKIP_MAX);
	if (rec->segment.blocks > length) /* an ALLOC takes a byte at least */
		return lk_reader_fail_at(r, r->offset, "SEGMENT reserves %" PRIu64 " blocks for a "
					 "body of %" PRIu64 " bytes", rec->segment.blocks, length);
	rec->segment.first_block = r->blocks + 1;
	rec->segment.body_offset = r->offset + (uint64_t)(c->p - r->p) + skip;
	rec->segment.length = length;
	return lk_seg_read(r, rec, (size_t)(c->p - r->p), skip, r->time_ns + *dt);
}

/* CTL (version 7): kind, and a mark's name, copied (format.h). */
static int decode_ctl(struct lk_reader *r, struct cursor *c, struct lk_record *rec, uint64_t *dt)
{
	uint64_t kind, len;
	const uint8_t *name;
	int k;

	*dt = get(c);
	kind = get(c);
	len = get(c);
	k = check(r, c, "CTL");
	if (k < 0)
		return k;
	if (kind < LK_CTL_ON || kind > LK_CTL_MARK)
		return lk_reader_fail_at(r, r->offset, "CTL record of unknown kind %" PRIu64, kind);
	if ((kind == LK_CTL_MARK) != (len > 0) || len > LK_CTL_NAME_MAX)
		return lk_reader_fail_at(r, r->offset, "CTL record of kind %" PRIu64 " with a name "
					 "of %" PRIu64 " bytes", kind, len);
	name = get_bytes(c, len);
	k = check(r, c, "CTL");
	if (k < 0)
		return k;
	for (uint64_t i = 0; i < len; i++)
		if (name[i] <= 0x20 || name[i] >= 0x7f)
			return lk_reader_fail_at(r, r->offset, "CTL record: a mark's name holds byte "
						 "0x%02x", name[i]);
	rec->ctl.kind = (uint32_t)kind;
	rec->ctl.name_len = (uint32_t)len;
	memcpy(rec->ctl.name, name, len);
	rec->ctl.name[len] = 0;
	return 0;
}

/* ERROR (version 8): a memory error's fields (format.h): a known kind, stacks written before it,
 * a block numbered already (0: none). */
static int decode_error(struct lk_reader *r, struct cursor *c, struct lk_record *rec,
			uint64_t *dt)
{
	int k;

	*dt = get(c);
	rec->error.tid = get(c);
	rec->error.kind = get(c);
	rec->error.addr = get(c);
	rec->error.block_addr = get(c);
	rec->error.block_size = get(c);
	rec->error.block = get(c);
	rec->error.alloc_stack = get(c);
	rec->error.free_stack = get(c);
	rec->error.stack = get(c);
	k = check(r, c, "ERROR");
	if (k < 0)
		return k;
	if ((k = check_stack(r, "ERROR", rec->error.stack)) < 0 ||
	    (k = check_stack(r, "ERROR", rec->error.alloc_stack)) < 0 ||
	    (k = check_stack(r, "ERROR", rec->error.free_stack)) < 0)
		return k;
	if (rec->error.kind < 1 || rec->error.kind > LK_ERR_MAX)
		return lk_reader_fail_at(r, r->offset, "ERROR record of unknown kind %" PRIu64,
					 rec->error.kind);
	if (rec->error.block > r->blocks)
		return lk_reader_fail_at(r, r->offset, "ERROR record names block %" PRIu64
					 ", of %" PRIu64 " so far", rec->error.block, r->blocks);
	return 0;
}

/* A tag that a later version of the format has: in this file's version, an unknown one. */
static int newer_tag(struct lk_reader *r, unsigned tag, unsigned version)
{
	return lk_reader_fail_at(r, r->offset, "unknown record tag 0x%02x in a version %u profile "
				 "(version %u has it)", tag, (unsigned)lk_reader_header(r)->h.version,
				 version);
}

/* An extension: a length and that many bytes, skipped through the window, whatever their
 * length, without ever holding them. */
static int skip_ext(struct lk_reader *r, struct cursor *c, struct lk_record *rec)
{
	uint64_t left;
	int k;

	rec->ext.tag = (uint8_t)rec->tag;
	rec->ext.len = left = get(c);
	rec->tag = LK_READ_EXT;
	k = check(r, c, "extension");
	if (k < 0)
		return k;
	lk_reader_consume(r, (size_t)(c->p - r->p));
	while (left > 0) {
		k = lk_reader_fill(r, 1);
		if (k < 0)
			return k;
		size_t n = lk_reader_avail(r) < left ? lk_reader_avail(r) : (size_t)left;
		if (n == 0)
			return lk_reader_cut(r, rec->offset, "extension record 0x%02x of %" PRIu64
					     " bytes", rec->ext.tag, rec->ext.len);
		lk_reader_consume(r, n);
		left -= n;
	}
	return 0;
}

/* After a TRAILER, only zero padding may follow. */
static int check_tail(struct lk_reader *r)
{
	for (;;) {
		int k = lk_reader_fill(r, 1);
		if (k < 0)
			return k;
		size_t n = lk_reader_avail(r);
		if (n == 0 && !r->eof)
			return 0; /* followed: the limit */
		if (n == 0 && r->unz_err)
			return lk_reader_damaged(r);
		if (n == 0) {
			r->state = ST_END;
			return 0;
		}
		for (size_t i = 0; i < n; i++)
			if (r->p[i])
				return lk_reader_fail_at(r, r->offset + i,
							 "data after the TRAILER record");
		lk_reader_consume(r, n);
	}
}

/* Bit i set: byte i of the 32 at p is the last of a varint (its top bit is clear). */
static inline uint32_t last_bytes(const uint8_t *p)
{
#ifdef __SSE2__
	__m128i lo = _mm_loadu_si128((const __m128i *)p);
	__m128i hi = _mm_loadu_si128((const __m128i *)(p + 16));

	return ~((uint32_t)_mm_movemask_epi8(lo) | (uint32_t)_mm_movemask_epi8(hi) << 16);
#else
	uint32_t m = 0;

	for (unsigned k = 0; k < 4; k++) {
		uint64_t x;
		memcpy(&x, p + 8 * k, 8);
		x = (~le64toh(x) & 0x8080808080808080ull) >> 7; /* bit 8i: byte i is a last one */
		m |= (uint32_t)((x * 0x0102040810204080ull) >> 56) << (8 * k); /* gathered */
	}
	return m;
#endif
}

/* Where the first n (at most 5) varints at p end, as offsets past their last bytes, if each is at
 * most 8 bytes long and all end within 32 bytes; else false. The last bytes of all of them are
 * found at once, so that where a field starts does not wait for the field before it. */
static inline bool split(const uint8_t *p, unsigned n, unsigned end[])
{
	uint32_t m = last_bytes(p);
	unsigned prev = 0;

	for (unsigned k = 0; k < n; k++) {
		if (!m)
			return false;
		end[k] = (unsigned)__builtin_ctz(m) + 1;
		if (end[k] - prev > 8)
			return false;
		prev = end[k];
		m &= m - 1;
	}
	return true;
}

/* The k-th varint of those split() found at p (1 to 8 bytes, so one word holds it). */
static inline uint64_t field(const uint8_t *p, const unsigned end[], unsigned k)
{
	unsigned start = k ? end[k - 1] : 0;
	uint64_t x;

	memcpy(&x, p + start, 8);
	x = le64toh(x) & (~0ull >> (64 - 8 * (end[k] - start))); /* its bytes only */
	x = ((x & 0x7f007f007f007f00ull) >> 1) | (x & 0x007f007f007f007full); /* 7-bit groups */
	x = ((x & 0x3fff00003fff0000ull) >> 2) | (x & 0x00003fff00003fffull);
	return ((x & 0x0fffffff00000000ull) >> 4) | (x & 0x000000000fffffffull);
}

/* ALLOC, FREE and THREAD are most of the records: when the window holds the longest record,
 * their fields are split() and decoded apart. take_alloc() and take_free() return the record's
 * length, having moved the reader's block state as the general path would, or 0, changing
 * nothing, for anything unusual (a varint over 8 bytes, a record over 33, a stack not defined yet,
 * a FREE of a block not numbered yet), which the general path decodes or rejects. The callers take
 * ALLOC and FREE only after a THREAD record. The caller has switched on the tag, once: which
 * record comes next is a branch no predictor gets right. */
_Static_assert(LK_READ_RECORD_MAX >= 1 + 32 + 8, "split() and field() read 40 bytes");

/* An ALLOC the fast path takes: its length, and the block it numbers counted; or 0. */
static inline unsigned take_alloc(struct lk_reader *r, unsigned end[3])
{
	const uint8_t *p = r->p + 1;

	if (!split(p, 3, end) || field(p, end, 2) >= r->next_stack)
		return 0;
	r->blocks++;
	return 1 + end[2];
}

/* A FREE of a block numbered already: its length, with its block the previous FREE's now; or 0. */
static inline unsigned take_free(struct lk_reader *r, unsigned end[2])
{
	const uint8_t *p = r->p + 1;
	uint64_t block;

	if (!split(p, 2, end))
		return 0;
	block = freed_block(r, field(p, end, 1));
	if (block - 1 >= r->blocks)
		return 0;
	r->prev_free = block;
	return 1 + end[1];
}

/* The 8 bytes at p, little-endian: a fixed record's tag and payload, and what follows them. */
static inline uint64_t word_at(const uint8_t *p)
{
	uint64_t x;

	memcpy(&x, p, 8);
	return le64toh(x);
}

/* An ALLOC_FIXED the fast path takes (its stack defined): its length, its block counted; or 0. */
static inline unsigned take_alloc_fixed(struct lk_reader *r, uint64_t *size, uint64_t *stack)
{
	uint64_t x = word_at(r->p);

	*size = x >> 8 & 0xffff;
	*stack = x >> 24 & 0xffff;
	if (!r->fixed || *stack >= r->next_stack)
		return 0;
	r->blocks++;
	return LK_ALLOC_FIXED_SIZE;
}

/* A FREE_FIXED of a block numbered already: its length, its block the previous FREE's; or 0. */
static inline unsigned take_free_fixed(struct lk_reader *r)
{
	uint64_t block = freed_block(r, word_at(r->p) >> 8 & 0xffff);

	if (!r->fixed || block - 1 >= r->blocks)
		return 0;
	r->prev_free = block;
	return LK_FREE_FIXED_SIZE;
}

/* Consumes an ALLOC or FREE of n bytes and time step dt. */
static inline void fast_done(struct lk_reader *r, uint64_t dt, unsigned n)
{
	r->time_ns += dt;
	lk_reader_consume(r, n);
	r->end_offset = r->offset;
}

/* always_inline: lk_reader_next() and lk_reader_main() both try it first, and a call would cost
 * the records it exists for (bench/report-throughput.sh). */
static inline __attribute__((always_inline)) bool fast_record(struct lk_reader *r,
							      struct lk_record *rec)
{
	const uint8_t *p = r->p + 1;
	uint64_t offset = r->offset;
	unsigned end[3], n;

	if (lk_reader_avail(r) < LK_READ_RECORD_MAX || !r->thread)
		return false;
	switch (r->p[0]) {
	case LK_REC_ALLOC:
		n = take_alloc(r, end);
		if (!n)
			return false;
		lk_read_set_alloc(rec, offset, 0, r->tid, r->blocks, field(p, end, 1), field(p, end, 2));
		fast_done(r, field(p, end, 0), n);
		break;
	case LK_REC_FREE:
		n = take_free(r, end);
		if (!n)
			return false;
		lk_read_set_free(rec, offset, 0, r->tid, r->prev_free);
		fast_done(r, field(p, end, 0), n);
		break;
	case LK_REC_ALLOC_FIXED: {
		uint64_t size, stack;
		n = take_alloc_fixed(r, &size, &stack);
		if (!n)
			return false;
		lk_read_set_alloc(rec, offset, 0, r->tid, r->blocks, size, stack);
		fast_done(r, 0, n);
		break;
	}
	case LK_REC_FREE_FIXED:
		n = take_free_fixed(r);
		if (!n)
			return false;
		lk_read_set_free(rec, offset, 0, r->tid, r->prev_free);
		fast_done(r, 0, n);
		break;
	case LK_REC_THREAD:
		if (!split(p, 1, end))
			return false;
		r->tid = field(p, end, 0);
		*rec = (struct lk_record){ .tag = LK_REC_THREAD, .offset = offset,
					   .thread = { r->tid } };
		lk_reader_consume(r, 1 + end[0]);
		r->end_offset = r->offset;
		break;
	default:
		return false;
	}
	rec->time_ns = r->time_ns;
	return true;
}

int lk_reader_main(struct lk_reader *r, struct lk_record *rec)
{
	struct cursor c;
	uint64_t dt = 0;
	int k;

	switch (r->state) {
	case ST_NEW:
		return -EBADF;
	case ST_FAILED:
		return r->err;
	case ST_END:
		return 0;
	case ST_AFTER_TRAILER:
		return check_tail(r);
	case ST_RECORDS:
		break;
	}

	if (fast_record(r, rec))
		return 1;
	k = lk_reader_fill(r, LK_READ_RECORD_MAX);
	if (k < 0)
		return k;
	/* Followed: no more now, where the record may not be whole, or not written yet, or is an
	 * extension, which may be longer than the window. */
	if (lk_reader_waits(r) || (r->limit != UINT64_MAX && (r->p[0] == LK_REC_END ||
							       r->p[0] >= LK_REC_EXT_FIRST)))
		return 0;
	/* The end of the file, or a zero tag: the writer stopped here. A compressed stream is read
	 * on to its end first, where its checksum tells whether that zero was the writer's or one
	 * that damaged data made. */
	if (lk_reader_avail(r) == 0 || r->p[0] == LK_REC_END) {
		uint64_t end = r->offset;
		k = r->unz ? lk_reader_drain(r) : 0;
		if (k < 0)
			return k;
		r->end_offset = end;
		r->state = ST_END;
		return 0;
	}

	memset(rec, 0, sizeof(*rec));
	rec->tag = r->p[0];
	rec->offset = r->offset;
	c = (struct cursor){ .p = r->p + 1, .end = r->end };
	switch (rec->tag) {
	case LK_REC_ALLOC:
		k = decode_alloc(r, &c, rec, &dt, false);
		break;
	case LK_REC_FREE:
		k = decode_free(r, &c, rec, &dt, false, false);
		break;
	case LK_REC_FREE_STACK:
		if (!r->free_stacks)
			return newer_tag(r, rec->tag, 7);
		k = decode_free(r, &c, rec, &dt, false, true);
		break;
	case LK_REC_STACK:
		k = decode_stack(r, &c, rec);
		break;
	case LK_REC_MODULE:
		k = decode_module(r, &c, rec, &dt);
		break;
	case LK_REC_UNLOAD:
		k = decode_unload(r, &c, rec, &dt);
		break;
	case LK_REC_RSS:
		dt = get(&c);
		rec->rss.bytes = get(&c);
		k = check(r, &c, "RSS");
		break;
	case LK_REC_LOSS:
	case LK_REC_TRAILER:
		k = decode_counters(r, &c, rec, &dt);
		break;
	case LK_REC_INHERIT:
		k = decode_inherit(r, &c, rec);
		break;
	case LK_REC_THREAD:
		k = decode_thread(r, &c, rec);
		break;
	case LK_REC_ALLOC_FIXED:
	case LK_REC_FREE_FIXED:
		if (!r->fixed)
			return newer_tag(r, rec->tag, 5);
		k = rec->tag == LK_REC_ALLOC_FIXED ? decode_alloc(r, &c, rec, &dt, true)
						   : decode_free(r, &c, rec, &dt, true, false);
		break;
	case LK_REC_SEGMENT:
		if (!r->segments)
			return newer_tag(r, rec->tag, 6);
		k = decode_segment(r, &c, rec, &dt);
		if (k <= 0) /* 0: following, the body not complete; ST_END: lk_reader_cut() */
			return r->state == ST_END ? 0 : k;
		r->blocks += rec->segment.blocks;
		r->end_offset = r->offset; /* after the body: consumed with it */
		r->time_ns += dt;
		rec->time_ns = r->time_ns;
		return 1;
	case LK_REC_CTL:
		if (!r->ctl)
			return newer_tag(r, rec->tag, 7);
		k = decode_ctl(r, &c, rec, &dt);
		break;
	case LK_REC_ERROR:
		if (!r->errors)
			return newer_tag(r, rec->tag, 8);
		k = decode_error(r, &c, rec, &dt);
		break;
	case LK_REC_SEG_END:
		if (!r->segments)
			return newer_tag(r, rec->tag, 6);
		return lk_reader_fail_at(r, r->offset, "SEG_END record outside a thread segment's "
					 "body");
	default:
		if (rec->tag < LK_REC_EXT_FIRST)
			return lk_reader_fail_at(r, r->offset, "unknown record tag 0x%02x",
						 rec->tag);
		k = skip_ext(r, &c, rec);
		if (k < 0)
			return r->state == ST_END ? 0 : k; /* ST_END: lk_reader_cut() */
		r->end_offset = r->offset;
		rec->time_ns = r->time_ns;
		return 1;
	}
	if (k < 0)
		return r->state == ST_END ? 0 : k; /* ST_END: a cut compressed stream (lk_reader_cut()) */

	lk_reader_consume(r, (size_t)(c.p - r->p));
	r->end_offset = r->offset;
	r->time_ns += dt;
	rec->time_ns = r->time_ns;
	if (rec->tag == LK_REC_TRAILER) {
		r->trailer = true;
		r->state = ST_AFTER_TRAILER;
	}
	return 1;
}

/* lk_reader_next() but for a run of a body's records. noinline: the run's records then cost only
 * a test and a jump before lk_merge_run(), not this function's frame. */
static __attribute__((noinline)) int next_record(struct lk_reader *r, struct lk_record *rec)
{
	int k;

	if (!lk_merge_idle(&r->merge))
		return lk_merge_next(r, rec);
	if (r->state == ST_RECORDS && fast_record(r, rec)) { /* most records, without a call */
		rec->time_ns = lk_merge_time(&r->merge, rec->time_ns);
		return 1;
	}
	k = lk_reader_main(r, rec);
	if (k <= 0)
		return k;
	if (rec->tag == LK_REC_SEGMENT) { /* a body to merge from here on */
		r->merge.pend = *rec;
		r->merge.has_pend = true;
		return lk_merge_next(r, rec);
	}
	rec->time_ns = lk_merge_time(&r->merge, rec->time_ns);
	return 1;
}

int lk_reader_next(struct lk_reader *r, struct lk_record *rec)
{
	if (r->chain)
		return lk_chain_next(r, rec);
	if (r->merge.run) /* most records of a profile of threads (read-merge.c) */
		return lk_merge_run(r, rec);
	return next_record(r, rec);
}

int lk_reader_next_many(struct lk_reader *r, struct lk_record *rec, unsigned n)
{
	unsigned i = 0;

	if (r->chain)
		return lk_chain_next_many(r, rec, n);

	while (i < n) {
		int k;
		if (r->merge.run) {
			i += (unsigned)lk_merge_run_many(r, rec + i, n - i);
			if (i == n)
				break;
		}
		/* next_record()'s fast path, without its call and frame: most records of a profile
		 * with no thread segment to merge (callgrind: 30 instructions a record fewer). */
		if (!r->merge.run && lk_merge_idle(&r->merge) && r->state == ST_RECORDS &&
		    fast_record(r, &rec[i])) {
			rec[i].time_ns = lk_merge_time(&r->merge, rec[i].time_ns);
			i++;
			continue;
		}
		k = lk_reader_next(r, &rec[i]);
		if (k <= 0)
			return i ? (int)i : k; /* a failure: the next call's too (ST_FAILED) */
		switch (rec[i++].tag) {
		case LK_REC_STACK:
		case LK_REC_MODULE:
		case LK_REC_LOSS:
		case LK_REC_TRAILER:
			return (int)i; /* its pointers: until the next call */
		default:
			break;
		}
	}
	return (int)i;
}

int lk_reader_skip(struct lk_reader *r, uint64_t *time_ns)
{
	struct lk_record rec;
	unsigned end[3], n = 0;
	int k;

	if (!r->chain && r->state == ST_RECORDS && r->thread &&
	    lk_reader_avail(r) >= LK_READ_RECORD_MAX &&
	    lk_merge_idle(&r->merge)) {
		uint64_t size, stack, dt = 0; /* the fixed records' */
		if (r->p[0] == LK_REC_ALLOC)
			n = take_alloc(r, end);
		else if (r->p[0] == LK_REC_FREE)
			n = take_free(r, end);
		if (n)
			dt = field(r->p + 1, end, 0);
		else if (r->p[0] == LK_REC_ALLOC_FIXED)
			n = take_alloc_fixed(r, &size, &stack);
		else if (r->p[0] == LK_REC_FREE_FIXED)
			n = take_free_fixed(r);
		if (n) {
			fast_done(r, dt, n);
			*time_ns = lk_merge_time(&r->merge, r->time_ns);
			return 1;
		}
	}
	k = lk_reader_next(r, &rec);
	if (k > 0)
		*time_ns = rec.time_ns;
	return k;
}
