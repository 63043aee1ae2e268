/* profile-sim.h: builds profiles for test-profile*.c record by record, with absolute times, and
 * loads them through lk_profile_load() from a memfd (a regular file with a /proc path, so no
 * temporary file is left behind). Also the sampler's own countdown (src/common/rng.h), to turn a
 * simulated program's allocations into the samples libleek would record.
 *
 * Test-only: aborts on out-of-memory, never frees on failure paths (the harness forks).
 */
#ifndef LEEK_TEST_PROFILE_SIM_H
#define LEEK_TEST_PROFILE_SIM_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "build-profile.h"
#include "profile.h"
#include "rng.h"

#define SIM_START_MONO 1000000000000ull /* start_monotonic_ns of every simulated profile */

struct sim {
	struct pbuf b;
	uint64_t now;    /* time of the last timed record, since the start */
	uint64_t stacks; /* stacks written */
};

static inline void sim_start(struct sim *s, uint64_t period, uint32_t flags)
{
	*s = (struct sim){ 0 };
	pb_header(&s->b, &(struct pb_header){ .flags = flags, .pid = 7, .ppid = 6,
					      .period = period, .exe = "/usr/bin/sim",
					      .start_monotonic_ns = SIM_START_MONO, .seed = 1 });
}

/* The dt of a record at absolute time t (never before the previous one). */
static inline uint64_t sim_dt(struct sim *s, uint64_t t)
{
	uint64_t dt = t > s->now ? t - s->now : 0;

	s->now += dt;
	return dt;
}

static inline uint64_t sim_stack(struct sim *s, const uint64_t *frames, uint32_t n)
{
	uint64_t id = ++s->stacks;

	PB_REC(&s->b, lk_rec_stack(rec, id, frames, n));
	return id;
}

/* A stack of one frame: enough to tell sites apart. */
static inline uint64_t sim_site(struct sim *s, uint64_t pc)
{
	return sim_stack(s, &pc, 1);
}

static inline void sim_alloc(struct sim *s, uint64_t t, uint64_t addr, uint64_t size,
			     uint64_t stack)
{
	pb_alloc(&s->b, sim_dt(s, t), 1, addr, size, stack);
}

static inline void sim_free(struct sim *s, uint64_t t, uint64_t addr)
{
	pb_free(&s->b, sim_dt(s, t), 1, addr);
}

static inline void sim_rss(struct sim *s, uint64_t t, uint64_t bytes)
{
	PB_REC(&s->b, lk_rec_pair(rec, LK_REC_RSS, sim_dt(s, t), bytes));
}

static inline void sim_trailer(struct sim *s, uint64_t t, const uint64_t counters[LK_CNT_MAX + 1])
{
	static const uint64_t none[LK_CNT_MAX + 1];

	PB_REC(&s->b, lk_rec_counters(rec, LK_REC_TRAILER, sim_dt(s, t), 1700000000000000000,
				      counters ? counters : none));
}

/* Loads the profile built so far. */
static inline int sim_load(const struct sim *s, const struct lk_profile_opts *o,
			   struct lk_profile **p, char **err)
{
	char path[64];
	int fd = memfd_create("profile", MFD_CLOEXEC), r;
	size_t done = 0;

	if (fd < 0)
		abort();
	while (done < s->b.len) {
		ssize_t n = write(fd, s->b.p + done, s->b.len - done);
		if (n <= 0)
			abort();
		done += (size_t)n;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	r = lk_profile_load(path, o, p, err);
	close(fd);
	return r;
}

/* libleek's sampling decision (docs/sampling.md section 1): one thread's countdown. */
struct sampler {
	struct lk_rng rng;
	uint64_t period, left;
};

static inline void sampler_init(struct sampler *sm, uint64_t period, uint64_t seed)
{
	lk_rng_seed(&sm->rng, seed, 0);
	sm->period = period;
	sm->left = lk_rng_interval(&sm->rng, period);
}

static inline bool sampler_take(struct sampler *sm, uint64_t size)
{
	if (size < sm->left) {
		sm->left -= size;
		return false;
	}
	sm->left = lk_rng_interval(&sm->rng, sm->period);
	return true;
}

#endif /* LEEK_TEST_PROFILE_SIM_H */
