#!/usr/bin/env bash
# callgrind-usdt.sh: what leek's USDT probes (src/preload/probes.h) cost while nobody listens, in
# instructions per malloc+free pair, libleek.so with the probes against libleek.so without them.
# callgrind counts instructions, so the numbers hold on a busy machine.
#
#   meson setup build-nousdt -Dusdt=disabled && ninja -C build-nousdt src/preload/libleek.so
#   bench/callgrind-usdt.sh [BUILD_WITH] [BUILD_WITHOUT]      (default: build build-nousdt)
#
# Rounds of bench/fastpath.c (one malloc and one free), each case run at N and at 2N rounds, so
# that the difference divided by N is one round's cost without the start and the exit:
#   exact 128        LEEK_PERIOD=1: every pair is a sample and its free (the probes' slow path)
#   sampled 1 MiB    LEEK_PERIOD=4096: every 1 MiB block is sampled (p = 1 - exp(-256))
#   fast 128         the default period: nearly every pair is the hooks' fast path, no probe there
set -euo pipefail
cd "$(dirname "$0")/.."
with=$(realpath "${1:-build}/src/preload/libleek.so")
without=$(realpath "${2:-build-nousdt}/src/preload/libleek.so")
for l in "$with" "$without"; do
  [ -f "$l" ] || { echo "no $l (see the usage above)" >&2; exit 1; }
done
readelf -n "$with" | grep -q 'Provider: leek' || { echo "$with has no leek probes" >&2; exit 1; }
if readelf -n "$without" | grep -q 'Provider: leek'; then
  echo "$without has leek probes: build it with -Dusdt=disabled" >&2; exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/fastpath" bench/fastpath.c

n=${N:-20000}
total() { grep -E '^summary:|^totals:' "$1" | head -1 | awk '{print $2}'; }
# run LIB ROUNDS SIZE ENV...: instructions of the whole run
run() {
  local lib=$1 rounds=$2 size=$3; shift 3
  env "$@" LEEK_SEED=1 LEEK_OUTPUT="$tmp/p.%p.lk" LD_PRELOAD="$lib" valgrind --tool=callgrind \
    --callgrind-out-file="$tmp/cg" "$tmp/fastpath" malloc "$rounds" "$size" 2>/dev/null
  rm -f "$tmp"/p.*.lk
  total "$tmp/cg"
}
per_round() { # LIB SIZE ENV...
  local lib=$1 size=$2; shift 2
  local a b
  a=$(run "$lib" "$n" "$size" "$@"); b=$(run "$lib" $((2 * n)) "$size" "$@")
  echo "scale=2; ($b - $a) / $n" | bc -l
}

echo "USDT probes, instructions per malloc+free round (callgrind), $(date -u '+%Y-%m-%d %H:%M UTC')," \
  "this checkout: $(git describe --always --dirty 2>/dev/null || echo '?'), N=$n"
printf '%-16s %14s %14s %10s\n' case without with "with-without"
for c in "exact 128 LEEK_PERIOD=1" "sampled 1048576 LEEK_PERIOD=4096" "fast 128 LEEK_PERIOD=524288"; do
  set -- $c
  name=$1 size=$2 envv=$3
  a=$(per_round "$without" "$size" "$envv"); b=$(per_round "$with" "$size" "$envv")
  label="$name $size"
  [ "$size" = 1048576 ] && label="$name 1 MiB"
  printf '%-16s %14s %14s %10s\n' "$label" "$a" "$b" "$(echo "$b - $a" | bc -l)"
done
