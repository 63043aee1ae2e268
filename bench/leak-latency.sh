#!/usr/bin/env bash
# leak-latency.sh: how soon `leek watch` sees a slow leak, and how often it cries wolf without one
# (issue 31, "How soon a leak is seen"; the math is docs/sampling.md section 11).
#
#   bench/leak-latency.sh DURATION [BUILD_DIR]        (DURATION in seconds; BUILD_DIR: build)
#   SEEDS=5 NOLEAK=1 EVERY=30s LEAK=17476 OUT=DIR bench/leak-latency.sh 3600
#
# tests/fixtures/fx-service runs under libleek at the default period (LEEK_PERIOD unset) with
# 100 MB/s of churn in 64 KiB blocks, a warm pool of 4096 blocks of 4 KiB (16 MiB) of which
# 256 KiB a second are replaced at random (a block lives about 64 s), and a leak of LEAK bytes a
# second (default 17476: 1 MiB a minute) in 1 KiB blocks: SEEDS such services at once (seeds 1..,
# for the pool's picks and LEEK_SEED; the timing of the allocations still varies from run to run),
# each under `leek watch --every EVERY --age 0 --format json`, each stopped at its first "growing"
# verdict on fx_leak or after DURATION; and, beside them, NOLEAK services (default 1; seeds after
# those) without the leak for all of DURATION, whose every "growing" verdict on any site is a false
# alarm.
#
# Prints the delay to the first "growing" per seed, their median and range, and the false alarms:
# reports read, site verdicts, "growing" ones. A delay is the wall-clock time from the service's
# start to the report that says it ("seen"), which is the time of the data that report read (its
# t_s, "data") plus watch's read lag: a report reads up to the safe limit, one step of the file's
# growth behind its end (64 KiB of records under 1 MiB, 1 MiB after; docs/design.md, "Watching a
# running process"), minutes at this service's few KB/s of records. --every only says when the
# verdict is looked at (it reads the whole profile each time): at the default 10 min the delay
# rounds up to the next multiple of 10 min. Everything is kept in
# OUT (default: a temporary directory, deleted): the JSON lines (*.jsonl) and the profiles.
# A measurement on a shared machine, never a pass/fail test; the verdict does not depend on the
# machine's speed, only on the samples, so a loaded machine changes nothing but the CPU time.
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:?usage: bench/leak-latency.sh DURATION [BUILD_DIR]}
build=${2:-build}
seeds=${SEEDS:-5}
every=${EVERY:-30s}
leak=${LEAK:-17476}
noleak=${NOLEAK:-1}

lib=$(realpath "$build/src/preload/libleek.so")
leek=$(realpath "$build/src/cli/leek")
svc=$(realpath "$build/tests/fixtures/fx-service")
if [[ -n ${OUT:-} ]]; then
	out=$OUT
	mkdir -p "$out"
else
	out=$(mktemp -d)
	trap 'rm -rf "$out"' EXIT
fi

python3 - "$lib" "$leek" "$svc" "$out" "$duration" "$seeds" "$every" "$leak" "$noleak" <<'PY'
import json, os, signal, statistics, subprocess, sys, time
lib, leek, svc, out, duration, seeds, every, leak, noleak = sys.argv[1:]
duration, seeds, noleak = float(duration), int(seeds), int(noleak)
env = dict(os.environ, LD_PRELOAD=lib)
env.pop("LEEK_PERIOD", None) # the default period

runs = []
def start(name, leak_rate, seed):
    e = dict(env, LEEK_OUTPUT=f"{out}/{name}.%p.lk", LEEK_SEED=str(seed))
    p = subprocess.Popen([svc, str(duration), leak_rate, "16M", "100M", f"{out}/{name}.tally",
                          "churn-block=64K", "turnover=256K", f"seed={seed}"], env=e)
    log = open(f"{out}/{name}.jsonl", "w")
    w = subprocess.Popen([leek, "watch", "--every", every, "--age", "0", "--format", "json",
                          str(p.pid)], stdout=log)
    runs.append(dict(name=name, leak=leak_rate != "0", svc=p, watch=w, path=f"{out}/{name}.jsonl",
                     at=0, first=None, seen=None, start=time.monotonic(), reports=0, verdicts=0,
                     growing=[]))

for s in range(1, seeds + 1):
    start(f"leak-{s}", leak, s)
for s in range(1, noleak + 1):
    start(f"noleak-{s}", "0", seeds + s)

def read_new(r):
    with open(r["path"]) as f:
        f.seek(r["at"])
        data = f.read()
    end = data.rfind("\n") + 1
    r["at"] += len(data[:end].encode())
    for line in data[:end].splitlines():
        o = json.loads(line)
        r["reports"] += 1
        for site in o.get("sites", []):
            r["verdicts"] += 1
            if site.get("trend") != "growing":
                continue
            if r["leak"] and site.get("function") == "fx_leak":
                if r["first"] is None:
                    r["first"] = o["t_s"]
                    r["seen"] = time.monotonic() - r["start"]
                    r["svc"].send_signal(signal.SIGTERM)
            else:
                r["growing"].append((o["t_s"], site.get("function")))

while any(r["watch"].poll() is None for r in runs):
    for r in runs:
        read_new(r)
    time.sleep(1)
for r in runs:
    read_new(r)
    r["svc"].wait()

print(f"fx-service: leak {leak} B/s, 100 MB/s churn in 64 KiB blocks, 16 MiB pool turning over "
      f"256 KiB/s; default period; watch --every {every} --age 0; up to {duration:.0f} s")
delays, datas = [], []
for r in runs:
    if r["leak"]:
        d, s = r["first"], r["seen"]
        delays.append(s if s is not None else float("inf"))
        datas.append(d if d is not None else float("inf"))
        print(f"{r['name']:8}  first growing on fx_leak: "
              + (f"seen at {s:5.0f} s, data of {d:5.0f} s" if d is not None
                 else f"never (>{duration:.0f} s)")
              + f"  ({r['reports']} reports; other sites growing: {len(r['growing'])})")
if delays:
    fin = [d for d in delays if d != float("inf")]
    med, dmed = statistics.median(delays), statistics.median(datas)
    print(f"delay: seen after {med:.0f} s median ({med / 60:.1f} min), range "
          f"{min(delays):.0f}..{max(delays):.0f} s; data of {dmed:.0f} s median "
          f"({min(datas):.0f}..{max(datas):.0f}); detected {len(fin)} of {len(delays)}")
for r in runs:
    if not r["leak"]:
        print(f"{r['name']}: {r['reports']} reports, {r['verdicts']} site verdicts, "
              f"{len(r['growing'])} growing" + (": " + ", ".join(
                  f"{f} at {t:.0f} s" for t, f in r["growing"][:10]) if r["growing"] else ""))
quiet = [r for r in runs if not r["leak"]]
if quiet:
    n = sum(r["verdicts"] for r in quiet)
    g = sum(len(r["growing"]) for r in quiet)
    print(f"false alarms: {g} growing of {n} site verdicts in {len(quiet)} run(s) of "
          f"{duration:.0f} s; runs with any: {sum(1 for r in quiet if r['growing'])} "
          f"of {len(quiet)}")
PY
