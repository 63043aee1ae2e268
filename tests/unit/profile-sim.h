/* profile-sim.h: builds profiles for test-profile*.c record by record, with absolute times, and
 * loads them through lk_profile_load() from a memfd (a regular file with a /proc path, so no
 * temporary file is left behind). A simulated program's allocations become the samples libleek
 * would record through tests/lib/countdown.h, the sampler's own rule.
 *
 * Test-only: aborts on out-of-memory, never frees on failure paths (the harness forks).
 */
#ifndef LEEK_TEST_PROFILE_SIM_H
#define LEEK_TEST_PROFILE_SIM_H

#include <stdint.h>

#include "build-profile.h"
#include "countdown.h"
#include "profile.h"

#define SIM_START_MONO 1000000000000ull /* start_monotonic_ns of every simulated profile */

struct sim {
	struct pbuf b;
	uint64_t now;    /* time of the last timed record, since the start */
	uint64_t stacks; /* stacks written */
};

void sim_start(struct sim *s, uint64_t period, uint32_t flags);
/* The dt of a record at absolute time t (never before the previous one). */
uint64_t sim_dt(struct sim *s, uint64_t t);
uint64_t sim_stack(struct sim *s, const uint64_t *frames, uint32_t n);
/* A stack of one frame: enough to tell sites apart. */
uint64_t sim_site(struct sim *s, uint64_t pc);
void sim_alloc(struct sim *s, uint64_t t, uint64_t addr, uint64_t size, uint64_t stack);
void sim_free(struct sim *s, uint64_t t, uint64_t addr);
/* A FREE_STACK (LEEK_FREE_STACKS): the free of addr by `stack`. */
void sim_free_stack(struct sim *s, uint64_t t, uint64_t addr, uint64_t stack);
void sim_rss(struct sim *s, uint64_t t, uint64_t bytes);
/* A TRAILER at t with counters (NULL: all 0). */
void sim_trailer(struct sim *s, uint64_t t, const uint64_t counters[LK_CNT_MAX + 1]);
/* Loads the profile built so far. */
int sim_load(const struct sim *s, const struct lk_profile_opts *o, struct lk_profile **p,
	     char **err);

#endif /* LEEK_TEST_PROFILE_SIM_H */
