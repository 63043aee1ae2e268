#!/usr/bin/env bash
# idle-neighbour.sh: what a SCHED_IDLE neighbour costs a program that fills both cores (issue 29):
# redis-server with io-threads 2 under pipelined redis-benchmark, in exact mode through
# LD_PRELOAD (LEEK_PERIOD=1), alone (none) or beside bench/idle-hog.c run with `chrt -i 0`
# (SCHED_IDLE, as `leek run`'s follower): spinning on registers (spin), writing at random over
# 4 MiB (touch4) or 64 MiB (touch64, about the live set that the follower's replay of this
# server's profile holds). Interleaved in a new random order each round; prints the benchmark's
# wall time of each run, then the medians and their ratio to none's. Run by hand on a quiet
# machine; never a pass/fail test.
#
#   bench/idle-neighbour.sh [BUILD]                      (default: build)
#   ROUNDS=6 REQUESTS=300000 bench/idle-neighbour.sh build
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${ROUNDS:-4}
req=${REQUESTS:-300000}
lib=$(realpath "$build/src/preload/libleek.so")
for t in redis-server redis-benchmark redis-cli chrt cc python3; do
  command -v $t >/dev/null || { echo "needs $t (apt-get install -y redis-server redis-tools util-linux)" >&2; exit 1; }
done
tmp=$(mktemp -d)
hog=
trap '[ -z "$hog" ] || kill "$hog" 2>/dev/null; rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/idle-hog" bench/idle-hog.c
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

one() {
  local front i b0 b1
  rm -f "$tmp"/p.*.lk
  env LEEK_PERIOD=1 LEEK_OUTPUT="$tmp/p.%p.lk" LD_PRELOAD="$lib" redis-server --port "$port" \
    --bind 127.0.0.1 --save '' --appendonly no --daemonize no --io-threads 2 \
    --io-threads-do-reads yes >/dev/null 2>&1 &
  front=$!
  for i in $(seq 200); do redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && break; sleep 0.05; done
  case $1 in
    spin) chrt -i 0 "$tmp/idle-hog" 0 & hog=$! ;;
    touch4) chrt -i 0 "$tmp/idle-hog" 4 & hog=$! ;;
    touch64) chrt -i 0 "$tmp/idle-hog" 64 & hog=$! ;;
  esac
  b0=$EPOCHREALTIME
  redis-benchmark -p "$port" -P 16 -c 50 -n "$req" -r 1000000 -d 64 -t set,get,lpush,lpop --csv >/dev/null 2>&1
  b1=$EPOCHREALTIME
  if [ -n "$hog" ]; then kill "$hog"; wait "$hog" 2>/dev/null || true; hog=; fi
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  wait "$front" || true
  echo "$1 $(echo "$b1 - $b0" | bc)"
}

echo "idle-neighbour: $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)," \
  "tree $(git describe --always --dirty 2>/dev/null || echo '?'), $rounds rounds, $req requests a test"
for r in $(seq "$rounds"); do for v in $(shuf -e none spin touch4 touch64); do one "$v"; done; done |
  tee "$tmp/res"
python3 - "$tmp/res" <<'PY'
import collections, statistics, sys
d = collections.defaultdict(list)
for l in open(sys.argv[1]):
    v, t = l.split()
    d[v].append(float(t))
base = statistics.median(d["none"])
print("medians of the benchmark's wall time:")
for v in ("none", "spin", "touch4", "touch64"):
    m = statistics.median(d[v])
    print(f"  {v:8s} {m:.3f} s  {m / base:.3f}x none  (least {min(d[v]):.3f} s)")
PY
