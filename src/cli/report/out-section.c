/* out-section.c: the parts of `leek report frees` and `leek report errors` that print the same
 * (section.h): the text heading, the JSON document around the processes, a process's header
 * fields, and a stack or its site in JSON (docs/json.md, "leek-frees" and "leek-errors").
 *
 * Never: print anything but the report; leave a frame's strings unescaped.
 */
#include <inttypes.h>

#include "out-format.h"
#include "report.h"
#include "section.h"

void lk_section_text_head(FILE *f, const char *title, const struct lk_section_head *h)
{
	char a[48];

	fprintf(f, "%s: %s (pid %" PRIu32 ", ", title, h->path, h->pid);
	lk_text_escaped(f, h->exe);
	if (h->period <= 1)
		fputs(", exact)\n", f);
	else
		fprintf(f, ", period %s)\n", lk_fmt_bytes(a, sizeof(a), (double)h->period));
}

void lk_section_json_begin(struct lk_json *j, FILE *f, const char *format)
{
	lk_json_init(j, f);
	lk_json_open(j, '{', false);
	lk_json_str(j, "format", format);
	lk_json_u64(j, "version", 1);
}

void lk_section_json_processes(struct lk_json *j)
{
	lk_json_key(j, "processes");
	lk_json_open(j, '[', false);
}

void lk_section_json_end(struct lk_json *j)
{
	lk_json_close(j, ']');
	lk_json_close(j, '}');
	fputc('\n', j->f);
}

void lk_section_json_head(struct lk_json *j, const struct lk_section_head *h)
{
	lk_json_open(j, '{', false);
	lk_json_str(j, "path", h->path);
	lk_json_u64(j, "pid", h->pid);
	lk_json_str(j, "exe", h->exe);
	lk_json_u64(j, "period", h->period);
	lk_json_bool(j, "complete", h->trailer);
}

/* key: null for a stack with no frames (the event had none, or the filter left none): true. */
static bool null_stack(struct lk_json *j, const char *key, const struct lk_section_stack *s)
{
	if (s && s->n)
		return false;
	lk_json_value(j, key);
	fputs("null", j->f);
	return true;
}

void lk_section_json_site(struct lk_json *j, const char *key, const struct lk_section_stack *s)
{
	if (null_stack(j, key, s))
		return;
	lk_json_key(j, key);
	lk_json_open(j, '{', true);
	lk_json_frame_key(j, s->frames[s->site]);
	lk_json_close(j, '}');
}

/* The frames as `leek report`'s stacks (out-json.c), with no wrapper marked: a section's stacks
 * carry no function flags. */
void lk_section_json_stack(struct lk_json *j, const char *id_key, const char *key,
			   const struct lk_section_stack *s)
{
	lk_json_u64(j, id_key, s ? s->id : 0);
	if (!null_stack(j, key, s))
		lk_json_stack_named(j, key, (const struct lk_sym_frame *const *)s->frames, NULL,
				    s->n, s->site);
}
