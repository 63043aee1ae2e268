/* export-internal.h: what the files of src/cli/export share (export.h is the interface):
 *
 *   export.c       the session and the table of formats
 *   stacks.c       the step every format uses: symbolized stacks with their estimates
 *   idset.c        distinct byte strings, numbered: the writers' tables (idset.h)
 *   escape.c       strings from a profile, escaped, into a buffer from the budget
 *   gzip.c         a gzip stream into a FILE (zlib)
 *   pprof.c        the pprof writer: its tables, filled as stacks come
 *   pprof-pack.c   ... and their profile.proto message, packed (protobuf-c) and gzipped
 *   folded.c       the folded-stacks writer
 *   html.c         the HTML report's page, through a report (src/cli/html/html.h)
 */
#ifndef LEEK_EXPORT_INTERNAL_H
#define LEEK_EXPORT_INTERNAL_H

#include <stddef.h>
#include <stdio.h>
#include <zlib.h>

#include "export.h"

/* ---- escape.c ---- */
/* A string being built, NUL-terminated, its bytes from the memory budget. Zeroed is empty. */
struct lk_strbuf {
	char *s;
	size_t len, cap;
};
int lk_strbuf_put(struct lk_strbuf *b, const void *p, size_t n); /* 0, -ENOMEM, -E2BIG */
void lk_strbuf_done(struct lk_strbuf *b);
/* Appends the len bytes at s escaped: every control character (C0, DEL, C1), the backslash,
 * each byte outside valid UTF-8 and each byte of also (NULL: none) as \xNN. */
int lk_export_escape(struct lk_strbuf *b, const char *s, size_t len, const char *also);

/* ---- gzip.c ---- */
struct lk_gzip {
	z_stream z;
	FILE *f;
	int err; /* the first error: -ENOMEM, or -EIO for f's (its errno is lost to fwrite) */
	size_t nin;
	unsigned char in[64 << 10], out[64 << 10];
};
int lk_gzip_open(struct lk_gzip *g, FILE *f, int level); /* 0 or -ENOMEM */
void lk_gzip_write(struct lk_gzip *g, const void *p, size_t n); /* errors wait in g->err */
int lk_gzip_close(struct lk_gzip *g); /* ends the stream: 0 or the first error */

/* ---- the formats ---- */
extern const struct lk_export_format lk_export_pprof, lk_export_folded, lk_export_html;

/* ---- pprof-pack.c ---- */
struct lk_pprof;
int lk_pprof_pack(const struct lk_pprof *p, FILE *f);

#endif /* LEEK_EXPORT_INTERNAL_H */
