/* out-errors.c: `leek report errors` as text and as JSON (errors.h; docs/json.md, "leek-errors").
 *
 * Text: one paragraph an error, in file order, as a memory checker's report reads: what happened
 * and where the address lies against the block, then the stack of the bad free or access, the
 * stack that allocated the block and the one that freed it, each in full (an error is read once,
 * whole). JSON: the same fields, every stack in full.
 *
 * Never: print anything but the report; leave a frame's strings unescaped.
 */
#include <inttypes.h>

#include "errors.h"
#include "out-format.h"
#include "read.h"
#include "report.h"

/* What the program did at the error's stack, by kind. */
static const char *verb(uint64_t kind)
{
	switch (kind) {
	case LK_ERR_DOUBLE_FREE:
		return "freed again";
	case LK_ERR_INVALID_FREE:
		return "freed";
	case LK_ERR_REALLOC_FREED:
		return "realloc'ed";
	case LK_ERR_UAF_READ:
		return "read";
	case LK_ERR_UAF_WRITE:
		return "written";
	default:
		return "accessed";
	}
}

static void stack_text(FILE *f, const char *what, const struct lk_section_stack *s,
		       const char *none)
{
	fprintf(f, "  %s:\n", what);
	if (s && s->n)
		lk_text_stack(f, (const struct lk_sym_frame *const *)s->frames, NULL, s->n, s->site,
			      1);
	else
		fprintf(f, "    %s\n", s ? "(no stack)" : none);
}

/* Where addr lies against its block: "the start of", "16 bytes inside", "1 byte past the end of",
 * "8 bytes before". */
static void where_text(FILE *f, const struct lk_error_event *e)
{
	uint64_t a = e->addr, b = e->block_addr, end = b + e->block_size;

	if (!b) {
		fputs("in no block of leek's arena", f);
		return;
	}
	if (a == b)
		fputs("the start of", f);
	else if (a < b)
		fprintf(f, "%" PRIu64 " byte%s before", b - a, b - a == 1 ? "" : "s");
	else if (a < end)
		fprintf(f, "%" PRIu64 " byte%s inside", a - b, a - b == 1 ? "" : "s");
	else
		fprintf(f, "%" PRIu64 " byte%s past the end of", a - end + 1,
			a - end + 1 == 1 ? "" : "s");
	fprintf(f, " a block of %" PRIu64 " bytes at 0x%" PRIx64, e->block_size, b);
	if (e->block)
		fprintf(f, " (block %" PRIu64 ")", e->block);
}

void lk_errors_text(FILE *f, const struct lk_errors_section *s, bool stacks)
{
	char a[48];

	(void)stacks; /* an error's stacks are always whole */
	lk_section_text_head(f, "memory errors", &s->head);
	if (!s->errors) {
		fputs("no errors caught\n", f);
		return;
	}
	fprintf(f, "%" PRIu64 " error%s caught", s->errors, s->errors == 1 ? "" : "s");
	if (s->nerrors < s->errors)
		fprintf(f, ", the first %zu shown", s->nerrors);
	fputs(s->head.trailer ? "\n" : "; the process did not exit normally (no trailer)\n", f);
	for (size_t i = 0; i < s->nerrors; i++) {
		const struct lk_errors_event *x = &s->events[i];
		fprintf(f, "\nerror %zu: %s of 0x%" PRIx64 " at %s, thread %" PRIu64 "\n", i + 1,
			lk_error_kind_name(x->e.kind), x->e.addr,
			lk_fmt_time(a, sizeof(a), (double)x->e.t_ns), x->e.tid);
		fputs("  the address is ", f);
		where_text(f, &x->e);
		fputc('\n', f);
		stack_text(f, verb(x->e.kind), x->at, "(not recorded)");
		if (x->e.block_addr) {
			stack_text(f, "allocated", x->alloc, "(not recorded)");
			if (x->e.kind != LK_ERR_INVALID_FREE && x->e.kind != LK_ERR_OVERFLOW &&
			    x->e.kind != LK_ERR_UNDERFLOW)
				stack_text(f, "freed", x->free,
					   "(not recorded: `leek run --free-stacks` records it)");
		}
	}
}

static void addr_json(struct lk_json *j, const char *k, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
	lk_json_str(j, k, v ? buf : NULL);
}

void lk_errors_json_begin(struct lk_json *j, FILE *f)
{
	lk_section_json_begin(j, f, "leek-errors");
	lk_section_json_processes(j);
}

void lk_errors_json(struct lk_json *j, const struct lk_errors_section *s)
{
	lk_section_json_head(j, &s->head);
	lk_json_u64(j, "errors_total", s->errors);
	lk_json_key(j, "errors");
	lk_json_open(j, '[', false);
	for (size_t i = 0; i < s->nerrors; i++) {
		const struct lk_errors_event *x = &s->events[i];
		lk_json_open(j, '{', false);
		lk_json_str(j, "kind", lk_error_kind_name(x->e.kind));
		lk_json_num(j, "time_s", (double)x->e.t_ns / 1e9, 6);
		lk_json_u64(j, "tid", x->e.tid);
		addr_json(j, "address", x->e.addr);
		addr_json(j, "block_address", x->e.block_addr);
		lk_json_u64(j, "block_size", x->e.block_size);
		lk_json_u64(j, "block", x->e.block);
		if (x->e.block_addr)
			lk_json_num(j, "offset", (double)(int64_t)(x->e.addr - x->e.block_addr), 0);
		else {
			lk_json_value(j, "offset");
			fputs("null", j->f);
		}
		lk_section_json_site(j, "site", x->at);
		lk_section_json_site(j, "alloc_site", x->alloc);
		lk_section_json_site(j, "free_site", x->free);
		lk_section_json_stack(j, "stack_id", "stack", x->at);
		lk_section_json_stack(j, "alloc_stack_id", "alloc_stack", x->alloc);
		lk_section_json_stack(j, "free_stack_id", "free_stack", x->free);
		lk_json_close(j, '}');
	}
	lk_json_close(j, ']');
	lk_json_close(j, '}');
}

void lk_errors_json_end(struct lk_json *j)
{
	lk_section_json_end(j);
}
