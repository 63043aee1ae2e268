#!/usr/bin/env bash
# exact-follow.sh: what `leek run`'s follower costs a program that fills both cores (issue 29):
# redis-server with io-threads 2 under pipelined redis-benchmark, in exact mode, run plain (0),
# through `leek run --period 1` (L), `leek run --no-follow --period 1` (N) and LD_PRELOAD with
# LEEK_PERIOD=1 (P), interleaved in a new random order each round. Prints each run's whole time,
# the benchmark's wall time, the tail (the server's exit to the front end's: the summary and the
# compression that the follower did not do while the program ran) and the server's CPU ticks,
# then the medians. Run by hand on a quiet machine; never a pass/fail test.
#
#   bench/exact-follow.sh [BUILD]              (default: build)
#   ROUNDS=5 REQUESTS=300000 bench/exact-follow.sh build
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${ROUNDS:-3}
req=${REQUESTS:-300000}
leek=$build/src/cli/leek
lib=$(realpath "$build/src/preload/libleek.so")
for t in redis-server redis-benchmark redis-cli python3; do
  command -v $t >/dev/null || { echo "needs $t (apt-get install -y redis-server redis-tools)" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

one() {
  local srv=(redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no
             --io-threads 2 --io-threads-do-reads yes)
  local t0 t1 b0 b1 s1 c pid front i
  rm -rf "$tmp/out" && mkdir -p "$tmp/out"
  t0=$EPOCHREALTIME
  case $1 in
    0) "${srv[@]}" ;;
    L) "$leek" run --period 1 -o "$tmp/out/p.%p.lk" -- "${srv[@]}" ;;
    N) "$leek" run --no-follow --period 1 -o "$tmp/out/p.%p.lk" -- "${srv[@]}" ;;
    P) env LEEK_PERIOD=1 LEEK_OUTPUT="$tmp/out/p.%p.lk" LD_PRELOAD="$lib" "${srv[@]}" ;;
  esac >/dev/null 2>"$tmp/err" &
  front=$!
  for i in $(seq 200); do redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && break; sleep 0.05; done
  pid=$(redis-cli -p "$port" info server | awk -F: '/^process_id:/ { print $2 + 0 }')
  b0=$EPOCHREALTIME
  redis-benchmark -p "$port" -P 16 -c 50 -n "$req" -r 1000000 -d 64 -t set,get,lpush,lpop --csv >/dev/null 2>&1
  b1=$EPOCHREALTIME
  c=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  while kill -0 "$pid" 2>/dev/null; do sleep 0.01; done
  s1=$EPOCHREALTIME
  wait "$front"
  t1=$EPOCHREALTIME
  echo "$1 whole $(echo "$t1 - $t0" | bc) bench $(echo "$b1 - $b0" | bc) tail $(echo "$t1 - $s1" | bc) srvcpu $c"
}

echo "exact-follow: $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)," \
  "tree $(git describe --always --dirty 2>/dev/null || echo '?'), $rounds rounds, $req requests a test"
for r in $(seq "$rounds"); do for v in $(shuf -e 0 L N P); do one "$v"; done; done | tee "$tmp/res"
python3 - "$tmp/res" <<'PY'
import collections, statistics, sys
d = collections.defaultdict(lambda: collections.defaultdict(list))
for l in open(sys.argv[1]):
    f = l.split()
    for k, x in zip(f[1::2], f[2::2]):
        d[f[0]][k].append(float(x))
names = {"0": "plain", "L": "leek run", "N": "leek run --no-follow", "P": "LD_PRELOAD"}
print("medians:")
for v in "0PLN":
    print(f"  {names[v]:22s}" + "  ".join(f"{k} {statistics.median(x):.3f}" for k, x in d[v].items()))
PY
