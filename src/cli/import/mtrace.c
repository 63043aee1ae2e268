/* mtrace.c: one line of glibc's mtrace output to a record.
 *
 * The grammar is glibc's writer (malloc/mtrace-impl.c, 2.34 and later; malloc/mtrace.c before),
 * as its reader, the mtrace Perl script, splits it on blanks:
 *
 *   = Start | = End                 tracing began, ended
 *   [@ CALLER] + ADDR SIZE          malloc, calloc, memalign, realloc(NULL, n); ADDR (nil): failed
 *   [@ CALLER] - ADDR               free, realloc(p, 0)
 *   [@ CALLER] < OLD                a realloc's old block ...
 *   [@ CALLER] > NEW SIZE           ... and its new one, on the next line
 *   [@ CALLER] ! OLD SIZE           a realloc that failed: OLD stays allocated
 *
 * ADDR and SIZE are %p and %#lx: "0x" and hex digits ("(nil)" for a null pointer, "0" for a
 * size of 0). CALLER is parsed later, once per distinct caller (callers.c).
 *
 * Never: accept a line with a field missing or one too many, or a number that overflows.
 */
#include <errno.h>
#include <string.h>

#include "import.h"

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* The next blank-separated token of [*p, end): its start and length, 0 length at the end. */
static size_t token(const char **p, const char *end, const char **start)
{
	const char *s = *p;

	while (s < end && is_blank(*s))
		s++;
	*start = s;
	while (s < end && !is_blank(*s))
		s++;
	*p = s;
	return (size_t)(s - *start);
}

/* "0x1a2b" (or "0" for %#lx of zero; "(nil)" for a null %p): 0 or -EINVAL. */
static int parse_hex(const char *s, size_t n, uint64_t *ret)
{
	uint64_t v = 0;

	if (n == 5 && memcmp(s, "(nil)", 5) == 0) {
		*ret = 0;
		return 0;
	}
	if (n == 1 && s[0] == '0') {
		*ret = 0;
		return 0;
	}
	if (n < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || n > 2 + 16)
		return -EINVAL;
	for (size_t i = 2; i < n; i++) {
		int d = lk_hex_digit(s[i]);
		if (d < 0)
			return -EINVAL;
		v = v << 4 | (unsigned)d;
	}
	*ret = v;
	return 0;
}

int lk_mtrace_parse(const char *line, size_t len, struct lk_import_rec *rec, const char **why)
{
	const char *p = line, *end = line + len, *t, *a, *b, *extra;
	size_t n, na, nb;

	*rec = (struct lk_import_rec){.ts_ns = UINT64_MAX};
	n = token(&p, end, &t);
	if (n == 0)
		return 0;
	if (n == 1 && t[0] == '@') {
		n = token(&p, end, &t);
		if (n == 0) {
			*why = "'@' without a caller";
			return -EINVAL;
		}
		rec->caller = t;
		rec->caller_len = n;
		n = token(&p, end, &t);
	}
	if (n != 1) {
		*why = n == 0 ? "a caller without a record"
		              : "not an mtrace record (+, -, <, >, !, =)";
		return -EINVAL;
	}
	if (t[0] == '=') {
		n = token(&p, end, &a);
		if (n == 0) {
			*why = "'=' without Start or End";
			return -EINVAL;
		}
		rec->op = LK_OP_MARK;
		rec->mark = n == 5 && memcmp(a, "Start", 5) == 0 ? "Start"
		            : n == 3 && memcmp(a, "End", 3) == 0 ? "End"
		                                                 : "mark";
		return 1;
	}
	na = token(&p, end, &a);
	nb = token(&p, end, &b);
	if (token(&p, end, &extra) != 0) {
		*why = "more fields than the record has";
		return -EINVAL;
	}
	switch (t[0]) {
	case '+':
		rec->op = LK_OP_ALLOC;
		break;
	case '-':
		rec->op = LK_OP_FREE;
		break;
	case '<':
		rec->op = LK_OP_REALLOC_FROM;
		break;
	case '>':
		rec->op = LK_OP_REALLOC_TO;
		break;
	case '!':
		rec->op = LK_OP_REALLOC_FAIL;
		break;
	default:
		*why = "not an mtrace record (+, -, <, >, !, =)";
		return -EINVAL;
	}
	bool sized = t[0] == '+' || t[0] == '>' || t[0] == '!';
	if (na == 0 || (sized && nb == 0)) {
		*why = sized ? "an address and a size wanted" : "an address wanted";
		return -EINVAL;
	}
	if (!sized && nb != 0) {
		*why = "more fields than the record has";
		return -EINVAL;
	}
	if (parse_hex(a, na, &rec->addr) < 0) {
		*why = "the address is not a hex number (0x...) or (nil)";
		return -EINVAL;
	}
	if (sized && parse_hex(b, nb, &rec->size) < 0) {
		*why = "the size is not a hex number (0x...)";
		return -EINVAL;
	}
	if (rec->op == LK_OP_REALLOC_FROM || rec->op == LK_OP_REALLOC_FAIL) {
		rec->old = rec->addr;
		rec->addr = 0;
	}
	return 1;
}
