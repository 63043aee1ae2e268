/* read.c: the validated, streaming profile reader (read.h, include/leek/format.h).
 *
 * Input is untrusted and may be cut anywhere: every varint is bounds-checked, every count is
 * checked against the format's limits before it is used, and every record is decoded from a
 * window that holds at least LK_READ_RECORD_MAX bytes or the rest of the file. It must never
 * print, crash, loop without consuming input, or allocate in proportion to a number read from
 * the file. The fuzzer (tests/fuzz) and tests/unit/test-format.c hold it to that.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "read-z.h"
#include "read-internal.h"

_Static_assert(LK_ALLOC_MAX <= LK_READ_RECORD_MAX && LK_STACK_MAX <= LK_READ_RECORD_MAX &&
		       LK_MODULE_MAX <= LK_READ_RECORD_MAX &&
		       1 + (3 + 2 * LK_READ_MAX_COUNTERS) * LK_VARINT_MAX <= LK_READ_RECORD_MAX,
	       "every known record fits the decoding window");
_Static_assert(LK_READ_RECORD_MAX <= LK_READ_BUF, "window");

static const char *const tag_names[LK_REC_MAX_KNOWN + 1] = {
	[LK_REC_ALLOC] = "ALLOC",
	[LK_REC_FREE] = "FREE",
	[LK_REC_STACK] = "STACK",
	[LK_REC_MODULE] = "MODULE",
	[LK_REC_UNLOAD] = "UNLOAD",
	[LK_REC_RSS] = "RSS",
	[LK_REC_LOSS] = "LOSS",
	[LK_REC_INHERIT] = "INHERIT",
	[LK_REC_TRAILER] = "TRAILER",
	[LK_REC_THREAD] = "THREAD",
	[LK_REC_ALLOC_FIXED] = "ALLOC_FIXED",
	[LK_REC_FREE_FIXED] = "FREE_FIXED",
	[LK_REC_SEGMENT] = "SEGMENT",
	[LK_REC_SEG_END] = "SEG_END",
	[LK_REC_FREE_STACK] = "FREE_STACK",
	[LK_REC_CTL] = "CTL",
	[LK_REC_ERROR] = "ERROR",
};

static const char *const counter_names[LK_CNT_MAX + 1] = {
	[LK_CNT_ARENA_FULL] = "arena_full",
	[LK_CNT_UNWIND_FAILED] = "unwind_failed",
	[LK_CNT_STACK_TRUNCATED] = "stack_truncated",
	[LK_CNT_INTERN_FULL] = "intern_full",
	[LK_CNT_RECORDS_DROPPED] = "records_dropped",
	[LK_CNT_BAD_FREE] = "bad_free",
	[LK_CNT_MODULES_DROPPED] = "modules_dropped",
	[LK_CNT_DEFERRED_FREES] = "deferred_frees",
	[LK_CNT_SAMPLES] = "samples",
	[LK_CNT_FREES] = "frees",
	[LK_CNT_FILE_LIMIT] = "file_limit",
	[LK_CNT_FILE_CUT] = "file_cut",
	[LK_CNT_CTL_DROPPED] = "ctl_dropped",
	[LK_CNT_ROTATE_FAILED] = "rotate_failed",
};

const char *lk_rec_tag_name(unsigned tag)
{
	if (tag >= LK_REC_EXT_FIRST && tag <= 0xff)
		return "EXT";
	return tag <= LK_REC_MAX_KNOWN ? tag_names[tag] : NULL;
}

/* Stable names: the JSON of `leek report errors` (docs/json.md) and `leek dump` print them. */
static const char *const error_kind_names[LK_ERR_MAX + 1] = {
	[LK_ERR_OVERFLOW] = "overflow",
	[LK_ERR_UNDERFLOW] = "underflow",
	[LK_ERR_UAF_READ] = "use-after-free-read",
	[LK_ERR_UAF_WRITE] = "use-after-free-write",
	[LK_ERR_UAF_ACCESS] = "use-after-free",
	[LK_ERR_DOUBLE_FREE] = "double-free",
	[LK_ERR_INVALID_FREE] = "invalid-free",
	[LK_ERR_REALLOC_FREED] = "realloc-of-freed",
};

const char *lk_error_kind_name(uint64_t kind)
{
	return kind >= 1 && kind <= LK_ERR_MAX ? error_kind_names[kind] : "unknown";
}

const char *lk_counter_name(uint64_t id)
{
	return id <= LK_CNT_MAX ? counter_names[id] : NULL;
}

struct lk_reader *lk_reader_new(void)
{
	struct lk_reader *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->fd = r->own_fd = -1;
	r->limit = UINT64_MAX;
	r->next_stack = 1;
	lk_u64map_init(&r->loaded, LK_READ_MAX_LOADED);
	lk_u64map_init(&r->merge.waiters, LK_READ_SEG_OPEN_MAX);
	return r;
}

struct lk_reader *lk_reader_free(struct lk_reader *r)
{
	if (!r)
		return NULL;
	if (r->own_fd >= 0)
		close(r->own_fd);
	lk_unz_free(r->unz);
	lk_u64map_done(&r->loaded);
	lk_merge_done(&r->merge);
	lk_chain_release(r->chain);
	free(r->buf);
	free(r->strings);
	free(r);
	return NULL;
}

int lk_reader_fail(struct lk_reader *r, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->error, sizeof(r->error), fmt, ap);
	va_end(ap);
	r->state = ST_FAILED;
	r->err = err;
	r->merge.run = NULL; /* the same error from every later call */
	return err;
}

/* A compressed stream's failure where the uncompressed profile reaches `at`. Offsets are the
 * uncompressed profile's: the only ones the rest of leek knows. */
static int fail_unz(struct lk_reader *r, int err, uint64_t at)
{
	if (err == -EBADMSG)
		return lk_reader_fail(r, err, "%s data corrupt after uncompressed offset %" PRIu64
				      ": %s", lk_codec_name(lk_unz_codec(r->unz)), at,
				      lk_unz_error(r->unz));
	if (err == -ENOMEM)
		return lk_reader_fail(r, err, "out of memory");
	return lk_reader_fail(r, err, "read failed after uncompressed offset %" PRIu64 ": %s", at,
			      strerror(-err));
}

int lk_reader_damaged(struct lk_reader *r)
{
	return fail_unz(r, r->unz_err, r->unz_err_at);
}

int lk_reader_drain(struct lk_reader *r)
{
	for (;;) {
		int k = lk_reader_fill(r, LK_READ_BUF);
		if (k < 0)
			return k;
		if (lk_reader_avail(r) == 0)
			return r->unz_err ? lk_reader_damaged(r) : 0;
		lk_reader_consume(r, lk_reader_avail(r));
	}
}

/* Makes at least `want` (<= LK_READ_BUF) bytes available, unless the input ends first. A
 * compressed profile is decompressed here, a window at a time; where its data turns out damaged,
 * the bytes before the damage are the input's end, and the error waits for the reader to reach
 * it (lk_reader_damaged), so that every record before it is read. */
int lk_reader_fill(struct lk_reader *r, size_t want)
{
	size_t n = lk_reader_avail(r);

	if (n >= want || r->eof)
		return 0;
	memmove(r->buf, r->p, n);
	r->p = r->buf;
	r->end = r->buf + n;
	while (n < want) {
		size_t room = LK_READ_BUF - n;
		if (r->limit != UINT64_MAX) { /* followed: nothing at or past the limit */
			uint64_t at = r->offset + n;
			if (at >= r->limit)
				break;
			if (r->limit - at < room)
				room = (size_t)(r->limit - at);
		}
		ssize_t k = r->unz ? lk_unz_read(r->unz, r->buf + n, room)
				   : read(r->fd, r->buf + n, room);
		if (k < 0 && r->unz && n == 0)
			return fail_unz(r, (int)k, r->offset);
		if (k < 0 && r->unz) {
			r->unz_err = (int)k;
			r->unz_err_at = r->offset + n;
			r->eof = true;
			break;
		}
		if (k < 0) {
			int err = errno;
			if (err == EINTR)
				continue;
			return lk_reader_fail(r, -err, "read failed at offset %" PRIu64 ": %s",
					      r->offset + n, strerror(err));
		}
		if (k == 0) {
			r->eof = true;
			break;
		}
		n += (size_t)k;
		r->end = r->buf + n;
	}
	return 0;
}

/* The fixed header, from little-endian bytes. */
static void decode_fixed(struct lk_file_header *h, const uint8_t *p)
{
	memcpy(h, p, sizeof(*h));
	h->version = le16toh(h->version);
	h->fixed_size = le16toh(h->fixed_size);
	h->header_size = le32toh(h->header_size);
	h->flags = le32toh(h->flags);
	h->pid = le32toh(h->pid);
	h->ppid = le32toh(h->ppid);
	h->clock = le32toh(h->clock);
	h->period = le64toh(h->period);
	h->start_realtime_ns = le64toh(h->start_realtime_ns);
	h->start_monotonic_ns = le64toh(h->start_monotonic_ns);
	h->session = le64toh(h->session);
	h->seed = le64toh(h->seed);
	h->page_size = le32toh(h->page_size);
	h->max_frames = le32toh(h->max_frames);
	h->exe_len = le32toh(h->exe_len);
	h->cmdline_len = le32toh(h->cmdline_len);
}

/* Field checks name the offset of the field at fault. */
static int check_fixed(struct lk_reader *r, const struct lk_file_header *h)
{
	uint64_t strings = (uint64_t)h->exe_len + h->cmdline_len;

	/* Versions 1 and 2 differ in ALLOC and FREE, most of a file: there is nothing to salvage.
	 * Version 3 differs only in how a FREE codes its block (freed_block). */
	if (h->version < LK_FORMAT_VERSION_MIN || h->version > LK_FORMAT_VERSION)
		return lk_reader_fail(r, -EPROTONOSUPPORT,
				      "offset 8: profile format version %u; this leek reads "
				      "versions %d to %d (%s)", h->version, LK_FORMAT_VERSION_MIN,
				      LK_FORMAT_VERSION,
				      h->version < LK_FORMAT_VERSION
					      ? "record it again with this leek"
					      : "a newer leek wrote it");
	r->free_by_age = h->version >= 4;
	r->fixed = h->version >= 5;
	r->segments = h->version >= 6;
	r->free_stacks = h->version >= 7;
	r->ctl = h->version >= 7;
	r->errors = h->version >= 8;
	if (h->fixed_size != LK_HEADER_FIXED_SIZE)
		return lk_reader_fail_at(r, 10, "header fixed size is %u, not %d", h->fixed_size,
					 LK_HEADER_FIXED_SIZE);
	if (h->exe_len > LK_MAX_PATH)
		return lk_reader_fail_at(r, 80, "exe path of %u bytes (at most %d)", h->exe_len,
					 LK_MAX_PATH);
	if (h->header_size > LK_READ_MAX_HEADER || h->header_size % 8 ||
	    h->header_size < LK_HEADER_FIXED_SIZE + strings)
		return lk_reader_fail_at(r, 12,
					 "header size %u does not hold its %" PRIu64
					 " bytes of strings (or is not a multiple of 8 up to %u)",
					 h->header_size, strings, LK_READ_MAX_HEADER);
	if (h->clock != LK_CLOCK_MONOTONIC)
		return lk_reader_fail_at(r, 28, "unknown clock %u", h->clock);
	if (h->period == 0)
		return lk_reader_fail_at(r, 32, "sampling period 0");
	if (h->max_frames > LK_MAX_FRAMES)
		return lk_reader_fail_at(r, 76, "max_frames %u (at most %d)", h->max_frames,
					 LK_MAX_FRAMES);
	return 0;
}

static int read_header(struct lk_reader *r)
{
	struct lk_file_header *h = &r->hdr.h;
	uint64_t strings, left, done = 0;
	size_t n;
	int k;

	k = lk_reader_fill(r, LK_HEADER_FIXED_SIZE);
	if (k < 0)
		return k;
	n = lk_reader_avail(r);
	if (n == 0 && r->unz)
		return lk_reader_fail(r, -EMEDIUMTYPE, "not a leek profile (%s data %s)",
				      lk_codec_name(lk_unz_codec(r->unz)),
				      lk_unz_cut(r->unz) ? "cut short before any data" : "empty");
	if (n == 0)
		return lk_reader_fail(r, -EMEDIUMTYPE, "not a leek profile (empty file)");
	if (memcmp(r->p, LK_FORMAT_MAGIC, n < 8 ? n : 8) != 0)
		return lk_reader_fail(r, -EMEDIUMTYPE, "not a leek profile (bad magic)");
	if (n < LK_HEADER_FIXED_SIZE && r->unz_err)
		return lk_reader_damaged(r);
	if (n < LK_HEADER_FIXED_SIZE)
		return lk_reader_fail_at(r, 0, "header cut by the end of the file after %zu of %d "
					 "bytes", n, LK_HEADER_FIXED_SIZE);
	decode_fixed(h, r->p);
	k = check_fixed(r, h);
	if (k < 0)
		return k;
	lk_reader_consume(r, LK_HEADER_FIXED_SIZE);

	/* The strings and the padding, copied out through the window: exe, NUL, cmdline, NUL. */
	strings = (uint64_t)h->exe_len + h->cmdline_len;
	r->strings = malloc(strings + 2);
	if (!r->strings)
		return lk_reader_fail(r, -ENOMEM, "out of memory");
	/* The rotation block, copied out as it goes by (format.h). */
	uint8_t rot[LK_ROT_SIZE];
	uint64_t rot_at = h->flags & LK_HDR_ROTATED && h->flags & LK_HDR_CTL &&
				  h->header_size >= LK_HEADER_FIXED_SIZE + strings + LK_CTL_SIZE +
							    LK_ROT_SIZE
			  ? h->header_size - LK_CTL_SIZE - LK_ROT_SIZE - LK_HEADER_FIXED_SIZE
			  : UINT64_MAX;
	uint64_t pos = 0; /* bytes of the header after the fixed part consumed */
	r->hdr.segment = 0;
	r->hdr.origin_ns = h->start_realtime_ns;
	for (left = h->header_size - LK_HEADER_FIXED_SIZE; left > 0; left -= n, pos += n) {
		k = lk_reader_fill(r, 1);
		if (k < 0)
			return k;
		n = lk_reader_avail(r) < left ? lk_reader_avail(r) : (size_t)left;
		if (n == 0 && r->unz_err)
			return lk_reader_damaged(r);
		if (n == 0)
			return lk_reader_fail_at(r, 0, "header cut by the end of the file at "
						 "offset %" PRIu64 " (header size %u)",
						 r->offset, h->header_size);
		if (done < strings) {
			size_t m = strings - done < n ? (size_t)(strings - done) : n;
			memcpy(r->strings + done, r->p, m);
			done += m;
		}
		for (size_t i = 0; i < n; i++)
			if (pos + i >= rot_at && pos + i < rot_at + LK_ROT_SIZE)
				rot[pos + i - rot_at] = r->p[i];
		lk_reader_consume(r, n);
	}
	if (rot_at != UINT64_MAX) {
		struct lk_rot_block b;
		memcpy(&b, rot, sizeof(b));
		if (memcmp(b.magic, LK_ROT_MAGIC, 4) || le32toh(b.segment) == 0)
			return lk_reader_fail_at(r, LK_HEADER_FIXED_SIZE + rot_at,
						 "a rotated segment's header without its rotation "
						 "block");
		r->hdr.segment = le32toh(b.segment);
		r->hdr.origin_ns = le64toh(b.origin_realtime_ns);
	}
	memmove(r->strings + h->exe_len + 1, r->strings + h->exe_len, h->cmdline_len);
	r->strings[h->exe_len] = 0;
	r->strings[strings + 1] = 0;
	r->hdr.exe = r->strings;
	r->hdr.cmdline = r->strings + h->exe_len + 1;
	r->end_offset = r->offset;
	r->state = ST_RECORDS;
	return 0;
}

int lk_reader_cut(struct lk_reader *r, uint64_t offset, const char *what_fmt, ...)
{
	char what[128];
	va_list ap;

	if (r->unz_err)
		return lk_reader_damaged(r);
	if (r->unz && lk_unz_cut(r->unz)) {
		r->end_offset = offset;
		r->state = ST_END;
		return -EBADMSG;
	}
	va_start(ap, what_fmt);
	vsnprintf(what, sizeof(what), what_fmt, ap);
	va_end(ap);
	return lk_reader_fail_at(r, offset, "%s cut by the end of the file", what);
}

int lk_reader_open_fd(struct lk_reader *r, int fd)
{
	enum lk_codec codec;
	int k;

	if (r->state != ST_NEW || r->buf || r->p)
		return -EBUSY;
	r->buf = malloc(LK_READ_BUF);
	if (!r->buf)
		return lk_reader_fail(r, -ENOMEM, "out of memory");
	r->fd = fd;
	r->p = r->end = r->buf;
	/* Compressed or not is told by the first bytes, whatever the file is called: the bytes
	 * read to tell become the decompressor's first input. */
	k = lk_reader_fill(r, LK_CODEC_MAGIC_MAX);
	if (k < 0)
		return k;
	codec = lk_codec_of(r->p, lk_reader_avail(r));
	if (codec != LK_CODEC_NONE) {
		if (r->limit != UINT64_MAX)
			return lk_reader_fail(r, -EINVAL,
					      "a compressed profile cannot be followed");
		r->unz = lk_unz_new(codec, fd, r->p, lk_reader_avail(r));
		if (!r->unz)
			return lk_reader_fail(r, -ENOMEM, "out of memory");
		r->p = r->end = r->buf;
		r->eof = false;
	}
	return read_header(r);
}

static int fail_errno(struct lk_reader *r, int err)
{
	return lk_reader_fail(r, err, "%s", strerror(-err));
}

int lk_reader_open(struct lk_reader *r, const char *path)
{
	struct stat st;
	int fd, k;

	if (r->state != ST_NEW || r->buf || r->p)
		return -EBUSY;
	/* O_NONBLOCK: opening a FIFO must not wait for a writer. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return fail_errno(r, -errno);
	r->own_fd = fd;
	if (fstat(fd, &st) < 0)
		return fail_errno(r, -errno);
	if (S_ISDIR(st.st_mode))
		return fail_errno(r, -EISDIR);
	k = fcntl(fd, F_GETFL);
	if (k < 0 || fcntl(fd, F_SETFL, k & ~O_NONBLOCK) < 0)
		return fail_errno(r, -errno);
	return lk_reader_open_fd(r, fd);
}

int lk_reader_open_memory(struct lk_reader *r, const void *data, size_t size)
{
	static const uint8_t nothing;
	enum lk_codec codec;

	if (r->state != ST_NEW || r->buf || r->p)
		return -EBUSY;
	codec = data ? lk_codec_of(data, size) : LK_CODEC_NONE;
	if (codec != LK_CODEC_NONE) { /* decompressed into a window, as from a file */
		r->buf = malloc(LK_READ_BUF);
		r->unz = lk_unz_new(codec, -1, data, size);
		if (!r->buf || !r->unz)
			return lk_reader_fail(r, -ENOMEM, "out of memory");
		r->p = r->end = r->buf;
		return read_header(r);
	}
	r->p = data ? data : &nothing;
	r->end = r->p + (data ? size : 0);
	r->eof = true;
	return read_header(r);
}

const struct lk_profile_header *lk_reader_header(const struct lk_reader *r)
{
	return r->hdr.exe ? &r->hdr : NULL; /* set once the whole header is read */
}

int lk_reader_follow(struct lk_reader *r, uint64_t limit)
{
	if (r->unz || (r->state != ST_NEW && r->fd < 0) || r->state == ST_FAILED)
		return -EINVAL;
	if (limit < r->limit && r->limit != UINT64_MAX)
		limit = r->limit; /* bytes below the old limit may be in the window already */
	r->limit = limit;
	r->followed = true; /* bodies from the file from now on: the window's may be stale */
	return 0;
}

void lk_reader_follow_whole(struct lk_reader *r, uint64_t whole)
{
	if (whole > r->limit)
		whole = r->limit;
	if (whole > r->whole)
		r->whole = whole;
}

const char *lk_reader_error(const struct lk_reader *r)
{
	return r->error;
}

bool lk_reader_has_trailer(const struct lk_reader *r)
{
	return r->trailer;
}

uint64_t lk_reader_end_offset(const struct lk_reader *r)
{
	return r->end_offset;
}

