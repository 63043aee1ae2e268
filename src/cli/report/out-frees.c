/* out-frees.c: `leek report frees` as text and as JSON (frees.h; docs/json.md, "leek-frees").
 *
 * Text: the last frees, oldest first, one line each (when, size, lifetime, where allocated, where
 * freed), then the (allocation site, free site) pairs by bytes freed, with their estimates and
 * lifetimes; --stacks prints both stacks in full. JSON: the same, every stack in full.
 *
 * Never: print anything but the report; leave a frame's strings unescaped.
 */
#include <inttypes.h>
#include <math.h>

#include "frees.h"
#include "out-format.h"
#include "report.h"

static void site_text(FILE *f, const struct lk_section_stack *s)
{
	if (!s)
		fputs("-", f);
	else if (!s->n)
		fputs("(no stack)", f);
	else
		lk_text_frame(f, s->frames[s->site], false);
}

static void stack_text(FILE *f, const char *what, const struct lk_section_stack *s)
{
	fprintf(f, "    %s:\n", what);
	if (s && s->n)
		lk_text_stack(f, (const struct lk_sym_frame *const *)s->frames, NULL, s->n, s->site,
			      1);
	else
		fputs(s ? "      (no stack)\n" : "      (not recorded)\n", f);
}

static double lifetime_ns(const struct lk_free_event *e)
{
	return (double)e->free_ns - (double)e->alloc_ns;
}

void lk_frees_text(FILE *f, const struct lk_frees_section *s, bool stacks)
{
	char a[48], b[48], c[48];

	lk_section_text_head(f, "frees of sampled blocks", &s->head);
	fprintf(f, "%" PRIu64 " sampled frees, %" PRIu64 " of them with the stack that freed the "
		   "block\n", s->frees, s->with_stack);
	if (!s->with_stack && s->frees)
		fputs("(no free stacks in this profile: record with `leek run --free-stacks` or "
		      "LEEK_FREE_STACKS=1)\n", f);

	fprintf(f, "\nlast %zu frees, oldest first:\n", s->nrecent);
	if (s->nrecent)
		fprintf(f, "  %12s %10s %10s  %s\n", "freed at", "size", "lifetime",
			"allocated in -> freed in");
	for (size_t i = 0; i < s->nrecent; i++) {
		const struct lk_frees_event *e = &s->recent[i];
		fprintf(f, "  %12s %10s %10s  ", lk_fmt_time(a, sizeof(a), (double)e->e.free_ns),
			lk_fmt_bytes(b, sizeof(b), (double)e->e.size),
			lk_fmt_time(c, sizeof(c), lifetime_ns(&e->e)));
		site_text(f, e->alloc);
		fputs(" -> ", f);
		site_text(f, e->free);
		fprintf(f, "  (tid %" PRIu64 ", block %" PRIu64 ")\n", e->e.tid, e->e.block);
		if (stacks) {
			stack_text(f, "allocated", e->alloc);
			stack_text(f, "freed", e->free);
		}
	}

	fprintf(f, "\nfrees by allocation site and free site (%zu of %zu pairs, by bytes freed):\n",
		s->npairs, s->npairs_total);
	for (size_t i = 0; i < s->npairs; i++) {
		const struct lk_frees_pair *q = &s->pairs[i];
		fprintf(f, "%3zu. freed ", i + 1);
		lk_text_estimate(f, &q->p.bytes);
		fprintf(f, "; %s objects; lifetime mean %s, %s to %s\n",
			lk_fmt_count(a, sizeof(a), q->p.objects.value),
			lk_fmt_time(b, sizeof(b), q->p.life_mean_ns),
			lk_fmt_time(c, sizeof(c), (double)q->p.life_min_ns),
			lk_fmt_time((char[48]){ 0 }, 48, (double)q->p.life_max_ns));
		if (stacks) {
			stack_text(f, "allocated", q->alloc);
			stack_text(f, "freed", q->free);
			continue;
		}
		fputs("     allocated in ", f);
		site_text(f, q->alloc);
		fputs("\n     freed in     ", f);
		site_text(f, q->free);
		fputc('\n', f);
	}
}

void lk_frees_json_begin(struct lk_json *j, FILE *f, size_t last, size_t top)
{
	lk_section_json_begin(j, f, "leek-frees");
	lk_json_key(j, "options");
	lk_json_open(j, '{', true);
	lk_json_u64(j, "last", last);
	lk_json_u64(j, "top", top);
	lk_json_close(j, '}');
	lk_section_json_processes(j);
}

void lk_frees_json(struct lk_json *j, const struct lk_frees_section *s)
{
	lk_section_json_head(j, &s->head);
	lk_json_u64(j, "frees", s->frees);
	lk_json_u64(j, "frees_with_stack", s->with_stack);
	lk_json_key(j, "recent");
	lk_json_open(j, '[', false);
	for (size_t i = 0; i < s->nrecent; i++) {
		const struct lk_frees_event *e = &s->recent[i];
		lk_json_open(j, '{', false);
		lk_json_u64(j, "block", e->e.block);
		lk_json_u64(j, "tid", e->e.tid);
		lk_json_u64(j, "size", e->e.size);
		lk_json_num(j, "weight", e->e.weight, 3);
		lk_json_num(j, "alloc_s", (double)e->e.alloc_ns / 1e9, 6);
		lk_json_num(j, "free_s", (double)e->e.free_ns / 1e9, 6);
		lk_json_num(j, "lifetime_s", lifetime_ns(&e->e) / 1e9, 6);
		lk_section_json_site(j, "alloc_site", e->alloc);
		lk_section_json_site(j, "free_site", e->free);
		lk_section_json_stack(j, "alloc_stack_id", "alloc_stack", e->alloc);
		lk_section_json_stack(j, "free_stack_id", "free_stack", e->free);
		lk_json_close(j, '}');
	}
	lk_json_close(j, ']');
	lk_json_u64(j, "pairs_total", s->npairs_total);
	lk_json_key(j, "pairs");
	lk_json_open(j, '[', false);
	for (size_t i = 0; i < s->npairs; i++) {
		const struct lk_frees_pair *q = &s->pairs[i];
		lk_json_open(j, '{', false);
		lk_json_u64(j, "samples", q->p.bytes.samples);
		lk_json_estimate(j, "bytes", &q->p.bytes);
		lk_json_estimate(j, "objects", &q->p.objects);
		lk_json_num(j, "lifetime_mean_s", q->p.life_mean_ns / 1e9, 6);
		lk_json_num(j, "lifetime_min_s", (double)q->p.life_min_ns / 1e9, 6);
		lk_json_num(j, "lifetime_max_s", (double)q->p.life_max_ns / 1e9, 6);
		lk_section_json_site(j, "alloc_site", q->alloc);
		lk_section_json_site(j, "free_site", q->free);
		lk_section_json_stack(j, "alloc_stack_id", "alloc_stack", q->alloc);
		lk_section_json_stack(j, "free_stack_id", "free_stack", q->free);
		lk_json_close(j, '}');
	}
	lk_json_close(j, ']');
	lk_json_close(j, '}');
}

void lk_frees_json_end(struct lk_json *j)
{
	lk_section_json_end(j);
}
