#!/usr/bin/env bash
# push-cost.sh: what `leek push` sends and what it costs, on the soak workload (bench/soak.c: 4
# threads, 14 sites, at full speed) under libleek at the default period, pushed every EVERY to
# the stand-in Pyroscope of the tests (tests/report/push_receiver.py, on 127.0.0.1).
#
#   bench/push-cost.sh [BUILD_DIR]                    (default: build)
#   DURATION=120 EVERY=15s PERIOD=524288 bench/push-cost.sh
#                          (the defaults: 120 s of the workload, leek push's own 15 s interval,
#                          libleek's default period)
#
# Prints: the pushes, the pprof body's bytes (gzip, as sent: median and largest) and the whole
# request's (multipart, headers and query included, from the receiver's Content-Length), the
# workload's CPU seconds, and the agent's CPU seconds (user + system from wait4: getrusage of
# the agent) with its share of the run's wall time and its CPU per push. Then the fleet figures
# docs/push.md derives from them. A measurement, never a pass/fail test; the agent's CPU is a
# kernel-tick count, so a longer DURATION is more precise, and on a loaded machine it says so.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
duration=${DURATION:-120}
every=${EVERY:-15s}
period=${PERIOD:-524288}

lib=$(realpath "$build/src/preload/libleek.so")
leek=$(realpath "$build/src/cli/leek")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
gcc -O2 -g -Wall -fno-omit-frame-pointer -fno-optimize-sibling-calls -fno-ipa-icf -pthread \
	-o "$tmp/soak" bench/soak.c

python3 - "$lib" "$leek" "$tmp" "$duration" "$every" "$period" <<'PY'
import os, statistics, subprocess, sys, time
sys.path.insert(0, "tests/report")
import push_receiver
lib, leek, tmp, duration, every, period = sys.argv[1:]

r = push_receiver.Receiver()
sizes = []  # the whole request's bytes, from Content-Length
env = {k: v for k, v in os.environ.items() if not k.startswith("LEEK_")}
env.update(LD_PRELOAD=lib, LEEK_OUTPUT=f"{tmp}/soak.%p.lk", LEEK_PERIOD=period, LEEK_SEED="1")
t0 = time.time()
w = subprocess.Popen([f"{tmp}/soak", "-d", duration, "-o", f"{tmp}/tally"], env=env,
                     stdout=subprocess.DEVNULL)
env.pop("LD_PRELOAD")
a = subprocess.Popen([leek, "push", "--pyroscope", r.url(), "--every", every, str(w.pid)],
                     env=env, stderr=subprocess.PIPE, text=True)
_, wst, wru = os.wait4(w.pid, 0)
_, ast, aru = os.wait4(a.pid, 0)
wall = time.time() - t0
r.stop()
reqs = r.requests()
body = [len(q.body) for q in reqs]
whole = [int(q.headers.get("content-length", 0)) for q in reqs]
wcpu = wru.ru_utime + wru.ru_stime
acpu = aru.ru_utime + aru.ru_stime
print(f"leek push --every {every} of bench/soak.c ({duration} s, period {period}), "
      f"{time.strftime('%Y-%m-%d')}, {os.uname().nodename}")
print(f"  pushes                 {len(reqs)} (agent exit {ast >> 8}: {a.stderr.read().strip()})")
print(f"  pprof body (gzip)      median {statistics.median(body):.0f} B, largest {max(body)} B")
print(f"  whole request          median {statistics.median(whole):.0f} B, largest {max(whole)} B")
print(f"  workload CPU           {wcpu:.2f} s (exit {wst >> 8})")
print(f"  agent CPU              {acpu:.3f} s = {100 * acpu / wall:.3f}% of one CPU over "
      f"{wall:.0f} s, {1000 * acpu / max(len(reqs), 1):.1f} ms a push")
print(f"  agent max RSS          {aru.ru_maxrss / 1024:.1f} MiB")
every_s = float(every.rstrip("s"))
n = 10000
print(f"fleet of {n} processes at one push per {every_s:.0f} s each:")
print(f"  {n / every_s:.0f} pushes/s, {n / every_s * statistics.median(whole) / 1e6:.2f} MB/s "
      f"into the backend ({n / every_s * statistics.median(whole) * 8 / 1e6:.1f} Mbit/s)")
PY

# A push's size with many stacks: a push of a profile whose STACKS stacks (bench/export-profile.c:
# 32 frames, about 23 distinct a stack, in no module, so named by address) all allocated in the
# interval is the export of that profile (delta.c makes the body with the export's writer).
cc -O2 -D_GNU_SOURCE -I tests/lib -I src/common -I include -o "$tmp/gen" bench/export-profile.c \
	tests/lib/build-profile.c
for stacks in ${PUSH_STACKS:-1000 5000}; do
	"$tmp/gen" "$stacks" 32 "$tmp/stacks.lk" >/dev/null
	"$leek" export --format pprof -o "$tmp/stacks.pb.gz" "$tmp/stacks.lk" 2>/dev/null
	echo "  a push of $stacks stacks, all active: $(stat -c %s "$tmp/stacks.pb.gz") B of pprof (gzip)"
done
