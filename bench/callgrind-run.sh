#!/usr/bin/env bash
# callgrind-run.sh: what `leek run --period 1`'s own process costs, in instructions, beside the
# program it runs (issue 29): its follower replaying the profile as it grows, the zstd compression,
# the summary and its symbolizer. callgrind counts instructions, so the numbers hold on a busy
# machine where bench/exact-heaptrack.sh's times do not; what they miss is the kernel's side (the
# reads of the profile). Run by hand; never a pass/fail test.
#
#   bench/callgrind-run.sh [BUILD...]                     (default: build)
#   bench/callgrind-run.sh /tmp/build-before build       two builds side by side
#   WORKLOADS="sqlite redis" ROWS=20000 bench/callgrind-run.sh build
#
# Knobs (environment):
#   WORKLOADS  any of sqlite, python, redis (default: all three, issue 29's)
#   ROWS       sqlite3's rows (default 200 000, bench/exact-heaptrack.sh's)
#   REQUESTS   redis-benchmark's requests of each test (default 300 000, exact-heaptrack.sh's)
#   KEEP=1     keeps the callgrind files (the temporary directory is printed)
#
# The workloads are bench/exact-heaptrack.sh's: sqlite3 on ROWS rows, python3.11
# bench/workloads/alloc.py with PYTHONMALLOC=malloc, and redis-server with --io-threads 2 under
# pipelined redis-benchmark. Only `leek run` is under callgrind (--trace-children=no): the program
# it starts runs at full speed, so leek's follower lags more than it does outside valgrind and
# the summary reads more of the file; the sum of the two is the same. Each build runs each
# workload once; the table gives the leek process's instructions, split by what they were for
# (callgrind_annotate's inclusive counts): "replay" is the reading and applying of the records
# (lk_profile_follow_step, by the follower and the summary), "zstd" the compression and its
# choice of level (compress_some, choose_level), "symbols" the symbolizer (the follower's
# lk_symbolizer_prepare and the summary's report), "rest" everything else; then the .zst's size and
# the raw profile's (the .zst decompressed), and that the .zst decompresses to a profile that
# `leek dump --summary` reads whole (its trailer, no losses). The programs' profiles differ a
# little from run to run (redis-server's threads interleave as they please), so compare the sizes
# to within a percent.
set -euo pipefail
cd "$(dirname "$0")/.."
builds=("$@")
[ ${#builds[@]} -gt 0 ] || builds=(build)
workloads=${WORKLOADS:-sqlite python redis}
rows=${ROWS:-200000}
requests=${REQUESTS:-300000}
for b in "${builds[@]}"; do
  [ -x "$b/src/cli/leek" ] && [ -f "$b/src/preload/libleek.so" ] ||
    { echo "no leek in '$b': meson setup $b && ninja -C $b" >&2; exit 1; }
done
for t in valgrind callgrind_annotate zstd chrt; do
  command -v $t >/dev/null || { echo "needs $t (apt-get install -y valgrind zstd util-linux)" >&2; exit 1; }
done
tmp=$(mktemp -d)
server=
if [ -n "${KEEP:-}" ]; then echo "callgrind files in $tmp"; fi
trap '[ -z "$server" ] || kill -9 "$server" 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
. bench/workloads/exact.sh

# under I BUILD CMD...: `leek run --period 1 CMD` of BUILD under callgrind, into $tmp/cg.I, its
# profile into $tmp/out.I. valgrind runs one thread at a time, under one lock: the follower at
# SCHED_IDLE (run-follow.c) would then hold up the whole of leek, for as long as anything else on
# the machine wants a CPU, so its threads are put back to SCHED_OTHER every half second (chrt).
# The policy changes no instruction count.
under() {
  local i=$1 b=$2 vg t; shift 2
  rm -rf "$tmp/out.$i" && mkdir "$tmp/out.$i"
  LEEK_LIBRARY=$(realpath "$b/src/preload/libleek.so") valgrind --tool=callgrind \
    --callgrind-out-file="$tmp/cg.$i" "$b/src/cli/leek" run --period 1 -o "$tmp/out.$i/p.%p.lk" \
    -- "$@" &
  vg=$!
  while kill -0 "$vg" 2>/dev/null; do
    for t in /proc/"$vg"/task/*; do chrt -o -p 0 "${t##*/}" >/dev/null 2>&1 || true; done
    sleep 0.5
  done
  wait "$vg"
}

# redis I BUILD: redis-server --io-threads 2 under `leek run`, the benchmark's load, SHUTDOWN
redis() {
  local i=$1 b=$2 port n
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')
  under "$i" "$b" redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
    --daemonize no --logfile "$tmp/redis.log" --io-threads 2 --io-threads-do-reads yes &
  server=$!
  for n in $(seq 600); do
    redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && break
    kill -0 "$server" 2>/dev/null || { echo "redis: the server died at start" >&2; exit 1; }
    sleep 0.05
  done
  redis-benchmark -p "$port" -P 16 -c 50 -n "$requests" -r 1000000 -d 64 \
    -t set,get,lpush,lpop --csv >/dev/null 2>"$tmp/bench.err" ||
    { echo "redis-benchmark failed" >&2; tail -3 "$tmp/bench.err" >&2; exit 1; }
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  wait "$server"
  server=
}

# incl FILE FUNCTION...: the sum of the functions' inclusive instructions
incl() {
  local f=$1; shift
  callgrind_annotate --inclusive=yes --threshold=100 "$f" 2>/dev/null |
    awk -v fns="$*" 'BEGIN { n = split(fns, want, " ") }
      { for (k = 1; k <= n; k++) if (index($0, ":" want[k] " ") && !seen[k]++) {
          v = $1; gsub(",", "", v); s += v } }
      END { printf "%.0f\n", s }'
}

printf '%-8s %-28s %9s %9s %9s %9s %9s %11s %11s\n' workload build 'total M' 'replay M' 'zstd M' \
  'symbols M' 'rest M' '.zst bytes' 'raw bytes'
i=0
for w in $workloads; do
  case $w in
    sqlite | python) exact_workload "$w" "$rows" "$tmp" ;;
    redis) command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null ||
             { echo "needs redis-server and redis-benchmark (apt-get install -y redis)" >&2; exit 1; } ;;
    *) echo "WORKLOADS: sqlite, python or redis" >&2; exit 2 ;;
  esac
  for b in "${builds[@]}"; do
    i=$((i + 1))
    if [ "$w" = redis ]; then
      redis "$i" "$b" >/dev/null 2>"$tmp/err.$i" || { tail -5 "$tmp/err.$i" >&2; exit 1; }
    else
      under "$i" "$b" "${cmd[@]}" >/dev/null 2>"$tmp/err.$i" || { tail -5 "$tmp/err.$i" >&2; exit 1; }
    fi
    zst=$(ls "$tmp/out.$i"/p.*.lk.zst)
    [ "$(echo "$zst" | wc -l)" = 1 ] || { echo "$w: not one .zst: $zst" >&2; exit 1; }
    "$b/src/cli/leek" dump --summary "$zst" >"$tmp/summary" 2>&1 &&
      grep -q '^trailer: *yes' "$tmp/summary" && grep -q '^losses: *none' "$tmp/summary" ||
      { echo "$w: $zst is not a whole profile:" >&2; tail -3 "$tmp/summary" >&2; exit 1; }
    total=$(grep -m1 -E '^(summary|totals):' "$tmp/cg.$i" | awk '{ print $2 }')
    replay=$(incl "$tmp/cg.$i" lk_profile_follow_step lk_profile_load)
    zstd=$(incl "$tmp/cg.$i" compress_some choose_level)
    symbols=$(incl "$tmp/cg.$i" lk_symbolizer_prepare lk_report_add_modules lk_report_add lk_report_finish)
    printf '%-8s %-28s %9.1f %9.1f %9.1f %9.1f %9.1f %11d %11d\n' "$w" "$b" \
      "$(echo "$total / 1000000" | bc -l)" "$(echo "$replay / 1000000" | bc -l)" \
      "$(echo "$zstd / 1000000" | bc -l)" "$(echo "$symbols / 1000000" | bc -l)" \
      "$(echo "($total - $replay - $zstd - $symbols) / 1000000" | bc -l)" \
      "$(stat -c %s "$zst")" "$(zstd -dc "$zst" | wc -c)"
  done
done
echo "tree $(git describe --always --dirty 2>/dev/null || echo '?'), $(date -u '+%Y-%m-%d %H:%M UTC')"
