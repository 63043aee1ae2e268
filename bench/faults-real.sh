#!/usr/bin/env bash
# faults-real.sh: the kernel's side of what leek costs (issue 4): page faults, peak RSS and system
# calls, which callgrind does not see. Counts, not timings, so they hold on a busy machine. A minor
# fault costs 1.5 to 2 us on this project's VMs (the script measures it first), so 10 000 extra
# faults are 15 to 20 ms, 1% of a 1.5 s run.
#
#   bench/faults-real.sh [BUILD_DIR]                (default: build)
#   SEEDS=7 bench/faults-real.sh /tmp/build-perf
#
# 1. bench/real.sh's workloads at full size (sqlite3 200 000 rows, python3.11 alloc.py with
#    PYTHONMALLOC=pymalloc and =malloc, PYTHONHASHSEED=0), plain three times and under libleek.so
#    with LEEK_SEED=1..SEEDS (default 5): GNU time's minor faults and maximum RSS, medians and
#    their ratio to plain. Which allocations are sampled changes with the seed, and so do both.
#    Extra arguments for every leek run go in LEEK_ENV (LEEK_ENV="LEEK_ARENA_RETAIN=1M").
# 2. strace -f -c of one plain and one leek run of each: system calls in all, and those leek adds.
# 3. bench/micro.c's 1 MiB case (most pairs are sampled) at two lengths: the extra system calls and
#    page faults of the longer run per extra sample, i.e. the steady state's cost per sample (issue
#    4: no system call per sample, no fault each time a sampled block is reused).
# Needs sqlite3, python3.11, GNU time, strace; the CLI (BUILD_DIR/src/cli/leek) for sample counts.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
seeds=${SEEDS:-5}
lib=$(realpath "$build/src/preload/libleek.so" 2>/dev/null || true)
leek=$build/src/cli/leek
[ -f "$lib" ] || {
  echo "no libleek.so in '$build': meson setup $build && ninja -C $build" >&2; exit 1; }
for t in sqlite3 /usr/bin/python3.11 /usr/bin/time strace; do
  command -v "$t" >/dev/null || { echo "missing $t" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
awk -v rows=200000 -f bench/workloads/sqlite-gen.awk >"$tmp/w.sql"
cc -O2 -fno-builtin -pthread -o "$tmp/micro" bench/micro.c
mkdir "$tmp/out"
export PYTHONHASHSEED=0
read -r -a extra <<<"${LEEK_ENV:-}"

names=(sqlite pymalloc malloc)
declare -A label=([sqlite]="sqlite3, 200k rows" [pymalloc]="python3.11 pymalloc"
  [malloc]="python3.11 malloc")
# workload NAME: sets cmd (the program, run directly: no wrapper for leek to be preloaded into) and
# PYTHONMALLOC.
workload() {
  case $1 in
    sqlite) cmd=(sqlite3 :memory: ".read $tmp/w.sql") ;;
    *) cmd=(/usr/bin/python3.11 bench/workloads/alloc.py); export PYTHONMALLOC=$1 ;;
  esac
}
# run NAME [ENV...]: prints "minflt maxrss_kib" of one run of workload NAME under ENV.
run() {
  local name=$1; shift
  workload "$name"
  /usr/bin/time -f '%R %M' -o "$tmp/time" env "$@" "${cmd[@]}" >/dev/null 2>"$tmp/err" ||
    { echo "failed: $* ${cmd[*]}" >&2; tail -3 "$tmp/err" >&2; exit 1; }
  rm -f "$tmp/out"/*
  tail -1 "$tmp/time"
}
median() { sort -g | awk '{ v[NR] = $1 }
  END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# The cost of a minor fault here: touch 64 MiB of fresh anonymous pages.
cat >"$tmp/fault.c" <<'EOF'
#include <stdio.h>
#include <sys/mman.h>
#include <time.h>
int main(void)
{
	size_t n = 64u << 20;
	struct timespec a, b;
	char *p = mmap(0, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (size_t i = 0; i < n; i += 4096)
		p[i] = 1;
	clock_gettime(CLOCK_MONOTONIC, &b);
	double ns = (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec);
	printf("%.2f\n", ns / 1e3 / (n / 4096));
	return 0;
}
EOF
cc -O2 -o "$tmp/fault" "$tmp/fault.c"
fault_us=$(for i in 1 2 3; do "$tmp/fault"; done | median)

echo "leek's page faults, peak RSS and system calls, $(date -u '+%Y-%m-%d %H:%M UTC'), tree" \
  "$(git describe --always --dirty 2>/dev/null || echo '?'), default period${LEEK_ENV:+, $LEEK_ENV}"
echo "a minor fault costs $fault_us us here (64 MiB of fresh pages, median of 3)"
echo
printf '%-22s %10s %10s %8s %11s %11s %8s   %s\n' workload "faults" "leek" "x plain" "max RSS KiB" \
  "leek" "x plain" "leek per seed (faults/RSS)"
for n in "${names[@]}"; do
  : >"$tmp/p" && : >"$tmp/l"
  for i in 1 2 3; do run $n >>"$tmp/p"; done
  for s in $(seq "$seeds"); do
    run $n LEEK_SEED="$s" LEEK_OUTPUT="$tmp/out/%p.lk" LD_PRELOAD="$lib" "${extra[@]}" >>"$tmp/l"
  done
  pf=$(cut -d' ' -f1 "$tmp/p" | median); pr=$(cut -d' ' -f2 "$tmp/p" | median)
  lf=$(cut -d' ' -f1 "$tmp/l" | median); lr=$(cut -d' ' -f2 "$tmp/l" | median)
  printf '%-22s %10s %10s %8.3f %11s %11s %8.3f   %s\n' "${label[$n]}" "$pf" "$lf" \
    "$(echo "$lf / $pf" | bc -l)" "$pr" "$lr" "$(echo "$lr / $pr" | bc -l)" \
    "$(tr ' ' / <"$tmp/l" | paste -sd' ')"
done

echo
echo "system calls (strace -f -c), one run each, LEEK_SEED=1: total, and those leek adds"
for n in "${names[@]}"; do
  workload "$n"
  strace -f -c -o "$tmp/st.plain" "${cmd[@]}" >/dev/null 2>&1
  LEEK_SEED=1 LEEK_OUTPUT="$tmp/out/%p.lk" strace -f -c -o "$tmp/st.leek" \
    -E LD_PRELOAD="$lib" "${cmd[@]}" >/dev/null 2>&1
  rm -f "$tmp/out"/*
  calls() { awk '$NF == "total" { print $4 }' "$1"; }
  printf '  %-22s plain %6s  leek %6s  added: %s\n' "${label[$n]}" "$(calls "$tmp/st.plain")" \
    "$(calls "$tmp/st.leek")" "$(awk 'FNR == 1 { f++ } /^ *[0-9]/ && $NF != "total" {
      c[f, $NF] = $4; s[$NF] = 1 }
      END { for (k in s) if (c[2, k] - c[1, k] != 0) printf "%s %+d, ", k, c[2, k] - c[1, k] }' \
      "$tmp/st.plain" "$tmp/st.leek" | sed 's/, $//')"
done

echo
echo "steady state of the 1 MiB case (bench/micro.c 1m): per extra sample between two run lengths"
samples() { [ -x "$leek" ] && "$leek" dump --summary "$tmp"/out/*.lk 2>/dev/null |
  awk '/^samples:/ { print $2 }' || echo 0; }
for it in 20000 60000; do
  rm -f "$tmp/out"/*
  LEEK_SEED=1 LEEK_OUTPUT="$tmp/out/%p.lk" strace -f -c -o "$tmp/st.$it" -E LD_PRELOAD="$lib" \
    "$tmp/micro" 1m $it >/dev/null 2>&1
  sc=$(awk '$NF == "total" { print $4 }' "$tmp/st.$it")
  rm -f "$tmp/out"/*
  f=$(/usr/bin/time -f '%R' env LEEK_SEED=1 LEEK_OUTPUT="$tmp/out/%p.lk" LD_PRELOAD="$lib" \
    "$tmp/micro" 1m $it 2>&1 >/dev/null | tail -1)
  echo "$it $(samples) $sc $f" >>"$tmp/m"
done
awk '{ n[NR] = $2; s[NR] = $3; f[NR] = $4; it[NR] = $1 }
  END { ds = n[2] - n[1]
    printf "  %d -> %d pairs: %d -> %d samples, %d -> %d syscalls, %d -> %d minor faults\n",
      it[1], it[2], n[1], n[2], s[1], s[2], f[1], f[2]
    if (ds > 0) printf "  per sample: %.5f syscalls, %.5f page faults\n", (s[2] - s[1]) / ds,
      (f[2] - f[1]) / ds
    else print "  (no sample counts: build the CLI)" }' "$tmp/m"
