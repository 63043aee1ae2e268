#!/usr/bin/env bash
# exact-heaptrack.sh: exact mode, through `leek run --period 1` and through a plain LD_PRELOAD of
# libleek.so with LEEK_PERIOD=1, against heaptrack and the plain program, end to end, with the
# statistics that a shared machine's bursts of noise leave readable. Run by hand; never a
# pass/fail test. Issue 29's goal: each way of running exact mode at most 0.5x heaptrack's time,
# per round, on sqlite3, python3.11 and redis-server with 2 I/O threads.
#
#   bench/exact-heaptrack.sh [BUILD]                  (default: build)
#   ROUNDS=12 ROWS=200000 bench/exact-heaptrack.sh /tmp/build-bench
#   WORKLOAD=python bench/exact-heaptrack.sh build    python3.11 bench/workloads/alloc.py
#   WORKLOAD=redis REQUESTS=300000 bench/exact-heaptrack.sh build
#   WORKLOAD=redis IO_THREADS=2 bench/exact-heaptrack.sh build     a server of two threads
#   PRELOAD=0 bench/exact-heaptrack.sh build          without the LD_PRELOAD variant
#
# Knobs (environment):
#   ROUNDS      rounds (default 12: the quartiles of the per-round ratio then rest on 3 rounds
#               each, and sqlite3 takes 2 to 4 minutes)
#   WORKLOAD    sqlite (default: the shortest and steadiest), python or redis
#   ROWS        sqlite3's rows (default 200 000, bench/real.sh's)
#   REQUESTS    redis-benchmark's requests of each test (default 300 000, below)
#   PRELOAD     1 (default) adds the LD_PRELOAD variant, which issue 29 measures beside `leek
#               run`; 0 runs the three variants of before, for comparing with their figures
#   IO_THREADS  redis-server's io-threads (default 1: redis's own default, the single-threaded
#               server of the figures before; 2 is issue 29's multi-threaded run, below)
#
# The programs are bench/real.sh's: sqlite3 on a script of ROWS rows (bench/workloads/sqlite-gen.awk,
# 200 000 by default, as bench/real.sh), python3.11 with PYTHONMALLOC=malloc, or redis-server
# under pipelined redis-benchmark (REQUESTS of each of SET, GET, LPUSH and LPOP, 300 000 by
# default: bench/real.sh's load at a third of its length, since heaptrack takes 2.5 times as
# long). Each round runs the plain program, `leek run --period 1` (its summary and compression
# included, as a user meets it), `heaptrack` and, with PRELOAD=1, the program with
# LEEK_PERIOD=1 LD_PRELOAD=libleek.so (what it costs the program without leek run's reader and
# compressor beside it; the raw profile is its file) once each, in a new random order. bench/real.sh
# shows medians of the per-round ratios, which move by 5% to 15% from run to run on this machine;
# here the least time, the 10th percentile and the median of each are shown, and the ratios of
# each (the noise only ever adds time, so the first two columns are the ones to compare), then
# the median and the quartiles of the per-round ratio of leek run (and LD_PRELOAD) to heaptrack,
# and the size of each one's file (leek's .lk.zst, heaptrack's .zst). The same table is given for
# the CPU time of all of a variant's processes (the program, leek run and its reader and
# compressor threads, heaptrack's script, heaptrack_interpret and its zstd), which a second
# core running the front end hides from the whole run's time. Every leek profile is read back
# with `leek dump --summary` after its run (outside the timing), and the script stops unless
# each has its trailer and no losses, as it stops when any run fails: no numbers come from a
# run that did not record everything.
#
# redis: the server is pinned to CPU 0 once it answers and the benchmark runs on CPU 1, as in
# bench/real.sh; what each front end runs beside the program (leek's reader of the profile,
# heaptrack_interpret) is not pinned. Three times are kept: the whole run (the front end's start
# to its exit after SHUTDOWN, its summary included), the server's CPU time during the benchmark
# (bench/real.sh's measure, all its threads), and the benchmark's wall time (its requests per
# second, inverted).
# With IO_THREADS=N above 1 the server runs with --io-threads N --io-threads-do-reads yes (redis 7
# honours both): N-1 threads (io_thd_1...) beside the main one read and parse the clients'
# requests, which allocates, and write the replies. redis hands them work only while at least 2N
# clients wait for replies; the benchmark's 50 clients, 16 requests in a pipeline each, keep them
# busy. Nothing is pinned then, as the server's threads want both cores. The script stops unless
# the server shows its N-1 io_thd threads in /proc/PID/task and they took CPU time during the
# benchmark, and gives their share of the server's CPU. That share includes their spinning:
# an idle I/O thread busy-waits before it sleeps, so the server's CPU time overstates its work.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${ROUNDS:-12}
rows=${ROWS:-200000}
workload=${WORKLOAD:-sqlite}
requests=${REQUESTS:-300000}
preload=${PRELOAD:-1}
io_threads=${IO_THREADS:-1}
leek=$build/src/cli/leek
lib=$(realpath "$build/src/preload/libleek.so" 2>/dev/null || true)
[ -x "$leek" ] && [ -f "$lib" ] ||
  { echo "no leek in '$build': meson setup $build && ninja -C $build" >&2; exit 1; }
command -v heaptrack >/dev/null || { echo "needs heaptrack (apt-get install -y heaptrack)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "needs python3 (apt-get install -y python3)" >&2; exit 1; }
command -v bc >/dev/null || { echo "needs bc (apt-get install -y bc)" >&2; exit 1; }
[[ $preload =~ ^[01]$ ]] || { echo "PRELOAD is 0 or 1" >&2; exit 2; }
[[ $io_threads =~ ^[1-9][0-9]?$ ]] || { echo "IO_THREADS is 1 to 99" >&2; exit 2; }
[ "$io_threads" = 1 ] || [ "$workload" = redis ] || { echo "IO_THREADS is redis's" >&2; exit 2; }
variants=(0 1 2)
[ "$preload" = 0 ] || variants+=(3)
tmp=$(mktemp -d)
if [ "$workload" = redis ]; then
  for t in redis-server redis-benchmark redis-cli taskset; do
    command -v $t >/dev/null || { echo "needs $t (apt-get install -y redis-server redis-tools util-linux)" >&2; exit 1; }
  done
  [ "$(nproc)" -ge 2 ] || { echo "redis: needs 2 CPUs (the server on one, the benchmark on the other)" >&2; exit 1; }
  # I/O threads: options for the server; with one thread, the pinning of bench/real.sh
  io_opts=() pin_bench=(taskset -c 1)
  if [ "$io_threads" != 1 ]; then
    io_opts=(--io-threads "$io_threads" --io-threads-do-reads yes) pin_bench=()
  fi
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

# check_run I: what variant I left in $tmp/out is complete: every leek profile read back with its
# trailer and no losses, heaptrack's recording there and not empty; the script stops otherwise.
check_run() {
  local f n=0
  case $1 in
    1 | 3)
      for f in "$tmp"/out/p.*.lk*; do
        [ -f "$f" ] || continue
        n=$((n + 1))
        "$leek" dump --summary "$f" >"$tmp/summary" 2>&1 &&
          grep -q '^trailer: *yes' "$tmp/summary" && grep -q '^losses: *none' "$tmp/summary" || {
          echo "variant $1: incomplete profile $f:" >&2
          grep -E '^(samples|losses|trailer):' "$tmp/summary" >&2 || tail -3 "$tmp/summary" >&2
          exit 1; }
      done ;;
    2) for f in "$tmp"/out/ht*; do [ -s "$f" ] && n=$((n + 1)); done ;;
    *) return 0 ;;
  esac
  [ "$n" -gt 0 ] || { echo "variant $1 wrote no profile" >&2; ls "$tmp/out" >&2; exit 1; }
}

# cpu_since FILE: the user and system seconds of the children this shell has waited for since
# `times >FILE` (the second line of each), appended to stdout; `times` runs in this shell, since a
# subshell's children are its own
cpu_since() {
  times >"$tmp/times.now"
  awk 'FNR == 2 { split($0, f, /[ms ]+/); s[FILENAME] = f[1] * 60 + f[2] + f[3] * 60 + f[4] }
       END { print s[ARGV[2]] - s[ARGV[1]] }' "$1" "$tmp/times.now"
}

# one I: run variant I (0 plain, 1 leek run, 2 heaptrack, 3 LD_PRELOAD), append its seconds to
# $tmp/t.I and the CPU seconds of all its processes (the front end's, the program's,
# heaptrack_interpret's) to u.I
one() {
  local t0 t1
  mkdir -p "$tmp/out"
  times >"$tmp/times.start"
  t0=$EPOCHREALTIME
  case $1 in
    0) "${cmd[@]}" ;;
    1) "$leek" run --period 1 -o "$tmp/out/p.%p.lk" -- "${cmd[@]}" ;;
    2) heaptrack -o "$tmp/out/ht.%p" "${cmd[@]}" ;;
    3) env LEEK_PERIOD=1 LEEK_OUTPUT="$tmp/out/p.%p.lk" LD_PRELOAD="$lib" "${cmd[@]}" ;;
  esac >/dev/null 2>"$tmp/err" || { echo "variant $1 failed:" >&2; tail -3 "$tmp/err" >&2; exit 1; }
  t1=$EPOCHREALTIME
  cpu_since "$tmp/times.start" >>"$tmp/u.$1"
  check_run "$1"
  done_run "$1" "$t0" "$t1"
}

# io_ticks PID: the user and system ticks of PID's I/O threads (0 without them)
io_ticks() {
  local f n=0
  for f in /proc/"$1"/task/*; do
    grep -q '^io_thd_' "$f/comm" 2>/dev/null && n=$((n + $(awk '{ print $14 + $15 }' "$f/stat")))
  done
  echo "$n"
}

# redis_one I: variant I of the redis run; its times to $tmp/t.I (whole), c.I (server CPU during
# the benchmark), b.I (the benchmark's wall time) and u.I (the CPU of all of the variant's
# processes, the whole run: the server's, leek run's reader's, heaptrack_interpret's; the
# benchmark's own, counted apart by `times` around it, left out, and redis-cli's few
# milliseconds left in); with I/O threads, their share of the server's CPU during the benchmark
# to io.I.
redis_one() {
  local t0 t1 b0 b1 c0 c1 io0 io1 port pid front i tck
  mkdir -p "$tmp/out"
  tck=$(getconf CLK_TCK)
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')
  local srv=(redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no
             --daemonize no --logfile "$tmp/out/redis.log" "${io_opts[@]}")
  times >"$tmp/times.start"
  t0=$EPOCHREALTIME
  case $1 in
    0) "${srv[@]}" ;;
    1) "$leek" run --period 1 -o "$tmp/out/p.%p.lk" -- "${srv[@]}" ;;
    2) heaptrack -o "$tmp/out/ht" "${srv[@]}" ;;
    3) env LEEK_PERIOD=1 LEEK_OUTPUT="$tmp/out/p.%p.lk" LD_PRELOAD="$lib" "${srv[@]}" ;;
  esac >/dev/null 2>"$tmp/err" &
  front=$! server=$!
  for i in $(seq 200); do
    redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && break
    kill -0 "$front" 2>/dev/null || { echo "variant $1: the server died at start" >&2; tail -3 "$tmp/err" >&2; exit 1; }
    sleep 0.05
  done
  [ "$i" -lt 200 ] || { echo "variant $1: the server did not answer in 10 s" >&2; exit 1; }
  pid=$(redis-cli -p "$port" info server | awk -F: '/^process_id:/ { print $2 + 0 }')
  if [ "$io_threads" = 1 ]; then
    taskset -p -c 0 "$pid" >/dev/null
  elif [ "$(grep -l '^io_thd_' /proc/"$pid"/task/*/comm | wc -l)" != $((io_threads - 1)) ]; then
    echo "variant $1: redis-server $pid runs no $((io_threads - 1)) io_thd threads:" >&2
    cat /proc/"$pid"/task/*/comm >&2; exit 1
  fi
  c0=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
  io0=$(io_ticks "$pid")
  times >"$tmp/times.bench"
  b0=$EPOCHREALTIME
  "${pin_bench[@]}" redis-benchmark -p "$port" -P 16 -c 50 -n "$requests" -r 1000000 -d 64 \
    -t set,get,lpush,lpop --csv >/dev/null 2>"$tmp/bench.err" || {
    echo "variant $1: redis-benchmark failed" >&2; tail -3 "$tmp/bench.err" >&2; exit 1; }
  b1=$EPOCHREALTIME
  c1=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
  io1=$(io_ticks "$pid")
  if [ "$io_threads" != 1 ]; then
    [ "$io1" -gt "$io0" ] || { echo "variant $1: the I/O threads did no work" >&2; exit 1; }
    echo "($io1 - $io0) / ($c1 - $c0)" | bc -l >>"$tmp/io.$1"
  fi
  cpu_since "$tmp/times.bench" >"$tmp/bench.cpu"
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  wait "$front" || { echo "variant $1 failed:" >&2; tail -3 "$tmp/err" >&2; exit 1; }
  server=
  t1=$EPOCHREALTIME
  cpu_since "$tmp/times.start" >"$tmp/run.cpu"
  paste "$tmp/run.cpu" "$tmp/bench.cpu" | awk '{ print $1 - $2 }' >>"$tmp/u.$1"
  check_run "$1"
  done_run "$1" "$t0" "$t1"
  echo "($c1 - $c0) / $tck" | bc -l >>"$tmp/c.$1"
  echo "$b1 - $b0" | bc -l >>"$tmp/b.$1"
}

started=$(date -u '+%Y-%m-%d %H:%M UTC')
load=$(cut -d' ' -f1-3 /proc/loadavg)
for r in $(seq "$rounds"); do
  for v in $(shuf -e "${variants[@]}"); do
    if [ "$workload" = redis ]; then redis_one "$v"; else one "$v"; fi
  done
  echo "round $r of $rounds done" >&2
done

what=$workload
[ "$io_threads" = 1 ] || what="$workload, io-threads $io_threads"
echo "exact mode end to end ($what), $started, load $load, $rounds rounds, tree $(git describe --always --dirty 2>/dev/null || echo '?')"
python3 - "$tmp" <<'PY'
import os, statistics, sys
d = sys.argv[1]
names = ["plain", "leek run --period 1", "heaptrack", "LD_PRELOAD, period 1"]
vs = [i for i in range(4) if os.path.exists(f"{d}/t.{i}")]  # 3, LD_PRELOAD, with PRELOAD=1
stats = {"least": lambda v: v[0], "p10": lambda v: v[len(v) // 10], "median": statistics.median}
ratios = [("leek run / heaptrack", 1, 2), ("leek run / plain", 1, 0), ("heaptrack / plain", 2, 0)]
per_round = [("leek run", 1)]
if 3 in vs:
    ratios += [("LD_PRELOAD / heaptrack", 3, 2), ("LD_PRELOAD / plain", 3, 0)]
    per_round += [("LD_PRELOAD", 3)]

def table(prefix, what):
    rounds = {i: [float(x) for x in open(f"{d}/{prefix}.{i}")] for i in vs} # in round order
    t = {i: sorted(v) for i, v in rounds.items()}
    print(f"{what:22s}" + "".join(f"{k:>10s}" for k in stats))
    for i in vs:
        print(f"{names[i]:22s}" + "".join(f"{f(t[i]):9.3f}s" for f in stats.values()))
    for label, a, b in ratios:
        print(f"{label:22s}" + "".join(f"{f(t[a]) / f(t[b]):9.3f}x" for f in stats.values()))
    # The ratio of each round's two times, as bench/real.sh quotes it: a burst of noise that
    # slows one round slows both of its runs, and falls out of the ratio more than out of either
    # median.
    for label, a in per_round:
        per = sorted(x / y for x, y in zip(rounds[a], rounds[2]))
        print(f"{label} / heaptrack, per round: median {statistics.median(per):.3f}x, "
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
if 3 in vs:
    print(f"LD_PRELOAD's raw profile (median): "
          f"{statistics.median(int(x) for x in open(f'{d}/f.3')) / 1e6:.3f} MB")
if os.path.exists(f"{d}/io.0"):
    print("the I/O threads' share of the server's CPU during the benchmark (median): " +
          ", ".join(f"{names[i]} {statistics.median(float(x) for x in open(f'{d}/io.{i}')):.2f}"
                    for i in vs))
PY
