/* writer-rotate.c: bounded profiles, by rotation (LEEK_MAX_SIZE, LEEK_MAX_AGE, LEEK_KEEP).
 *
 * A process's first file is segment 0, NAME. When it reaches LEEK_MAX_SIZE, or LEEK_MAX_AGE
 * after its start, the next RSS record's moment (a sample's slow path, or a dormant thread's
 * look: never the hot path) begins segment 1, NAME.seg1, then NAME.seg2, ...: a new file begun as
 * a forked child's is (writer-open.c), with a header that says which segment it is (the rotation
 * block, format.h), every module, every stack its records name (written as they are named, as in
 * any file) and an INHERIT for every live sampled block. The newest segment alone therefore gives
 * the live view; the older ones hold what was allocated and freed before it. Once segment N is
 * named, segment N - LEEK_KEEP is unlinked, if it is still the file this process wrote (its
 * device and inode), so at most LEEK_KEEP segments are on disk.
 *
 * Crash safety: the new segment is created unnamed (O_TMPFILE) and named only once its header and
 * checkpoint are stored, so a kill at any moment leaves the old segment whole up to its last
 * record and either no new one or a new one with its whole checkpoint. The old segment is cut to
 * its last record once the new one is named: it then ends at the end of the file, as a crashed
 * profile does, and takes no more than its records.
 *
 * Failure (no descriptor, a full disk, a directory made read-only): the old segment goes on as if
 * nothing had been tried, the failure is counted (rotate_failed) and said in one line, once a
 * process, and the next try is a second later. Only a failure to name the new file, once its
 * checkpoint is in (the directory entry: a disk full to the last block), stops the profile, as a
 * disk full stops it anywhere else: its stacks are numbered anew by then.
 *
 * Never: rotate outside lk_lock, in the hot path or at exit; unlink a file that is not the one
 * this process wrote; leave a named segment without its header and checkpoint; print more than
 * one line.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "options.h"
#include "preload.h"
#include "writer.h"

#define RETRY_NS 1000000000ull /* after a failure: a try a second, not one an RSS record */

/* The segments on disk: segment s is kept[s % LEEK_KEEP], its name base + ".seg<s>" (base alone
 * for segment 0) and its .N suffix if the name was taken. */
struct kept {
	dev_t dev;
	ino_t ino;
	uint16_t suffix;
	bool used;
};

static struct {
	char base[LK_MAX_PATH]; /* segment 0's name */
	size_t base_len;
	uint64_t retry_ns;      /* no try before */
	bool said;              /* the failure's line, once */
	struct kept kept[LK_ROTATE_KEEP_MAX];
} rot;

static char old_path[LK_MAX_PATH]; /* under lk_lock */
static struct writer saved;        /* the writer of the old segment, while the new one begins */

/* Segment s's name into buf (LK_MAX_PATH bytes); its length, or 0 if it does not fit. */
static size_t segment_path(char *buf, uint32_t s, unsigned suffix)
{
	char num[LK_U64_CHARS];
	size_t n = rot.base_len;

	if (n + 2 * LK_U64_CHARS + 8 >= LK_MAX_PATH)
		return 0;
	memcpy(buf, rot.base, n);
	if (s) {
		const char *d = lk_fmt_u64(num, s);
		memcpy(buf + n, ".seg", 4);
		memcpy(buf + n + 4, d, strlen(d));
		n += 4 + strlen(d);
	}
	if (suffix) {
		const char *d = lk_fmt_u64(num, suffix);
		buf[n++] = '.';
		memcpy(buf + n, d, strlen(d));
		n += strlen(d);
	}
	buf[n] = 0;
	return n;
}

void lk_rotate_file_opened(void)
{
	size_t n = strlen(writer.path);

	memset(rot.kept, 0, sizeof(rot.kept));
	rot.retry_ns = 0;
	memcpy(rot.base, writer.path, n + 1);
	rot.base_len = n;
	rot.kept[0] = (struct kept){ .dev = writer.dev, .ino = writer.ino, .used = true };
}

/* Unlinks segment s if it is still the file this process wrote. */
static void forget(uint32_t s)
{
	struct kept *k = &rot.kept[s % lk_cfg.keep];
	char path[LK_MAX_PATH];
	struct stat st;

	if (!k->used)
		return;
	k->used = false;
	if (segment_path(path, s, k->suffix) && lstat(path, &st) == 0 && st.st_dev == k->dev &&
	    st.st_ino == k->ino)
		unlink(path);
}

/* The old segment after the new one is named: cut to its last record (it was grown ahead of
 * its records, by up to a step). */
static void finish_old(void)
{
	if (saved.use_pwrite)
		return;
	int fd = open(old_path, O_RDWR | O_CLOEXEC);
	struct stat st;

	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && st.st_dev == saved.dev && st.st_ino == saved.ino &&
	    (uint64_t)st.st_size > saved.off)
		(void)!ftruncate(fd, (off_t)saved.off);
	close(fd);
}

/* The one line of a failed rotation, and its count. */
static void failed(int r, uint64_t now_ns)
{
	struct lk_line l = LK_LINE_INIT;

	lk_counters[LK_CNT_ROTATE_FAILED]++;
	rot.retry_ns = now_ns + RETRY_NS;
	if (rot.said)
		return;
	rot.said = true;
	lk_line_str(&l, "cannot begin a new profile segment after ");
	lk_line_path(&l, old_path);
	lk_line_str(&l, " (");
	lk_line_str(&l, strerrordesc_np(-r) ?: "error");
	lk_line_str(&l, "); the profile goes on in it, and rotation is tried again each second");
	lk_line_print(&l);
}

/* Writer state that is the old segment's and must be back if the new one cannot begin. */
static void restore(void)
{
	writer = saved;
	writer.fd = -1;
	writer.win = NULL;
	lk_window_set_room();
}

static bool due(uint64_t now_ns)
{
	if (writer.state != W_OPEN || writer.closing || !rot.base_len || now_ns < rot.retry_ns ||
	    !lk_writer_owned())
		return false;
	return lk_rotate_size_due() ||
	       (lk_cfg.max_age_ns && now_ns - writer.start_ns >= lk_cfg.max_age_ns);
}

void lk_rotate_maybe(uint64_t now_ns)
{
	char path[LK_MAX_PATH];

	if (lk_likely(!lk_cfg.max_size && !lk_cfg.max_age_ns) || !due(now_ns))
		return;
	int saved_errno = errno;
	uint32_t s = writer.segment + 1;
	size_t len = segment_path(path, s, 0);
	memcpy(old_path, writer.path, strlen(writer.path) + 1);
	if (!len) {
		failed(-ENAMETOOLONG, now_ns);
		goto out;
	}
	/* Unnamed until its checkpoint is in (the header comment); a file system without O_TMPFILE
	 * does not rotate: a named segment without its checkpoint would read as a wrong live view. */
	int fd = lk_writer_open_unnamed(path);
	if (fd < 0) {
		failed(errno == EOPNOTSUPP || errno == EISDIR ? -EOPNOTSUPP : -errno, now_ns);
		goto out;
	}
	/* The old segment's window and the threads' bodies in it go first: nothing is stored there
	 * from now on, and a thread's next record begins a body in the new segment. */
	lk_window_unmap();
	lk_seg_abandon_all();
	saved = writer;
	memcpy(writer.path, path, len + 1);
	writer.segment = s;
	int r = lk_writer_start(fd, LK_HDR_ROTATED);
	if (r < 0) {
		lk_window_unmap();
		close(writer.fd);
		restore();
		failed(r, now_ns);
		goto out;
	}
	/* The threads' bodies start small again: a body of 1 MiB would fill a small segment. */
	for (uint32_t i = 0; i < LK_TRECS; i++)
		lk_trecs[i].next_len = 0;
	uint64_t cut = lk_counters[LK_CNT_FILE_CUT];
	memset(lk_counters, 0, sizeof(lk_counters)); /* a new file: its own counts */
	lk_trecs_new_file();
	lk_counters[LK_CNT_FILE_CUT] = cut;
	lk_writer_checkpoint(true);
	r = writer.state == W_OPEN ? lk_writer_name(writer.fd, len) : -ENOSPC;
	if (!writer.use_pwrite || r < 0) {
		close(writer.fd);
		writer.fd = -1;
	}
	if (r < 0) {
		/* Its stacks are numbered anew: the old segment cannot take records any more. */
		lk_writer_die();
		failed(r, now_ns);
		goto out;
	}
	finish_old();
	struct kept k = { .dev = writer.dev, .ino = writer.ino, .used = true };
	if (strlen(writer.path) > len) /* a .N suffix: the name was taken */
		for (const char *d = writer.path + len + 1; *d >= '0' && *d <= '9'; d++)
			k.suffix = (uint16_t)(k.suffix * 10 + (*d - '0'));
	if (s >= lk_cfg.keep)
		forget(s - (uint32_t)lk_cfg.keep);
	rot.kept[s % lk_cfg.keep] = k;
out:
	errno = saved_errno;
}
