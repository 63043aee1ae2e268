#!/usr/bin/env bash
# tests/thirdparty/soak.sh: bench/soak.sh, the multi-threaded soak checked against its own exact
# tally, cut short for CI.
#
# bench/soak.c's 4 threads and 14 allocation sites run for SECONDS in each mode: plain (no leek:
# the workload's own checks of its blocks, the baseline), the default period (every site's
# allocated and live bytes within their 95% intervals, misses counted against the binomial bound
# that bench/soak.sh's header derives from docs/sampling.md) and exact mode (every site's counts
# and bytes equal to the tally). Each mode passes when bench/soak.sh does: the workload exits 0,
# nothing hangs, the one profile reads with `leek dump --summary`, has its trailer and no loss.
# The ten-minute soak is `bench/soak.sh 600 BUILDDIR`, run by hand. It must never leave the
# workload running or write outside its scratch directory.
#
# SECONDS per leek mode: 60, or 20 with LK_QUICK=1 (the plain run: 10 and 5).

# shellcheck source=tests/thirdparty/lib.sh
source "$(dirname "$0")/lib.sh"
lk_need_build
lk_apt gcc python3 || { echo "soak: cannot install gcc python3" >&2; exit 1; }

seconds=60
plain_seconds=10
if ((LK_QUICK)); then
	seconds=20
	plain_seconds=5
fi

for mode in plain "${LK_MODES[@]}"; do
	log=$lk_scratch/soak-$mode.log
	s=$seconds
	[[ $mode == plain ]] && s=$plain_seconds
	if SOAK_MODES=$mode KEEP=${LK_KEEP:-0} timeout --kill-after=10 $((s + 600)) \
		"$LK_ROOT/bench/soak.sh" "$s" "$LK_BUILD" >"$log" 2>&1; then
		# "== MODE: pass: N allocations, N checks, N misses (allowed N+N)"
		lk_pass "soak [$mode] ($s s$(sed -n "s/^== $mode: pass:/,/p" "$log"))"
	else
		sed 's/^/    /' "$log" | grep -E 'FAIL|MISS|misses of|soak:' | head -30
		lk_fail "soak [$mode]" "bench/soak.sh $s failed ($(grep -c FAIL "$log") failures)"
	fi
done

lk_summary
