/* push.h: `leek push`, an agent outside the profiled process that sends its heap profile to
 * Grafana Pyroscope's ingest API at every interval (cmd-push.c; docs/push.md).
 *
 *   delta.c   one interval of one followed profile as a pprof body (export/, the one pprof
 *             encoder): inuse_* at the interval's end, alloc_* for the interval alone (a delta,
 *             as Go's godeltaprof sends), and the state that carries from one interval to the
 *             next
 *   sender.c  the bounded queue of intervals waiting to go, and the thread that POSTs them with
 *             libcurl: timeouts, retries with exponential backoff, the oldest dropped past the
 *             bound and counted
 *
 * Neither prints; errors are negative errno values (the command prints them once). Nothing here
 * writes to a profile, signals its process or waits on anything the process holds.
 */
#ifndef LEEK_PUSH_H
#define LEEK_PUSH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export.h"
#include "u64map.h"

/* What carries from one interval of a profile to the next: each stack's alloc_objects and
 * alloc_space so far, rounded as pprof rounds them, so that the deltas sent sum exactly to the
 * whole run's rounded totals (each stack's deltas telescope). */
struct lk_push_deltas {
	struct lk_u64map objects, space; /* stack id -> rounded total so far (int64 in a u64) */
	uint32_t number;                 /* the profile's number in the symbolizer */
};

void lk_push_deltas_init(struct lk_push_deltas *d, uint32_t number);
void lk_push_deltas_done(struct lk_push_deltas *d);

/* The pprof (gzip, as `leek export` writes it) of profile p as read so far (the follower's
 * snapshot, lk_profile_follow_snapshot: in-use values now, alloc totals so far; path names it),
 * its alloc values made deltas against d, which moves on to this interval; its time and duration
 * are the interval's, from_s to until_s (Unix seconds).
 * A failure leaves d as it was, so a retry of the interval computes the same deltas. 0 and a
 * malloc'd body in *body, *len; < 0 with a malloc'd message in *err, maybe. */
int lk_push_interval(struct lk_push_deltas *d, struct lk_symbolizer *sym, const char *path,
		     const struct lk_profile *p, uint64_t from_s, uint64_t until_s, void **body,
		     size_t *len, char **err);

/* One request: the ingest URL with its query (name, from, until, format), and the body. */
struct lk_push_request {
	char *url;
	void *body;
	size_t len;
	unsigned attempts;      /* made so far */
	uint64_t not_before_ns; /* CLOCK_MONOTONIC: the next attempt waits for it (backoff) */
};

struct lk_push_sender_opts {
	const char *tenant;        /* X-Scope-OrgID; NULL: none */
	const char *auth_header;   /* "Authorization: ..." whole; NULL: none (never logged) */
	const char *cacert;        /* a CA bundle for HTTPS; NULL: the system's */
	uint64_t timeout_ns;       /* the whole of one request */
	uint64_t connect_timeout_ns;
	uint64_t backoff_ns, backoff_max_ns; /* the first retry's wait, doubled up to the max */
	size_t queue_max;          /* intervals waiting at most; past it the oldest is dropped */
};

struct lk_push_stats {
	uint64_t sent, dropped, retries, failures; /* requests: accepted; dropped (the queue's
						     * bound, or left at exit); attempts again; and
						     * attempts that failed */
	uint64_t rejected;                         /* dropped at once: a 4xx but 408 and 429 */
	uint64_t unsent;                           /* of dropped, those still waiting at exit */
	uint64_t bytes;                            /* bodies accepted */
	size_t queued;                             /* waiting now */
	long last_status;                          /* the last HTTP status (0: none, or no answer) */
};

struct lk_push_sender;

/* Starts the sender's thread. 0; -ENOMEM, or a curl or pthread failure as -EIO / -errno. */
int lk_push_sender_start(const struct lk_push_sender_opts *o, struct lk_push_sender **ret);
/* Queues a request (taking url and body): never blocks on the network. Past the bound, the
 * oldest waiting is dropped (counted). */
int lk_push_sender_add(struct lk_push_sender *s, char *url, void *body, size_t len);
void lk_push_sender_stats(struct lk_push_sender *s, struct lk_push_stats *ret);
/* Tries to send what waits for up to wait_ns more, then stops the thread; what is left is
 * counted as dropped. The final stats in *ret. NULL-safe. */
void lk_push_sender_finish(struct lk_push_sender *s, uint64_t wait_ns, struct lk_push_stats *ret);

#endif /* LEEK_PUSH_H */
