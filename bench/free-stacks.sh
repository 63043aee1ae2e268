#!/usr/bin/env bash
# free-stacks.sh: what LEEK_FREE_STACKS=1 costs, in instructions (callgrind: the numbers hold on
# a busy machine), per malloc+free pair of bench/micro.c, against leek without it and against no
# profiler.
#
#   bench/free-stacks.sh [BUILD_DIR]      (default: build)
#
# Cases: 128 B, 16 KiB and 1 MiB pairs at the default period (512 KiB: a 1 MiB block is sampled
# with probability 1 - e^-2 = 86%, so nearly every pair is a sample and its free unwinds), and
# 128 B pairs in exact mode (LEEK_PERIOD=1: every free unwinds). Each line: instructions per pair
# with no profiler, leek, leek with free stacks, the two ratios to no profiler, and free stacks'
# ratio to leek alone; and leek's samples per 1000 pairs.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
lib=$(realpath "$build/src/preload/libleek.so")
leek=$build/src/cli/leek
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -fno-builtin -pthread -o "$tmp/micro" bench/micro.c

total() { grep -E '^summary:|^totals:' "$1" | head -1 | awk '{print $2}'; }
# run OUT ENV... -- ARGS: instructions of one run of micro under callgrind
run() {
  local out=$1; shift
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" valgrind --tool=callgrind --callgrind-out-file="$tmp/$out" \
    "$tmp/micro" "$@" >/dev/null 2>&1
  total "$tmp/$out"
}

echo "LEEK_FREE_STACKS cost, $(date -u '+%Y-%m-%d %H:%M UTC'), tree" \
  "$(git describe --always --dirty 2>/dev/null || echo '?'), callgrind instructions per pair" \
  "(the untimed warm-up's sixteenth included)"
printf '%-22s %9s %9s %9s %9s %9s %11s %8s\n' case none leek "leek+fs" "leek/none" "fs/none" \
  "fs/leek" samples
# name, micro.c arguments, period
cases=("128 B|128 200000|" "16 KiB|16k 200000|" "1 MiB|1m 20000|" "128 B, exact|128 100000|1")
for c in "${cases[@]}"; do
  IFS='|' read -r name args period <<<"$c"
  n=$(awk -v a="$args" 'BEGIN { split(a, x, " "); printf "%d", x[2] + x[2] / 16 }')
  p=()
  [ -n "$period" ] && p=(LEEK_PERIOD="$period")
  a=$(run none X=1 -- $args)
  rm -f "$tmp"/off.* "$tmp"/on.*
  b=$(run leek LEEK_OUTPUT="$tmp/off.%p.lk" LD_PRELOAD="$lib" LEEK_SEED=1 "${p[@]}" -- $args)
  # valgrind's launcher runs under LD_PRELOAD too, and leaves small profiles of its own: the
  # benchmark's is the one with the most samples.
  s=$("$leek" dump --summary "$tmp"/off.* 2>/dev/null | awk -v n="$n" \
    '/^samples:/ && $2 > m { m = $2 } END { printf "%.1f", m * 1000 / n }' || echo -)
  f=$(run fs LEEK_OUTPUT="$tmp/on.%p.lk" LD_PRELOAD="$lib" LEEK_SEED=1 LEEK_FREE_STACKS=1 \
    "${p[@]}" -- $args)
  printf '%-22s %9.1f %9.1f %9.1f %9.3f %9.3f %11.3f %8s\n' "$name" "$(echo "$a / $n" | bc -l)" \
    "$(echo "$b / $n" | bc -l)" "$(echo "$f / $n" | bc -l)" "$(echo "$b / $a" | bc -l)" \
    "$(echo "$f / $a" | bc -l)" "$(echo "$f / $b" | bc -l)" "$s"
done
