/* kdump.c: one line of FreeBSD's `kdump` output to a record.
 *
 * kdump prints each ktrace record on a line that starts with its process, the thread with -H,
 * the command's name, a timestamp with -T, -d or -E, and the record's type:
 *
 *   PID [TID] COMMAND [SECONDS.MICROS] TYPE  TEXT
 *
 * The malloc records are the utrace(2) records of FreeBSD's malloc (MALLOC_OPTIONS=U for
 * phkmalloc, opt.utrace for jemalloc), which kdump decodes (usr.bin/kdump/utrace.c) as:
 *
 *   USER  malloc_init()
 *   USER  0xADDR = malloc(N)            ADDR 0x0: the allocation failed
 *   USER  free(0xADDR)
 *   USER  0xNEW = realloc(0xOLD, N)     OLD 0x0: a malloc; NEW 0x0: failed, OLD stays
 *
 * Every other record (system calls, names, rtld's utrace records, other USER records shown as
 * hex dumps) and the lines that continue one (a hex dump's, a quoted GIO buffer's, indented) are
 * no malloc records: 0, counted by the caller as skipped. A line that starts as a malloc record
 * and does not end as one is malformed.
 *
 * Never: take a number that overflows, or a record with text after its closing parenthesis.
 */
#include <errno.h>
#include <string.h>

#include "import.h"

#define MAX_HEAD 8 /* tokens before the type: pid, tid, a command with blanks, the time */

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static bool all_digits(const char *s, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/* kdump's record types (usr.bin/kdump/kdump.c, ktr_header). */
static bool is_type(const char *s, size_t n)
{
	static const char *const types[] = {"CALL", "RET",   "NAMI",     "GIO",  "PSIG", "CSW",
	                                    "USER", "STRU",  "SCTL",     "CAP",  "EMUL", "PFLT",
	                                    "PRET", "FAULT", "FAULTEND", "SYSC", "ACPT", "PROC"};

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strlen(types[i]) == n && memcmp(types[i], s, n) == 0)
			return true;
	return false;
}

static int parse_dec(const char *s, size_t n, uint64_t *ret)
{
	uint64_t v = 0;

	if (!all_digits(s, n))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (v > (UINT64_MAX - 9) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*ret = v;
	return 0;
}

/* "SECONDS.FRACTION" to ns; -EINVAL if it is not one. */
static int parse_time(const char *s, size_t n, uint64_t *ret)
{
	const char *dot = memchr(s, '.', n);
	uint64_t sec, frac = 0;
	size_t nf;

	if (!dot || parse_dec(s, (size_t)(dot - s), &sec) < 0 || sec > UINT64_MAX / 1000000000u)
		return -EINVAL;
	nf = n - (size_t)(dot - s) - 1;
	if (!all_digits(dot + 1, nf) || nf > 9)
		return -EINVAL;
	for (size_t i = 0; i < 9; i++)
		frac = frac * 10 + (i < nf ? (uint64_t)(dot[1 + i] - '0') : 0);
	*ret = sec * 1000000000u + frac;
	return 0;
}

/* A %p as FreeBSD prints it, "0x1a2b" ("0x0" for NULL), at the start of *p; advances *p. */
static int take_ptr(const char **p, const char *end, uint64_t *ret)
{
	const char *s = *p;
	uint64_t v = 0;
	size_t digits = 0;

	if (end - s < 3 || s[0] != '0' || s[1] != 'x')
		return -EINVAL;
	for (s += 2; s < end; s++, digits++) {
		int d = lk_hex_digit(*s);
		if (d < 0)
			break;
		if (digits >= 16)
			return -ERANGE;
		v = v << 4 | (unsigned)d;
	}
	if (digits == 0)
		return -EINVAL;
	*p = s;
	*ret = v;
	return 0;
}

static int take_dec(const char **p, const char *end, uint64_t *ret)
{
	const char *s = *p;

	while (s < end && *s >= '0' && *s <= '9')
		s++;
	if (parse_dec(*p, (size_t)(s - *p), ret) < 0)
		return -EINVAL;
	*p = s;
	return 0;
}

/* Takes the literal lit at *p (blanks before it skipped). */
static bool take(const char **p, const char *end, const char *lit)
{
	const char *s = *p;
	size_t n = strlen(lit);

	while (s < end && is_blank(*s))
		s++;
	if ((size_t)(end - s) < n || memcmp(s, lit, n) != 0)
		return false;
	*p = s + n;
	return true;
}

static bool at_end(const char *p, const char *end)
{
	while (p < end && is_blank(*p))
		p++;
	return p == end;
}

/* The text of a USER record: 1, 0 for one that is not malloc's, -EINVAL. */
static int parse_user(const char *p, const char *end, struct lk_import_rec *rec, const char **why)
{
	const char *s = p;

	*why = "a malloc record cut short or with text after it";
	if (take(&s, end, "malloc_init()")) {
		if (!at_end(s, end))
			return -EINVAL;
		rec->op = LK_OP_MARK;
		rec->mark = "malloc_init";
		return 1;
	}
	s = p;
	if (take(&s, end, "free(")) {
		if (take_ptr(&s, end, &rec->addr) < 0 || !take(&s, end, ")") || !at_end(s, end))
			return -EINVAL;
		rec->op = LK_OP_FREE;
		return 1;
	}
	s = p;
	if (!take(&s, end, "0x"))
		return 0; /* rtld's records ("RTLD: ..."), another utrace's hex dump */
	s -= 2;
	if (take_ptr(&s, end, &rec->addr) < 0 || !take(&s, end, "="))
		return -EINVAL;
	if (take(&s, end, "malloc(")) {
		rec->op = LK_OP_ALLOC;
	} else if (take(&s, end, "realloc(")) {
		rec->op = LK_OP_REALLOC;
		if (take_ptr(&s, end, &rec->old) < 0 || !take(&s, end, ","))
			return -EINVAL;
		while (s < end && is_blank(*s))
			s++;
	} else {
		return -EINVAL;
	}
	if (take_dec(&s, end, &rec->size) < 0 || !take(&s, end, ")") || !at_end(s, end))
		return -EINVAL;
	return 1;
}

int lk_kdump_parse(const char *line, size_t len, struct lk_import_rec *rec, const char **why)
{
	const char *p = line, *end = line + len, *tok[MAX_HEAD], *t;
	size_t tlen[MAX_HEAD], n = 0;

	*rec = (struct lk_import_rec){.ts_ns = UINT64_MAX};
	while (p < end && is_blank(*p))
		p++;
	if (p == end)
		return 0;
	/* The head, up to the type. */
	for (;;) {
		while (p < end && is_blank(*p))
			p++;
		t = p;
		while (p < end && !is_blank(*p))
			p++;
		if (t == p)
			break;
		if (n >= 2 && is_type(t, (size_t)(p - t)))
			goto typed;
		if (n == MAX_HEAD)
			break;
		tok[n] = t;
		tlen[n++] = (size_t)(p - t);
	}
	/* No type: an indented line continues the record before it (a hex dump, a GIO buffer). */
	if (line[0] == ' ' || line[0] == '\t') {
		if (!all_digits(tok[0], tlen[0]))
			return 0;
	}
	*why = "not a kdump record (PID COMMAND [TIME] TYPE ...)";
	return -EINVAL;

typed:
	if (parse_dec(tok[0], tlen[0], &rec->pid) < 0) {
		*why = "the process id is not a number";
		return -EINVAL;
	}
	if (n >= 3 && parse_time(tok[n - 1], tlen[n - 1], &rec->ts_ns) == 0)
		n--;
	if (n >= 3 && all_digits(tok[1], tlen[1]))
		parse_dec(tok[1], tlen[1], &rec->tid); /* -H: the thread */
	if (p - t != 4 || memcmp(t, "USER", 4) != 0)
		return 0; /* a system call, a name lookup, ... */
	return parse_user(p, end, rec, why);
}
