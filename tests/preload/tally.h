/* tally.h: how a test program tells the driver what its profile must hold.
 *
 * A program prints, to stdout, one line per distinctive block size it used:
 *
 *   tally PID SIZE ALLOCS INHERITS FREES
 *
 * meaning: in exact mode (LEEK_PERIOD=1), the profile written by process PID holds exactly ALLOCS
 * ALLOC records and INHERITS INHERIT records of SIZE bytes, and exactly FREES FREE records of
 * blocks of that size. The sizes are chosen so that libc never asks for them itself (4099, 5003,
 * 777777, ...). test-preload.c reads these lines and compares them with the profiles.
 */
#ifndef LEEK_TEST_TALLY_H
#define LEEK_TEST_TALLY_H

#include <stdio.h>
#include <unistd.h>

static inline void tally(size_t size, unsigned long allocs, unsigned long inherits,
			 unsigned long frees)
{
	printf("tally %ld %zu %lu %lu %lu\n", (long)getpid(), size, allocs, inherits, frees);
	fflush(stdout);
}

#endif /* LEEK_TEST_TALLY_H */
