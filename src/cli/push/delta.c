/* delta.c: one interval of one profile as the pprof `leek push` sends (push.h).
 *
 * The body is `leek export --format pprof`'s, made by the same writer (export/pprof.c) through
 * a format that wraps it: each stack reaches pprof's writer with its in-use values as they are
 * at the interval's end, and its alloc values less what earlier intervals sent. Go's godeltaprof
 * does the same for Go's heap profiles, so that a backend that sums a series' profiles over a
 * time range gets the allocations of that range, not the process's whole history again at every
 * interval.
 *
 * Deltas are of rounded totals: round(total now) - round(total before), per stack. pprof rounds
 * each value to an integer anyway; rounding the totals, not the differences, makes the deltas of
 * a whole run telescope to exactly the rounded totals that `leek export` writes for the finished
 * profile, whatever the number of intervals. A stack whose deltas and in-use values are all 0 is
 * left out by pprof's writer, as `leek export` leaves it out.
 *
 * The profile is the one `leek push` follows (lk_profile_follow_snapshot: the records read so
 * far, each once over the whole run), never read again here: an interval costs its own records,
 * the live set and the stacks it sends, not the file's length.
 *
 * Never: change the deltas' state unless the body was made whole (a failed interval is made
 * again, from the same state, at the next look), read a file, or print.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "push.h"
#include "report.h"

/* The totals of this interval, taken into the state once the body is whole. */
struct pending {
	uint64_t id;
	int64_t objects, space;
};

struct delta_writer {
	void *w; /* pprof's writer */
	struct lk_push_deltas *d;
	struct pending *p;
	size_t n, cap;
};

/* The writer this one wraps: the table's (export.c), never a copy. */
static const struct lk_export_format *pprof_format(void)
{
	return lk_export_format_find("pprof");
}

static int64_t prev_of(const struct lk_u64map *m, uint64_t id)
{
	const uint64_t *v = lk_u64map_get(m, id);
	return v ? (int64_t)*v : 0;
}

static int delta_open(const struct lk_export_opts *o, void **ret)
{
	struct delta_writer *dw = calloc(1, sizeof(*dw));
	int r;

	if (!dw)
		return -ENOMEM;
	dw->d = o->writer_ctx;
	r = pprof_format()->open(o, &dw->w);
	if (r < 0) {
		free(dw);
		return r;
	}
	*ret = dw;
	return 0;
}

static int delta_process(void *w, const struct lk_export_process *p)
{
	struct delta_writer *dw = w;
	return pprof_format()->process(dw->w, p);
}

static int delta_stack(void *w, const struct lk_export_stack *s)
{
	struct delta_writer *dw = w;
	struct lk_export_stack c = *s;
	int64_t objects = lk_export_round(s->value[LK_EXPORT_ALLOC_OBJECTS]);
	int64_t space = lk_export_round(s->value[LK_EXPORT_ALLOC_SPACE]);

	if (dw->n == dw->cap) {
		size_t cap = dw->cap ? 2 * dw->cap : 256;
		struct pending *p = reallocarray(dw->p, cap, sizeof(*p));
		if (!p)
			return -ENOMEM;
		dw->p = p;
		dw->cap = cap;
	}
	dw->p[dw->n++] = (struct pending){ s->stats->id, objects, space };
	c.value[LK_EXPORT_ALLOC_OBJECTS] = (double)(objects - prev_of(&dw->d->objects, s->stats->id));
	c.value[LK_EXPORT_ALLOC_SPACE] = (double)(space - prev_of(&dw->d->space, s->stats->id));
	return pprof_format()->stack(dw->w, &c);
}

static int delta_write(void *w, FILE *f)
{
	struct delta_writer *dw = w;
	return pprof_format()->write(dw->w, f);
}

static void delta_close(void *w)
{
	struct delta_writer *dw = w;

	if (!dw)
		return;
	pprof_format()->close(dw->w);
	free(dw->p);
	free(dw);
}

static const struct lk_export_format delta_format = {
	.name = "pprof-delta",
	.open = delta_open,
	.process = delta_process,
	.stack = delta_stack,
	.write = delta_write,
	.close = delta_close,
};

void lk_push_deltas_init(struct lk_push_deltas *d, uint32_t number)
{
	lk_u64map_init(&d->objects, SIZE_MAX);
	lk_u64map_init(&d->space, SIZE_MAX);
	d->number = number;
}

void lk_push_deltas_done(struct lk_push_deltas *d)
{
	lk_u64map_done(&d->objects);
	lk_u64map_done(&d->space);
}

/* The writer's totals into the state: all of them, or (on -ENOMEM part-way) the interval fails
 * and the state may hold some of the new totals; the caller then starts the profile over. */
static int commit(struct lk_push_deltas *d, const struct delta_writer *dw)
{
	for (size_t i = 0; i < dw->n; i++) {
		int r = lk_u64map_put(&d->objects, dw->p[i].id, (uint64_t)dw->p[i].objects);
		if (r >= 0)
			r = lk_u64map_put(&d->space, dw->p[i].id, (uint64_t)dw->p[i].space);
		if (r < 0)
			return r;
	}
	return 0;
}

int lk_push_interval(struct lk_push_deltas *d, struct lk_symbolizer *sym, const char *path,
		     const struct lk_profile *p, uint64_t from_s, uint64_t until_s, void **body,
		     size_t *len, char **err)
{
	struct lk_export_opts o = { .at = LK_EXPORT_AT_END, .value = LK_EXPORT_INUSE_SPACE,
				    .reread = true,
				    .span_from_ns = from_s * 1000000000ull,
				    .span_until_ns = until_s * 1000000000ull, .writer_ctx = d };
	struct lk_export *x = NULL;
	char *buf = NULL;
	size_t n = 0;
	bool trailer;
	FILE *f;
	int r;

	r = lk_export_new(&delta_format, &o, sym, &x);
	if (r < 0)
		return r;
	r = lk_export_add_profile(x, path, p, d->number, false, &trailer, err);
	if (r >= 0) {
		f = open_memstream(&buf, &n);
		if (!f) {
			r = -errno;
		} else {
			r = lk_export_write(x, f);
			if (fflush(f) != 0 || ferror(f))
				r = r < 0 ? r : -EIO;
			fclose(f);
		}
	}
	/* The export session owns the writer: its totals are taken before it is freed. */
	if (r >= 0) {
		struct delta_writer *dw = lk_export_writer(x);
		r = commit(d, dw);
	}
	lk_export_free(x);
	if (r < 0) {
		free(buf);
		return r;
	}
	*body = buf;
	*len = n;
	return 0;
}
