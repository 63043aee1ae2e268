#!/usr/bin/env bash
# exact-ab.sh: exact mode's recording cost, one libleek.so against another, resolved to 1% on a
# shared machine. Run by hand when a change touches a sample's path; never a pass/fail test.
#
#   bench/exact-ab.sh BUILD_OR_LIB...                 (each a build directory or a libleek.so)
#   RUNS=40 ROWS=20000 bench/exact-ab.sh /tmp/build-before build
#   WORKLOAD=python bench/exact-ab.sh build           python3.11 bench/workloads/alloc.py
#
# Each run is one short program under LD_PRELOAD with LEEK_PERIOD=1 (LEEK_SEED=1): sqlite3 on a
# generated script of ROWS rows (bench/workloads/sqlite-gen.awk; 20 000 rows, about 0.1 s plain
# and 0.6 M allocations), or with WORKLOAD=python, python3.11 with PYTHONMALLOC=malloc. Every
# library runs RUNS times (default 30), beside the program without leek, in a new random order
# each round. The noise of this machine is bursts that only ever add time, so the table shows the
# least time, the 10th percentile and the median of each: compare the first two columns. Two
# runs of one library agree within about 1% at the 10th percentile, where the medians of the
# long runs of bench/real.sh differ by 5% or more (docs/performance.md, "The benchmarks").
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-30}
rows=${ROWS:-20000}
workload=${WORKLOAD:-sqlite}
[ $# -gt 0 ] || { sed -n '2,9p' "$0" >&2; exit 2; }

libs=()
for a in "$@"; do
  if [ -d "$a" ]; then a=$a/src/preload/libleek.so; fi
  [ -f "$a" ] || { echo "no libleek.so at '$a'" >&2; exit 1; }
  libs+=("$(realpath "$a")")
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

. bench/workloads/exact.sh
exact_workload "$workload" "$rows" "$tmp"

# one I: run the program under libs[I] (I = -1: without leek), append its ms to $tmp/t.I
one() {
  local t0 t1 pre=
  [ "$1" -ge 0 ] && pre=${libs[$1]}
  t0=$EPOCHREALTIME
  env LEEK_OUTPUT="$tmp/p.%p.lk" LEEK_PERIOD=1 LEEK_SEED=1 LD_PRELOAD="$pre" "${cmd[@]}" \
    >/dev/null 2>"$tmp/err" || { echo "failed: ${libs[$1]:-plain}" >&2; tail -3 "$tmp/err" >&2; exit 1; }
  t1=$EPOCHREALTIME
  rm -f "$tmp"/p.*.lk
  echo "($t1 - $t0) * 1000" | bc -l >>"$tmp/t.$1"
}

started=$(date -u '+%Y-%m-%d %H:%M UTC')
load=$(cut -d' ' -f1-3 /proc/loadavg)
for r in $(seq "$runs"); do
  for i in $(seq -1 $((${#libs[@]} - 1)) | shuf); do one "$i"; done
done

echo "exact mode ($workload), $started, load $load, $runs runs of each, interleaved: ms"
printf '%-50s %8s %8s %8s %9s\n' library min p10 median "p10-plain"
# stats I: the least, the 10th percentile and the median of $tmp/t.I
stats() { sort -g "$tmp/t.$1" | awk '{ v[NR] = $1 } END {
  m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
  printf "%.1f %.1f %.1f", v[1], v[int(NR / 10) + 1], m }'; }
read -r pmin pp10 pmed <<<"$(stats -1)"
printf '%-50s %8s %8s %8s %9s\n' "(no leek)" "$pmin" "$pp10" "$pmed" -
for i in "${!libs[@]}"; do
  read -r lmin lp10 lmed <<<"$(stats "$i")"
  printf '%-50s %8s %8s %8s %9.1f\n' "${libs[$i]}" "$lmin" "$lp10" "$lmed" \
    "$(echo "$lp10 - $pp10" | bc -l)"
done
