/* out-tree.c: `leek report tree`, as text and as the JSON document's "tree" (docs/json.md).
 *
 * Text: a title with the total, then one line per node, the numbers in fixed columns on the left
 * (total, its 95% interval, its share of the view's total, its samples, self) and the frame on
 * the right, drawn as a tree with box characters, or ASCII with --ascii or outside a UTF-8
 * locale. JSON: nested NODE objects, one line each but for their children.
 *
 * Never: recurse (lk_tree_walk visits any depth), or print a string unescaped.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "out-format.h"
#include "report.h"

/* ---- text ---- */

struct text {
	FILE *f;
	const struct lk_report *r;
	double view_total;
	bool *last;      /* last[d]: the node on the current path at depth d is its parent's last */
	size_t nlast;
	const char *pipe, *blank, *tee, *elbow;
};

/* A figure: bytes in binary units, objects as a count. */
static const char *fmt_value(char *buf, size_t size, double v, bool objects)
{
	return objects ? lk_fmt_count(buf, size, v) : lk_fmt_bytes(buf, size, v);
}

static const char *fmt_ci(char *buf, size_t size, const struct lk_estimate *e, bool objects)
{
	char lo[32], hi[32];

	if (!objects || e->samples == 0 || e->lo == e->hi)
		return lk_fmt_interval(buf, size, e);
	snprintf(buf, size, "[%s, %s]", lk_fmt_count(lo, sizeof(lo), e->lo),
		 lk_fmt_count(hi, sizeof(hi), e->hi));
	return buf;
}

/* "~1.2 MiB", "-" for nothing */
static const char *fmt_est(char *buf, size_t size, const struct lk_estimate *e, bool objects)
{
	char v[32];

	if (e->samples == 0)
		snprintf(buf, size, "-");
	else
		snprintf(buf, size, "%s%s", e->too_few ? "~" : "",
			 fmt_value(v, sizeof(v), e->value, objects));
	return buf;
}

static void text_node(const struct lk_tree_node *n, unsigned depth, void *ctx)
{
	struct text *t = ctx;
	bool objects = t->r->opts.objects;
	struct lk_estimate total, self;
	char a[32], b[64], c[32];

	if (depth >= t->nlast) {
		size_t cap = 2 * depth + 16;
		bool *last = realloc(t->last, cap * sizeof(*last));
		if (last) {
			t->last = last;
			t->nlast = cap;
		}
	}
	if (depth < t->nlast)
		t->last[depth] = !n->next;
	lk_tree_total(t->r->tree, n, 0, &total);
	lk_tree_self(t->r->tree, n, 0, &self);
	fprintf(t->f, "%11s  %-22s %5.1f%% %8" PRIu64 " %11s  ",
		fmt_est(a, sizeof(a), &total, objects), fmt_ci(b, sizeof(b), &total, objects),
		t->view_total > 0 ? 100 * total.value / t->view_total : 0, total.samples,
		fmt_est(c, sizeof(c), &self, objects));
	if (!n->frame) {
		fputs("(all stacks)\n", t->f);
		return;
	}
	for (unsigned d = 1; d < depth; d++)
		fputs(d < t->nlast && t->last[d] ? t->blank : t->pipe, t->f);
	fputs(n->next ? t->tee : t->elbow, t->f);
	if (n->lines_differ) {
		struct lk_sym_frame fr = *n->frame;
		fr.line = 0; /* several lines: the file alone */
		lk_text_frame(t->f, &fr, false);
	} else
		lk_text_frame(t->f, n->frame, false);
	if (n->frame->inlined)
		fputs("  (inlined)", t->f);
	fputc('\n', t->f);
}

void lk_text_tree(FILE *f, const struct lk_report *r)
{
	const struct lk_estimate *total = r->opts.objects ? &r->view_objects : &r->view_bytes;
	const struct lk_tree_node *root = lk_tree_root(r->tree);
	struct text t = { .f = f, .r = r, .view_total = total->value };
	char a[32], b[64];

	if (r->opts.ascii) {
		t.pipe = "|  ", t.blank = "   ", t.tee = "|- ", t.elbow = "`- ";
	} else {
		t.pipe = "\u2502  ", t.blank = "   ", t.tee = "\u251c\u2500 ", t.elbow = "\u2514\u2500 ";
	}
	fprintf(f, "\ntree, %s: ", r->opts.inverted ? "bottom-up (each frame above its callers)"
						   : "top-down (callers above their callees)");
	lk_text_view_title(f, r);
	fputs(r->opts.objects ? ", in objects\ntotal " : "\ntotal ", f);
	if (r->opts.objects)
		fprintf(f, "%s%s objects %s, %" PRIu64 " samples", total->too_few ? "~" : "",
			lk_fmt_count(a, sizeof(a), total->value), fmt_ci(b, sizeof(b), total, true),
			total->samples);
	else
		lk_text_estimate(f, total);
	fprintf(f, "; %zu node%s", lk_tree_nodes(r->tree), lk_tree_nodes(r->tree) == 1 ? "" : "s");
	if (r->stacks_filtered)
		fprintf(f, "; %zu stack%s left out by --focus/--ignore", r->stacks_filtered,
			r->stacks_filtered == 1 ? "" : "s");
	if (r->tree_pruned.nodes)
		fprintf(f, ".\n%zu more node%s below %.4g%% of the total left out (--min-share); the "
			"stacks that end in them hold %s", r->tree_pruned.nodes,
			r->tree_pruned.nodes == 1 ? "" : "s", 100 * r->opts.min_share,
			fmt_value(a, sizeof(a), r->tree_pruned.total, r->opts.objects));
	fprintf(f, ".\nself: %s; ~ marks estimates from too few samples.\n",
		r->opts.inverted ? "the stacks whose outermost frame it is"
				 : "what the frame's own calls of the allocator hold");
	if (!root->child) {
		fputs("\n  (no stack to show)\n", f);
		return;
	}
	fprintf(f, "\n%11s  %-22s %6s %8s %11s  %s\n", "total", "95% interval", "share", "samples",
		"self", "frame");
	lk_tree_walk(r->tree, text_node, NULL, &t);
	free(t.last);
}

/* ---- JSON ---- */

struct json_out {
	FILE *f;
	const struct lk_tree *tree;
	unsigned indent;
	double view_total;
};

static void json_estimate(FILE *f, const char *name, const struct lk_estimate *e)
{
	fprintf(f, ", \"%s\": ", name);
	lk_json_write_number(f, e->value, 0);
	fprintf(f, ", \"%s_ci95\": [", name);
	lk_json_write_number(f, e->lo, 0);
	fputs(", ", f);
	lk_json_write_number(f, e->hi, 0);
	fputc(']', f);
}

static void put_str(FILE *f, const char *key, const char *s)
{
	fprintf(f, "\"%s\": ", key);
	if (s)
		lk_json_write_string(f, s, strlen(s));
	else
		fputs("null", f);
}

static void json_node(const struct lk_tree_node *n, unsigned depth, void *ctx)
{
	const struct json_out *j = ctx;
	const struct lk_sym_frame *fr = n->frame;
	struct lk_estimate total, self;
	FILE *f = j->f;

	if (depth) /* the root is the value of "root" */
		fprintf(f, "%s\n%*s", n == n->parent->child ? "" : ",",
			2 * (int)(j->indent + depth), "");
	fputc('{', f);
	put_str(f, "function", fr ? fr->function : NULL);
	fputs(", ", f);
	put_str(f, "file", fr ? fr->file : NULL);
	if (fr && fr->line && !n->lines_differ)
		fprintf(f, ", \"line\": %" PRIu32 ", ", fr->line);
	else
		fputs(", \"line\": null, ", f);
	put_str(f, "module", fr ? fr->module : NULL);
	fprintf(f, ", \"inlined\": %s, \"allocator\": %s",
		fr && fr->inlined ? "true" : "false", fr && n->func & LK_FUNC_ALLOC ? "true" : "false");
	lk_tree_total(j->tree, n, 0, &total);
	lk_tree_self(j->tree, n, 0, &self);
	json_estimate(f, "total", &total);
	fprintf(f, ", \"samples\": %" PRIu64 ", \"too_few_samples\": %s, \"share\": ",
		total.samples, total.too_few ? "true" : "false");
	lk_json_write_number(f, j->view_total > 0 ? total.value / j->view_total : 0, 6);
	json_estimate(f, "self", &self);
	fprintf(f, ", \"self_samples\": %" PRIu64 ", \"children\": [%s", self.samples,
		n->child ? "" : "]}");
}

static void json_leave(const struct lk_tree_node *n, unsigned depth, void *ctx)
{
	const struct json_out *j = ctx;

	if (n->child)
		fprintf(j->f, "\n%*s]}", 2 * (int)(j->indent + depth), "");
}

void lk_json_tree(FILE *f, unsigned indent, const struct lk_report *r)
{
	const struct lk_estimate *total = r->opts.objects ? &r->view_objects : &r->view_bytes;
	struct json_out j = { .f = f, .tree = r->tree, .indent = indent,
			      .view_total = total->value };

	lk_tree_walk(r->tree, json_node, json_leave, &j);
}
