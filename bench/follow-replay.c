/* follow-replay.c: the summary's one pass alone, for callgrind: a finished profile read through
 * lk_profile_follow_open() and lk_profile_follow_finish() with `leek run`'s summary options, as
 * `leek run`'s follower and its summary read it (src/cli/run.h), and nothing else: no symbols,
 * no report, no compression. Prints the number of stacks, so that two builds can be seen to read
 * the same.
 *
 * Built by hand against a build's libraries:
 *   cc -O2 -g -Isrc/cli -Isrc/cli/profile -Isrc/cli/read -Isrc/cli/base -Isrc/common -Iinclude \
 *     -Ibuild -o /tmp/follow-replay bench/follow-replay.c build/src/cli/profile/libprofile.a \
 *     build/src/cli/read/libread.a build/src/cli/base/libbase.a -lzstd -lz -lm
 *   valgrind --tool=callgrind --callgrind-out-file=/dev/null /tmp/follow-replay FILE
 */
#include <stdint.h>
#include <stdio.h>

#include "profile.h"

int main(int argc, char *argv[])
{
	const struct lk_profile_opts o = { .at_ns = UINT64_MAX, .no_live_list = true,
					   .segment_only = true };
	struct lk_profile_follow *f;
	const struct lk_stack_stats *st;
	struct lk_profile *p;
	char *err = NULL;

	if (argc != 2) {
		fprintf(stderr, "usage: follow-replay FILE\n");
		return 2;
	}
	if (lk_profile_follow_open(argv[1], UINT64_MAX, &o, &f, &err) < 0 ||
	    lk_profile_follow_finish(f, &p, &err) < 0) {
		fprintf(stderr, "follow-replay: %s: %s\n", argv[1], err ? err : "out of memory");
		return 1;
	}
	printf("%zu stacks\n", lk_profile_stacks(p, &st));
	lk_profile_follow_free(f);
	lk_profile_free(p);
	return 0;
}
