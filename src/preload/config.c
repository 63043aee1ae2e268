/* config.c: reads the LEEK_* variables once, at start-up (table: src/common/options.h).
 *
 * Runs inside the first malloc, so it uses getenv (which does not allocate) and its own number
 * parser. A malformed value falls back to the default: the program must run whatever the
 * environment says.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
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

/* Parses "123", "64K", "4M", "64G"; false on anything else or on overflow. */
static bool parse_size(const char *s, uint64_t *ret)
{
	uint64_t v = 0;

	if (!s || !*s)
		return false;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	unsigned shift = 0;
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
	if (*s || (shift && v > UINT64_MAX >> shift))
		return false;
	*ret = v << shift;
	return true;
}

static void load(const char *name, const char *def, uint64_t *ret, bool *set)
{
	const char *s = env(name);

	if (parse_size(s, ret)) {
		if (set)
			*set = true;
		return;
	}
	if (!parse_size(def, ret))
		*ret = 0;
}

void lk_config_load(void)
{
	uint64_t v;
	extern char **environ;

	if (!environ)
		early_env_load();
#define DEFAULT(field, env, type, def, why) [LK_OPT_##field] = def,
	enum {
#define ENUM(field, env, type, def, why) LK_OPT_##field,
		LK_OPTIONS(ENUM) LK_OPT_N
	};
	static const char *const defaults[LK_OPT_N] = { LK_OPTIONS(DEFAULT) };

	load("LEEK_PERIOD", defaults[LK_OPT_period], &lk_cfg.period, NULL);
	if (lk_cfg.period == 0)
		lk_cfg.period = 524288;
	if (lk_cfg.period > (1ull << 40)) /* beyond this the 2^62 cap on draws would bias p(s) */
		lk_cfg.period = 1ull << 40;
	load("LEEK_SEED", "0", &lk_cfg.seed, &lk_cfg.seed_set);
	load("LEEK_MAX_FRAMES", defaults[LK_OPT_max_frames], &lk_cfg.max_frames, NULL);
	if (lk_cfg.max_frames > LK_MAX_FRAMES)
		lk_cfg.max_frames = LK_MAX_FRAMES;
	load("LEEK_ARENA_SIZE", defaults[LK_OPT_arena_size], &lk_cfg.arena_size, NULL);
	bool retain_set = false;
	load("LEEK_ARENA_RETAIN", defaults[LK_OPT_arena_retain], &lk_cfg.arena_retain, &retain_set);
	if (!retain_set && lk_cfg.period <= 1) /* the whole heap is in the arena: options.h */
		lk_cfg.arena_retain = LK_EXACT_ARENA_RETAIN;
	load("LEEK_RSS_INTERVAL_MS", defaults[LK_OPT_rss_interval_ms], &v, NULL);
	lk_cfg.rss_interval_ns = v * 1000000;
	load("LEEK_SESSION", defaults[LK_OPT_session], &lk_cfg.session, NULL);
	load("LEEK_INHERIT", defaults[LK_OPT_inherit], &v, NULL);
	lk_cfg.inherit = v != 0;
	load("LEEK_QUIET", defaults[LK_OPT_quiet], &v, NULL);
	lk_cfg.quiet = v != 0;

	const char *out = env("LEEK_OUTPUT");
	if (!out || !*out || strlen(out) >= sizeof(lk_cfg.output))
		out = defaults[LK_OPT_output];
	strcpy(lk_cfg.output, out);
#undef DEFAULT
#undef ENUM
}
