/* leek-demo.c: a toy server whose heap grows, for `scripts/demo` to profile.
 *
 * A few worker threads serve batches of requests for about a second and a half. Each request
 * shows one of the three shapes a heap profile has to tell apart:
 *
 *   session_cache_insert  a steady leak: every request caches a session that nothing evicts,
 *                         about 40 MiB in blocks of 256 B to 2 KiB by the end
 *   buffer_pool_grow      a pool that fills up to its capacity (16 MiB in 64 KiB buffers) over
 *                         the first third of the run and then levels off
 *   parse_request         pure churn: many small blocks allocated and freed within the request,
 *                         a lot of bytes allocated and none of them live
 *
 * It exits without tearing anything down, as a server stopped by its supervisor would, so the
 * heap at exit is the heap as it stood. The last lines it prints are the true numbers, to hold
 * leek's estimates against.
 *
 * Deterministic: each worker draws from its own xorshift stream with a fixed seed, so the same
 * blocks are allocated on every run (only the interleaving of the threads varies). The call sites
 * are kept out of line (noipa: no inlining, no cloning into .constprop names) so that the report
 * names them.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__clang__)
#define site __attribute__((noinline))
#else
#define site __attribute__((noipa))
#endif

#define KIB 1024u
#define MIB (1024u * 1024u)

/* The shape of the run. The defaults take about 1.5 s: TICKS batches TICK_MS apart. */
static unsigned arg_threads = 4;
static unsigned arg_ticks = 30;
#define TICK_MS 50
#define LEAK_TOTAL (40u * MIB)       /* what the session cache holds at the end, all threads */
#define SESSION_MIN 256u
#define SESSION_MAX 2048u
#define POOL_TOTAL (16u * MIB)       /* the pools' capacity, all threads */
#define POOL_BUFFER (64u * KIB)
#define PARSE_TOKENS_MAX 32u         /* tokens per request, each 16 to 512 bytes */

struct session {
	struct session *next;
	uint64_t id;
	size_t size;
	char payload[];
};

struct buffer {
	struct buffer *next;
	char data[];
};

struct worker {
	pthread_t thread;
	unsigned index;
	uint64_t rng;

	struct session *sessions;    /* the cache: inserted into, never evicted (the leak) */
	size_t session_count, session_bytes;

	struct buffer *pool;         /* the pool: grown on demand up to its capacity */
	size_t pool_count, pool_capacity;

	uint64_t requests, parse_blocks, parse_bytes;
	unsigned checksum;           /* keeps the parser's work observable */
};

/* xorshift64*: a fixed seed per worker, so every run allocates the same blocks. */
static uint64_t rng_next(struct worker *w)
{
	w->rng ^= w->rng >> 12;
	w->rng ^= w->rng << 25;
	w->rng ^= w->rng >> 27;
	return w->rng * UINT64_C(2685821657736338717);
}

/* The pools reach their capacity after this many ticks. */
static unsigned pool_fill_ticks(void)
{
	return arg_ticks >= 3 ? arg_ticks / 3 : 1;
}

static size_t rng_range(struct worker *w, size_t lo, size_t hi)
{
	return lo + (size_t)(rng_next(w) % (hi - lo + 1));
}

/* Each site calls malloc itself, so that the site is the caller leek records (an inlined
 * xmalloc helper would put its own name on all three). */
__attribute__((noreturn, cold)) static void out_of_memory(size_t size)
{
	fprintf(stderr, "leek-demo: out of memory (%zu bytes)\n", size);
	exit(1);
}

/* Churn: split a request into tokens, each its own block, and free them all before returning. */
site static unsigned parse_request(struct worker *w, uint64_t request_id)
{
	char *tokens[PARSE_TOKENS_MAX];
	unsigned n = (unsigned)rng_range(w, 8, PARSE_TOKENS_MAX);
	unsigned sum = 0;

	for (unsigned i = 0; i < n; i++) {
		size_t len = rng_range(w, 16, 512);

		tokens[i] = malloc(len);
		if (!tokens[i])
			out_of_memory(len);
		memset(tokens[i], (int)(request_id + i), len);
		w->parse_blocks++;
		w->parse_bytes += len;
	}
	for (unsigned i = 0; i < n; i++) {
		sum += (unsigned char)tokens[i][0];
		free(tokens[i]);
	}
	return sum;
}

/* The leak: every session is cached and nothing ever evicts one. */
site static struct session *session_cache_insert(struct worker *w, uint64_t request_id)
{
	size_t size = rng_range(w, SESSION_MIN, SESSION_MAX);
	struct session *s = malloc(size);

	if (!s)
		out_of_memory(size);
	s->id = request_id;
	s->size = size;
	memset(s->payload, 0x5e, size - sizeof(*s));
	s->next = w->sessions;
	w->sessions = s;
	w->session_count++;
	w->session_bytes += size;
	return s;
}

/* The pool: adds buffers until it holds `want`, and never beyond its capacity. */
site static void buffer_pool_grow(struct worker *w, size_t want)
{
	if (want > w->pool_capacity)
		want = w->pool_capacity;
	while (w->pool_count < want) {
		struct buffer *b = malloc(POOL_BUFFER);

		if (!b)
			out_of_memory(POOL_BUFFER);
		memset(b->data, 0, POOL_BUFFER - sizeof(*b));
		b->next = w->pool;
		w->pool = b;
		w->pool_count++;
	}
}

site static void handle_request(struct worker *w, uint64_t request_id)
{
	w->checksum += parse_request(w, request_id);
	session_cache_insert(w, request_id);
	w->requests++;
}

/* One batch of requests, sized so that the cache grows by the same amount every tick. */
site static void serve_batch(struct worker *w, unsigned tick)
{
	size_t per_tick = LEAK_TOTAL / arg_threads / arg_ticks;
	size_t bytes = 0;

	/* Demand on the pool ramps up with load for the first third of the run, then stays flat. */
	buffer_pool_grow(w, w->pool_capacity * (tick + 1) / pool_fill_ticks());
	while (bytes < per_tick) {
		size_t before = w->session_bytes;

		handle_request(w, ((uint64_t)w->index << 32) | w->requests);
		bytes += w->session_bytes - before;
	}
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

site static void *worker_main(void *arg)
{
	struct worker *w = arg;

	for (unsigned tick = 0; tick < arg_ticks; tick++) {
		serve_batch(w, tick);
		sleep_ms(TICK_MS);
	}
	return NULL;
}

static int parse_unsigned(const char *s, unsigned lo, unsigned hi, unsigned *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -EINVAL;
	*ret = (unsigned)v;
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: leek-demo [-t THREADS] [-n TICKS]\n"
		   "A toy server that leaks ~40 MiB (session_cache_insert), fills a 16 MiB pool\n"
		   "(buffer_pool_grow) and churns (parse_request) for TICKS x %d ms (default %u x %d ms)\n"
		   "on THREADS threads (default %u). Run it under leek: scripts/demo.\n",
		TICK_MS, arg_ticks, TICK_MS, arg_threads);
}

int main(int argc, char **argv)
{
	struct worker *workers;
	size_t sessions = 0, session_bytes = 0, pool_bytes = 0;
	uint64_t requests = 0, parse_blocks = 0, parse_bytes = 0;
	unsigned checksum = 0;
	int opt, r;

	while ((opt = getopt(argc, argv, "t:n:h")) != -1) {
		switch (opt) {
		case 't':
			if (parse_unsigned(optarg, 1, 64, &arg_threads) < 0) {
				fprintf(stderr, "leek-demo: -t wants 1 to 64 threads\n");
				return 2;
			}
			break;
		case 'n':
			if (parse_unsigned(optarg, 1, 100000, &arg_ticks) < 0) {
				fprintf(stderr, "leek-demo: -n wants 1 to 100000 ticks\n");
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}

	workers = calloc(arg_threads, sizeof(*workers));
	if (!workers) {
		fprintf(stderr, "leek-demo: out of memory\n");
		return 1;
	}
	for (unsigned i = 0; i < arg_threads; i++) {
		struct worker *w = &workers[i];

		w->index = i;
		w->rng = UINT64_C(0x9e3779b97f4a7c15) * (i + 1);
		w->pool_capacity = POOL_TOTAL / POOL_BUFFER / arg_threads;
		r = pthread_create(&w->thread, NULL, worker_main, w);
		if (r) {
			fprintf(stderr, "leek-demo: cannot start a worker: %s\n", strerror(r));
			return 1;
		}
	}
	for (unsigned i = 0; i < arg_threads; i++) {
		struct worker *w = &workers[i];

		pthread_join(w->thread, NULL);
		requests += w->requests;
		sessions += w->session_count;
		session_bytes += w->session_bytes;
		pool_bytes += w->pool_count * POOL_BUFFER;
		parse_blocks += w->parse_blocks;
		parse_bytes += w->parse_bytes;
		checksum += w->checksum;
	}

	printf("leek-demo: %u threads served %" PRIu64 " requests (checksum %08x)\n", arg_threads,
	       requests, checksum);
	printf("  session_cache_insert  %6.1f MiB live in %zu blocks (leaked)\n",
	       (double)session_bytes / MIB, sessions);
	printf("  buffer_pool_grow      %6.1f MiB live in %zu blocks (full after tick %u of %u)\n",
	       (double)pool_bytes / MIB, pool_bytes / POOL_BUFFER, pool_fill_ticks(), arg_ticks);
	printf("  parse_request         %6.1f MiB allocated in %" PRIu64 " blocks, none live\n",
	       (double)parse_bytes / MIB, parse_blocks);
	if (fflush(stdout) != 0 || ferror(stdout))
		return 1;
	/* No teardown: the heap at exit is the heap the profile should show. */
	return 0;
}
