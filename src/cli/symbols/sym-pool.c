/* sym-pool.c: the symbolizer's memory (sym-internal.h). Answers, names and paths live in a pool
 * of 64 KiB chunks freed only with the symbolizer, because callers keep the pointers; strings are
 * interned, so that a name met at a thousand addresses is kept once. Everything here comes from
 * the memory budget (budget.h): its size follows the distinct addresses a profile names.
 *
 * Never: free a pool allocation before lk_symbolizer_free, or print (warnings are kept for the
 * caller).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "sym-internal.h"

/* What a helper's failed allocation leaves for the lookup: errno E2BIG is the budget's. */
void lk_sym_set_nomem(struct lk_symbolizer *s)
{
	s->nomem = errno == E2BIG ? -E2BIG : -ENOMEM;
}

/* The error of a helper that returned NULL. */
int lk_sym_nomem_error(const struct lk_symbolizer *s)
{
	return s->nomem ? s->nomem : -ENOMEM;
}

void *lk_sym_alloc(struct lk_symbolizer *s, size_t size)
{
	struct chunk *c = s->chunks;

	size = (size + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
	if (!c || c->size - c->used < size) {
		size_t cap = size > CHUNK_SIZE ? size : CHUNK_SIZE;
		c = lk_budget_malloc(sizeof(*c) + cap);
		if (!c) {
			lk_sym_set_nomem(s);
			return NULL;
		}
		*c = (struct chunk){ .next = s->chunks, .size = cap };
		s->chunks = c;
	}
	c->used += size;
	return (char *)c->data + c->used - size;
}

static uint64_t hash_bytes(const char *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */

	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)p[i]) * 0x100000001b3ull;
	return h;
}

/* The one copy of str[0..len) (which holds no NUL); NULL when out of memory. */
const char *lk_sym_intern_n(struct lk_symbolizer *s, const char *str, size_t len)
{
	uint64_t h = hash_bytes(str, len);
	size_t i, mask;

	if ((s->strs_count + 1) * 2 > s->strs_size) {
		size_t size = s->strs_size ? s->strs_size * 2 : 1024;
		struct strslot *v = lk_budget_calloc(size, sizeof(*v));
		if (!v) {
			lk_sym_set_nomem(s);
			return NULL;
		}
		for (i = 0; i < s->strs_size; i++) {
			if (!s->strs[i].s)
				continue;
			size_t j = s->strs[i].hash & (size - 1);
			while (v[j].s)
				j = (j + 1) & (size - 1);
			v[j] = s->strs[i];
		}
		lk_budget_free(s->strs, s->strs_size * sizeof(*v));
		s->strs = v;
		s->strs_size = size;
	}
	mask = s->strs_size - 1;
	for (i = h & mask; s->strs[i].s; i = (i + 1) & mask)
		if (s->strs[i].hash == h && strncmp(s->strs[i].s, str, len) == 0 &&
		    s->strs[i].s[len] == 0)
			return s->strs[i].s;
	char *copy = lk_sym_alloc(s, len + 1);
	if (!copy)
		return NULL;
	memcpy(copy, str, len);
	copy[len] = 0;
	s->strs[i] = (struct strslot){ copy, h };
	s->strs_count++;
	return copy;
}

const char *lk_sym_intern(struct lk_symbolizer *s, const char *str)
{
	return lk_sym_intern_n(s, str, strlen(str));
}

const char *lk_sym_internf(struct lk_symbolizer *s, const char *fmt, ...)
{
	const char *r = NULL;
	char *str;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&str, fmt, ap) >= 0) {
		r = lk_sym_intern(s, str);
		free(str);
	} else {
		s->nomem = -ENOMEM;
	}
	va_end(ap);
	return r;
}

/* Adds the malloc'ed warning str (NULL: out of memory) to the list, which takes it. */
void lk_sym_keep_warning(struct lk_symbolizer *s, char *str)
{
	int r = str ? lk_budget_grow((void **)&s->warnings, &s->warnings_cap, s->n_warnings + 1,
			   sizeof(char *))
		    : -ENOMEM;

	if (r < 0) {
		free(str);
		s->nomem = r;
		return;
	}
	s->warnings[s->n_warnings++] = str;
}

void lk_sym_warn(struct lk_symbolizer *s, const char *fmt, ...)
{
	char *str;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&str, fmt, ap) < 0)
		str = NULL;
	va_end(ap);
	if (str && s->holding) {
		free(s->holding->held);
		s->holding->held = str;
		return;
	}
	lk_sym_keep_warning(s, str);
}
