#!/usr/bin/env bash
# real.sh: what leek costs real programs (issue 4). Each workload runs without leek and under
# libleek.so at the default period, side by side; sqlite3 and Python also run in exact mode
# (LEEK_PERIOD=1) against heaptrack. Prints one table per workload: wall time (redis: requests/s)
# and peak RSS, each as a ratio to the same program without leek.
#
#   bench/real.sh [BUILD_DIR]              (default: build)
#   ROUNDS=7 bench/real.sh /tmp/build-bench
#   ONLY=exact bench/real.sh               exact mode and heaptrack alone (and the plain runs)
#
# The workloads:
#   sqlite3   bench/workloads/sqlite-gen.awk: 200 000 single-row INSERTs in transactions of
#             10 000, two indexes, group-by and join queries, an UPDATE and a DELETE, on an
#             in-memory database (its pages are heap, and no disk in the timing). About 1.5 s.
#   python3   bench/workloads/alloc.py on /usr/bin/python3.11: dicts, lists and strings, JSON
#             dumps and loads, sorting. Twice: PYTHONMALLOC=pymalloc (small objects come from
#             pymalloc's mmapped arenas; only large ones reach malloc) and PYTHONMALLOC=malloc
#             (every object is a malloc). The variable is set in both the plain and leek runs.
#   redis     redis-server (its own jemalloc; only the server is preloaded), on a free port of
#             127.0.0.1, no persistence, pinned to CPU 0, driven by redis-benchmark pinned to CPU
#             1 (-P 16 -c 50 -n 1000000 -r 1000000 -d 64 -t set,get,lpush,lpop), so the server
#             is the bottleneck: the table shows how busy it was. Peak RSS is the server's VmHWM.
#
# Every round runs every variant once, interleaved, and the order of plain and leek flips from one
# round to the next. "x plain" is the median over the rounds of each round's ratio to the plain
# run beside it, so a busy machine slows both sides alike; min-max is the spread of those ratios.
# Wall times are timings, not counts: compare ratios, never seconds from another machine. The
# budgets (at most 1.01x time and 1.02x peak RSS at the default period; exact mode at most half
# of heaptrack's time, with a smaller file) are printed beside the ratios, as information: this is
# run by hand, never as a pass/fail test.
#
# Every profile leek writes is read back with `leek dump --summary` (outside the timing) and a
# profile without its trailer, or with losses, is reported. KEEP=1 keeps the temporary directory
# (its t.* files hold every round's numbers). Needs sqlite3, python3.11,
# redis-server, redis-tools, heaptrack, bc, GNU time (/usr/bin/time) and taskset.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${ROUNDS:-5}

missing=()
for t in sqlite3:sqlite3 /usr/bin/python3.11:python3.11 redis-server:redis-server \
         redis-benchmark:redis-tools redis-cli:redis-tools heaptrack:heaptrack bc:bc \
         /usr/bin/time:time taskset:util-linux; do
  command -v "${t%%:*}" >/dev/null || missing+=("${t#*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "missing tools; on Debian: apt-get install -y $(printf '%s\n' "${missing[@]}" | sort -u |
    tr '\n' ' ')" >&2
  exit 1
fi
leek=$(realpath "$build/src/cli/leek")
lib=$(realpath "$build/src/preload/libleek.so")
[ -x "$leek" ] && [ -f "$lib" ] || {
  echo "no leek in '$build': meson setup $build && ninja -C $build" >&2; exit 1; }
py=/usr/bin/python3.11
tmp=$(mktemp -d)
server=
cleanup() {
  [ -z "$server" ] || kill -9 "$server" 2>/dev/null
  [ -n "${KEEP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$tmp/out" "$tmp/ht"
awk -v rows=200000 -f bench/workloads/sqlite-gen.awk >"$tmp/w.sql"
problems=$tmp/problems
: >"$problems"

# run NAME CMD...: runs CMD with its output thrown away and appends to $tmp/t.NAME: wall seconds,
# max RSS in KiB (GNU time: the largest process of the tree) and CPU seconds, user plus system.
# A failing CMD stops the script.
run() {
  local name=$1 t0 t1 rc=0; shift
  t0=$EPOCHREALTIME
  /usr/bin/time -f "%M %U %S" -o "$tmp/rss" "$@" >/dev/null 2>"$tmp/err" || rc=$?
  t1=$EPOCHREALTIME
  if [ $rc -ne 0 ]; then
    echo "failed ($rc): $*" >&2; tail -5 "$tmp/err" >&2; exit 1
  fi
  echo "$(echo "$t1 - $t0" | bc -l) $(tail -1 "$tmp/rss" | awk '{ print $1, $2 + $3 }')" \
    >>"$tmp/t.$name"
}
# check NAME FILE...: reads back the profiles leek just wrote, notes any without a trailer or with
# losses, appends their total size to $tmp/f.NAME and deletes them.
check() {
  local name=$1 f size=0; shift
  [ $# -gt 0 ] && [ -e "$1" ] || { echo "$name: leek wrote no profile" >>"$problems"; return; }
  for f in "$@"; do
    size=$((size + $(stat -c %s "$f")))
    "$leek" dump --summary "$f" >"$tmp/summary" 2>&1 ||
      echo "$name: dump failed on $f" >>"$problems"
    grep -q '^trailer: *yes' "$tmp/summary" ||
      echo "$name: $(grep '^trailer:' "$tmp/summary" || echo 'no trailer line')" >>"$problems"
    grep -q '^losses: *none' "$tmp/summary" ||
      echo "$name: $(grep '^losses:' "$tmp/summary")" >>"$problems"
    cp "$tmp/summary" "$tmp/last-summary.$name"
  done
  echo "$size" >>"$tmp/f.$name"
  rm -f "$@"
}
leekenv() { echo env LEEK_OUTPUT="$tmp/out/$1.%p.lk" LD_PRELOAD="$lib"; }

# One plain-leek pair; $flip (set per round) decides which side goes first.
pair() {
  local name=$1; shift
  if [ "$flip" = 0 ]; then
    run "$name.plain" "$@"
    run "$name.leek" $(leekenv "$name") "$@"; check "$name.leek" "$tmp/out/$name".*
  else
    run "$name.leek" $(leekenv "$name") "$@"; check "$name.leek" "$tmp/out/$name".*
    run "$name.plain" "$@"
  fi
}
# Exact mode and heaptrack, one run each, each through its own front end, as a user would run
# it: `leek run` reads and compresses the profile as the program writes it (run-follow.c) and
# prints its summary after the exit, heaptrack interprets and compresses its recording (zstd) in
# processes of its own as it goes and prints its summary.
# "nofollow" is `leek run --no-follow`, which does all of that after the exit.
exact() {
  local name=$1; shift
  run "$name.exact" "$leek" run --period 1 -o "$tmp/out/$name-x.%p.lk" -- "$@"
  check "$name.exact" "$tmp/out/$name-x".*
  run "$name.nofollow" "$leek" run --no-follow --period 1 -o "$tmp/out/$name-x.%p.lk" -- "$@"
  check "$name.nofollow" "$tmp/out/$name-x".*
  run "$name.heaptrack" heaptrack -o "$tmp/ht/$name" "$@"
  grep -E '^\s*allocations:' "$tmp/err" | awk '{ print $2 }' >"$tmp/allocs.$name"
  stat -c %s "$tmp/ht/$name".* >>"$tmp/f.$name.heaptrack"
  rm -f "$tmp/ht/$name".*
}

# redis: free_port prints a port nobody listens on (a small race, on a private loopback).
free_port() { "$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'; }
cpu0=(taskset -c 0) cpu1=(taskset -c 1)
[ "$(nproc)" -ge 2 ] || cpu0=() cpu1=()
tck=$(getconf CLK_TCK)
redis_tests=(SET GET LPUSH LPOP)
# redis_run NAME [ENV...]: starts a server (under ENV), runs the benchmark, appends to
# $tmp/t.NAME: total requests/s (all requests over the sum of each test's time), the server's
# VmHWM in KiB, its CPU seconds during the benchmark and the benchmark's wall seconds; and each
# test's requests/s to $tmp/t.NAME.TEST.
redis_run() {
  local name=$1 port i c0 c1 t0 t1 hwm; shift
  port=$(free_port)
  "${cpu0[@]}" env "$@" redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
    --daemonize no --logfile "$tmp/redis.log" &
  server=$!
  for i in $(seq 100); do
    redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && break
    kill -0 "$server" 2>/dev/null || { echo "$name: redis-server died at start" >&2; exit 1; }
    sleep 0.1
  done
  [ "$i" -lt 100 ] || { echo "$name: redis-server did not answer in 10 s" >&2; exit 1; }
  c0=$(awk '{ print $14 + $15 }' "/proc/$server/stat")
  t0=$EPOCHREALTIME
  "${cpu1[@]}" redis-benchmark -p "$port" -P 16 -c 50 -n 1000000 -r 1000000 -d 64 \
    -t set,get,lpush,lpop --csv >"$tmp/bench.csv" 2>"$tmp/err" || {
    echo "$name: redis-benchmark failed" >&2; tail -5 "$tmp/err" >&2; exit 1; }
  t1=$EPOCHREALTIME
  c1=$(awk '{ print $14 + $15 }' "/proc/$server/stat")
  hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$server/status")
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  for i in $(seq 100); do kill -0 "$server" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$server" 2>/dev/null; then
    echo "$name: redis-server still running 10 s after SHUTDOWN; killed" >>"$problems"
    kill -9 "$server"
  fi
  wait "$server" || echo "$name: redis-server exited with status $?" >>"$problems"
  server=
  for t in "${redis_tests[@]}"; do
    awk -F'"' -v t="$t" '$2 == t { print $4 }' "$tmp/bench.csv" >>"$tmp/t.$name.$t"
  done
  awk -F'"' 'NR > 1 { s += 1000000 / $4 }
    END { printf "%.1f ", (NR > 1 ? (NR - 1) * 1000000 / s : 0) }' "$tmp/bench.csv" >>"$tmp/t.$name"
  echo "$hwm $(echo "($c1 - $c0) / $tck" | bc -l) $(echo "$t1 - $t0" | bc -l)" >>"$tmp/t.$name"
}
redis_pair() {
  if [ "$flip" = 0 ]; then
    redis_run redis.plain; redis_run redis.leek LEEK_OUTPUT="$tmp/out/redis.%p.lk" LD_PRELOAD="$lib"
  else
    redis_run redis.leek LEEK_OUTPUT="$tmp/out/redis.%p.lk" LD_PRELOAD="$lib"; redis_run redis.plain
  fi
  check redis.leek "$tmp/out/redis".*
}

start=$EPOCHREALTIME
only=${ONLY:-}
[ -z "$only" ] || [ "$only" = exact ] || { echo "ONLY: exact, or unset" >&2; exit 1; }
for r in $(seq "$rounds"); do
  flip=$(((r + 1) % 2))
  if [ "$only" = exact ]; then run sqlite.plain sqlite3 :memory: ".read $tmp/w.sql"
  else pair sqlite sqlite3 :memory: ".read $tmp/w.sql"; fi
  exact sqlite sqlite3 :memory: ".read $tmp/w.sql"
  # Exported rather than given to env(1): a wrapper that execs would be what leek and heaptrack see.
  if [ -z "$only" ]; then
    export PYTHONMALLOC=pymalloc
    pair pymalloc "$py" bench/workloads/alloc.py
  fi
  export PYTHONMALLOC=malloc
  if [ "$only" = exact ]; then run pymm.plain "$py" bench/workloads/alloc.py
  else pair pymm "$py" bench/workloads/alloc.py; fi
  exact pymm "$py" bench/workloads/alloc.py
  unset PYTHONMALLOC
  [ -n "$only" ] || redis_pair
  echo "round $r of $rounds done, $(printf %.0f "$(echo "$EPOCHREALTIME - $start" | bc -l)") s" >&2
done

# col N FILE: column N of FILE; median, spread (min-max) of a list of numbers on stdin.
col() { awk -v n="$1" '{ print $n }' "$2"; }
median() { sort -g |
  awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
spread() { sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.3f-%.3f", lo, hi }'; }
# ratios N A B: per-round ratio of column N of A to column N of B.
ratios() { paste -d' ' <(col "$1" "$2") <(col "$1" "$3") | awk '{ printf "%.6f\n", $1 / $2 }'; }
fmt() { printf "%.${2:-3}f" "$1"; }

mib() { fmt "$(echo "$1 / 1024" | bc -l)" 1; }
echo "leek on real workloads, $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -m), $(nproc) CPUs," \
  "load $(cut -d' ' -f1-3 /proc/loadavg), $rounds interleaved rounds, medians"
echo "leek:      $("$leek" --version 2>/dev/null | head -1), $build," \
  "tree $(git describe --always --dirty 2>/dev/null || echo '?'); default period unless exact"
echo "programs:  sqlite $(sqlite3 --version | cut -d' ' -f1)," \
  "Python $("$py" -c 'import sys; print(sys.version.split()[0])')," \
  "redis $(redis-server --version | sed 's/.* v=\([^ ]*\).*malloc=\([^ ]*\).*/\1 (\2)/')," \
  "$(heaptrack --version | head -1)"
echo "budgets:   default period <= 1.01x time and <= 1.02x peak RSS;" \
  "exact <= 0.50x heaptrack's time, with a smaller file"
echo "(peak MiB: GNU time's %M, the largest process of the run; heaptrack's is heaptrack_interpret"
echo " when that is larger. file: the profile, heaptrack's .zst. B/alloc: per allocation that"
echo " heaptrack counted. x plain: median of the per-round ratios, min-max their spread)"

# table TITLE PREFIX VARIANT...: one row per variant of a batch workload.
table() {
  local title=$1 p=$2 v m rt rr f per allocs; shift 2
  echo
  echo "$title"
  printf '  %-10s %8s %13s %7s %13s %8s %7s %11s %7s\n' variant "median s" "min-max" "x plain" \
    "ratio min-max" "peak MiB" "x plain" "file bytes" "B/alloc"
  allocs=$(cat "$tmp/allocs.$p" 2>/dev/null || true)
  for v in "$@"; do
    m=$(col 1 "$tmp/t.$p.$v" | median)
    rt=$(ratios 1 "$tmp/t.$p.$v" "$tmp/t.$p.plain")
    rr=$(ratios 2 "$tmp/t.$p.$v" "$tmp/t.$p.plain")
    f=-; [ -f "$tmp/f.$p.$v" ] && f=$(median <"$tmp/f.$p.$v")
    per=-
    case $v in exact | nofollow | heaptrack) per=$(fmt "$(echo "$f / $allocs" | bc -l)" 1) ;; esac
    printf '  %-10s %8.3f %13s %7s %13s %8s %7s %11s %7s\n' "$v" "$m" \
      "$(col 1 "$tmp/t.$p.$v" | spread)" "$(fmt "$(median <<<"$rt")")" "$(spread <<<"$rt")" \
      "$(mib "$(col 2 "$tmp/t.$p.$v" | median)")" "$(fmt "$(median <<<"$rr")")" "$f" "$per"
  done
  [ -f "$tmp/t.$p.exact" ] || return 0
  rt=$(ratios 1 "$tmp/t.$p.exact" "$tmp/t.$p.heaptrack")
  f=$(echo "$(median <"$tmp/f.$p.exact") / $(median <"$tmp/f.$p.heaptrack")" | bc -l)
  echo "  exact / heaptrack: time $(fmt "$(median <<<"$rt")")x ($(spread <<<"$rt")), file" \
    "$(fmt "$f" 1)x; heaptrack counted $allocs allocations"
  rt=$(ratios 1 "$tmp/t.$p.nofollow" "$tmp/t.$p.heaptrack")
  echo "  nofollow / heaptrack: time $(fmt "$(median <<<"$rt")")x ($(spread <<<"$rt"))"
}
lv=leek; [ -z "$only" ] || lv=
table "sqlite3 :memory: '.read w.sql' ($(wc -l <"$tmp/w.sql") statements, $(($(wc -c \
  <"$tmp/w.sql") / 1000000)) MB from bench/workloads/sqlite-gen.awk)" sqlite plain $lv exact \
  nofollow heaptrack
[ -n "$only" ] ||
  table "python3.11 bench/workloads/alloc.py, PYTHONMALLOC=pymalloc" pymalloc plain leek
table "python3.11 bench/workloads/alloc.py, PYTHONMALLOC=malloc" pymm plain $lv exact nofollow \
  heaptrack
[ -z "$only" ] || { cat "$problems"; exit 0; }

echo
echo "redis-server, only the server under leek${cpu0[*]:+ (server on CPU 0, benchmark on CPU 1)}:" \
  "redis-benchmark -P 16 -c 50 -n 1000000 -r 1000000 -d 64 -t set,get,lpush,lpop"
printf '  %-22s %11s %11s %7s %13s\n' "" plain leek "x plain" "ratio min-max"
for t in "${redis_tests[@]}" all; do
  if [ "$t" = all ]; then a=$tmp/t.redis.plain b=$tmp/t.redis.leek; else
    a=$tmp/t.redis.plain.$t b=$tmp/t.redis.leek.$t; fi
  rt=$(ratios 1 "$b" "$a")
  printf '  %-22s %11.0f %11.0f %7s %13s\n' "$t requests/s" "$(col 1 "$a" | median)" \
    "$(col 1 "$b" | median)" "$(fmt "$(median <<<"$rt")")" "$(spread <<<"$rt")"
done
rr=$(ratios 2 "$tmp/t.redis.leek" "$tmp/t.redis.plain")
printf '  %-22s %11s %11s %7s %13s\n' "server VmHWM MiB" \
  "$(mib "$(col 2 "$tmp/t.redis.plain" | median)")" "$(mib "$(col 2 "$tmp/t.redis.leek" | median)")" \
  "$(fmt "$(median <<<"$rr")")" "$(spread <<<"$rr")"
rc=$(ratios 3 "$tmp/t.redis.leek" "$tmp/t.redis.plain")
printf '  %-22s %11.2f %11.2f %7s %13s\n' "server CPU s" "$(col 3 "$tmp/t.redis.plain" | median)" \
  "$(col 3 "$tmp/t.redis.leek" | median)" "$(fmt "$(median <<<"$rc")")" "$(spread <<<"$rc")"
rt=$(ratios 4 "$tmp/t.redis.leek" "$tmp/t.redis.plain")
printf '  %-22s %11.2f %11.2f %7s %13s\n' "benchmark wall s" \
  "$(col 4 "$tmp/t.redis.plain" | median)" \
  "$(col 4 "$tmp/t.redis.leek" | median)" "$(fmt "$(median <<<"$rt")")" "$(spread <<<"$rt")"
echo "  (server CPU s: user+system of redis-server while the benchmark ran, the same 4 million"
echo "  requests each time; well under the wall time means the server was not the bottleneck)"
echo "  leek profile: $(median <"$tmp/f.redis.leek") bytes;" \
  "$(grep -E '^(samples|estimated):' "$tmp/last-summary.redis.leek" | sed 's/  */ /g' |
    paste -sd';')"

echo
if [ -s "$problems" ]; then
  echo "problems seen under leek:"; sort "$problems" | uniq -c | sed 's/^/  /'
else
  echo "every leek profile read back complete (trailer, no losses)"
fi
echo "total $(printf %.0f "$(echo "$EPOCHREALTIME - $start" | bc -l)") s"
