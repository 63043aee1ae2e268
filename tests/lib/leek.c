/* leek.c: the leek binary under test (see leek.h). meson passes LEEK_BIN and, in a build whose
 * tests run programs under libleek.so, LIBLEEK_PATH.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "leek.h"

#ifndef LEEK_BIN
#error "meson passes LEEK_BIN, the built leek"
#endif

#define MAX_ARGS 40
#define MAX_ENV  16

const char *const leek_bin = LEEK_BIN;
#ifdef LIBLEEK_PATH
const char *const leek_library = LIBLEEK_PATH;
#else
const char *const leek_library = NULL;
#endif

/* Whether env (n entries) sets the variable that entry e sets. */
static bool set_in(const char *const *env, size_t n, const char *e)
{
	size_t len = strcspn(e, "=") + 1;

	for (size_t i = 0; i < n; i++)
		if (!strncmp(env[i], e, len))
			return true;
	return false;
}

void leek_start_with(struct proc *p, const char *dir, const char *const *args,
		     const struct proc_opts *o)
{
	static const char *const defaults[] = {
		"LC_ALL=C", /* the messages and number formats of any machine */
#ifdef LIBLEEK_PATH
		"LEEK_LIBRARY=" LIBLEEK_PATH,
#endif
		NULL,
	};
	const char *argv[MAX_ARGS] = { LEEK_BIN }, *envp[MAX_ENV];
	size_t n = 1, ne = 0;

	for (size_t i = 0; args[i]; i++) {
		if (n + 1 >= MAX_ARGS)
			FAIL("too many arguments for leek");
		argv[n++] = args[i];
	}
	argv[n] = NULL;
	for (size_t i = 0; o->env && o->env[i]; i++) {
		if (ne + 3 >= MAX_ENV)
			FAIL("too many variables for leek");
		envp[ne++] = o->env[i];
	}
	for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]) && defaults[i]; i++)
		if (!set_in(envp, ne, defaults[i]))
			envp[ne++] = defaults[i];
	envp[ne] = NULL;
	struct proc_opts with = *o;
	with.env = envp;
	proc_start_with(p, dir, argv, &with);
}

void leek_start(struct proc *p, const char *dir, const char *const *env, const char *const *args,
		unsigned timeout)
{
	leek_start_with(p, dir, args, &(struct proc_opts){ .env = env, .timeout = timeout });
}

void leek_exec(struct proc *p, const char *dir, const char *const *env, const char *const *args,
	       unsigned timeout)
{
	leek_start(p, dir, env, args, timeout);
	proc_wait(p);
}

bool leek_says_offset(const char *msg, uint64_t n)
{
	char want[40];
	size_t len;

	len = (size_t)snprintf(want, sizeof(want), "offset %" PRIu64, n);
	for (const char *s = msg; (s = strstr(s, want)); s++)
		if (s[len] < '0' || s[len] > '9')
			return true;
	return false;
}
