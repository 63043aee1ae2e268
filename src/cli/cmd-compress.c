/* cmd-compress.c: `leek compress FILE...`: zstd-compresses profiles written earlier (compress.c).
 *
 * What `leek run` does at the end of a run, for the profiles of a run with --no-compress, of a
 * program started under LD_PRELOAD without the launcher, or of a daemon that outlived its run.
 * Each file is done or refused on its own: one bad file never stops the others.
 */
#include <errno.h>
#include <getopt.h>
#include <string.h>

#include "commands.h"
#include "compress.h"
#include "util.h"

static int compress_one(const char *path)
{
	_cleanup_(freep) char *msg = NULL;
	struct lk_compressed c;
	char a[32], b[32];
	int k = lk_compress_profile(path, LK_COMPRESS_LEVEL, 0, &c, &msg);

	if (k == -EBUSY)
		lk_msg("%s: %s; compress it once that process has ended", path, msg);
	else if (k < 0 && msg)
		lk_msg("%s: %s", path, msg);
	else if (k < 0)
		lk_error(k, "cannot compress %s", path);
	if (k < 0)
		return k;
	/* The names as the messages show them: escaped (util.h). */
	lk_print_escaped(stdout, path, strlen(path));
	fputs(" -> ", stdout);
	lk_print_escaped(stdout, c.path, strlen(c.path));
	printf(" (%s -> %s)\n", lk_format_bytes(a, sizeof(a), (double)c.raw_bytes),
	       lk_format_bytes(b, sizeof(b), (double)c.packed_bytes));
	free(c.path);
	return 0;
}

int lk_cmd_compress(int argc, char *argv[])
{
	static const struct option options[] = {
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	int c, status = LK_EXIT_OK;

	optind = 0;
	while ((c = getopt_long(argc, argv, "+h", options, NULL)) >= 0) {
		switch (c) {
		case 'h':
			return lk_cmd_usage(stdout, "compress", LK_EXIT_OK);
		default:
			return lk_cmd_usage(stderr, "compress", LK_EXIT_USAGE);
		}
	}
	if (lk_cmd_need_operands(argc, "compress", "profile"))
		return LK_EXIT_USAGE;
	for (int i = optind; i < argc; i++)
		if (compress_one(argv[i]) < 0)
			status = LK_EXIT_FILE;
	return lk_cmd_end_output("compress", "output", status);
}
