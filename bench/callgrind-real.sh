#!/usr/bin/env bash
# callgrind-real.sh: what leek costs real programs, in instructions (issue 4). callgrind counts
# instructions, so the numbers hold on a busy machine, unlike bench/real.sh's wall times; what they
# miss is the kernel's side (page faults, syscalls): bench/faults-real.sh counts those.
#
#   bench/callgrind-real.sh [BUILD_DIR]                  (default: build)
#   ROWS=20000 PYSCALE=0.25 SEED=1 bench/callgrind-real.sh /tmp/build-perf
#
# The workloads are bench/real.sh's, shrunk for valgrind (about 50 times slower): sqlite3 on ROWS
# rows (default 20 000, a tenth of real.sh's), python3.11 bench/workloads/alloc.py at scale PYSCALE
# (default 0.25: 3 batches of 12) with PYTHONMALLOC=pymalloc and =malloc, PYTHONHASHSEED=0. Each
# runs three times under callgrind: plain, under the floor interposer (bench/floor.c: the least any
# LD_PRELOAD shim costs), and under libleek.so at the default period with LEEK_SEED=SEED, so that
# every run samples the same allocations. Prints the instruction totals and ratios, then where
# leek's instructions went (bench/callgrind-split.py): the hooks' own instructions (the fast path),
# start-up, exit, and the slow paths by entry point (samples, frees of sampled blocks, realloc). The
# rest of leek's difference to the plain run ("other") is the dynamic loader loading libleek and
# libunwind, and the real allocator doing less (or different) work. About 10 minutes. KEEP=1 keeps
# the callgrind files (the temporary directory is printed). FREE_STACKS=1 adds a fourth run of each,
# under leek with LEEK_FREE_STACKS=1, and its ratios to plain and to leek without it. Needs
# valgrind, sqlite3, python3.11.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rows=${ROWS:-20000}
pyscale=${PYSCALE:-0.25}
seed=${SEED:-1}
lib=$(realpath "$build/src/preload/libleek.so" 2>/dev/null || true)
[ -f "$lib" ] || {
  echo "no libleek.so in '$build': meson setup $build && ninja -C $build" >&2; exit 1; }
for t in valgrind callgrind_annotate sqlite3 /usr/bin/python3.11; do
  command -v "$t" >/dev/null || { echo "missing $t" >&2; exit 1; }
done
tmp=$(mktemp -d)
if [ -n "${KEEP:-}" ]; then echo "callgrind files in $tmp"; else trap 'rm -rf "$tmp"' EXIT; fi
cc -O2 -fno-builtin -shared -fPIC -ftls-model=initial-exec -o "$tmp/libfloor.so" bench/floor.c -ldl
awk -v rows="$rows" -f bench/workloads/sqlite-gen.awk >"$tmp/w.sql"
mkdir "$tmp/out"
export PYTHONHASHSEED=0

# cg NAME CONFIG CMD...: one callgrind run; the output goes to $tmp/cg.NAME.CONFIG. The environment
# is given to valgrind, which passes it on: `env` in front of the program would be what is traced.
cg() {
  local name=$1 config=$2; shift 2
  local pre=()
  case $config in
    floor) pre=(LD_PRELOAD="$tmp/libfloor.so") ;;
    leek) pre=(LEEK_SEED="$seed" LEEK_OUTPUT="$tmp/out/%p.lk" LD_PRELOAD="$lib") ;;
    leekfs) pre=(LEEK_SEED="$seed" LEEK_OUTPUT="$tmp/out/%p.lk" LEEK_FREE_STACKS=1
                 LD_PRELOAD="$lib") ;;
  esac
  env "${pre[@]}" valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.$name.$config" "$@" \
    >/dev/null 2>"$tmp/err" || { echo "failed: $config $*" >&2; tail -5 "$tmp/err" >&2; exit 1; }
}
total() { grep -m1 -E '^(summary|totals):' "$1" | awk '{ print $2 }'; }

names=(sqlite pymalloc malloc)
declare -A label=([sqlite]="sqlite3, $rows rows" [pymalloc]="python3.11 pymalloc, scale $pyscale"
  [malloc]="python3.11 malloc, scale $pyscale")
configs=(plain floor leek)
[ -n "${FREE_STACKS:-}" ] && configs+=(leekfs)
for n in "${names[@]}"; do
  for c in "${configs[@]}"; do
    case $n in
      sqlite) cg $n $c sqlite3 :memory: ".read $tmp/w.sql" ;;
      *) PYTHONMALLOC=$n cg $n $c /usr/bin/python3.11 bench/workloads/alloc.py "$pyscale" ;;
    esac
  done
done

echo "leek in instructions (callgrind), $(date -u '+%Y-%m-%d %H:%M UTC'), $lib (this checkout:" \
  "$(git describe --always --dirty 2>/dev/null || echo '?')), default period, LEEK_SEED=$seed"
echo
printf '%-32s %15s %15s %8s %15s %8s %10s' workload plain floor "x plain" leek "x plain" \
  "leek/floor"
[ -n "${FREE_STACKS:-}" ] && printf ' %15s %8s %8s' "leek+fs" "x plain" "fs/leek"
echo
for n in "${names[@]}"; do
  p=$(total "$tmp/cg.$n.plain"); f=$(total "$tmp/cg.$n.floor"); l=$(total "$tmp/cg.$n.leek")
  printf '%-32s %15s %15s %8.4f %15s %8.4f %10.4f' "${label[$n]}" "$p" "$f" \
    "$(echo "$f / $p" | bc -l)" "$l" "$(echo "$l / $p" | bc -l)" "$(echo "$l / $f" | bc -l)"
  if [ -n "${FREE_STACKS:-}" ]; then
    s=$(total "$tmp/cg.$n.leekfs")
    printf ' %15s %8.4f %8.4f' "$s" "$(echo "$s / $p" | bc -l)" "$(echo "$s / $l" | bc -l)"
  fi
  echo
done
for n in "${names[@]}"; do
  p=$(total "$tmp/cg.$n.plain")
  echo
  echo "${label[$n]}: where leek's instructions went (bench/callgrind-split.py), and the floor's"
  paste <(python3 bench/callgrind-split.py "$tmp/cg.$n.leek") \
        <(python3 bench/callgrind-split.py --lib libfloor "$tmp/cg.$n.floor") |
    awk -F'\t' '{ printf "  %-70s | %s\n", $1, $2 }'
  python3 bench/callgrind-split.py "$tmp/cg.$n.leek" | awk -v p="$p" '
    $1 == "total" { gsub(",", "", $2); t = $2 }
    $1 != "total" && $0 !~ /of which/ { v = $NF; gsub(",", "", v); s += v }
    END { printf "  %-70s\n", sprintf("other (loader, allocator): %d", t - p - s) }'
done
