#!/usr/bin/env bash
# report-throughput.sh: how fast `leek report` reads a large exact-mode profile, side by side with
# heaptrack_print on a heaptrack recording of the same program; and, on the way, what recording
# costs each of them against the plain program, and how big the two recordings are.
#
#   bench/report-throughput.sh [BUILD_DIR]      (default: build)
#   ROUNDS=5 SCALE=4 bench/report-throughput.sh /tmp/build-bench
#
# The workload is bench/workload-alloc.c (SCALE=4: 12.5 million allocations, about 1 s on its
# own). Every timed step runs ROUNDS times, interleaved (plain, leek run, libleek, heaptrack,
# plain, ...; then report, dump, heaptrack_print, zstd, report, ...), and the medians are
# printed, so a busy machine slows both sides alike. Wall times are timings, not counts: compare
# the ratios, never the seconds against another machine. Run by hand only.
#
# `leek run` reads the profile it just wrote to print its summary, so the libleek row (the same
# run under LD_PRELOAD alone) is the profiler's own cost. `leek dump --summary` (the reader and
# the live-block table, no symbols) is the floor under report, and stands in for it where report
# does not exist yet. `zstd -dc` is what decompressing its input alone costs heaptrack_print.
# Records are leek's records of every kind and heaptrack's trace lines. Needs heaptrack, zstd
# and bc; GNU time (/usr/bin/time) adds the CPU and memory columns.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${ROUNDS:-5}
scale=${SCALE:-4}

if ! command -v heaptrack >/dev/null || ! command -v heaptrack_print >/dev/null; then
  echo "heaptrack is not installed; on Debian: apt-get install -y heaptrack" >&2
  exit 1
fi
leek=$(realpath "$build/src/cli/leek")
[ -x "$leek" ] && [ -f "$build/src/preload/libleek.so" ] || {
  echo "no leek in '$build': meson setup $build && ninja -C $build" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -g -o "$tmp/workload" bench/workload-alloc.c

# wall TIMES_FILE CMD...: runs CMD with its output thrown away and appends a line to TIMES_FILE:
# wall seconds, then (if GNU time is there, else "-") max RSS in KiB and CPU seconds, user plus
# system, of CMD and its children. A failing CMD stops the script.
gnutime=$(command -v /usr/bin/time || true)
wall() {
  local out=$1 t0 t1 rc=0 rss="- -"; shift
  t0=$EPOCHREALTIME
  if [ -n "$gnutime" ]; then
    "$gnutime" -f "%M %U %S" -o "$tmp/rss" "$@" >/dev/null 2>"$tmp/err" || rc=$?
    rss=$(tail -1 "$tmp/rss" | awk '{ print $1, $2 + $3 }')
  else
    "$@" >/dev/null 2>"$tmp/err" || rc=$?
  fi
  t1=$EPOCHREALTIME
  if [ $rc -ne 0 ]; then
    echo "failed ($rc): $*" >&2; tail -5 "$tmp/err" >&2; exit 1
  fi
  echo "$(echo "$t1 - $t0" | bc -l) $rss" >>"$out"
}
# median FILE, spread FILE (min-max), cpu FILE (median): of the columns that wall() wrote.
median() { sort -g "$1" |
  awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
spread() { sort -g "$1" | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.2f-%.2f", lo, hi }'
}
cpu() { awk '{ print $3 }' "$1" >"$1.cpu"
  grep -qx -- - "$1.cpu" && echo - || printf %.2f "$(median "$1.cpu")"; }
maxrss() { awk '$2 != "-" && $2 > m { m = $2 } END { print m ? int(m / 1024 + 0.5) : "-" }' "$1"; }

allocs=$("$tmp/workload" "$scale" | awk '/^allocations:/ { print $2 }')

# Recording: plain, `leek run` in exact mode (which reads the new profile once more to print its
# summary), libleek alone under LD_PRELOAD, heaptrack (its heaptrack_interpret runs beside the
# program and compresses). Each round writes fresh files; the last round's are kept for analysis.
lib=$(realpath "$build/src/preload/libleek.so")
mkdir "$tmp/rec"
for i in $(seq "$rounds"); do
  rm -rf "$tmp/rec"/*
  wall "$tmp/t.plain" "$tmp/workload" "$scale"
  # --no-compress: recording and the summary, as before `leek run` compressed its profiles (the
  # compression's own cost is in docs/format.md, "Compressed profiles").
  wall "$tmp/t.leekrun" "$leek" run --no-compress --period 1 -o "$tmp/rec/w.%p.lk" -- \
    "$tmp/workload" "$scale"
  wall "$tmp/t.preload" env LEEK_PERIOD=1 LEEK_OUTPUT="$tmp/rec/p.%p.lk" LD_PRELOAD="$lib" \
    "$tmp/workload" "$scale"
  wall "$tmp/t.htrun" heaptrack -o "$tmp/rec/w" "$tmp/workload" "$scale"
done
lk=$(ls "$tmp"/rec/w.*.lk)
ht=$(ls "$tmp"/rec/w.zst "$tmp"/rec/w.gz 2>/dev/null | head -1 || true)
case "$ht" in
  *.zst) command -v zstd >/dev/null || { echo "no zstd: apt-get install -y zstd" >&2; exit 1; }
         decompress=(zstd -dcq "$ht") ;;
  *) decompress=(gzip -dc "$ht") ;;
esac

# Records: leek's from the summary's "records:" line (every tag, summed); heaptrack's are the
# lines of its text trace.
lk_records=$("$leek" dump --summary "$lk" |
  awk '/^records:/ { for (i = 2; i <= NF; i++) { split($i, kv, "="); n += kv[2] } } END { print n }'
)
ht_records=$("${decompress[@]}" | wc -l)

if "$leek" report --help >/dev/null 2>&1; then
  analyses=(report-json report-text dump-summary heaptrack_print zstd-dc)
else
  echo "note: 'leek report' is not there yet; only 'leek dump --summary' is timed for leek" >&2
  analyses=(dump-summary heaptrack_print zstd-dc)
fi
analyse() {
  case $1 in
    report-json) wall "$tmp/a.$1" "$leek" report --format json "$lk" ;;
    report-text) wall "$tmp/a.$1" "$leek" report "$lk" ;;
    dump-summary) wall "$tmp/a.$1" "$leek" dump --summary "$lk" ;;
    heaptrack_print) wall "$tmp/a.$1" heaptrack_print "$ht" ;;
    zstd-dc) wall "$tmp/a.$1" "${decompress[@]}" ;;
  esac
}
# Both files are in the page cache by now (just written, then read by dump and wc above).
for i in $(seq "$rounds"); do
  for a in "${analyses[@]}"; do analyse "$a"; done
done

echo "leek report throughput, $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -m), $(nproc) CPUs," \
  "load $(cut -d' ' -f1 /proc/loadavg), $rounds rounds, medians"
echo "workload:  bench/workload-alloc.c $scale (gcc -O2 -g), $allocs allocations"
echo "leek:      $("$leek" --version 2>/dev/null | head -1), $build," \
  "tree $(git describe --always --dirty 2>/dev/null || echo '?')"
echo "heaptrack: $(heaptrack --version 2>/dev/null | head -1)"
echo
plain=$(median "$tmp/t.plain")
printf '%-26s %8s %11s %7s %7s %7s %11s %8s %7s\n' recording "median s" "min-max" "x plain" \
  "cpu s" "x plain" "file bytes" "B/alloc" "maxMiB"
plain_cpu=$(cpu "$tmp/t.plain")
for r in plain leekrun preload htrun; do
  case $r in
    plain) name="plain" f= ;;
    leekrun) name="leek run --period 1" f=$lk ;;
    preload) name="libleek.so, LEEK_PERIOD=1" f=$(ls "$tmp"/rec/p.*.lk) ;;
    htrun) name="heaptrack" f=$ht ;;
  esac
  m=$(median "$tmp/t.$r"); c=$(cpu "$tmp/t.$r"); size=-; per=-; cx=-
  [ -n "$f" ] && size=$(stat -c %s "$f") && per=$(printf %.1f "$(echo "$size / $allocs" | bc -l)")
  [ "$c" != - ] && cx=$(printf %.1f "$(echo "$c / $plain_cpu" | bc -l)")
  printf '%-26s %8.3f %11s %7.1f %7s %7s %11s %8s %7s\n' "$name" "$m" "$(spread "$tmp/t.$r")" \
    "$(echo "$m / $plain" | bc -l)" "$c" "$cx" "$size" "$per" "$(maxrss "$tmp/t.$r")"
done
echo "(cpu s: user+system of the whole process tree, median; maxMiB: its largest process, max)"
echo
echo "records: leek $lk_records (dump --summary), heaptrack $ht_records (trace lines)"
hp=$(median "$tmp/a.heaptrack_print")
printf '%-28s %8s %11s %7s %8s %9s %9s %7s\n' analysis "median s" "min-max" "cpu s" "Mrec/s" \
  "Malloc/s" "x htprint" "maxMiB"
for a in "${analyses[@]}"; do
  case $a in
    report-json) name="leek report --format json" n=$lk_records ;;
    report-text) name="leek report" n=$lk_records ;;
    dump-summary) name="leek dump --summary" n=$lk_records ;;
    heaptrack_print) name="heaptrack_print" n=$ht_records ;;
    zstd-dc) name="${decompress[0]} -dc (its input)" n=$ht_records ;;
  esac
  m=$(median "$tmp/a.$a")
  printf '%-28s %8.3f %11s %7s %8.2f %9.2f %9.2f %7s\n' "$name" "$m" "$(spread "$tmp/a.$a")" \
    "$(cpu "$tmp/a.$a")" "$(echo "$n / $m / 10^6" | bc -l)" \
    "$(echo "$allocs / $m / 10^6" | bc -l)" "$(echo "$m / $hp" | bc -l)" "$(maxrss "$tmp/a.$a")"
done
