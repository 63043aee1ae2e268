#!/usr/bin/env bash
# exact-heaptrack.sh: `leek run --period 1` against heaptrack and the plain program, end to end,
# with the statistics that a shared machine's bursts of noise leave readable. Run by hand; never a
# pass/fail test.
#
#   bench/exact-heaptrack.sh [BUILD]                  (default: build)
#   ROUNDS=12 ROWS=200000 bench/exact-heaptrack.sh /tmp/build-bench
#   WORKLOAD=python bench/exact-heaptrack.sh build    python3.11 bench/workloads/alloc.py
#   WORKLOAD=redis REQUESTS=300000 bench/exact-heaptrack.sh build
#
# The programs are bench/real.sh's: sqlite3 on a script of ROWS rows (bench/workloads/sqlite-gen.awk,
# 200 000 by default, as bench/real.sh), python3.11 with PYTHONMALLOC=malloc, or redis-server
# under pipelined redis-benchmark (REQUESTS of each of SET, GET, LPUSH and LPOP, 300 000 by
# default: bench/real.sh's load at a third of its length, since heaptrack takes 2.5 times as
# long). Each round runs the plain program, `leek run --period 1` (its summary and compression
# included, as a user meets it) and `heaptrack` once each, in a new random order. bench/real.sh
# shows medians of the per-round ratios, which move by 5% to 15% from run to run on this machine;
# here the least time, the 10th percentile and the median of each are shown, and the ratios of
# each (the noise only ever adds time, so the first two columns are the ones to compare), then
# the median and the quartiles of the per-round ratio of leek run to heaptrack, and the size of
# each one's file (leek's .lk.zst, heaptrack's .zst). For sqlite3 and python3.11 the same table
# is given for the CPU time of all of a variant's processes (the program, leek run's reader of
# the profile, heaptrack_interpret), which a second core running the front end hides from the
# whole run's time.
#
# redis: the server is pinned to CPU 0 once it answers and the benchmark runs on CPU 1, as in
# bench/real.sh; what each front end runs beside the program (leek's reader of the profile,
# heaptrack_interpret) is not pinned. Three times are kept: the whole run (the front end's start
# to its exit after SHUTDOWN, its summary included), the server's CPU time during the benchmark
# (bench/real.sh's measure), and the benchmark's wall time (its requests per second, inverted).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${ROUNDS:-12}
rows=${ROWS:-200000}
workload=${WORKLOAD:-sqlite}
requests=${REQUESTS:-300000}
leek=$build/src/cli/leek
[ -x "$leek" ] || { echo "no leek at $leek (build first)" >&2; exit 1; }
command -v heaptrack >/dev/null || { echo "needs heaptrack (apt-get install -y heaptrack)" >&2; exit 1; }
tmp=$(mktemp -d)
if [ "$workload" = redis ]; then
  for t in redis-server redis-benchmark redis-cli taskset; do
    command -v $t >/dev/null || { echo "needs $t (apt-get install -y redis-server redis-tools util-linux)" >&2; exit 1; }
  done
  [ "$(nproc)" -ge 2 ] || { echo "redis: needs 2 CPUs (the server on one, the benchmark on the other)" >&2; exit 1; }
else
  . bench/workloads/exact.sh
  exact_workload "$workload" "$rows" "$tmp"
fi
server=
trap '[ -z "$server" ] || kill -9 "$server" 2>/dev/null; rm -rf "$tmp"' EXIT

# done_run I T0 T1: variant I ran from T0 to T1; its seconds to $tmp/t.I, the bytes of what it left
# in $tmp/out (the profiles) to $tmp/f.I, and $tmp/out emptied
done_run() {
  find "$tmp/out" -type f ! -name redis.log -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }' \
    >>"$tmp/f.$1"
  rm -rf "$tmp/out"
  echo "$3 - $2" | bc -l >>"$tmp/t.$1"
}

# cpu_since FILE: the user and system seconds of the children this shell has waited for since
# `times >FILE` (the second line of each), appended to stdout; `times` runs in this shell, since a
# subshell's children are its own
cpu_since() {
  times >"$tmp/times.now"
  awk 'FNR == 2 { split($0, f, /[ms ]+/); s[FILENAME] = f[1] * 60 + f[2] + f[3] * 60 + f[4] }
       END { print s[ARGV[2]] - s[ARGV[1]] }' "$1" "$tmp/times.now"
}

# one I: run variant I (0 plain, 1 leek run, 2 heaptrack), append its seconds to $tmp/t.I and the
# CPU seconds of all its processes (the front end's, the program's, heaptrack_interpret's) to u.I
one() {
  local t0 t1
  mkdir -p "$tmp/out"
  times >"$tmp/times.start"
  t0=$EPOCHREALTIME
  case $1 in
    0) "${cmd[@]}" ;;
    1) "$leek" run --period 1 -o "$tmp/out/p.%p.lk" -- "${cmd[@]}" ;;
    2) heaptrack -o "$tmp/out/ht.%p" "${cmd[@]}" ;;
  esac >/dev/null 2>"$tmp/err" || { echo "variant $1 failed:" >&2; tail -3 "$tmp/err" >&2; exit 1; }
  t1=$EPOCHREALTIME
  cpu_since "$tmp/times.start" >>"$tmp/u.$1"
  done_run "$1" "$t0" "$t1"
}

# redis_one I: variant I of the redis run; its times to $tmp/t.I (whole), c.I (server CPU during
# the benchmark), b.I (the benchmark's wall time) and u.I (the CPU of all of the variant's
# processes, the whole run: the server's, leek run's reader's, heaptrack_interpret's; the
# benchmark's own, counted apart by `times` around it, left out, and redis-cli's few
# milliseconds left in).
redis_one() {
  local t0 t1 b0 b1 c0 c1 port pid front i tck
  mkdir -p "$tmp/out"
  tck=$(getconf CLK_TCK)
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')
  local srv=(redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no
             --daemonize no --logfile "$tmp/out/redis.log")
  times >"$tmp/times.start"
  t0=$EPOCHREALTIME
  case $1 in
    0) "${srv[@]}" ;;
    1) "$leek" run --period 1 -o "$tmp/out/p.%p.lk" -- "${srv[@]}" ;;
    2) heaptrack -o "$tmp/out/ht" "${srv[@]}" ;;
  esac >/dev/null 2>"$tmp/err" &
  front=$! server=$!
  for i in $(seq 200); do
    redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && break
    kill -0 "$front" 2>/dev/null || { echo "variant $1: the server died at start" >&2; tail -3 "$tmp/err" >&2; exit 1; }
    sleep 0.05
  done
  [ "$i" -lt 200 ] || { echo "variant $1: the server did not answer in 10 s" >&2; exit 1; }
  pid=$(redis-cli -p "$port" info server | awk -F: '/^process_id:/ { print $2 + 0 }')
  taskset -p -c 0 "$pid" >/dev/null
  c0=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
  times >"$tmp/times.bench"
  b0=$EPOCHREALTIME
  taskset -c 1 redis-benchmark -p "$port" -P 16 -c 50 -n "$requests" -r 1000000 -d 64 \
    -t set,get,lpush,lpop --csv >/dev/null 2>"$tmp/bench.err" || {
    echo "variant $1: redis-benchmark failed" >&2; tail -3 "$tmp/bench.err" >&2; exit 1; }
  b1=$EPOCHREALTIME
  c1=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
  cpu_since "$tmp/times.bench" >"$tmp/bench.cpu"
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  wait "$front" || { echo "variant $1 failed:" >&2; tail -3 "$tmp/err" >&2; exit 1; }
  server=
  t1=$EPOCHREALTIME
  cpu_since "$tmp/times.start" >"$tmp/run.cpu"
  paste "$tmp/run.cpu" "$tmp/bench.cpu" | awk '{ print $1 - $2 }' >>"$tmp/u.$1"
  done_run "$1" "$t0" "$t1"
  echo "($c1 - $c0) / $tck" | bc -l >>"$tmp/c.$1"
  echo "$b1 - $b0" | bc -l >>"$tmp/b.$1"
}

started=$(date -u '+%Y-%m-%d %H:%M UTC')
load=$(cut -d' ' -f1-3 /proc/loadavg)
for r in $(seq "$rounds"); do
  for v in $(shuf -e 0 1 2); do
    if [ "$workload" = redis ]; then redis_one "$v"; else one "$v"; fi
  done
  echo "round $r of $rounds done" >&2
done

echo "exact mode end to end ($workload), $started, load $load, $rounds rounds, tree $(git describe --always --dirty 2>/dev/null || echo '?')"
python3 - "$tmp" <<'PY'
import os, statistics, sys
d = sys.argv[1]
names = ["plain", "leek run --period 1", "heaptrack"]
stats = {"least": lambda v: v[0], "p10": lambda v: v[len(v) // 10], "median": statistics.median}

def table(prefix, what):
    rounds = [[float(x) for x in open(f"{d}/{prefix}.{i}")] for i in range(3)] # in round order
    t = [sorted(v) for v in rounds]
    print(f"{what:22s}" + "".join(f"{k:>10s}" for k in stats))
    for name, v in zip(names, t):
        print(f"{name:22s}" + "".join(f"{f(v):9.3f}s" for f in stats.values()))
    for label, a, b in (("leek run / heaptrack", 1, 2), ("leek run / plain", 1, 0),
                        ("heaptrack / plain", 2, 0)):
        print(f"{label:22s}" + "".join(f"{f(t[a]) / f(t[b]):9.3f}x" for f in stats.values()))
    # The ratio of each round's two times, as bench/real.sh quotes it: a burst of noise that
    # slows one round slows both of its runs, and falls out of the ratio more than out of either
    # median.
    per = sorted(x / y for x, y in zip(rounds[1], rounds[2]))
    print(f"leek run / heaptrack, per round: median {statistics.median(per):.3f}x, "
          f"quartiles {per[len(per) // 4]:.3f}x to {per[(3 * len(per)) // 4]:.3f}x, "
          f"{sum(x <= 0.5 for x in per)} of {len(per)} rounds at most 0.5x")

table("t", "whole run")
if os.path.exists(f"{d}/u.0"):
    print()
    table("u", "CPU, all processes")
if os.path.exists(f"{d}/c.0"):
    print()
    table("c", "server CPU, benchmark")
    print()
    table("b", "benchmark wall")
size = [statistics.median(int(x) for x in open(f"{d}/f.{i}")) for i in (1, 2)]
print(f"\nfile (median): leek {size[0] / 1e6:.3f} MB, heaptrack {size[1] / 1e6:.3f} MB, "
      f"leek / heaptrack {size[0] / size[1]:.3f}x")
PY
