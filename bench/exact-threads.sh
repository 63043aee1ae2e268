#!/usr/bin/env bash
# exact-threads.sh: what a malloc+free pair costs in exact mode (LEEK_PERIOD=1) as the threads
# outnumber the cores, and what a sampled 1 MiB pair costs beside an exact one (issue 29). Run by
# hand; never a pass/fail test.
#
#   bench/exact-threads.sh [BUILD]                   (default: build)
#   ROUNDS=11 SCALE=2 bench/exact-threads.sh /tmp/build-bench
#   THREADS="1 2" ROUNDS=3 SCALE=0.25 bench/exact-threads.sh     a quick look
#
# The program is bench/micro.c with --cost: every thread allocates and frees in its own loop,
# after a warm-up, and micro prints two costs of a pair (bench/micro.c says how):
#   core-ns  wall time x min(threads, CPUs) / pairs of all threads: the cores' time a pair took
#   CPU-ns   the process's user+system time / pairs: every thread's, leek's own included
# The cases: 128 B pairs on T threads for each T of THREADS, and 1 MiB pairs on 1 and 2 threads.
# Each runs under three configurations: glibc alone ("glibc"), leek in exact mode
# (LEEK_PERIOD=1 LD_PRELOAD=libleek.so, "exact") and leek at its default period of 512 KiB
# ("sampled"), both with LEEK_SEED=1, so a one-thread run samples the same pairs every round. A run
# does the same number of pairs whatever T (shared out over its threads), so every run takes about
# as long as a one-thread run where leek scales. Every round runs every case under every
# configuration once, in a new random order, for ROUNDS rounds.
#
# Reading the output. The first table gives medians of each run's costs. The second gives, for
# each T, the median over the rounds of each round's ratio cost(T) / cost(1) of one
# configuration (the two runs of a ratio are seconds apart, so a burst of load that slows a round
# slows both); [a-b] is the spread of those ratios over the rounds. Issue 29's goal is exact
# mode's core-ns ratio at most 1.30 for 2, 4 and 8 threads; glibc's own ratio beside it is what
# the allocator and the machine do without leek. The last table is 1 MiB pairs: the per-round
# ratio sampled / exact, whose goal is at most 1.00 (the sampled path costs no more than the
# exact one). "goal" counts the rounds that met it. On a shared machine CPU-ns is the steadier
# measure (a thread that a neighbour keeps off its core adds wall time, not CPU time), but only
# core-ns sees cores left idle while threads sleep on a lock; read the two together. A neighbour's
# load can also flatter the threads: when only one core is free they take turns and do not
# contend, so quote the load line with the numbers, and rerun when it is high.
#
# Knobs (environment):
#   ROUNDS   rounds (default 7: a median of 7 ignores up to 3 rounds a neighbour disturbed, and
#            the whole run takes 1 to 2 minutes here while exact mode does not scale)
#   SCALE    multiplies the pairs of every run (default 1: 4 million 128 B pairs and 400 000
#            1 MiB pairs a run, which keep leek's every run at a tenth of a second or more, where
#            a scheduler's time slice is lost in it; 0.25 for a quick look)
#   THREADS  the thread counts of the 128 B case (default "1 2 4 8": issue 29's, and 1 must be
#            among them, as every ratio is to it)
#   PIN      a CPU list for taskset (default none): every run on those CPUs only. PIN=0 puts
#            every thread on one core, where they take turns: no line passes from core to core,
#            so a ratio to one thread is leek's own work a thread (a lock, a sleep, a shared
#            count), without what two cores do to each other's caches
#
# Every leek run's profile is read back with `leek dump --summary` (outside the timing) and the
# script stops unless it has its trailer, no losses, and at least one allocation (exact mode:
# every pair made, warm-up included), so a libleek.so that records nothing cannot show fast
# numbers. The profiles go to a temporary directory, removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${ROUNDS:-7}
scale=${SCALE:-1}
read -ra threads <<<"${THREADS:-1 2 4 8}"
pin=()
[ -z "${PIN:-}" ] || pin=(taskset -c "$PIN")

for t in cc:gcc shuf:coreutils awk:gawk; do
  command -v "${t%%:*}" >/dev/null ||
    { echo "needs ${t%%:*} (apt-get install -y ${t#*:})" >&2; exit 1; }
done
for t in "${threads[@]}"; do
  [[ $t =~ ^[1-9][0-9]?$ ]] && [ "$t" -le 64 ] ||
    { echo "THREADS: '$t' is not 1 to 64" >&2; exit 2; }
done
[[ " ${threads[*]} " == *" 1 "* ]] || { echo "THREADS must include 1" >&2; exit 2; }
lib=$(realpath "$build/src/preload/libleek.so" 2>/dev/null || true)
leek=$build/src/cli/leek
[ -f "$lib" ] && [ -x "$leek" ] ||
  { echo "no leek in '$build': meson setup $build && ninja -C $build" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -fno-builtin -pthread -o "$tmp/micro" bench/micro.c

configs=(none exact sampled)
declare -A envs=(
  [none]=""
  [exact]="LEEK_PERIOD=1 LEEK_SEED=1 LEEK_OUTPUT=$tmp/out/p.%p.lk LD_PRELOAD=$lib"
  [sampled]="LEEK_SEED=1 LEEK_OUTPUT=$tmp/out/p.%p.lk LD_PRELOAD=$lib"
)
# The runs of a round, "SIZE THREADS", and the pairs of a run of each size.
runs=()
for t in "${threads[@]}"; do runs+=("128 $t"); done
runs+=("1m 1" "1m 2")
declare -A pairs=([128]=$(awk -v s="$scale" 'BEGIN { printf "%d", 4000000 * s }')
  [1m]=$(awk -v s="$scale" 'BEGIN { printf "%d", 400000 * s }'))

# check CONFIG WANT: the one profile in $tmp/out is complete and holds at least WANT allocations.
check() {
  local f=("$tmp"/out/*.lk)
  [ -f "${f[0]}" ] || { echo "$1: leek wrote no profile" >&2; exit 1; }
  [ ${#f[@]} = 1 ] || { echo "$1: leek wrote ${#f[@]} profiles, not one" >&2; exit 1; }
  "$leek" dump --summary "${f[0]}" >"$tmp/summary" 2>&1 ||
    { echo "$1: dump --summary failed" >&2; tail -3 "$tmp/summary" >&2; exit 1; }
  awk -v want="$2" '/^trailer:/ { t = $2 } /^losses:/ { l = $2 } /^samples:/ { n = $2 }
    END { exit !(t == "yes" && l == "none" && n >= want) }' "$tmp/summary" ||
    { echo "$1: incomplete profile (want $2 allocations or more):" >&2
      grep -E '^(samples|losses|trailer):' "$tmp/summary" >&2; exit 1; }
}

# one SIZE T CONFIG: one run; appends "core-ns CPU-ns" to $tmp/r.SIZE.T.CONFIG.
one() {
  local n=$((${pairs[$1]} / $2)) out
  rm -rf "$tmp/out" && mkdir "$tmp/out"
  out=$("${pin[@]}" env ${envs[$3]} "$tmp/micro" --cost "$1" "$n" "$2" 2>"$tmp/err") ||
    { echo "failed: $3, $1 x $n on $2 threads" >&2; tail -5 "$tmp/err" >&2; exit 1; }
  [[ $out =~ ^[0-9.]+\ [0-9.]+\ [0-9.]+$ ]] ||
    { echo "$3 $1 $2: micro printed '$out'" >&2; exit 1; }
  case $3 in
    exact) check "$3 $1 $2" $(($2 * (n + n / 16))) ;;
    sampled) check "$3 $1 $2" 1 ;;
  esac
  echo "${out#* }" >>"$tmp/r.$1.$2.$3"
}

started=$(date -u '+%Y-%m-%d %H:%M UTC')
load=$(cut -d' ' -f1-3 /proc/loadavg)
t_start=$EPOCHREALTIME
for r in $(seq "$rounds"); do
  for x in $(for a in "${runs[@]}"; do for k in "${configs[@]}"; do echo "${a/ /:}:$k"; done
             done | shuf); do
    IFS=: read -r s t k <<<"$x"
    one "$s" "$t" "$k"
  done
  echo "round $r of $rounds done" >&2
done
elapsed=$(awk -v a="$t_start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }')

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"
  else print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# cost SIZE T CONFIG COL: median of column COL (1 core-ns, 2 CPU-ns).
cost() { printf %.1f "$(awk -v c="$4" '{ print $c }' "$tmp/r.$1.$2.$3" | median)"; }
# ratios A B COL: per-round ratios of column COL of the result files A and B, one a line.
ratios() { paste -d' ' "$tmp/r.$1" "$tmp/r.$2" |
  awk -v c="$3" '{ printf "%.6f\n", $c / $(c + 2) }'; }
# scaled A B C D COL GOAL: ratio's report for the per-round (A / B) / (C / D): how much more
# exact mode's cost grew with the threads than glibc's own did in the same round.
scaled() {
  local r; r=$(paste -d' ' <(ratios "$1" "$2" "$5") <(ratios "$3" "$4" "$5") |
    awk '{ printf "%.6f\n", $1 / $2 }')
  printf '%.2f [%.2f-%.2f]' "$(median <<<"$r")" "$(sort -g <<<"$r" | head -1)" \
    "$(sort -g <<<"$r" | tail -1)"
  awk -v g="$6" '$1 <= g { n++ } END { printf " %d/%d", n, NR }' <<<"$r"
}
# ratio A B COL [GOAL]: "median [min-max]" of those ratios, and with GOAL, "n/N" of them <= GOAL.
ratio() {
  local r; r=$(ratios "$1" "$2" "$3")
  printf '%.2f [%.2f-%.2f]' "$(median <<<"$r")" "$(sort -g <<<"$r" | head -1)" \
    "$(sort -g <<<"$r" | tail -1)"
  [ -z "${4:-}" ] || awk -v g="$4" '$1 <= g { n++ } END { printf " %d/%d", n, NR }' <<<"$r"
}

echo "exact mode and threads, $started, $(uname -m), $(nproc) CPUs, load $load," \
  "$rounds rounds interleaved, medians, $elapsed s"
echo "leek:  $lib, tree $(git describe --always --dirty 2>/dev/null || echo '?')"
echo "libc:  $(ldd --version | head -1)"
[ -z "${PIN:-}" ] || echo "pinned: every run on CPU $PIN (taskset -c $PIN)"
echo
echo "128 B malloc+free, ${pairs[128]} pairs a run shared out over the threads: ns per pair"
printf '%-8s %-26s   %s\n' "" "   core-ns per pair" "   CPU-ns per pair"
printf '%-8s %8s %8s %8s   %8s %8s %8s\n' threads glibc exact sampled glibc exact sampled
for t in "${threads[@]}"; do
  printf '%-8s %8s %8s %8s   %8s %8s %8s\n' "$t" \
    "$(cost 128 "$t" none 1)" "$(cost 128 "$t" exact 1)" "$(cost 128 "$t" sampled 1)" \
    "$(cost 128 "$t" none 2)" "$(cost 128 "$t" exact 2)" "$(cost 128 "$t" sampled 2)"
done
echo
echo "cost(T) / cost(1), per round: median [min-max]; goal: exact's core-ns <= 1.30 (rounds within)"
printf '%-8s %-26s %-20s %-20s %-20s %-20s %s\n' threads "exact core-ns" "exact CPU-ns" \
  "glibc core-ns" "glibc CPU-ns" "sampled core-ns" "sampled CPU-ns"
for t in "${threads[@]}"; do
  [ "$t" != 1 ] || continue
  printf '%-8s %-26s %-20s %-20s %-20s %-20s %s\n' "$t" \
    "$(ratio "128.$t.exact" 128.1.exact 1 1.30)" "$(ratio "128.$t.exact" 128.1.exact 2)" \
    "$(ratio "128.$t.none" 128.1.none 1)" "$(ratio "128.$t.none" 128.1.none 2)" \
    "$(ratio "128.$t.sampled" 128.1.sampled 1)" "$(ratio "128.$t.sampled" 128.1.sampled 2)"
done
echo
echo "the same, exact mode's ratio over glibc's in each round: what leek adds to what the machine"
echo "does to a second thread"
printf '%-8s %-26s %s\n' threads "exact/glibc core-ns" "exact/glibc CPU-ns"
for t in "${threads[@]}"; do
  [ "$t" != 1 ] || continue
  printf '%-8s %-26s %s\n' "$t" \
    "$(scaled "128.$t.exact" 128.1.exact "128.$t.none" 128.1.none 1 1.30)" \
    "$(scaled "128.$t.exact" 128.1.exact "128.$t.none" 128.1.none 2 1.30)"
done
echo
echo "1 MiB malloc+free, ${pairs[1m]} pairs a run: ns per pair (core-ns / CPU-ns), and sampled /" \
  "exact per round; goal <= 1.00"
printf '%-8s %15s %15s %15s   %-26s %s\n' threads glibc exact sampled "sampled/exact core-ns" \
  "sampled/exact CPU-ns"
for t in 1 2; do
  printf '%-8s' "$t"
  for k in "${configs[@]}"; do printf ' %15s' "$(cost 1m $t "$k" 1) / $(cost 1m $t "$k" 2)"; done
  printf '   %-26s %s\n' "$(ratio "1m.$t.sampled" "1m.$t.exact" 1 1.00)" \
    "$(ratio "1m.$t.sampled" "1m.$t.exact" 2 1.00)"
done
echo "(every leek profile was read back: trailer, no losses, every pair recorded in exact mode)"
