/* clock.c: the time of every record.
 *
 * The kernel's own clock_gettime in the vDSO, called without glibc's wrapper in front of it: exact
 * mode reads the clock at every sample and every free, and the wrapper's checks and calls took a
 * quarter of each reading (docs/performance.md, "the vDSO's clock"). glibc's clock_gettime without
 * a vDSO (or before lk_clock_init). The clock is chosen once, at start-up: CLOCK_MONOTONIC, or in
 * exact mode its coarse reading (lk_coarse_time), the same clock as of the last tick; no system
 * call either way.
 *
 * Never: read another clock for a record (every time in a file comes from here, so its dts never
 * go backwards between clocks); make a system call per reading.
 */
#include <dlfcn.h>
#include <time.h>

#include "preload.h"

static int (*clock_read)(clockid_t, struct timespec *) = clock_gettime;
static clockid_t clock_id = CLOCK_MONOTONIC;

void lk_clock_init(void)
{
	void *vdso = dlopen("linux-vdso.so.1", RTLD_NOW | RTLD_NOLOAD);
	int (*f)(clockid_t, struct timespec *) =
		vdso ? (int (*)(clockid_t, struct timespec *))dlsym(vdso, "__vdso_clock_gettime")
		     : NULL;

	clock_id = lk_coarse_time() ? CLOCK_MONOTONIC_COARSE : CLOCK_MONOTONIC;
	if (f)
		clock_read = f;
}

LK_HOT uint64_t lk_now_ns(void)
{
	struct timespec ts;

	clock_read(clock_id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
