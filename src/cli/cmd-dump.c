/* cmd-dump.c: `leek dump [--summary] [--chain] FILE...`, the profile as text, one line per record.
 *
 * This is the reader's face: it validates as it prints, so a corrupt file shows every record up
 * to the damage and then one error line naming the offset. Its output is a stable, greppable
 * format (tests/unit/test-cli.c checks its lines): change a line's shape only with those tests.
 * It must never print a record across two lines: every string from the file goes through
 * lk_print_escaped().
 *
 * --summary prints what the profile's aggregation (profile/profile.h) counts instead, "key: value"
 * lines: the records of each kind, the samples, the blocks live at the end and their estimate,
 * the losses and whether the file has its trailer.
 *
 * Each file is its own: a rotated profile's segment prints alone, as written. --chain prints every
 * segment of FILE's chain (read.h's lk_chain_find: FILE, FILE.seg1, ... of one process) in turn,
 * oldest kept first, each as a file of its own under its FILE line, and a chain once however many
 * of its segments are named. dump never joins segments: that is `leek report`'s reading, and its
 * offsets would be no file's.
 *
 *   FILE <path>
 *   HEADER version=4 pid=.. ppid=.. flags=0x..(names) period=.. seed=.. session=.. clock=monotonic
 *          page_size=.. max_frames=.. header_size=.. start_realtime=S.NS start_monotonic=S.NS
 *   EXE <path>
 *   CMDLINE <arguments, shell-quoted>
 *   @<offset> <RECORD> ...               one per record, t= in seconds since the start
 *   END offset=<end of the last complete record> trailer=yes|no
 *
 * ALLOC, FREE and INHERIT lines show what the reader decoded: the tid of the THREAD record before
 * ALLOC and FREE (or of their thread segment), and every block's number, not the differences the
 * file holds. Records come in the reader's order (read.h): a thread segment's ALLOCs and FREEs
 * among the main stream's by time, so their offsets are not in file order, and a SEGMENT line
 * shows the block numbers and the part of the file that its body holds.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "profile.h"
#include "util.h"

static bool arg_summary, arg_chain;

static void print_ns(uint64_t ns)
{
	printf("%" PRIu64 ".%09" PRIu64, ns / 1000000000, ns % 1000000000);
}

static void print_signed_ns(int64_t ns)
{
	uint64_t mag = ns < 0 ? -(uint64_t)ns : (uint64_t)ns;

	if (ns < 0)
		putchar('-');
	print_ns(mag);
}

static void print_header(const char *path, const struct lk_profile_header *ph)
{
	static const char *const flag_names[] = { "exact", "forked", "cmdline_cut",
						  "coarse_time", "continued", "ctl", "rotated" };
	const struct lk_file_header *h = &ph->h;
	const char *sep = "(";

	fputs("FILE ", stdout);
	lk_print_escaped(stdout, path, strlen(path));
	printf("\nHEADER version=%u pid=%" PRIu32 " ppid=%" PRIu32 " flags=0x%x", h->version,
	       h->pid, h->ppid, h->flags);
	for (unsigned i = 0; i < 32; i++) {
		if (!(h->flags & (1u << i)))
			continue;
		if (i < sizeof(flag_names) / sizeof(flag_names[0]))
			printf("%s%s", sep, flag_names[i]);
		else
			printf("%sbit%u", sep, i);
		sep = ",";
	}
	printf("%s period=%" PRIu64 " seed=%" PRIu64 " session=%" PRIu64
	       " clock=monotonic page_size=%" PRIu32 " max_frames=%" PRIu32
	       " header_size=%" PRIu32 " start_realtime=",
	       h->flags ? ")" : "", h->period, h->seed, h->session, h->page_size, h->max_frames,
	       h->header_size);
	print_ns(h->start_realtime_ns);
	fputs(" start_monotonic=", stdout);
	print_ns(h->start_monotonic_ns);
	if (h->flags & LK_HDR_ROTATED) {
		printf("\nROTATED segment=%" PRIu32 " origin_realtime=", ph->segment);
		print_ns(ph->origin_ns);
	}
	fputs("\nEXE ", stdout);
	lk_print_escaped(stdout, ph->exe, h->exe_len);
	fputs("\nCMDLINE ", stdout);
	lk_print_cmdline(stdout, ph->cmdline, h->cmdline_len);
	putchar('\n');
}

static void print_counters(const struct lk_record *rec)
{
	if (rec->counters.n == 0)
		fputs(" (none)", stdout);
	for (uint32_t i = 0; i < rec->counters.n; i++) {
		const struct lk_counter_value *c = &rec->counters.v[i];
		const char *name = lk_counter_name(c->id);
		if (name)
			printf(" %s=%" PRIu64, name, c->value);
		else
			printf(" counter_%" PRIu64 "=%" PRIu64, c->id, c->value);
	}
}

static void print_module(const struct lk_record *rec)
{
	printf(" %" PRIu64 " t=", rec->module.id);
	print_ns(rec->time_ns);
	printf(" base=0x%" PRIx64 " segments=", rec->module.base);
	for (uint32_t i = 0; i < rec->module.nseg; i++)
		printf("%s0x%" PRIx64 "+0x%" PRIx64, i ? "," : "", rec->module.seg[i].start,
		       rec->module.seg[i].len);
	if (!rec->module.nseg)
		fputs("none", stdout);
	fputs(" build-id=", stdout);
	for (uint32_t i = 0; i < rec->module.build_id_len; i++)
		printf("%02x", rec->module.build_id[i]);
	if (!rec->module.build_id_len)
		fputs("none", stdout);
	fputs(" path=", stdout);
	lk_print_escaped(stdout, rec->module.path, rec->module.path_len);
}

static void print_record(const struct lk_profile_header *h, const struct lk_record *rec)
{
	printf("@%" PRIu64 " %s", rec->offset, lk_rec_tag_name(rec->tag));
	switch (rec->tag) {
	case LK_REC_ALLOC:
		fputs(" t=", stdout);
		print_ns(rec->time_ns);
		printf(" tid=%" PRIu64 " block=%" PRIu64 " size=%" PRIu64 " stack=%" PRIu64,
		       rec->alloc.tid, rec->alloc.block, rec->alloc.size, rec->alloc.stack);
		break;
	case LK_REC_FREE:
		fputs(" t=", stdout);
		print_ns(rec->time_ns);
		printf(" tid=%" PRIu64 " block=%" PRIu64, rec->free.tid, rec->free.block);
		if (rec->free.stack) /* a FREE_STACK's (LEEK_FREE_STACKS) */
			printf(" free_stack=%" PRIu64, rec->free.stack);
		break;
	case LK_REC_STACK:
		printf(" %" PRIu64 ":", rec->stack.id);
		for (uint32_t i = 0; i < rec->stack.nframes; i++)
			printf(" 0x%" PRIx64, rec->stack.frames[i]);
		break;
	case LK_REC_MODULE:
		print_module(rec);
		break;
	case LK_REC_UNLOAD:
		fputs(" t=", stdout);
		print_ns(rec->time_ns);
		printf(" module=%" PRIu64, rec->unload.id);
		break;
	case LK_REC_RSS:
		fputs(" t=", stdout);
		print_ns(rec->time_ns);
		printf(" rss=%" PRIu64, rec->rss.bytes);
		break;
	case LK_REC_LOSS:
	case LK_REC_TRAILER:
		fputs(" t=", stdout);
		print_ns(rec->time_ns);
		if (rec->tag == LK_REC_TRAILER) {
			fputs(" end_realtime=", stdout);
			print_ns(rec->counters.end_realtime_ns);
		}
		print_counters(rec);
		break;
	case LK_REC_THREAD:
		printf(" tid=%" PRIu64, rec->thread.tid);
		break;
	case LK_REC_CTL:
		fputs(" t=", stdout);
		print_ns(rec->time_ns);
		printf(" %s", rec->ctl.kind == LK_CTL_ON ? "on" : rec->ctl.kind == LK_CTL_OFF ? "off" : "mark");
		if (rec->ctl.kind == LK_CTL_MARK)
			printf(" name=%s", rec->ctl.name);
		break;
	case LK_REC_ERROR:
		fputs(" t=", stdout);
		print_ns(rec->time_ns);
		printf(" tid=%" PRIu64 " kind=%s addr=0x%" PRIx64 " block_addr=0x%" PRIx64
		       " block_size=%" PRIu64 " block=%" PRIu64 " alloc_stack=%" PRIu64
		       " free_stack=%" PRIu64 " stack=%" PRIu64, rec->error.tid,
		       lk_error_kind_name(rec->error.kind), rec->error.addr, rec->error.block_addr,
		       rec->error.block_size, rec->error.block, rec->error.alloc_stack,
		       rec->error.free_stack, rec->error.stack);
		break;
	case LK_REC_SEGMENT:
		fputs(" t=", stdout);
		print_ns(rec->time_ns);
		printf(" tid=%" PRIu64 " first_block=%" PRIu64 " blocks=%" PRIu64 " body=%" PRIu64
		       " length=%" PRIu64, rec->segment.tid, rec->segment.first_block,
		       rec->segment.blocks, rec->segment.body_offset, rec->segment.length);
		break;
	case LK_REC_INHERIT:
		printf(" block=%" PRIu64 " size=%" PRIu64 " stack=%" PRIu64 " alloc_t=",
		       rec->inherit.block, rec->inherit.size, rec->inherit.stack);
		print_signed_ns((int64_t)(rec->inherit.alloc_monotonic_ns -
					  h->h.start_monotonic_ns));
		break;
	default: /* LK_READ_EXT */
		printf(" tag=0x%02x len=%" PRIu64, rec->ext.tag, rec->ext.len);
		break;
	}
	putchar('\n');
}

static void warn_no_trailer(const char *path, uint64_t end_offset)
{
	lk_msg("%s: warning: no trailer: profile ends at its last complete record at offset "
	       "%" PRIu64 " (process crashed, was killed or exec'd)", path, end_offset);
}

static void print_losses(const struct lk_profile_totals *t)
{
	bool any = false;

	for (uint32_t i = 0; i < t->ncounters; i++) {
		const struct lk_counter_value *c = &t->counters[i];
		const char *name = lk_counter_name(c->id);
		/* samples and frees count events, not losses. */
		if (!c->value || c->id == LK_CNT_SAMPLES || c->id == LK_CNT_FREES)
			continue;
		if (name)
			printf("%s%s=%" PRIu64, any ? " " : "", name, c->value);
		else
			printf("%scounter_%" PRIu64 "=%" PRIu64, any ? " " : "", c->id, c->value);
		any = true;
	}
	if (!any)
		fputs("none", stdout);
}

static void print_summary(const char *path, const struct lk_profile *p, bool last)
{
	const struct lk_profile_header *ph = lk_profile_header(p);
	const struct lk_profile_totals *t = lk_profile_totals(p);
	const struct lk_file_header *fh = &ph->h;

	fputs("file:        ", stdout);
	lk_print_escaped(stdout, path, strlen(path));
	printf("\npid:         %" PRIu32 " (ppid %" PRIu32 ")%s%s\n", fh->pid, fh->ppid,
	       fh->flags & LK_HDR_FORKED ? ", forked" : "",
	       fh->flags & LK_HDR_CONTINUED ? ", continued" : "");
	if (ph->segment)
		printf("segment:     %" PRIu32 " of a rotated profile: its INHERITs are the blocks live "
		       "at the end of segment %" PRIu32 "\n", ph->segment, ph->segment - 1);
	fputs("exe:         ", stdout);
	lk_print_escaped(stdout, ph->exe, fh->exe_len);
	fputs("\ncmdline:     ", stdout);
	lk_print_cmdline(stdout, ph->cmdline, fh->cmdline_len);
	printf("%s\n", fh->flags & LK_HDR_CMDLINE_CUT ? " [cut]" : "");
	if (t->period <= 1)
		fputs("period:      1 byte (exact: every allocation recorded)\n", stdout);
	else
		printf("period:      %" PRIu64 " bytes\n", t->period);
	printf("seed:        %" PRIu64 "\nsession:     %" PRIu64 "\nduration:    ", fh->seed,
	       fh->session);
	print_ns(t->duration_ns);
	fputs(" s\nrecords:    ", stdout);
	for (unsigned tag = 1; tag <= LK_REC_THREAD; tag++) { /* *_FIXED come as ALLOC and FREE */
		char name[16];
		snprintf(name, sizeof(name), "%s", lk_rec_tag_name(tag));
		for (char *c = name; *c; c++)
			*c = (char)(*c - 'A' + 'a');
		printf(" %s=%" PRIu64, name, t->tags[tag]);
	}
	printf(" ext=%" PRIu64 "\n", t->ext_records);
	printf("samples:     %" PRIu64 " allocations, %" PRIu64 " frees, %" PRIu64
	       " inherited, %" PRIu64 " frees of unknown blocks\n",
	       t->samples, t->frees - t->frees_unknown, t->inherited, t->frees_unknown);
	printf("live at end: %.0f sampled blocks, %.0f bytes requested\n",
	       t->live_objects_end.observed, t->live_bytes_end.observed);
	printf("estimated:   %.0f bytes live in %.1f blocks\n", t->live_bytes_end.value,
	       t->live_objects_end.value);
	printf("max rss:     %" PRIu64 " bytes\nlosses:      ", t->max_rss);
	print_losses(t);
	if (t->trailer)
		fputs("\ntrailer:     yes\n", stdout);
	else if (!last)
		fputs("\ntrailer:     no: an older segment of its chain, continued by the next\n", stdout);
	else
		printf("\ntrailer:     no: profile ends at offset %" PRIu64
		       " (process crashed, was killed or exec'd)\n", t->end_offset);
}

/* The summary: the profile as `leek report` reads it, without its list of live blocks; of this
 * file alone, as the records dump prints (a rotated profile's chain is report's: read-chain.c). */
static int summarize_one(const char *path, bool last)
{
	static const struct lk_profile_opts opts = { .at_ns = UINT64_MAX, .buckets = 1,
						     .no_live_list = true, .segment_only = true };
	_cleanup_(lk_profile_freep) struct lk_profile *p = NULL;
	_cleanup_(freep) char *err = NULL;
	int r = lk_profile_load(path, &opts, &p, &err);

	if (r < 0)
		return lk_error_of(path, r, err);
	print_summary(path, p, last);
	fflush(stdout);
	if (last && !lk_profile_totals(p)->trailer)
		warn_no_trailer(path, lk_profile_totals(p)->end_offset);
	return 0;
}

/* 0, or a negative errno after printing why. last: warn if the file has no trailer (false for a
 * chain's older segments, which end without one: docs/format.md, "Reading a chain"). */
static int dump_one(const char *path, bool last)
{
	_cleanup_(lk_reader_freep) struct lk_reader *rd = lk_reader_new();
	const struct lk_profile_header *h;
	struct lk_record rec;
	int r;

	if (arg_summary)
		return summarize_one(path, last);
	if (!rd)
		return lk_error(-ENOMEM, "%s", path);
	r = lk_reader_open(rd, path);
	if (r < 0)
		return lk_error_of(path, r, lk_reader_error(rd));
	h = lk_reader_header(rd);
	print_header(path, h);
	while ((r = lk_reader_next(rd, &rec)) > 0)
		print_record(h, &rec);
	if (r < 0) {
		fflush(stdout); /* the records before the damage, then the error */
		return lk_error_of(path, r, lk_reader_error(rd));
	}
	printf("END offset=%" PRIu64 " trailer=%s\n", lk_reader_end_offset(rd),
	       lk_reader_has_trailer(rd) ? "yes" : "no");
	fflush(stdout);
	if (last && !lk_reader_has_trailer(rd))
		warn_no_trailer(path, lk_reader_end_offset(rd));
	return 0;
}

/* --chain: the files printed so far, by identity, so that a chain prints once. */
struct printed {
	struct stat *v;
	size_t n;
};

static bool printed_has(const struct printed *pr, const struct stat *st)
{
	for (size_t i = 0; i < pr->n; i++)
		if (pr->v[i].st_dev == st->st_dev && pr->v[i].st_ino == st->st_ino)
			return true;
	return false;
}

static void printed_add(struct printed *pr, const char *path)
{
	struct stat st, *v;

	if (stat(path, &st) < 0 || printed_has(pr, &st))
		return;
	v = reallocarray(pr->v, pr->n + 1, sizeof(*v));
	if (!v)
		return; /* at worst a chain named twice prints twice */
	pr->v = v;
	pr->v[pr->n++] = st;
}

/* The segments of path's chain in turn (path alone if it is none's): 0, or a negative errno
 * after printing why; a damaged segment does not stop the ones after it. *sep: a blank line
 * goes before every summary but the first. */
static int dump_chain(const char *path, struct printed *pr, bool *sep)
{
	_cleanup_(freep) char *err = NULL;
	struct lk_chain_files f;
	struct stat st;
	int r, k = 0;

	if (stat(path, &st) == 0 && printed_has(pr, &st))
		return 0;
	r = lk_chain_find(path, &f, &err);
	if (r < 0)
		return lk_error_of(path, r, err);
	if (f.n == 0) {
		if (*sep)
			putchar('\n');
		*sep = arg_summary;
		printed_add(pr, path);
		return dump_one(path, true);
	}
	for (size_t i = 0; i < f.n; i++) {
		if (*sep)
			putchar('\n');
		*sep = arg_summary;
		printed_add(pr, f.paths[i]);
		if ((r = dump_one(f.paths[i], i + 1 == f.n)) < 0)
			k = r;
	}
	lk_chain_files_done(&f);
	return k;
}

int lk_cmd_dump(int argc, char *argv[])
{
	enum { ARG_MAX_MEMORY = 0x100, ARG_CHAIN };
	static const struct option options[] = {
		{ "summary", no_argument, NULL, 's' },
		{ "chain", no_argument, NULL, ARG_CHAIN },
		{ "max-memory", required_argument, NULL, ARG_MAX_MEMORY },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	struct printed pr = { 0 };
	bool sep = false;
	int c, status = LK_EXIT_OK;

	optind = 0;
	while ((c = getopt_long(argc, argv, "+sh", options, NULL)) >= 0) {
		switch (c) {
		case 's':
			arg_summary = true;
			break;
		case ARG_CHAIN:
			arg_chain = true;
			break;
		case ARG_MAX_MEMORY:
			if (lk_cmd_max_memory("dump", optarg))
				return LK_EXIT_USAGE;
			break;
		case 'h':
			return lk_cmd_usage(stdout, "dump", LK_EXIT_OK);
		default:
			return lk_cmd_usage(stderr, "dump", LK_EXIT_USAGE);
		}
	}
	if (lk_cmd_need_operands(argc, "dump", "profile"))
		return LK_EXIT_USAGE;

	for (int i = optind; i < argc; i++) {
		if (arg_chain) {
			if (dump_chain(argv[i], &pr, &sep) < 0)
				status = LK_EXIT_FILE;
			continue;
		}
		if (i > optind && arg_summary)
			putchar('\n');
		if (dump_one(argv[i], true) < 0)
			status = LK_EXIT_FILE;
	}
	free(pr.v);
	return lk_cmd_end_output("dump", "output", status);
}
