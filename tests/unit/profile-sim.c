/* profile-sim.c: profiles built record by record for test-profile*.c (see profile-sim.h). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "profile-sim.h"

void sim_start(struct sim *s, uint64_t period, uint32_t flags)
{
	*s = (struct sim){ 0 };
	pb_header(&s->b, &(struct pb_header){ .flags = flags, .pid = 7, .ppid = 6,
					      .period = period, .exe = "/usr/bin/sim",
					      .start_monotonic_ns = SIM_START_MONO, .seed = 1 });
}

uint64_t sim_dt(struct sim *s, uint64_t t)
{
	uint64_t dt = t > s->now ? t - s->now : 0;

	s->now += dt;
	return dt;
}

uint64_t sim_stack(struct sim *s, const uint64_t *frames, uint32_t n)
{
	uint64_t id = ++s->stacks;

	PB_REC(&s->b, lk_rec_stack(rec, id, frames, n));
	return id;
}

uint64_t sim_site(struct sim *s, uint64_t pc)
{
	return sim_stack(s, &pc, 1);
}

void sim_alloc(struct sim *s, uint64_t t, uint64_t addr, uint64_t size, uint64_t stack)
{
	pb_alloc(&s->b, sim_dt(s, t), 1, addr, size, stack);
}

void sim_free(struct sim *s, uint64_t t, uint64_t addr)
{
	pb_free(&s->b, sim_dt(s, t), 1, addr);
}

void sim_free_stack(struct sim *s, uint64_t t, uint64_t addr, uint64_t stack)
{
	pb_free_stack(&s->b, sim_dt(s, t), 1, addr, stack);
}

void sim_rss(struct sim *s, uint64_t t, uint64_t bytes)
{
	PB_REC(&s->b, lk_rec_pair(rec, LK_REC_RSS, sim_dt(s, t), bytes));
}

void sim_trailer(struct sim *s, uint64_t t, const uint64_t counters[LK_CNT_MAX + 1])
{
	static const uint64_t none[LK_CNT_MAX + 1];

	PB_REC(&s->b, lk_rec_counters(rec, LK_REC_TRAILER, sim_dt(s, t), 1700000000000000000,
				      counters ? counters : none));
}

int sim_load(const struct sim *s, const struct lk_profile_opts *o, struct lk_profile **p,
	     char **err)
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
