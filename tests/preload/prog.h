/* prog.h: what the programs in tests/preload share.
 *
 * Each program runs under LD_PRELOAD=libleek.so (test-preload.c starts it) and checks its own
 * semantics: exit 0 means every check held; a failed CHECK prints the file, line and what went
 * wrong to stderr and exits 1. The programs are ordinary programs: they may use stdio and
 * malloc freely, since that is exactly what is under test.
 */
#ifndef LEEK_TEST_PROG_H
#define LEEK_TEST_PROG_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);   \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

/* The process's minor page faults so far (getrusage). */
static inline long prog_minor_faults(void)
{
	struct rusage ru;

	CHECK(getrusage(RUSAGE_SELF, &ru) == 0, "getrusage");
	return ru.ru_minflt;
}

/* splitmix64, so that every run draws the same sizes. */
static inline uint64_t prog_rand(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Byte i of a block tagged t: cheap to write, and different for every block and offset. */
static inline uint8_t pattern_byte(uint64_t tag, size_t i)
{
	return (uint8_t)(tag ^ (i * 0x9d) ^ (i >> 8));
}

static inline void pattern_fill(void *p, size_t n, uint64_t tag)
{
	uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		b[i] = pattern_byte(tag, i);
}

/* The first offset that does not hold the pattern, or n. */
static inline size_t pattern_check(const void *p, size_t n, uint64_t tag)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i] != pattern_byte(tag, i))
			return i;
	return n;
}

static inline int all_zero(const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i])
			return 0;
	return 1;
}

/* LEEK_PERIOD=1: every allocation is sampled (what some checks need to be meaningful). */
static inline int exact_mode(void)
{
	const char *s = getenv("LEEK_PERIOD");

	return s && strcmp(s, "1") == 0;
}

#endif /* LEEK_TEST_PROG_H */
