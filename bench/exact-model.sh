#!/usr/bin/env bash
# exact-model.sh: exact mode's cost in a model that a busy machine cannot move: cachegrind's counts
# of sqlite3's exact-mode run (instructions, first- and last-level data misses, mispredicted
# branches) with the caches of a typical core, weighed into one estimate of cycles. Run by hand;
# never a pass/fail test. The wall time of this machine moves by 10% to 30% between rounds, more
# than most changes to the slow path; instructions alone (bench/callgrind-real.sh) miss what a
# change does to the caches, the program's lines that leek's data puts out included.
#
#   bench/exact-model.sh [LIB...]             (default: build/src/preload/libleek.so)
#   ROWS=20000 bench/exact-model.sh /tmp/a/libleek.so /tmp/b/libleek.so
#   ENV="LEEK_ARENA_RETAIN=64M" bench/exact-model.sh build/src/preload/libleek.so
#
# Each library runs sqlite3 on a script of ROWS rows (bench/workloads/sqlite-gen.awk, 20 000 by
# default: about 40 s a run under cachegrind), LEEK_PERIOD=1 and LEEK_SEED=1, and the plain program
# once. The caches: D1 32 KiB 8-way, LL 2 MiB 16-way (a core's own L2: the shared L3 is left out,
# so a miss here is a trip past the core), 64-byte lines. The weights are rough latencies of such
# a core, in cycles: 1 an instruction, 10 a first-level miss (data or instruction) that the L2
# serves, 40 a miss past it (an L3 hit, mostly: sqlite3's heap is tens of MiB, not GiB), 15 a
# mispredicted branch. An estimate compares builds with one another and with the plain run; it is
# not a time. The model knows nothing of the kernel: page faults and system calls are counted by
# bench/faults-real.sh. A second table splits the first-level data misses (reads) by whose code
# took them: the program's own (sqlite3 and libsqlite3 have no debug information: cachegrind's
# "???", with the other libraries that have none), libc's, and leek's by source file, so that a
# change that makes leek's data smaller shows where the program's lines it no longer puts out
# come back.
set -euo pipefail
cd "$(dirname "$0")/.."
rows=${ROWS:-20000}
[ $# -gt 0 ] || set -- build/src/preload/libleek.so
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install -y valgrind)" >&2; exit 1; }
for lib in "$@"; do [ -f "$lib" ] || { echo "no library at $lib" >&2; exit 1; }; done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. bench/workloads/exact.sh
exact_workload sqlite "$rows" "$tmp" # sets cmd

# model NAME [LIB]: one cachegrind run; its summary in $tmp/NAME.err
model() {
  local pre=()
  [ $# -gt 1 ] && pre=(env ${ENV:-} "LD_PRELOAD=$(realpath "$2")" LEEK_PERIOD=1 LEEK_SEED=1
                       "LEEK_OUTPUT=$tmp/p.%p.lk")
  "${pre[@]}" valgrind --tool=cachegrind --cache-sim=yes --branch-sim=yes --D1=32768,8,64 \
    --LL=2097152,16,64 --cachegrind-out-file="$tmp/$1.out" \
    "${cmd[@]}" >/dev/null 2>"$tmp/$1.err"
  rm -f "$tmp"/p.*.lk
}

model plain
i=0
for lib in "$@"; do model "lib$i" "$lib"; i=$((i + 1)); done

echo "exact-mode sqlite3, $rows rows, cachegrind (D1 32K/8, LL 2M/16), $(date -u '+%Y-%m-%d %H:%M UTC'), tree $(git describe --always --dirty 2>/dev/null || echo '?')"
python3 - "$tmp" "$@" <<'PY'
import re, sys
d, libs = sys.argv[1], sys.argv[2:]
def counts(name):
    t = open(f"{d}/{name}.err").read()
    def g(k):
        m = re.search(k + r":\s+([\d,]+)", t)
        return int(m.group(1).replace(",", "")) if m else 0
    c = dict(ir=g("I   refs"), i1=g("I1  misses"), d1=g("D1  misses"), ll=g("LLd misses"),
             br=g("Mispredicts"))
    c["est"] = c["ir"] + 10 * (c["i1"] + c["d1"]) + 40 * c["ll"] + 15 * c["br"]
    return c
rows = [("plain", counts("plain"))] + [(lib, counts(f"lib{i}")) for i, lib in enumerate(libs)]
base = rows[0][1]
print(f"{'':40s} {'instr':>9s} {'D1 miss':>8s} {'LL miss':>8s} {'mispred':>8s} {'estimate':>9s} {'beyond plain':>12s}")
for name, c in rows:
    print(f"{name[-40:]:40s} {c['ir']/1e6:8.1f}M {c['d1']/1e6:7.2f}M {c['ll']/1e6:7.3f}M "
          f"{c['br']/1e6:7.2f}M {c['est']/1e6:8.1f}M {(c['est']-base['est'])/1e6:11.1f}M")
print()
print("first-level read misses (millions), by whose code took them")
def split(name):
    ev, fl, out = None, None, {}
    for line in open(f"{d}/{name}.out"):
        if line.startswith("events:"):
            ev = line.split()[1:]
        elif line.startswith("fl="):
            fl = line[3:].strip()
            key = ("leek " + fl.split("/")[-1] if "/src/preload/" in fl or "/src/common/" in fl
                   else "program" if fl == "???" else "libc" if fl.startswith("./") else "other")
        elif line[:1].isdigit() and ev:
            v, k = line.split(), 1 + ev.index("D1mr")
            out[key] = out.get(key, 0) + (int(v[k]) if len(v) > k else 0)
    return out
parts = [("plain", split("plain"))] + [(lib, split(f"lib{i}")) for i, lib in enumerate(libs)]
small = {k for _, p in parts for k in p # leek's files under 50 000 misses in every run, together
         if k.startswith("leek ") and max(q.get(k, 0) for _, q in parts) < 50000}
for _, p in parts:
    p["leek, the rest"] = sum(p.pop(k, 0) for k in small)
keys = sorted({k for _, p in parts for k in p}, key=lambda k: (k != "program", k != "libc", k))
print(f"{'':40s}" + "".join(f"{k[-14:]:>15s}" for k in keys))
for name, p in parts:
    print(f"{name[-40:]:40s}" + "".join(f"{p.get(k, 0)/1e6:15.2f}" for k in keys))
PY
