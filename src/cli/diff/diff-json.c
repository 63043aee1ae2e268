/* diff-json.c: `leek diff --format json`, the "leek-diff" document of docs/json.md.
 *
 * The output is a contract with scripts, as `leek report`'s is: a key keeps its name, type and
 * meaning within a version, new keys may be added, and the sites come in the diff's ranking, so
 * two runs over the same profiles print the same bytes. PROCESS, TOTALS, WRAPPER and FRAME are the
 * report's own (out-json.c). Every site carries "significant": scripts need not redo the test.
 *
 * Never: write JSON but through json-write.h, or a change without its interval.
 */
#include <math.h>

#include "diff.h"
#include "json-write.h"

#define DIFF_JSON_VERSION 1

static void change(struct lk_json *j, const char *name, const struct lk_diff_change *c)
{
	lk_json_key(j, name);
	lk_json_open(j, '{', false);
	lk_json_estimate(j, "base_bytes", &c->base);
	lk_json_u64(j, "base_samples", c->base.samples);
	lk_json_estimate(j, "new_bytes", &c->new);
	lk_json_u64(j, "new_samples", c->new.samples);
	lk_json_num(j, "change_bytes", c->change.value, 0);
	lk_json_key(j, "change_bytes_ci95");
	lk_json_open(j, '[', true);
	lk_json_num(j, NULL, c->change.lo, 0);
	lk_json_num(j, NULL, c->change.hi, 0);
	lk_json_close(j, ']');
	lk_json_num(j, "p_value", c->tested ? c->change.p : NAN, 6);
	lk_json_num(j, "q_value", c->tested ? c->q : NAN, 6);
	lk_json_bool(j, "significant", c->significant);
	lk_json_close(j, '}');
}

/* Moments: what was allocated between the two, an estimate rather than a change. */
static void allocated(struct lk_json *j, const struct lk_diff_change *c)
{
	lk_json_key(j, "allocated");
	lk_json_open(j, '{', true);
	lk_json_estimate(j, "bytes", &c->new);
	lk_json_u64(j, "samples", c->new.samples);
	lk_json_close(j, '}');
}

static void figures(struct lk_json *j, const struct lk_diff *d, const struct lk_diff_change *live,
		    const struct lk_diff_change *alloc)
{
	change(j, "live", live);
	if (d->opts.mode == LK_DIFF_MOMENTS)
		allocated(j, alloc);
	else
		change(j, "alloc", alloc);
}

static void side(struct lk_json *j, const char *name, const struct lk_report *r, uint64_t period)
{
	lk_json_key(j, name);
	lk_json_open(j, '{', false);
	lk_json_u64(j, "period", period);
	lk_json_processes(j, r);
	lk_json_wrappers(j, r);
	lk_json_close(j, '}');
}

static void site(struct lk_json *j, const struct lk_diff *d, const struct lk_diff_site *s,
		 size_t rank)
{
	lk_json_open(j, '{', false);
	lk_json_u64(j, "rank", rank);
	lk_json_frame_key(j, s->stack[s->site_frame]);
	lk_json_bool(j, "significant", lk_diff_figure(s, d->opts.by)->significant);
	lk_json_num(j, "share", s->share, 6);
	figures(j, d, &s->live, &s->alloc);
	lk_json_u64(j, "stacks", s->nstacks);
	lk_json_stack(j, s->stack, s->funcs, s->nframes, s->site_frame);
	lk_json_close(j, '}');
}

static const char *when_name(const struct lk_diff_opts *o)
{
	return o->when == LK_DIFF_PEAK ? "peak" : o->when == LK_DIFF_AT ? "time" : "end";
}

void lk_diff_json(FILE *f, const struct lk_diff *d)
{
	const struct lk_diff_opts *o = &d->opts;
	bool moments = o->mode == LK_DIFF_MOMENTS;
	struct lk_json j;

	lk_json_init(&j, f);
	lk_json_open(&j, '{', false);
	lk_json_str(&j, "format", "leek-diff");
	lk_json_u64(&j, "version", DIFF_JSON_VERSION);
	lk_json_str(&j, "mode", moments ? "moments" : "profiles");
	lk_json_str(&j, "figure", o->by == LK_DIFF_BY_ALLOC ? "alloc" : "live");
	lk_json_str(&j, "live_at", moments ? NULL : when_name(o));
	lk_json_seconds(&j, "from_s", moments && !o->from_mark ? o->from_ns : UINT64_MAX);
	lk_json_seconds(&j, "at_s", (moments || o->when == LK_DIFF_AT) && !o->at_mark ? o->at_ns
										   : UINT64_MAX);
	lk_json_str(&j, "from_mark", o->from_mark);
	lk_json_str(&j, "at_mark", o->at_mark);
	lk_json_key(&j, "options");
	lk_json_open(&j, '{', true);
	lk_json_u64(&j, "top", o->top);
	lk_json_num(&j, "min_share", o->min_share, 6);
	lk_json_num(&j, "fdr", LK_CHANGE_FDR, 6);
	lk_json_bool(&j, "auto_wrappers", !o->no_auto_wrappers);
	lk_json_close(&j, '}');
	if (moments) {
		lk_json_u64(&j, "period", d->period[0]);
		lk_json_processes(&j, d->side[0]);
		lk_json_wrappers(&j, d->side[0]);
	} else {
		side(&j, "base", d->side[0], d->period[0]);
		side(&j, "new", d->side[1], d->period[1]);
	}
	figures(&j, d, &d->live, &d->alloc);
	lk_json_u64(&j, "sites_total", d->sites_total);
	lk_json_u64(&j, "sites_significant", d->significant);
	lk_json_u64(&j, "stacks_filtered", d->stacks_filtered);
	lk_json_key(&j, "sites");
	lk_json_open(&j, '[', false);
	for (size_t i = 0; i < d->nsites; i++)
		site(&j, d, &d->sites[i], i + 1);
	lk_json_close(&j, ']');
	lk_json_close(&j, '}');
	fputc('\n', f);
}
