/* files.h: temporary directories and whole files, for the tests that run programs and read what
 * they leave behind.
 *
 * Failures go through FAIL (harness.h) and leave the test at once; a temporary directory is then
 * left behind on purpose, for a look at what went wrong, and every message names it.
 */
#ifndef LEEK_TEST_FILES_H
#define LEEK_TEST_FILES_H

#include <stddef.h>

/* A fresh directory "$TMPDIR/leek-PROGRAM-XXXXXX" in dir (at least 256 bytes), PROGRAM the test
 * program's name. */
void tmp_dir(char *dir);
/* Removes dir and the files directly in it. */
void tmp_dir_remove(const char *dir);

/* The whole file, NUL-terminated; *len its size if len is not NULL. Fails the test if it cannot
 * be read. */
char *read_file(const char *path, size_t *len);
/* The same, but an empty string if the file cannot be opened (a file a program failed to
 * write). */
char *read_file_or_empty(const char *path, size_t *len);
void write_file(const char *path, const void *data, size_t len);

/* How many entries of dir (not . and ..) have a name that starts with prefix and ends with
 * suffix. Fails the test if dir cannot be listed. */
size_t count_files(const char *dir, const char *prefix, const char *suffix);

/* The one file in dir named prefix*suffix (a malloc'ed path). Fails the test unless there is
 * exactly one. */
char *find_one(const char *dir, const char *prefix, const char *suffix);

#endif /* LEEK_TEST_FILES_H */
