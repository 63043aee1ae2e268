/* callers.c: the callers of an mtrace trace, each distinct text kept once and parsed once.
 *
 * A trace names far fewer callers than it has lines (one per call site of malloc), so each
 * record carries only its caller's id, and the text is parsed into module, symbol and address
 * when it is first seen. The parse follows glibc's writer (malloc/mtrace-impl.c, tr_where):
 *
 *   MODULE:(SYM+OFF)[0xREL]   dladdr found a symbol: OFF in hex without 0x, sign + or -
 *   MODULE:[0xREL]            no symbol; REL = the caller - the module's dli_fbase
 *   [0xABS]                   dladdr found no module: the absolute address
 *
 * A text that fits none is kept as it is, with no module and no address: it is still a caller
 * to report, only not one to symbolize.
 *
 * Never: keep a caller twice, or let two texts share an id.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"

static uint64_t hash(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */

	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
	return h;
}

void lk_import_callers_init(struct lk_import_callers *cs)
{
	*cs = (struct lk_import_callers){0};
	lk_u64map_init(&cs->by_hash, SIZE_MAX);
}

void lk_import_callers_done(struct lk_import_callers *cs)
{
	for (size_t i = 1; i < cs->n; i++)
		free(cs->c[i].text);
	free(cs->c);
	lk_u64map_done(&cs->by_hash);
	*cs = (struct lk_import_callers){0};
}

static bool parse_hex(const char *s, const char *end, uint64_t *ret)
{
	uint64_t v = 0;

	if (end - s >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	if (s == end || end - s > 16)
		return false;
	for (; s < end; s++) {
		int d = lk_hex_digit(*s);
		if (d < 0)
			return false;
		v = v << 4 | (unsigned)d;
	}
	*ret = v;
	return true;
}

/* Fills module, symbol and addr from c->text, cutting the copy with NULs where it needs to. */
static void parse(struct lk_import_caller *c, size_t len)
{
	char *t = c->text, *open, *close, *paren, *cparen, *sign;

	c->binary = -1;
	close = len > 0 && t[len - 1] == ']' ? &t[len - 1] : NULL;
	open = close ? strrchr(t, '[') : NULL;
	if (!open || !parse_hex(open + 1, close, &c->addr))
		return;
	c->has_addr = true;
	if (open == t)
		return; /* "[0xABS]" */
	cparen = open[-1] == ')' ? open - 1 : NULL;
	paren = NULL;
	if (cparen)
		for (char *q = cparen; q > t; q--)
			if (q[-1] == '(') {
				paren = q - 1;
				break;
			}
	char *colon = paren ? paren - 1 : open - 1;
	if (colon < t || *colon != ':')
		return; /* not glibc's shape: a caller, but nothing to resolve */
	if (paren) {
		sign = NULL;
		for (char *q = cparen - 1; q > paren; q--)
			if (*q == '+' || *q == '-') {
				sign = q;
				break;
			}
		if (sign && sign > paren + 1 && parse_hex(sign + 1, cparen, &c->sym_offset)) {
			if (*sign == '-')
				c->sym_offset = -c->sym_offset;
			*sign = '\0';
			c->symbol = paren + 1;
		}
	}
	*colon = '\0';
	c->module = t;
}

int lk_import_callers_intern(struct lk_import_callers *cs, const char *text, size_t len,
                             uint64_t *ret_id)
{
	uint64_t key = hash(text, len), *v;
	int r;

	/* Texts of equal hash take the next keys, in order: a lookup walks them. */
	while ((v = lk_u64map_get(&cs->by_hash, key))) {
		const struct lk_import_caller *c = &cs->c[*v];
		if (c->len == len && memcmp(c->orig, text, len) == 0) {
			*ret_id = *v;
			return 0;
		}
		key++;
	}
	if (cs->n == 0)
		cs->n = 1; /* id 0: none */
	if (cs->n >= cs->cap) {
		size_t cap = cs->cap ? 2 * cs->cap : 64;
		struct lk_import_caller *c = realloc(cs->c, cap * sizeof(*c));
		if (!c)
			return -ENOMEM;
		cs->c = c;
		cs->cap = cap;
	}
	struct lk_import_caller *c = &cs->c[cs->n];
	*c = (struct lk_import_caller){.len = len, .binary = -1};
	/* Two copies: orig for comparisons, text cut into module and symbol. */
	c->text = malloc(2 * len + 2);
	if (!c->text)
		return -ENOMEM;
	memcpy(c->text, text, len);
	c->text[len] = '\0';
	c->orig = c->text + len + 1;
	memcpy(c->orig, text, len);
	c->orig[len] = '\0';
	r = lk_u64map_put(&cs->by_hash, key, cs->n);
	if (r < 0) {
		free(c->text);
		return r;
	}
	parse(c, len);
	*ret_id = cs->n++;
	return 0;
}
