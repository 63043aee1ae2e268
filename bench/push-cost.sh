#!/usr/bin/env bash
# push-cost.sh: what `leek push` sends and what it costs, on the soak workload (bench/soak.c: 4
# threads, 14 sites) under libleek, pushed every EVERY to the stand-in Pyroscope of the tests
# (tests/report/push_receiver.py, on 127.0.0.1).
#
#   bench/push-cost.sh [BUILD_DIR]                    (default: build)
#   DURATION=120 EVERY=15s PERIOD=524288 bench/push-cost.sh
#                          (the defaults: 120 s of the workload at full speed, leek push's own
#                          15 s interval, libleek's default period)
#   BEFORE=/path/to/other/leek PERIOD=1 RATE=20000 bench/push-cost.sh
#                          a second agent, another tree's leek, pushes the same process beside
#                          the first, each to its receiver: the two side by side in one run.
#                          PERIOD=1 is exact mode, RATE (soak -r: allocations a second a
#                          thread) bounds the file's growth: 120 s of it is a profile of tens
#                          of MB, which is where an agent that reads the file again at each
#                          push costs more at each one
#
# Prints, per agent: the pushes, the pprof body's bytes (gzip, as sent: median and largest) and
# the whole request's (multipart, headers and query included, from the receiver's
# Content-Length), its CPU seconds (user + system from wait4: getrusage of the agent) with its
# share of the run's wall time and its CPU per push, its max RSS; then its CPU in each interval
# (user + system from /proc/PID/stat, sampled every 100 ms; the first interval holds the
# symbolizer's start) beside the profile's size at the interval's end. Then the workload's CPU,
# and the fleet figures docs/push.md derives from them. A measurement, never a pass/fail test;
# the agents' CPU is a kernel-tick count (10 ms), so a longer DURATION is more precise, and on a
# loaded machine it says so: CPU time is what the agent spent, not the wall time it waited.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
duration=${DURATION:-120}
every=${EVERY:-15s}
period=${PERIOD:-524288}
rate=${RATE:-0}
before=${BEFORE:-}

lib=$(realpath "$build/src/preload/libleek.so")
leek=$(realpath "$build/src/cli/leek")
[[ -z $before ]] || before=$(realpath "$before")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
gcc -O2 -g -Wall -fno-omit-frame-pointer -fno-optimize-sibling-calls -fno-ipa-icf -pthread \
	-o "$tmp/soak" bench/soak.c

python3 - "$lib" "$leek" "$tmp" "$duration" "$every" "$period" "$rate" "$before" <<'PY'
import glob, os, statistics, subprocess, sys, time
sys.path.insert(0, "tests/report")
import push_receiver
lib, leek, tmp, duration, every, period, rate, before = sys.argv[1:]
tick = os.sysconf("SC_CLK_TCK")

def cpu_of(pid):
    """utime + stime of a process, in seconds (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            v = f.read().rsplit(")", 1)[1].split()
        return (int(v[11]) + int(v[12])) / tick
    except (OSError, IndexError):
        return None

env = {k: v for k, v in os.environ.items() if not k.startswith("LEEK_")}
env.update(LD_PRELOAD=lib, LEEK_OUTPUT=f"{tmp}/soak.%p.lk", LEEK_PERIOD=period, LEEK_SEED="1")
t0 = time.time()
w = subprocess.Popen([f"{tmp}/soak", "-d", duration, "-r", rate, "-o", f"{tmp}/tally"],
                     env=env, stdout=subprocess.DEVNULL)
env.pop("LD_PRELOAD")
agents = []  # (label, binary, receiver, Popen)
for label, binary in (("this tree", leek), ("BEFORE", before)):
    if not binary:
        continue
    r = push_receiver.Receiver()
    a = subprocess.Popen([binary, "push", "--pyroscope", r.url(), "--every", every, str(w.pid)],
                         env=env, stderr=subprocess.PIPE, text=True)
    agents.append((label, binary, r, a))
every_s = float(every.rstrip("s"))
samples = []  # (seconds since start, profile bytes, cpu of each agent)
while True:
    pid, wst, wru = os.wait4(w.pid, os.WNOHANG)
    if pid:
        break
    size = 0
    for f in glob.glob(f"{tmp}/soak.*.lk"):
        try:
            size += os.path.getsize(f)
        except OSError:
            pass
    samples.append((time.time() - t0, size, [cpu_of(a.pid) for _, _, _, a in agents]))
    time.sleep(0.1)
print(f"leek push --every {every} of bench/soak.c ({duration} s, period {period}, rate "
      f"{rate or 'unlimited'}), {time.strftime('%Y-%m-%d %H:%M')}, {os.uname().nodename}, "
      f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
print(f"  workload CPU           {wru.ru_utime + wru.ru_stime:.2f} s (exit {wst >> 8}), profile "
      f"{samples[-1][1] / 1e6:.1f} MB at its end")
whole = None
for k, (label, binary, r, a) in enumerate(agents):
    _, ast, aru = os.wait4(a.pid, 0)
    wall = time.time() - t0
    r.stop()
    reqs = r.requests()
    body = [len(q.body) for q in reqs] or [0]
    sizes = [int(q.headers.get("content-length", 0)) for q in reqs] or [0]
    whole = whole or sizes
    acpu = aru.ru_utime + aru.ru_stime
    print(f"agent: {label} ({binary})")
    print(f"  pushes                 {len(reqs)} (exit {ast >> 8}: "
          f"{a.stderr.read().strip().splitlines()[-1]})")
    print(f"  pprof body (gzip)      median {statistics.median(body):.0f} B, largest {max(body)} B")
    print(f"  whole request          median {statistics.median(sizes):.0f} B, largest "
          f"{max(sizes)} B")
    print(f"  agent CPU              {acpu:.3f} s = {100 * acpu / wall:.3f}% of one CPU over "
          f"{wall:.0f} s, {1000 * acpu / max(len(reqs), 1):.1f} ms a push")
    print(f"  agent max RSS          {aru.ru_maxrss / 1024:.1f} MiB")
    line, last, i = [], 0.0, 1
    for t, size, cpus in samples:  # the CPU at each interval's end
        if t >= i * every_s and cpus[k] is not None:
            line.append(f"{1000 * (cpus[k] - last):.0f} ms @ {size / 1e6:.1f} MB")
            last, i = cpus[k], i + 1
    print(f"  CPU per interval       {', '.join(line)}")
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
