/* sender.c: the requests of `leek push` waiting to go, and the thread that POSTs them (push.h).
 *
 * The command's thread makes an interval's body and queues it (lk_push_sender_add), which never
 * waits for the network; this thread sends the oldest first, one at a time, with libcurl. Each
 * request has a whole-request timeout and a connect timeout, so a backend that hangs costs one
 * timeout, not the agent. A request that fails (no connection, a timeout, a 5xx, 408 or 429) is
 * tried again after a wait that doubles from backoff_ns up to backoff_max_ns, with the same URL
 * (the same from and until) and the same body: an interval is sent once or dropped, never made
 * again, so that the backend never gets a delta twice or two deltas for one time range. Any other
 * answer but a 2xx (400, 401, 413...) would be the same again: the request is dropped at once
 * and counted as rejected.
 *
 * The queue holds at most queue_max requests besides the one on the wire. When one more comes,
 * the oldest waiting is dropped and counted: while a backend is down, the newest intervals are
 * the ones worth keeping, and the agent's memory stays bounded (queue_max bodies).
 *
 * The body is sent as Pyroscope's Go client sends a pprof: multipart/form-data with the profile
 * in the field "profile" and each sample type's units and aggregation in "sample_type_config"
 * (docs/push.md says why, and that no live backend was tried here).
 *
 * Never: log the Authorization header, block lk_push_sender_add on the network, or send one
 * interval twice after a 2xx.
 */
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "push.h"
#include "util.h"

/* What Pyroscope needs to know of the four sample types (its Go client's sample_type_config):
 * alloc_* are deltas already, summed over a time range; inuse_* are snapshots, averaged. */
static const char sample_type_config[] =
	"{\"alloc_objects\":{\"units\":\"objects\",\"aggregation\":\"sum\"},"
	"\"alloc_space\":{\"units\":\"bytes\",\"aggregation\":\"sum\"},"
	"\"inuse_objects\":{\"units\":\"objects\",\"aggregation\":\"average\"},"
	"\"inuse_space\":{\"units\":\"bytes\",\"aggregation\":\"average\"}}";

struct lk_push_sender {
	struct lk_push_sender_opts o;
	char *tenant_header;          /* "X-Scope-OrgID: ..." or NULL */
	CURL *curl;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;          /* a request came, or stop */
	struct lk_push_request *q;    /* a ring of o.queue_max */
	size_t head, n;
	bool stopping;
	uint64_t stop_by_ns;
	struct lk_push_stats st;
};

static void request_free(struct lk_push_request *r)
{
	free(r->url);
	free(r->body);
	*r = (struct lk_push_request){ 0 };
}

/* Under the lock. */
static void push_back(struct lk_push_sender *s, struct lk_push_request *r)
{
	if (s->n == s->o.queue_max) { /* the oldest goes */
		request_free(&s->q[s->head]);
		s->head = (s->head + 1) % s->o.queue_max;
		s->n--;
		s->st.dropped++;
	}
	s->q[(s->head + s->n) % s->o.queue_max] = *r;
	s->n++;
}

/* Under the lock: a retried request goes back first, unless the queue filled meanwhile, in which
 * case it is the oldest and the one dropped. */
static void push_front(struct lk_push_sender *s, struct lk_push_request *r)
{
	if (s->n == s->o.queue_max) {
		request_free(r);
		s->st.dropped++;
		return;
	}
	s->head = (s->head + s->o.queue_max - 1) % s->o.queue_max;
	s->q[s->head] = *r;
	s->n++;
}

static size_t discard(char *p, size_t size, size_t n, void *ctx)
{
	(void)p;
	(void)ctx;
	return size * n; /* Pyroscope answers with nothing worth reading */
}

/* One attempt: the HTTP status, or 0 when no answer came (curl's error). */
static long post(struct lk_push_sender *s, const struct lk_push_request *r)
{
	struct curl_slist *h = NULL;
	curl_mime *mime = curl_mime_init(s->curl);
	curl_mimepart *part;
	long status = 0;

	if (!mime)
		return 0;
	part = curl_mime_addpart(mime);
	curl_mime_name(part, "profile");
	curl_mime_filename(part, "profile.pprof");
	curl_mime_type(part, "application/octet-stream");
	curl_mime_data(part, r->body, r->len);
	part = curl_mime_addpart(mime);
	curl_mime_name(part, "sample_type_config");
	curl_mime_filename(part, "sample_type_config.json");
	curl_mime_type(part, "application/json");
	curl_mime_data(part, sample_type_config, CURL_ZERO_TERMINATED);
	if (s->tenant_header)
		h = curl_slist_append(h, s->tenant_header);
	if (s->o.auth_header) {
		struct curl_slist *a = curl_slist_append(h, s->o.auth_header);
		h = a ? a : h;
	}
	curl_easy_setopt(s->curl, CURLOPT_URL, r->url);
	curl_easy_setopt(s->curl, CURLOPT_MIMEPOST, mime);
	curl_easy_setopt(s->curl, CURLOPT_HTTPHEADER, h);
	if (curl_easy_perform(s->curl) == CURLE_OK)
		curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_setopt(s->curl, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(s->curl, CURLOPT_MIMEPOST, NULL);
	curl_slist_free_all(h);
	curl_mime_free(mime);
	return status;
}

static bool retryable(long status)
{
	return status == 0 || status == 408 || status == 429 || status >= 500;
}

static void wait_until(struct lk_push_sender *s, uint64_t until_ns)
{
	uint64_t now = lk_monotonic_ns();
	struct timespec ts;

	if (until_ns <= now)
		return;
	clock_gettime(CLOCK_REALTIME, &ts); /* the condition variable's clock */
	uint64_t at = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + (until_ns - now);
	ts = (struct timespec){ (time_t)(at / 1000000000ull), (long)(at % 1000000000ull) };
	pthread_cond_timedwait(&s->cond, &s->lock, &ts);
}

static void *run(void *arg)
{
	struct lk_push_sender *s = arg;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		uint64_t now = lk_monotonic_ns();
		if (s->stopping && (s->n == 0 || now >= s->stop_by_ns))
			break;
		if (s->n == 0) {
			pthread_cond_wait(&s->cond, &s->lock);
			continue;
		}
		struct lk_push_request r = s->q[s->head];
		if (r.not_before_ns > now) {
			uint64_t until = r.not_before_ns;
			if (s->stopping && s->stop_by_ns < until)
				until = s->stop_by_ns;
			wait_until(s, until);
			continue;
		}
		s->head = (s->head + 1) % s->o.queue_max;
		s->n--;
		s->st.queued = s->n + 1; /* the one on the wire counts as waiting */
		pthread_mutex_unlock(&s->lock);
		long status = post(s, &r);
		pthread_mutex_lock(&s->lock);
		s->st.last_status = status;
		if (status >= 200 && status < 300) {
			s->st.sent++;
			s->st.bytes += r.len;
			request_free(&r);
		} else if (!retryable(status)) {
			s->st.failures++;
			s->st.rejected++;
			request_free(&r);
		} else {
			s->st.failures++;
			s->st.retries++;
			uint64_t wait = s->o.backoff_ns;
			for (unsigned i = 0; i < r.attempts && wait < s->o.backoff_max_ns; i++)
				wait *= 2;
			if (wait > s->o.backoff_max_ns)
				wait = s->o.backoff_max_ns;
			r.attempts++;
			r.not_before_ns = lk_monotonic_ns() + wait;
			push_front(s, &r);
		}
		s->st.queued = s->n;
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

static void sender_free(struct lk_push_sender *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		request_free(&s->q[(s->head + i) % s->o.queue_max]);
	free(s->q);
	free(s->tenant_header);
	if (s->curl)
		curl_easy_cleanup(s->curl);
	free(s);
}

int lk_push_sender_start(const struct lk_push_sender_opts *o, struct lk_push_sender **ret)
{
	struct lk_push_sender *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return -ENOMEM;
	s->o = *o;
	if (s->o.queue_max == 0)
		s->o.queue_max = 1;
	s->q = calloc(s->o.queue_max, sizeof(*s->q));
	if (!s->q || (o->tenant && asprintf(&s->tenant_header, "X-Scope-OrgID: %s", o->tenant) < 0)) {
		s->tenant_header = NULL;
		sender_free(s);
		return -ENOMEM;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK || !(s->curl = curl_easy_init())) {
		sender_free(s);
		return -EIO;
	}
	curl_easy_setopt(s->curl, CURLOPT_NOSIGNAL, 1L); /* a thread: no SIGALRM for DNS timeouts */
	curl_easy_setopt(s->curl, CURLOPT_TIMEOUT_MS, (long)(o->timeout_ns / 1000000));
	curl_easy_setopt(s->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)(o->connect_timeout_ns / 1000000));
	curl_easy_setopt(s->curl, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(s->curl, CURLOPT_USERAGENT, "leek-push");
	curl_easy_setopt(s->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	if (o->cacert)
		curl_easy_setopt(s->curl, CURLOPT_CAINFO, o->cacert);
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	r = pthread_create(&s->thread, NULL, run, s);
	if (r != 0) {
		sender_free(s);
		return -r;
	}
	*ret = s;
	return 0;
}

int lk_push_sender_add(struct lk_push_sender *s, char *url, void *body, size_t len)
{
	struct lk_push_request r = { .url = url, .body = body, .len = len };

	pthread_mutex_lock(&s->lock);
	push_back(s, &r);
	s->st.queued = s->n;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

void lk_push_sender_stats(struct lk_push_sender *s, struct lk_push_stats *ret)
{
	pthread_mutex_lock(&s->lock);
	*ret = s->st;
	pthread_mutex_unlock(&s->lock);
}

void lk_push_sender_finish(struct lk_push_sender *s, uint64_t wait_ns, struct lk_push_stats *ret)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->stopping = true;
	s->stop_by_ns = lk_monotonic_ns() + wait_ns;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->thread, NULL);
	s->st.dropped += s->n; /* left unsent */
	s->st.unsent = s->n;
	s->st.queued = 0;
	if (ret)
		*ret = s->st;
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	sender_free(s);
	curl_global_cleanup();
}
