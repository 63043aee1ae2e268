#!/usr/bin/env bash
# exact-heaptrack.sh: `leek run --period 1` against heaptrack and the plain program, end to end,
# with the statistics that a shared machine's bursts of noise leave readable. Run by hand; never a
# pass/fail test.
#
#   bench/exact-heaptrack.sh [BUILD]                  (default: build)
#   ROUNDS=12 ROWS=200000 bench/exact-heaptrack.sh /tmp/build-bench
#   WORKLOAD=python bench/exact-heaptrack.sh build    python3.11 bench/workloads/alloc.py
#
# The programs are bench/real.sh's: sqlite3 on a script of ROWS rows (bench/workloads/sqlite-gen.awk,
# 200 000 by default, as bench/real.sh), or python3.11 with PYTHONMALLOC=malloc. Each round runs
# the plain program, `leek run --period 1` (its summary and compression included, as a user
# meets it) and `heaptrack` once each, in a new random order. bench/real.sh shows medians of the
# per-round ratios, which move by 5% to 15% from run to run on this machine; here the least time,
# the 10th percentile and the median of each are shown, and the ratios of each (the noise only
# ever adds time, so the first two columns are the ones to compare), then the median and the
# quartiles of the per-round ratio of leek run to heaptrack.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${ROUNDS:-12}
rows=${ROWS:-200000}
workload=${WORKLOAD:-sqlite}
leek=$build/src/cli/leek
[ -x "$leek" ] || { echo "no leek at $leek (build first)" >&2; exit 1; }
command -v heaptrack >/dev/null || { echo "needs heaptrack (apt-get install -y heaptrack)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

. bench/workloads/exact.sh
exact_workload "$workload" "$rows" "$tmp"

# one I: run variant I (0 plain, 1 leek run, 2 heaptrack), append its seconds to $tmp/t.I
one() {
  local t0 t1
  mkdir -p "$tmp/out"
  t0=$EPOCHREALTIME
  case $1 in
    0) "${cmd[@]}" ;;
    1) "$leek" run --period 1 -o "$tmp/out/p.%p.lk" -- "${cmd[@]}" ;;
    2) heaptrack -o "$tmp/out/ht.%p" "${cmd[@]}" ;;
  esac >/dev/null 2>"$tmp/err" || { echo "variant $1 failed:" >&2; tail -3 "$tmp/err" >&2; exit 1; }
  t1=$EPOCHREALTIME
  rm -rf "$tmp/out"
  echo "$t1 - $t0" | bc -l >>"$tmp/t.$1"
}

started=$(date -u '+%Y-%m-%d %H:%M UTC')
load=$(cut -d' ' -f1-3 /proc/loadavg)
for r in $(seq "$rounds"); do
  for v in $(shuf -e 0 1 2); do one "$v"; done
  echo "round $r of $rounds done" >&2
done

echo "exact mode end to end ($workload), $started, load $load, $rounds rounds, tree $(git describe --always --dirty 2>/dev/null || echo '?')"
python3 - "$tmp" <<'PY'
import statistics, sys
d = sys.argv[1]
names = ["plain", "leek run --period 1", "heaptrack"]
rounds = [[float(x) for x in open(f"{d}/t.{i}")] for i in range(3)] # in round order
t = [sorted(v) for v in rounds]
stats = {"least": lambda v: v[0], "p10": lambda v: v[len(v) // 10], "median": statistics.median}
print(f"{'':22s}" + "".join(f"{k:>10s}" for k in stats))
for name, v in zip(names, t):
    print(f"{name:22s}" + "".join(f"{f(v):9.3f}s" for f in stats.values()))
for label, a, b in (("leek run / heaptrack", 1, 2), ("leek run / plain", 1, 0), ("heaptrack / plain", 2, 0)):
    print(f"{label:22s}" + "".join(f"{f(t[a]) / f(t[b]):9.3f}x" for f in stats.values()))
# The ratio of each round's two times, as bench/real.sh quotes it: a burst of noise that slows
# one round slows both of its runs, and falls out of the ratio more than out of either median.
per = sorted(x / y for x, y in zip(rounds[1], rounds[2]))
print(f"leek run / heaptrack, per round: median {statistics.median(per):.3f}x, "
      f"quartiles {per[len(per) // 4]:.3f}x to {per[(3 * len(per)) // 4]:.3f}x, "
      f"{sum(x <= 0.5 for x in per)} of {len(per)} rounds at most 0.5x")
PY
