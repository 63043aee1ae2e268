/* config.c: reads the LEEK_* variables once, at start-up (table: src/common/options.h).
 *
 * Runs inside the first malloc, so it uses getenv (which does not allocate) and its own number
 * parser. A value it cannot use falls back to the default, or to the nearest value in range, and
 * says so in one line on stderr (unless LEEK_QUIET=1): the program must run whatever the
 * environment says, and a typo must not go unnoticed.
 *
 * In secure-execution mode (AT_SECURE: a setuid or setgid program, or one given file
 * capabilities, loaded with libleek through /etc/ld.so.preload or a DT_NEEDED entry) the
 * environment belongs to a user the program does not trust: no LEEK_* variable is read, and
 * libleek only forwards to the real allocator (lk_cfg.secure; docs/design.md, "Threat model").
 *
 * Never: allocate, read a LEEK_* variable in secure-execution mode, or stop the program for a
 * value it cannot use.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "options.h"
#include "preload.h"

struct lk_config lk_cfg;

/* The LEEK_* entries of the initial environment, NUL-separated, for a first malloc that comes
 * before libc has set environ: one from the executable's .preinit_array runs before libc.so's
 * initialiser (glibc: csu/init-first.c sets __environ there), and getenv then finds nothing.
 * /proc/self/environ is the block that envp points to. Only LEEK_* entries are kept, so the
 * buffer is bounded whatever the size of the environment. */
static char early_env[2 * LK_MAX_PATH];
static size_t early_len;

static void early_env_load(void)
{
	char buf[512];
	size_t w = 0, pos = 0; /* pos: offset in the current entry */
	bool keep = true;
	ssize_t n;
	int fd = open("/proc/self/environ", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			char c = buf[i];
			if (pos < 5 && c != "LEEK_"[pos])
				keep = false;
			if (keep && w < sizeof(early_env))
				early_env[w++] = c;
			else
				keep = false;
			pos++;
			if (c == 0) {
				if (keep)
					early_len = w; /* the whole entry fitted */
				w = early_len;
				keep = true;
				pos = 0;
			}
		}
	}
	close(fd);
}

static const char *env(const char *name)
{
	extern char **environ;
	size_t len = strlen(name);

	if (environ)
		return getenv(name);
	for (size_t i = 0; i < early_len; i += strlen(early_env + i) + 1)
		if (!strncmp(early_env + i, name, len) && early_env[i + len] == '=')
			return early_env + i + len + 1;
	return NULL;
}

enum {
#define ENUM(field, env, type, def, why) LK_OPT_##field,
	LK_OPTIONS(ENUM) LK_OPT_N
#undef ENUM
};
#define DEFAULT(field, env, type, def, why) [LK_OPT_##field] = def,
static const char *const defaults[LK_OPT_N] = { LK_OPTIONS(DEFAULT) };
#undef DEFAULT

/* Parses "123", "64K", "4M", "64G" (suffixes only if sizes); false on anything else or on
 * overflow. */
static bool parse_number(const char *s, bool sizes, uint64_t *ret)
{
	uint64_t v = 0;

	if (!s || *s < '0' || *s > '9')
		return false;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	unsigned shift = 0;
	if (sizes) {
		switch (*s) {
		case 'k': case 'K': shift = 10; s++; break;
		case 'm': case 'M': shift = 20; s++; break;
		case 'g': case 'G': shift = 30; s++; break;
		case 't': case 'T': shift = 40; s++; break;
		}
		if (*s == 'i' && shift) /* 4MiB, 64GiB */
			s++;
		if (*s == 'B' || *s == 'b')
			s++;
	}
	if (*s || (shift && v > UINT64_MAX >> shift))
		return false;
	*ret = v << shift;
	return true;
}

/* "leek: NAME='value' is ", the start of a warning about a variable's value. */
static void warn_begin(struct lk_line *l, const char *name, const char *value)
{
	lk_line_str(l, name);
	lk_line_str(l, "=");
	lk_line_value(l, value);
	lk_line_str(l, " is ");
}

/* "; using V" and the line out. */
static void warn_end(struct lk_line *l, unsigned opt, uint64_t v)
{
	lk_line_str(l, "; using ");
	if (*defaults[opt])
		lk_line_u64(l, v);
	else
		lk_line_str(l, "a random one"); /* LEEK_SEED, the one without a default */
	lk_line_print(l);
}

enum kind { SIZE, UINT, BOOL, DURATION };

/* Parses a duration, "90", "90s", "15m", "6h" or "7d", into nanoseconds; false on anything else or
 * on overflow. */
static bool parse_duration(const char *s, uint64_t *ret)
{
	uint64_t v = 0, unit = 1;

	if (!s || *s < '0' || *s > '9')
		return false;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	switch (*s) {
	case 's': unit = 1; s++; break;
	case 'm': unit = 60; s++; break;
	case 'h': unit = 3600; s++; break;
	case 'd': unit = 86400; s++; break;
	}
	if (*s || v > UINT64_MAX / unit / 1000000000u)
		return false;
	*ret = v * unit * 1000000000u;
	return true;
}

/* The variable's value; its default if it is unset or empty, and, said in one line, if it is
 * malformed or below min (LEEK_PERIOD=0 must not mean exact mode); max, said too, if it is above
 * max. *set: whether the variable gave the value. */
static uint64_t load(const char *name, unsigned opt, enum kind kind, uint64_t min, uint64_t max,
		     bool *set)
{
	static const char *const expected[] = {
		[SIZE] = "not a size in bytes (such as 4096, 512K, 64M or 1G)",
		[UINT] = "not a whole number",
		[BOOL] = "not 0 or 1",
		[DURATION] = "not a duration (such as 90s, 15m, 6h or 7d)",
	};
	const char *s = lk_cfg.secure ? NULL : env(name);
	struct lk_line l = LK_LINE_INIT;
	uint64_t def = 0, v;

	parse_number(defaults[opt], true, &def);
	if (set)
		*set = false;
	if (!s || !*s)
		return def;
	if (kind == DURATION ? !parse_duration(s, &v)
			     : !parse_number(s, kind == SIZE, &v) || (kind == BOOL && v > 1)) {
		warn_begin(&l, name, s);
		lk_line_str(&l, expected[kind]);
		warn_end(&l, opt, def);
		return def;
	}
	if (v < min || v > max) {
		warn_begin(&l, name, s);
		lk_line_str(&l, "out of range (");
		lk_line_u64(&l, min);
		lk_line_str(&l, " to ");
		lk_line_u64(&l, max);
		lk_line_str(&l, ")");
		if (v < min)
			v = def;
		else
			v = max;
		warn_end(&l, opt, v);
		if (v == def)
			return def;
	}
	if (set)
		*set = true;
	return v;
}

/* LEEK_START: on (1) or off (0); anything else is said in one line and taken as on, the
 * default, which records what was asked of it rather than nothing. */
static bool load_start(void)
{
	const char *s = lk_cfg.secure ? NULL : env("LEEK_START");
	struct lk_line l = LK_LINE_INIT;

	if (!s || !*s || !strcmp(s, "on") || !strcmp(s, "1"))
		return false;
	if (!strcmp(s, "off") || !strcmp(s, "0"))
		return true;
	warn_begin(&l, "LEEK_START", s);
	lk_line_str(&l, "not on or off; using on");
	lk_line_print(&l);
	return false;
}

/* LEEK_GUARD_ALIGN: right (false) or left (true); anything else is said and taken as right, the
 * default. */
static bool load_guard_align(void)
{
	const char *s = lk_cfg.secure ? NULL : env("LEEK_GUARD_ALIGN");
	struct lk_line l = LK_LINE_INIT;

	if (!s || !*s || !strcmp(s, "right"))
		return false;
	if (!strcmp(s, "left"))
		return true;
	warn_begin(&l, "LEEK_GUARD_ALIGN", s);
	lk_line_str(&l, "not left or right; using right");
	lk_line_print(&l);
	return false;
}

void lk_config_load(void)
{
	extern char **environ;
	bool retain_set = false;

	lk_cfg.secure = getauxval(AT_SECURE) != 0;
	if (!environ && !lk_cfg.secure)
		early_env_load();
	/* First, so that it silences what the others say. */
	lk_cfg.quiet = load("LEEK_QUIET", LK_OPT_quiet, BOOL, 0, 1, NULL) || lk_cfg.secure;
	/* 2^40: beyond it the sampler's cap on draws (2^62) would bias p(s) (docs/sampling.md). */
	lk_cfg.period = load("LEEK_PERIOD", LK_OPT_period, SIZE, 1, 1ull << 40, NULL);
	lk_cfg.seed = load("LEEK_SEED", LK_OPT_seed, UINT, 0, UINT64_MAX, &lk_cfg.seed_set);
	lk_cfg.max_frames = load("LEEK_MAX_FRAMES", LK_OPT_max_frames, UINT, 1, LK_MAX_FRAMES, NULL);
	lk_cfg.arena_size = load("LEEK_ARENA_SIZE", LK_OPT_arena_size, SIZE, 0, UINT64_MAX, NULL);
	lk_cfg.arena_retain = load("LEEK_ARENA_RETAIN", LK_OPT_arena_retain, SIZE, 0, UINT64_MAX,
				   &retain_set);
	if (!retain_set && lk_cfg.period <= 1) /* the whole heap is in the arena: options.h */
		lk_cfg.arena_retain = LK_EXACT_ARENA_RETAIN;
	uint64_t ms = load("LEEK_RSS_INTERVAL_MS", LK_OPT_rss_interval_ms, UINT, 0, UINT64_MAX, NULL);
	/* More than 584 years: never, rather than a product that wraps around. */
	lk_cfg.rss_interval_ns = ms > UINT64_MAX / 1000000 ? UINT64_MAX : ms * 1000000;
	lk_cfg.precise_time = load("LEEK_PRECISE_TIME", LK_OPT_precise_time, BOOL, 0, 1, NULL);
	lk_cfg.free_stacks = load("LEEK_FREE_STACKS", LK_OPT_free_stacks, BOOL, 0, 1, NULL);
	lk_cfg.abort_on_error = load("LEEK_ABORT_ON_ERROR", LK_OPT_abort_on_error, BOOL, 0, 1, NULL);
	lk_cfg.guard = load("LEEK_GUARD", LK_OPT_guard, UINT, 0, 16384, NULL);
	lk_cfg.guard_left = load_guard_align();
	lk_cfg.session = load("LEEK_SESSION", LK_OPT_session, UINT, 0, UINT64_MAX, NULL);
	lk_cfg.dormant_period = load("LEEK_DORMANT_PERIOD", LK_OPT_dormant_period, SIZE, 1,
				     1ull << 40, NULL);
	lk_cfg.start_off = load_start();
	/* Rotation (writer-rotate.c). A segment below 64 KiB, one step of the file's growth, would
	 * be mostly its own checkpoint; 256 segments bound the table of those kept. */
	lk_cfg.max_size = load("LEEK_MAX_SIZE", LK_OPT_max_size, SIZE, 0, UINT64_MAX, NULL);
	if (lk_cfg.max_size && lk_cfg.max_size < LK_ROTATE_MIN_SIZE) {
		struct lk_line l = LK_LINE_INIT;
		lk_line_str(&l, "LEEK_MAX_SIZE is below 65536; using 65536");
		lk_line_print(&l);
		lk_cfg.max_size = LK_ROTATE_MIN_SIZE;
	}
	lk_cfg.max_age_ns = load("LEEK_MAX_AGE", LK_OPT_max_age, DURATION, 0, UINT64_MAX, NULL);
	lk_cfg.keep = load("LEEK_KEEP", LK_OPT_keep, UINT, 1, LK_ROTATE_KEEP_MAX, NULL);
	/* A secure program's environment is left as it is: nothing of leek's touches it. */
	lk_cfg.inherit = load("LEEK_INHERIT", LK_OPT_inherit, BOOL, 0, 1, NULL) || lk_cfg.secure;

	const char *out = lk_cfg.secure ? NULL : env("LEEK_OUTPUT");
	if (!out || !*out)
		out = defaults[LK_OPT_output];
	size_t n = strlen(out);
	if (n >= sizeof(lk_cfg.output)) {
		/* Not the default instead: a profile where nobody looks for it, maybe in a directory
		 * the user never meant leek to write to. */
		struct lk_line l = LK_LINE_INIT;
		lk_line_str(&l, "LEEK_OUTPUT is ");
		lk_line_u64(&l, n);
		lk_line_str(&l, " bytes long, more than the ");
		lk_line_u64(&l, sizeof(lk_cfg.output) - 1);
		lk_line_str(&l, " a path may have; the program runs unprofiled");
		lk_line_print(&l);
		lk_cfg.off = true;
		return;
	}
	memcpy(lk_cfg.output, out, n + 1);
}
