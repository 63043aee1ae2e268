#!/usr/bin/env bash
# watch-cost.sh: what `leek watch` and `leek top` cost the process they watch: the CPU time of
# tests/fixtures/fx-service (a leak, a pool and CHURN bytes a second in 256-byte blocks, under
# libleek at PERIOD) for the same work, a fixed run of SECONDS_RUN at fixed rates, alone, under
# `leek watch` (a report every second, the heap followed for --high-water) and under `leek top`
# (in a detached tmux session, refreshed every 500 ms; skipped without tmux).
#
#   bench/watch-cost.sh [BUILD_DIR]                (default: build)
#   ROUNDS=9 SECONDS_RUN=20 CHURN=400M PERIOD=65536 bench/watch-cost.sh
#                          (the defaults: 5 rounds of 5 s, 400M, 65536; a run's CPU time is
#                          measured in the kernel's ticks, so a longer run is more precise)
#
# The configurations run interleaved (alone, watch, top, alone, ...) for ROUNDS rounds (default
# 5), so a busy machine slows all of them alike. The table shows the medians of the service's CPU
# seconds (user + system, from wait4) and of the per-round ratios against alone. watch and top
# only read the profile and /proc: a ratio of 1.00 within the round-to-round spread is the
# expected answer. A timing on a shared machine, never a pass/fail test.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${ROUNDS:-5}
secs=${SECONDS_RUN:-5}
period=${PERIOD:-65536}
churn=${CHURN:-400M}

lib=$(realpath "$build/src/preload/libleek.so")
leek=$(realpath "$build/src/cli/leek")
svc=$(realpath "$build/tests/fixtures/fx-service")
tmp=$(mktemp -d)
trap 'tmux -L leek-bench-$$ kill-server 2>/dev/null || true; rm -rf "$tmp"' EXIT
have_tmux=0
command -v tmux >/dev/null && have_tmux=1

# One run: prints the service's CPU seconds. $1: alone, watch or top.
run() {
	python3 - "$1" "$lib" "$leek" "$svc" "$tmp" "$secs" "$period" "$$" "$churn" <<'PY'
import os, subprocess, sys, time
mode, lib, leek, svc, tmp, secs, period, sh, churn = sys.argv[1:]
for f in os.listdir(tmp):
    os.unlink(os.path.join(tmp, f))
env = dict(os.environ, LD_PRELOAD=lib, LEEK_PERIOD=period, LEEK_OUTPUT=tmp + "/svc.%p.lk")
p = subprocess.Popen([svc, secs, "100K", "1M", churn, tmp + "/tally"], env=env)
w = None
if mode == "watch":
    w = subprocess.Popen([leek, "watch", "--every", "1s", "--age", "0", "--high-water",
                          str(p.pid)], stdout=subprocess.DEVNULL)
elif mode == "top":
    subprocess.run(["tmux", "-L", "leek-bench-" + sh, "-f", "/dev/null", "new-session", "-d",
                    "-x", "120", "-y", "40", leek + " top --interval 500ms " + str(p.pid)],
                   check=True)
_, status, ru = os.wait4(p.pid, 0)
if w:
    w.wait()
if mode == "top":
    subprocess.run(["tmux", "-L", "leek-bench-" + sh, "kill-server"], stderr=subprocess.DEVNULL)
print(f"{ru.ru_utime + ru.ru_stime:.4f}")
PY
}

modes=(alone watch)
((have_tmux)) && modes+=(top) || echo "tmux missing: top is skipped (apt-get install tmux)" >&2
declare -A cpu ratio
for ((r = 0; r < rounds; r++)); do
	declare -A this=()
	for m in "${modes[@]}"; do
		this[$m]=$(run "$m")
		cpu[$m]+="${this[$m]} "
	done
	for m in "${modes[@]}"; do
		ratio[$m]+="$(python3 -c "print(${this[$m]} / ${this[alone]})") "
	done
done

median() { python3 -c "import statistics, sys; print(f'{statistics.median(map(float, sys.argv[1:])):.3f}')" "$@"; }
printf "fx-service %ss, %s/s churn, LEEK_PERIOD=%s, %s rounds (medians)\n" "$secs" "$churn" "$period" "$rounds"
printf "%-8s %12s %10s\n" config "cpu s" ratio
for m in "${modes[@]}"; do
	# shellcheck disable=SC2086
	printf "%-8s %12s %10s\n" "$m" "$(median ${cpu[$m]})" "$(median ${ratio[$m]})"
done
