#!/usr/bin/env bash
# export.sh: what `leek export` costs, in time and peak memory, beside `leek report --format json`
# of the same profile, and whether `go tool pprof -top` opens what it writes. Two profiles:
#
#   workload  an exact profile of bench/workload-alloc.c 4 (12.5 million allocations, made as
#             bench/report-throughput.sh makes it): a long file with few stacks, so the reading
#             is most of the time;
#   stacks    bench/export-profile.c STACKS 32: an exact profile of STACKS distinct stacks of 32
#             frames in a call tree, about 23 distinct frames a stack, in no module: the export's
#             own tables, protobuf-c and gzip, with no symbolizer (libdw) time.
#
#   bench/export.sh [BUILD_DIR]                (default: build)
#   ROUNDS=5 STACKS=200000 bench/export.sh     (defaults: 3 rounds, 50000 stacks)
#
# Each command runs ROUNDS times; the median wall time and the largest peak RSS (GNU time) are
# printed. Wall times are timings on a shared machine: compare the ratios. Run by hand only.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${ROUNDS:-3}
stacks=${STACKS:-50000}

leek=$(realpath "$build/src/cli/leek")
[ -x "$leek" ] || { echo "no leek in '$build': meson setup $build && ninja -C $build" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "GNU time is needed: apt-get install -y time" >&2; exit 1; }
command -v go >/dev/null || { echo "go is needed for go tool pprof: apt-get install -y golang-go" >&2
  exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -g -o "$tmp/workload" bench/workload-alloc.c
cc -O2 -D_GNU_SOURCE -I tests/lib -I src/common -I include -o "$tmp/gen" bench/export-profile.c \
  tests/lib/build-profile.c

"$leek" run --no-compress --period 1 -o "$tmp/workload.%p.lk" -- "$tmp/workload" 4 >/dev/null 2>&1
mv "$tmp"/workload.*.lk "$tmp/workload.lk"
"$tmp/gen" "$stacks" 32 "$tmp/stacks.lk" >/dev/null

# run NAME CMD...: ROUNDS runs of CMD (output thrown away); prints "median-seconds max-KiB".
run() {
  local name=$1; shift
  : >"$tmp/t.$name"
  for _ in $(seq "$rounds"); do
    /usr/bin/time -f "%e %M" -o "$tmp/one" "$@" >/dev/null 2>"$tmp/err" || {
      echo "failed: $*" >&2; tail -5 "$tmp/err" >&2; exit 1; }
    tail -1 "$tmp/one" >>"$tmp/t.$name"
  done
  sort -g "$tmp/t.$name" | awk '{ t[NR] = $1; if ($2 > m) m = $2 }
    END { printf "%.2f %d\n", (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2, m }'
}

echo "leek export, $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -m), $(nproc) CPUs," \
  "load $(cut -d' ' -f1 /proc/loadavg), $rounds rounds"
echo "leek: $build, tree $(git describe --always --dirty 2>/dev/null || echo '?')"
printf '%-10s %-34s %9s %9s %12s\n' profile command "median s" "peak MiB" "output bytes"
for p in workload stacks; do
  f=$tmp/$p.lk
  echo "$p: $(stat -c %s "$f") bytes raw"
  for c in report pprof folded go-top; do
    case $c in
      report) name="leek report --format json"; out=-
              r=$(run "$p.$c" "$leek" report --format json "$f") ;;
      pprof) name="leek export"; out=$tmp/$p.pb.gz
             r=$(run "$p.$c" "$leek" export -o "$out" "$f") ;;
      folded) name="leek export --format folded"; out=$tmp/$p.folded
              r=$(run "$p.$c" "$leek" export --format folded -o "$out" "$f") ;;
      go-top) name="go tool pprof -top (the export)"; out=-
              r=$(run "$p.$c" go tool pprof -top "$tmp/$p.pb.gz") ;;
    esac
    size=-
    [ "$out" != - ] && size=$(stat -c %s "$out")
    read -r s kib <<<"$r"
    printf '%-10s %-34s %9s %9d %12s\n' "$p" "$name" "$s" $(((kib + 512) / 1024)) "$size"
  done
done
