/* libuw.c: one of two libraries that unwind-dl.c loads in turn, built twice from this file with
 * frames of different sizes (FRAME) and no frame pointers, so that the second, loaded where the
 * first was, has other rules at the same addresses: leek's cached unwinder must forget the first
 * one's rules when it is unloaded (src/preload/unwind-rules.c). Allocates at the bottom of a
 * recursion and calls back into the program, which records what glibc's backtrace() sees.
 */
#include <stddef.h>
#include <stdlib.h>

#ifndef FRAME
#error "meson passes FRAME, the bytes of each recursive frame's buffer"
#endif

typedef void note_fn(size_t size);

static volatile unsigned long sink;

unsigned long uw_entry(int depth, size_t size, note_fn *note);

static __attribute__((noinline, noclone)) unsigned long leaf(size_t size, note_fn *note)
{
	char *p = malloc(size);

	if (!p)
		abort();
	note(size);
	p[0] = 1;
	unsigned long r = (unsigned long)p[0] + size;
	free(p);
	return r;
}

static __attribute__((noinline, noclone)) unsigned long down(int depth, size_t size, note_fn *note)
{
	volatile char buf[FRAME];

	buf[depth % FRAME] = (char)depth;
	unsigned long r = depth > 0 ? down(depth - 1, size, note) : leaf(size, note);
	sink += r + buf[depth % FRAME];
	return r + 1;
}

__attribute__((visibility("default"))) unsigned long uw_entry(int depth, size_t size, note_fn *note)
{
	unsigned long r = down(depth, size, note);
	sink += r;
	return r;
}
