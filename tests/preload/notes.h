/* notes.h: what glibc's backtrace() saw at each allocation of unwind.c and unwind-dl.c, written
 * beside the profile for test-preload.c to compare with the profile's stacks.
 *
 * note() is called right after the allocation by the function that made it, so its frames from
 * the second on are that function's callers. notes_write() puts "size n frame..." lines in
 * NAME.expect, in the directory of LEEK_OUTPUT, and prints "notes N".
 */
#ifndef LEEK_TEST_NOTES_H
#define LEEK_TEST_NOTES_H

#include <execinfo.h>
#include <pthread.h>

#include "prog.h"

#define MAX_NOTES 4096
#define NOTE_FRAMES 64

static struct {
	size_t size;
	int n;
	void *frames[NOTE_FRAMES];
} notes[MAX_NOTES];
static unsigned nnotes;
static pthread_mutex_t notes_lock = PTHREAD_MUTEX_INITIALIZER;

static __attribute__((noinline, unused)) void note(size_t size)
{
	void *f[NOTE_FRAMES + 2];
	int n = backtrace(f, NOTE_FRAMES + 2);

	pthread_mutex_lock(&notes_lock);
	if (nnotes < MAX_NOTES && n > 2) {
		notes[nnotes].size = size;
		notes[nnotes].n = n - 2;
		memcpy(notes[nnotes].frames, f + 2, (size_t)(n - 2) * sizeof(void *));
		nnotes++;
	}
	pthread_mutex_unlock(&notes_lock);
}

static void notes_write(const char *name)
{
	const char *out = getenv("LEEK_OUTPUT");
	const char *slash = out ? strrchr(out, '/') : NULL;
	char path[4096];

	snprintf(path, sizeof(path), "%.*s%s.expect", slash ? (int)(slash - out + 1) : 0, out, name);
	FILE *f = fopen(path, "w");
	CHECK(f, "%s", path);
	for (unsigned i = 0; i < nnotes; i++) {
		fprintf(f, "%zu %d", notes[i].size, notes[i].n);
		for (int k = 0; k < notes[i].n; k++)
			fprintf(f, " %lx", (unsigned long)(uintptr_t)notes[i].frames[k]);
		fputc('\n', f);
	}
	CHECK(fclose(f) == 0, "fclose");
	printf("notes %u\n", nnotes);
}

#endif /* LEEK_TEST_NOTES_H */
