/* demangle.c: C++ and Rust symbol names as people read them (sym-internal.h).
 *
 * C++ through the C++ runtime's __cxa_demangle, found in this process or loaded once; Rust's
 * legacy mangling is C++-shaped, and its hash suffix and escapes are undone here.
 *
 * Never: unload the C++ runtime once loaded (that is not safe), or return a name that is not in
 * the symbolizer's pool.
 */
#include <ctype.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sym-internal.h"

typedef char *demangle_fn(const char *mangled, char *buf, size_t *len, int *status);
static demangle_fn *demangler;
static pthread_once_t demangler_once = PTHREAD_ONCE_INIT;

static void find_demangler(void)
{
	void *h;

	/* The C++ runtime, if this process has one; else load it (a C program has none), and keep
	 * it: unloading a C++ runtime is not safe. */
	demangler = (demangle_fn *)dlsym(RTLD_DEFAULT, "__cxa_demangle");
	if (!demangler && (h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL)))
		demangler = (demangle_fn *)dlsym(h, "__cxa_demangle");
}

/* Rust's legacy mangling ends every path with a hash, "::h0123456789abcdef": drop it. Whether
 * there was one: the name is Rust's. */
static bool strip_rust_hash(char *d)
{
	size_t n = strlen(d);

	if (n < 19 || memcmp(d + n - 19, "::h", 3) != 0)
		return false;
	for (size_t i = n - 16; i < n; i++)
		if (!isxdigit((unsigned char)d[i]))
			return false;
	d[n - 19] = 0;
	return true;
}

/* Rust's legacy mangling spells what a C++ name cannot hold with escapes: "$LT$" for '<', "$u20$"
 * for a space, ".." for "::", and a component that starts with one is prefixed with '_'
 * (rustc-demangle's rules). Decoded in place: "_$LT$alloc..vec..Vec$LT$T$GT$$u20$as$u20$..."
 * is "<alloc::vec::Vec<T> as ...". An escape it does not know stays as it is. */
static void rust_unescape(char *d)
{
	static const struct {
		char esc[5], c;
	} named[] = { { "$SP$", '@' }, { "$BP$", '*' }, { "$RF$", '&' }, { "$LT$", '<' },
		      { "$GT$", '>' }, { "$LP$", '(' }, { "$RP$", ')' }, { "$C$", ',' } };
	char *w = d;
	const char *r = d;

	while (*r) {
		bool start = r == d || (r - d >= 2 && r[-1] == ':' && r[-2] == ':');
		if (start && r[0] == '_' && r[1] == '$') {
			r++;
			continue;
		}
		if (r[0] == '.' && r[1] == '.') {
			*w++ = ':';
			*w++ = ':';
			r += 2;
			continue;
		}
		if (*r == '$') {
			size_t i, len = 0;
			for (i = 0; i < sizeof(named) / sizeof(named[0]); i++)
				if (!strncmp(r, named[i].esc, len = strlen(named[i].esc)))
					break;
			if (i < sizeof(named) / sizeof(named[0])) {
				*w++ = named[i].c;
				r += len;
				continue;
			}
			unsigned v;
			int n = 0;
			if (r[1] == 'u' && sscanf(r + 2, "%2x$%n", &v, &n) == 1 && n == 3 && v >= 0x20 &&
			    v < 0x7f) {
				*w++ = (char)v;
				r += 2 + n;
				continue;
			}
		}
		*w++ = *r++;
	}
	*w = 0;
}

/* C++ and legacy Rust names demangled; any other name as it is. rustc adds ".llvm.<digits>" to
 * some names, which the C++ demangler rejects: demangled without it. */
const char *lk_sym_demangle(struct lk_symbolizer *s, const char *name, const char **raw)
{
	const char *same;

	if (strncmp(name, "_Z", 2) == 0) {
		pthread_once(&demangler_once, find_demangler);
		const char *llvm = strstr(name, ".llvm.");
		char *bare = llvm ? strndup(name, (size_t)(llvm - name)) : NULL;
		int status = -1;
		char *d = demangler ? demangler(bare ? bare : name, NULL, NULL, &status) : NULL;
		free(bare);
		if (d && status == 0) {
			if (strip_rust_hash(d))
				rust_unescape(d);
			const char *r = lk_sym_intern(s, d);
			free(d);
			if (raw)
				*raw = lk_sym_intern(s, name);
			return r;
		}
		free(d);
	}
	same = lk_sym_intern(s, name);
	if (raw)
		*raw = same;
	return same;
}
