/* writer-control.c: `leek ctl`'s commands, read from the control block at the end of the profile's
 * header, and the CTL records of what they did.
 *
 * `leek ctl PID on|off|mark NAME` stores a command in the block (include/leek/format.h, struct
 * lk_ctl_block) and waits for its ack. SYNC, which `leek watch` and `leek top` send to bound how
 * far behind they read (docs/design.md, "Watching a running process"), writes no record: it ends
 * every thread's open body and replies with the offset up to which the file is whole. libleek looks at the block with each RSS record, every
 * LEEK_RSS_INTERVAL_MS (100 ms) at most: at a sample, or at a dormant thread's look
 * (sampler.c). So the channel needs no thread of leek's, no signal, no descriptor held between
 * looks, and costs nothing between two RSS records; a look is an open by path, a pread of 64
 * bytes and a close (a pwrite more when a command came), about 40 system calls a second in a
 * process that allocates steadily, none in one that does not (docs/design.md, "On and off").
 *
 * Never: trust the block (another process writes it, at any time: a name is checked byte by byte
 * and copied once), write to the file anything but the ack word, SYNC's reply and CTL records, or
 * look at it outside lk_lock.
 */
#include <endian.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "record.h"
#include "writer.h"

/* The length of a mark's name if it is one (1 to LK_CTL_NAME_MAX bytes 0x21..0x7e, then NULs
 * only), else 0. */
static size_t name_len(const char *name)
{
	size_t n = 0;

	while (n < LK_CTL_NAME_MAX && name[n] > 0x20 && name[n] < 0x7f)
		n++;
	for (size_t i = n; i < LK_CTL_NAME_MAX; i++)
		if (name[i])
			return 0;
	return n;
}

static void put_ctl(uint64_t now_ns, unsigned kind, const char *name, size_t len)
{
	uint8_t rec[LK_CTL_MAX];

	lk_writer_put(rec, lk_rec_ctl(rec, lk_writer_dt(now_ns), kind, name, len));
}

/* Carries out the command in c: a CTL record for what it changed. */
static void carry_out(const struct lk_ctl_block *c, uint64_t now_ns)
{
	uint32_t cmd = le32toh(c->cmd);
	size_t len;

	switch (cmd) {
	case LK_CTL_ON:
	case LK_CTL_OFF:
		if (lk_sampler_switch(cmd == LK_CTL_ON))
			put_ctl(now_ns, cmd, NULL, 0);
		return;
	case LK_CTL_MARK:
		if ((len = name_len(c->name)) > 0) {
			put_ctl(now_ns, LK_CTL_MARK, c->name, len);
			return;
		}
		break;
	}
	lk_counters[LK_CNT_CTL_DROPPED]++;
}

void lk_ctl_poll(uint64_t now_ns)
{
	struct lk_ctl_block c;

	if (writer.state != W_OPEN || !writer.ctl_off)
		return;
	int fd = lk_window_fd();
	if (fd < 0)
		return;
	if (pread(fd, &c, sizeof(c), writer.ctl_off) == (ssize_t)sizeof(c) &&
	    !memcmp(c.magic, LK_CTL_MAGIC, 4) && le32toh(c.seq) != writer.ctl_seen) {
		uint32_t ack = c.seq; /* little-endian as it is */
		writer.ctl_seen = le32toh(c.seq);
		if (le32toh(c.cmd) == LK_CTL_SYNC) {
			/* Every record before writer.off is stored (under lk_lock), before this
			 * pwrite, and the bodies ended, before the ack that tells of the reply. */
			uint64_t synced = htole64(writer.off);
			lk_seg_sync();
			(void)!pwrite(fd, &synced, sizeof(synced),
				      (off_t)(writer.ctl_off + offsetof(struct lk_ctl_block, synced)));
		} else {
			carry_out(&c, now_ns);
		}
		(void)!pwrite(fd, &ack, sizeof(ack),
			      (off_t)(writer.ctl_off + offsetof(struct lk_ctl_block, ack)));
	}
	lk_window_fd_put(fd);
}

void lk_ctl_file_begun(uint64_t now_ns)
{
	if (!lk_sampler_is_on())
		put_ctl(now_ns, LK_CTL_OFF, NULL, 0);
}
