/* growth-sim.c: the growth verdict (src/cli/profile/profile-growth.c) over simulated days of
 * bench/leak-latency.sh's service, for docs/sampling.md section 11: how often a warm pool without
 * a leak is called "growing" in a day, and how long a leak takes to be called so.
 *
 *   growth-sim DAYS EVERY_S [LEAK_B_S [SEED [POOL_BYTES TURNOVER_B_S]]]
 *                                                 (bench/growth-sim.sh builds and runs it)
 *
 * The service of tests/fixtures/fx-service as leak-latency.sh runs it, at the default period T:
 * a pool of POOL_BYTES (default 16 MiB) in 4 KiB blocks of which TURNOVER_B_S bytes a second
 * (default 256 KiB) are replaced at random (each block dies at the rate TURNOVER_B_S/POOL_BYTES
 * per second: a cache whose entries live POOL_BYTES/TURNOVER_B_S seconds), and a leak of LEAK_B_S bytes a second (default 17476, 1 MiB a
 * minute) in 1 KiB blocks. libleek samples each block on its own with p(s) = 1 - exp(-s/T)
 * (docs/sampling.md section 3), so the pool's sampled blocks are an M/M/infinity queue (births
 * TURNOVER_B_S/4096 p(4096) a second, each living Exp(POOL_BYTES/TURNOVER_B_S seconds)), started at its stationary law (the pool is filled
 * at once), and the leak's sampled blocks a Poisson process of rate LEAK_B_S / 1024 p(1024). At
 * every EVERY_S seconds of a day, as `leek watch` does, each site's series (its live estimate at
 * the end of each of 64 equal buckets of the run so far) is classified.
 *
 * Prints, over DAYS simulated days: the share of days whose pool was called "growing" at least
 * once (the false alarms a day), the false alarms at each of the first evaluations, and the delay
 * to the leak's first "growing" verdict (median, 10% and 90%). The churn of the service is left
 * out: its sampled blocks are freed within microseconds, so its series is zero at every bucket's
 * end and never rises.
 *
 * Never: read the clock (all time is simulated), or depend on anything but its arguments.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "growth-sim.h" /* tests/lib: the simulator test-growth-alarms.c uses too */

#define POOL_BLOCK 4096.0
#define LEAK_BLOCK 1024.0
#define EARLY 12 /* evaluations shown one by one */

int main(int argc, char *argv[])
{
	if (argc < 3) {
		fprintf(stderr, "usage: growth-sim DAYS EVERY_S [LEAK_B_S [SEED [POOL_BYTES "
			"TURNOVER_B_S]]]\n");
		return 1;
	}
	double pool_blocks = 4096, turnover = 64; /* pool blocks, and those replaced a second */
	unsigned days = (unsigned)atoi(argv[1]);
	double every = atof(argv[2]), leak = argc > 3 ? atof(argv[3]) : 17476;
	uint64_t seed = argc > 4 ? strtoull(argv[4], NULL, 10) : 1;
	if (argc > 6) {
		pool_blocks = floor(atof(argv[5]) / POOL_BLOCK);
		turnover = atof(argv[6]) / POOL_BLOCK;
	}
	if (days == 0 || !(every > 0) || !(leak > 0) || !(pool_blocks >= 1) || !(turnover > 0)) {
		fprintf(stderr, "growth-sim: DAYS, EVERY_S, LEAK_B_S, POOL_BYTES (>= 4096) and "
			"TURNOVER_B_S must be above 0\n");
		return 1;
	}
	unsigned evals, alarmed = 0, early[EARLY] = { 0 }, alarms = 0, late[4] = { 0 };
	double *delay = malloc(days * sizeof(double));
	struct lk_rng r;

	evals = (unsigned)(GSIM_DAY / every);
	lk_rng_seed(&r, seed, 31);
	for (unsigned d = 0; d < days; d++) {
		struct gsim_site pool, lk;
		unsigned any = 0;
		double p = -expm1(-LEAK_BLOCK / GSIM_PERIOD), lambda = leak / LEAK_BLOCK * p;
		gsim_cache_day(&r, pool_blocks, POOL_BLOCK, pool_blocks / turnover, turnover, &pool);
		gsim_leak(&r, lambda, GSIM_DAY, (size_t)(GSIM_DAY * lambda * 2) + 64, LEAK_BLOCK / p,
			  &lk);
		for (unsigned k = 1; k <= evals; k++)
			if (gsim_verdict(&pool, k * every) == LK_TREND_GROWING) {
				any = 1;
				alarms++;
				if (k <= EARLY)
					early[k - 1]++;
				late[(k * every > 600) + (k * every > 3600) + (k * every > 6 * 3600)]++;
			}
		alarmed += any;
		delay[d] = INFINITY;
		for (unsigned k = 1; k <= evals; k++)
			if (gsim_verdict(&lk, k * every) == LK_TREND_GROWING) {
				delay[d] = k * every;
				break;
			}
		gsim_site_free(&pool);
		gsim_site_free(&lk);
	}
	qsort(delay, days, sizeof(double), gsim_cmp_double);
	printf("%u days, a verdict every %.0f s (%u a day), leak %.0f B/s, seed %llu, pool %.0f "
	       "blocks of 4 KiB, %.1f replaced a second\n", days, every, evals, leak,
	       (unsigned long long)seed, pool_blocks, turnover);
	printf("pool: days with a false \"growing\": %u of %u (%.2f%%), false verdicts %u of %u\n",
	       alarmed, days, 100.0 * alarmed / days, alarms, days * evals);
	printf("pool: false \"growing\" at evaluation 1..%u:", EARLY);
	for (unsigned k = 0; k < EARLY; k++)
		printf(" %u", early[k]);
	printf("\npool: false \"growing\" in the first 10 min, to 1 h, to 6 h, after: %u %u %u %u",
	       late[0], late[1], late[2], late[3]);
	printf("\nleak: first \"growing\" after %.0f s median, %.0f..%.0f s (10%%..90%%)\n",
	       delay[days / 2], delay[days / 10], delay[days - 1 - days / 10]);
	free(delay);
	return 0;
}
