/* stacks.c: the step every export format uses (export.h): each stack of a loaded profile,
 * symbolized as `leek report` symbolizes it (lk_site_symbolize: every inlined frame, the same
 * frames for the same address), kept or dropped by --focus and --ignore as the report keeps
 * them, with the four estimates the report sums for its views.
 *
 * Never: round or negate a value (writers do, each as its format wants), read a record, or keep
 * anything of the profile's after it returns.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "export.h"

static const char *const value_names[_LK_EXPORT_VALUE_MAX] = {
	[LK_EXPORT_ALLOC_OBJECTS] = "alloc_objects",
	[LK_EXPORT_ALLOC_SPACE] = "alloc_space",
	[LK_EXPORT_INUSE_OBJECTS] = "inuse_objects",
	[LK_EXPORT_INUSE_SPACE] = "inuse_space",
};

const char *lk_export_value_name(enum lk_export_value v)
{
	return (unsigned)v < _LK_EXPORT_VALUE_MAX ? value_names[v] : "?";
}

int lk_export_value_from_name(const char *name)
{
	for (int v = 0; v < _LK_EXPORT_VALUE_MAX; v++)
		if (strcmp(name, value_names[v]) == 0)
			return v;
	return -EINVAL;
}

bool lk_export_value_is_bytes(enum lk_export_value v)
{
	return v == LK_EXPORT_ALLOC_SPACE || v == LK_EXPORT_INUSE_SPACE;
}

int64_t lk_export_round(double v)
{
	if (!(v == v))
		return 0;
	if (v >= 0x1p63)
		return INT64_MAX;
	if (v <= -0x1p63)
		return -INT64_MAX;
	return llround(v);
}

size_t lk_export_chain_length(const struct lk_sym_frame *const *frames, size_t n, size_t i)
{
	size_t k = i;

	while (k + 1 < n && frames[k]->inlined)
		k++;
	return k - i + 1;
}

int lk_export_stacks(struct lk_site_stack *st, struct lk_symbolizer *sym,
		     const struct lk_export_process *proc, const struct lk_export_opts *o,
		     lk_export_stack_fn *fn, void *ctx)
{
	const struct lk_stack_stats *stats;
	size_t n = lk_profile_stacks(proc->profile, &stats);
	bool peak = o->at == LK_EXPORT_AT_PEAK;
	int r = 0;

	for (size_t i = 0; i < n && r >= 0; i++) {
		const struct lk_stack_stats *s = &stats[i];
		struct lk_export_stack e = {
			.proc = proc,
			.stats = s,
			.value = {
				[LK_EXPORT_ALLOC_OBJECTS] = s->alloc_objects.value,
				[LK_EXPORT_ALLOC_SPACE] = s->alloc_bytes.value,
				[LK_EXPORT_INUSE_OBJECTS] = (peak ? s->peak_objects : s->live_objects)
								    .value,
				[LK_EXPORT_INUSE_SPACE] = (peak ? s->peak_bytes : s->live_bytes).value,
			},
		};
		r = lk_site_symbolize(st, sym, proc->number, s->frames, s->modules, s->nframes);
		if (r < 0)
			break;
		if (!lk_site_wanted(o->filter, st->frames, st->n))
			continue;
		e.frames = st->frames;
		e.nframes = st->n;
		r = fn(ctx, &e);
	}
	return r < 0 ? r : 0;
}
