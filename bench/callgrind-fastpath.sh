#!/usr/bin/env bash
# callgrind-fastpath.sh: instructions per call of libleek's hooks, and per round against no
# profiler. callgrind counts instructions, so the numbers hold on a busy machine.
#
#   bench/callgrind-fastpath.sh [BUILD_DIR [ENV...]]   (default: build)
#
# ENV: more environment words for the runs under leek, e.g. LEEK_GUARD=64 for guard mode (the
# row of docs/performance.md). CALLS="malloc" picks the calls (default: malloc calloc realloc).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
extra=("$@")
lib=$(realpath "$build/src/preload/libleek.so")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/fastpath" bench/fastpath.c

n=200000
total() { grep -E '^summary:|^totals:' "$1" | head -1 | awk '{print $2}'; }
# Self cost of one hook: its lines in hooks.c plus what it inlined from preload.h.
self() { callgrind_annotate --threshold=100 "$1" 2>/dev/null |
  awk -v f="$2" '$2 == "(" && ($0 ~ ("(hooks|preload)[.][ch]:" f "( |$)")) { gsub(",", "", $1); s += $1 }
    END { print s + 0 }'; }

printf '%-8s %6s %12s %12s %10s\n' call size "none/round" "leek/round" "hook/call"
for call in ${CALLS:-malloc calloc realloc}; do
  for size in 128 16384; do
    valgrind --tool=callgrind --callgrind-out-file="$tmp/none" "$tmp/fastpath" $call $n $size 2>/dev/null
    env "${extra[@]}" LEEK_OUTPUT="$tmp/p.%p.lk" LD_PRELOAD=$lib \
      valgrind --tool=callgrind --callgrind-out-file="$tmp/leek" "$tmp/fastpath" $call $n $size 2>/dev/null
    a=$(total "$tmp/none"); b=$(total "$tmp/leek")
    h=$(self "$tmp/leek" $call); f=$(self "$tmp/leek" free)
    printf '%-8s %6s %12.1f %12.1f %10s\n' $call $size "$(echo "$a / $n" | bc -l)" \
      "$(echo "$b / $n" | bc -l)" "$(echo "scale=1; ${h:-0} / $n" | bc -l)"
    if [ "$call" = malloc ] && [ "$size" = 128 ]; then
      printf '%-8s %6s %12s %12s %10s\n' free $size - - "$(echo "scale=1; ${f:-0} / $n" | bc -l)"
    fi
  done
done
