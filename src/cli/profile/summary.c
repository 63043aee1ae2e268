/* summary.c: see summary.h. Reads through the reader only; never trusts a count it did not make. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "summary.h"
#include "blockset.h"
#include "budget.h"
#include "util.h"

static void set_counter(struct lk_summary *s, uint64_t id, uint64_t value)
{
	for (uint32_t i = 0; i < s->ncounters; i++)
		if (s->counters[i].id == id) {
			s->counters[i].value = value;
			return;
		}
	if (s->ncounters < LK_READ_MAX_COUNTERS)
		s->counters[s->ncounters++] = (struct lk_counter_value){ id, value };
}

struct live_totals {
	struct lk_summary *s;
	uint64_t period;
};

static void count_live(void *ctx, uint64_t block, uint64_t size)
{
	struct live_totals *t = ctx;
	double w = lk_sample_weight(size, t->period);

	(void)block;
	t->s->live_blocks++;
	t->s->live_bytes += size;
	t->s->est_live_blocks += w;
	t->s->est_live_bytes += w * (double)size;
}

/* The live set's failure at the record at offset: a message for err (NULL if none could be
 * made), and r. */
static int live_fail(const struct lk_blockset *live, uint64_t offset, int r, char **err)
{
	char limit[32];
	int k;

	if (r == -E2BIG && lk_blockset_count(live) >= LK_SUMMARY_MAX_LIVE)
		k = asprintf(err, "offset %" PRIu64 ": more than %u sampled blocks live at once: "
			     "leek's limit", offset, LK_SUMMARY_MAX_LIVE);
	else if (r == -E2BIG)
		k = asprintf(err, "offset %" PRIu64 ": the profile needs more than %s of memory to "
			     "read (--max-memory; %zu live blocks so far)", offset,
			     lk_budget_format(limit, sizeof(limit), lk_budget_limit()),
			     lk_blockset_count(live));
	else
		k = asprintf(err, "offset %" PRIu64 ": out of memory", offset);
	if (k < 0)
		*err = NULL;
	return r;
}

int lk_summary_read(struct lk_reader *r, struct lk_summary *s, char **err)
{
	const struct lk_profile_header *h = lk_reader_header(r);
	bool exact = h->h.flags & LK_HDR_EXACT;
	struct lk_blockset live;
	struct lk_record rec;
	int k;

	memset(s, 0, sizeof(*s));
	*err = NULL;
	lk_blockset_init(&live, LK_SUMMARY_MAX_LIVE);
	while ((k = lk_reader_next(r, &rec)) > 0) {
		if (rec.tag <= LK_REC_MAX_KNOWN)
			s->records[rec.tag]++;
		else
			s->ext_records++;
		s->duration_ns = rec.time_ns;
		switch (rec.tag) {
		case LK_REC_ALLOC:
			s->allocs++;
			k = lk_blockset_add(&live, rec.alloc.block, rec.alloc.size);
			break;
		case LK_REC_INHERIT:
			s->inherited++;
			k = lk_blockset_add(&live, rec.inherit.block, rec.inherit.size);
			break;
		case LK_REC_FREE:
			if (lk_blockset_remove(&live, rec.free.block, NULL))
				s->frees++;
			else
				s->unmatched_frees++;
			break;
		case LK_REC_RSS:
			if (rec.rss.bytes > s->max_rss)
				s->max_rss = rec.rss.bytes;
			break;
		case LK_REC_TRAILER:
			s->end_realtime_ns = rec.counters.end_realtime_ns;
			/* fall through */
		case LK_REC_LOSS:
			for (uint32_t i = 0; i < rec.counters.n; i++)
				set_counter(s, rec.counters.v[i].id, rec.counters.v[i].value);
			break;
		default:
			break;
		}
		if (k < 0) {
			live_fail(&live, rec.offset, k, err);
			break;
		}
	}
	if (k >= 0)
		lk_blockset_foreach(&live, count_live,
				    &(struct live_totals){ s, exact ? 1 : h->h.period });
	lk_blockset_done(&live);
	s->trailer = lk_reader_has_trailer(r);
	s->end_offset = lk_reader_end_offset(r);
	return k < 0 ? k : 0;
}

int lk_print_read_error(const char *path, const struct lk_reader *rd, int r)
{
	const char *msg = rd ? lk_reader_error(rd) : "";

	if (*msg)
		lk_msg("%s: %s", path, msg);
	else
		lk_error(r, "%s", path);
	return r;
}

void lk_print_no_trailer(const char *path, uint64_t end_offset)
{
	lk_msg("%s: warning: no trailer: profile ends at its last complete record at offset "
	       "%" PRIu64 " (process crashed, was killed or exec'd)", path, end_offset);
}

static void print_time(FILE *f, uint64_t ns)
{
	fprintf(f, "%" PRIu64 ".%09" PRIu64, ns / 1000000000, ns % 1000000000);
}

static void print_counters(FILE *f, const struct lk_summary *s)
{
	bool any = false;

	for (uint32_t i = 0; i < s->ncounters; i++) {
		const struct lk_counter_value *c = &s->counters[i];
		const char *name = lk_counter_name(c->id);
		/* samples and frees count events, not losses; stack_truncated loses no sample. */
		if (!c->value || c->id == LK_CNT_SAMPLES || c->id == LK_CNT_FREES)
			continue;
		if (name)
			fprintf(f, "%s%s=%" PRIu64, any ? " " : "", name, c->value);
		else
			fprintf(f, "%scounter_%" PRIu64 "=%" PRIu64, any ? " " : "", c->id,
				c->value);
		any = true;
	}
	if (!any)
		fputs("none", f);
}

void lk_summary_print(FILE *f, const char *path, const struct lk_profile_header *h,
		      const struct lk_summary *s)
{
	const struct lk_file_header *fh = &h->h;

	fputs("file:        ", f);
	lk_print_escaped(f, path, strlen(path));
	fprintf(f, "\npid:         %" PRIu32 " (ppid %" PRIu32 ")%s\n", fh->pid, fh->ppid,
		fh->flags & LK_HDR_FORKED ? ", forked" : "");
	fputs("exe:         ", f);
	lk_print_escaped(f, h->exe, fh->exe_len);
	fputs("\ncmdline:     ", f);
	lk_print_cmdline(f, h->cmdline, fh->cmdline_len);
	fprintf(f, "%s\n", fh->flags & LK_HDR_CMDLINE_CUT ? " [cut]" : "");
	if (fh->flags & LK_HDR_EXACT || fh->period == 1)
		fputs("period:      1 byte (exact: every allocation recorded)\n", f);
	else
		fprintf(f, "period:      %" PRIu64 " bytes\n", fh->period);
	fprintf(f, "seed:        %" PRIu64 "\nsession:     %" PRIu64 "\nduration:    ", fh->seed,
		fh->session);
	print_time(f, s->duration_ns);
	fputs(" s\nrecords:    ", f);
	for (unsigned t = 1; t <= LK_REC_THREAD; t++) { /* the reader gives *_FIXED as ALLOC, FREE */
		char name[16];
		snprintf(name, sizeof(name), "%s", lk_rec_tag_name(t));
		for (char *c = name; *c; c++)
			*c = (char)(*c - 'A' + 'a');
		fprintf(f, " %s=%" PRIu64, name, s->records[t]);
	}
	fprintf(f, " ext=%" PRIu64 "\n", s->ext_records);
	fprintf(f, "samples:     %" PRIu64 " allocations, %" PRIu64 " frees, %" PRIu64
		" inherited, %" PRIu64 " frees of unknown blocks\n",
		s->allocs, s->frees, s->inherited, s->unmatched_frees);
	fprintf(f, "live at end: %" PRIu64 " sampled blocks, %" PRIu64 " bytes requested\n",
		s->live_blocks, s->live_bytes);
	fprintf(f, "estimated:   %.0f bytes live in %.1f blocks\n", s->est_live_bytes,
		s->est_live_blocks);
	fprintf(f, "max rss:     %" PRIu64 " bytes\nlosses:      ", s->max_rss);
	print_counters(f, s);
	if (s->trailer)
		fputs("\ntrailer:     yes\n", f);
	else
		fprintf(f, "\ntrailer:     no: profile ends at offset %" PRIu64
			" (process crashed, was killed or exec'd)\n", s->end_offset);
}
