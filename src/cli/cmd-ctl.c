/* cmd-ctl.c: `leek ctl PID|FILE on|off|mark NAME|sync`: switches a running process's profiling on
 * or off, marks a moment in its profile, or asks how far its file is whole, without a restart.
 *
 * The command goes through the control block at the end of the profile's header (ctl.c): libleek
 * reads it at its next look (with an RSS record: src/preload/writer-control.c), carries it out
 * with a CTL record in the profile (none for sync), and acknowledges it. This waits for the ack,
 * up to --timeout, and says how long it took.
 *
 * Never: print more than one line on success; send a command it has not checked (a mark's name).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "ctl.h"
#include "leek/format.h"
#include "report.h"
#include "util.h"

enum { CTL_EXIT_PENDING = 3 }; /* written, not carried out within --timeout */

#define ACK_POLL_US 2000 /* how often the ack is looked for */

static const char *arg_timeout = "5s";

/* Posts cmd and waits up to timeout_ns for its ack: 0 and *took_ns (and SYNC's reply in
 * *synced), -ETIMEDOUT (written, not carried out yet), or another negative errno. */
static int send_cmd(struct lk_ctl *c, uint32_t cmd, const char *name, uint64_t timeout_ns,
		    uint64_t *took_ns, uint64_t *synced)
{
	bool replaced = false;
	int r = lk_ctl_post(c, cmd, name, timeout_ns, true, &replaced);

	if (r < 0)
		return r;
	if (replaced)
		lk_msg("ctl: a command sent before was not carried out yet; this one replaces it");
	for (;;) {
		r = lk_ctl_check(c, cmd == LK_CTL_SYNC ? synced : NULL);
		if (r > 0) {
			*took_ns = lk_monotonic_ns() - c->posted_ns;
			return 0;
		}
		if (r < 0)
			return r;
		if (lk_monotonic_ns() - c->posted_ns >= timeout_ns)
			return -ETIMEDOUT;
		usleep(ACK_POLL_US);
	}
}

int lk_cmd_ctl(int argc, char *argv[])
{
	static const struct option options[] = {
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	const char *target, *what, *name = NULL, *path, *why = NULL;
	uint64_t timeout_ns, took = 0, synced = 0;
	struct lk_ctl ctl;
	uint32_t cmd, pid = 0;
	char *end, pidname[64];
	int c, k;

	optind = 0;
	while ((c = getopt_long(argc, argv, "t:h", options, NULL)) >= 0) {
		switch (c) {
		case 't':
			arg_timeout = optarg;
			break;
		case 'h':
			return lk_cmd_usage(stdout, "ctl", LK_EXIT_OK);
		default:
			return lk_cmd_usage(stderr, "ctl", LK_EXIT_USAGE);
		}
	}
	if (argc - optind < 2)
		return lk_cmd_usage(stderr, "ctl", LK_EXIT_USAGE);
	target = argv[optind];
	what = argv[optind + 1];
	if (!strcmp(what, "on") || !strcmp(what, "off")) {
		cmd = what[1] == 'n' ? LK_CTL_ON : LK_CTL_OFF;
		if (argc - optind != 2)
			return lk_cmd_usage(stderr, "ctl", LK_EXIT_USAGE);
	} else if (!strcmp(what, "mark")) {
		cmd = LK_CTL_MARK;
		if (argc - optind != 3)
			return lk_cmd_usage(stderr, "ctl", LK_EXIT_USAGE);
		name = argv[optind + 2];
		if (!lk_mark_name_ok(name)) {
			lk_msg("ctl: mark '%s': a name is 1 to %d printable bytes, without spaces",
			       name, LK_CTL_NAME_MAX);
			return LK_EXIT_USAGE;
		}
	} else if (!strcmp(what, "sync")) {
		cmd = LK_CTL_SYNC;
		if (argc - optind != 2)
			return lk_cmd_usage(stderr, "ctl", LK_EXIT_USAGE);
	} else {
		lk_msg("ctl: '%s' is not on, off, mark or sync", what);
		return LK_EXIT_USAGE;
	}
	if (lk_duration_arg("ctl", "--timeout", arg_timeout, 0, &timeout_ns))
		return LK_EXIT_USAGE;

	/* A number is a pid unless a file of that name is there. */
	errno = 0;
	unsigned long v = strtoul(target, &end, 10);
	path = target;
	if (*target && !*end && !errno && v > 0 && v <= UINT32_MAX && access(target, F_OK) != 0) {
		pid = (uint32_t)v;
		snprintf(pidname, sizeof(pidname), "process %" PRIu32 "'s profile", pid);
		path = pidname;
	}
	k = lk_ctl_open(&ctl, pid, pid ? NULL : target, &why);
	if (k == -ENOENT && pid) {
		lk_msg("ctl: process %" PRIu32 " holds no leek profile that takes commands (is it "
		       "running, under libleek.so of format version 7 or later, and yours?)", pid);
		return LK_EXIT_FILE;
	}
	if (k == -EINVAL && why)
		return lk_msg("ctl: %s: %s", path, why), LK_EXIT_FILE;
	if (k < 0)
		return lk_error(k, "ctl: %s", path), LK_EXIT_FILE;
	k = send_cmd(&ctl, cmd, name, timeout_ns, &took, &synced);
	lk_ctl_close(&ctl);
	if (k == -EAGAIN) {
		lk_msg("ctl: %s: another `leek ctl` held it for all of %s: nothing was sent", path,
		       arg_timeout);
		return LK_EXIT_FILE;
	}
	if (k == -ETIMEDOUT) {
		lk_msg("ctl: %s: %s %s not carried out within %s: process %" PRIu32 " looks for a "
		       "command when it allocates (with an RSS record, every LEEK_RSS_INTERVAL_MS); "
		       "it stays in place and is carried out at its next look", path, what,
		       name ? name : "", arg_timeout, ctl.pid);
		return CTL_EXIT_PENDING;
	}
	if (k == -ECANCELED) {
		lk_msg("ctl: %s: another `leek ctl` replaced the command before it was carried out",
		       path);
		return CTL_EXIT_PENDING;
	}
	if (k == -EBADMSG) {
		lk_msg("ctl: %s: its control block (offset %jd) is damaged or cut off", path,
		       (intmax_t)ctl.at);
		return LK_EXIT_FILE;
	}
	if (k < 0)
		return lk_error(k, "ctl: %s", path), LK_EXIT_FILE;
	printf("%" PRIu32 ": %s%s%s, carried out in %.3f s", ctl.pid, what, name ? " " : "",
	       name ? name : "", (double)took / 1e9);
	if (cmd == LK_CTL_SYNC)
		printf(": the file is whole up to offset %" PRIu64, synced);
	printf("\n");
	return LK_EXIT_OK;
}
