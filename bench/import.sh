#!/usr/bin/env bash
# import.sh: what `leek import` costs on a long glibc mtrace trace, in time and peak memory,
# beside glibc's own mtrace Perl script (libc-devtools' /usr/bin/mtrace) on the same trace, and
# whether both find the same leaks. The trace is bench/import-trace.py's: LINES lines (default 10
# million, about 380 MB), at most LIVE blocks live at once (default 50000).
#
#   bench/import.sh [BUILD_DIR]                 (default: build)
#   ROUNDS=5 LINES=1000000 bench/import.sh      (defaults: 3 rounds, 10 million lines)
#
# Each command runs ROUNDS times; the median wall time and the largest peak RSS (GNU time) are
# printed. Wall times are timings on a shared machine: compare the ratio. Run by hand only.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${ROUNDS:-3}
lines=${LINES:-10000000}
live=${LIVE:-50000}

leek=$(realpath "$build/src/cli/leek")
[ -x "$leek" ] || { echo "no leek in '$build': meson setup $build && ninja -C $build" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "GNU time is needed: apt-get install -y time" >&2; exit 1; }
[ -x /usr/bin/mtrace ] || { echo "glibc's mtrace is needed: apt-get install -y libc-devtools" >&2
  exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 bench/import-trace.py "$lines" "$live" "$tmp/t.trace"

# run NAME CMD...: ROUNDS runs of CMD (exit 1, leaks found, is success); "median-s max-KiB".
run() {
  local name=$1; shift
  : >"$tmp/t.$name"
  for _ in $(seq "$rounds"); do
    /usr/bin/time -f "%e %M" -o "$tmp/one" "$@" >"$tmp/out.$name" 2>"$tmp/err" ||
      [ $? -eq 1 ] || { echo "failed: $*" >&2; tail -5 "$tmp/err" >&2; exit 1; }
    tail -1 "$tmp/one" >>"$tmp/t.$name"
  done
  sort -g "$tmp/t.$name" | awk '{ t[NR] = $1; if ($2 > m) m = $2 }
    END { printf "%.2f %d\n", (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2, m }'
}

echo "leek import, $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -m), $(nproc) CPUs," \
  "load $(cut -d' ' -f1 /proc/loadavg), $rounds rounds"
echo "leek: $build, tree $(git describe --always --dirty 2>/dev/null || echo '?')"
echo "trace: $(wc -l <"$tmp/t.trace") lines, $(stat -c %s "$tmp/t.trace") bytes"
printf '%-28s %9s %9s\n' command "median s" "peak MiB"
l=$(run leek "$leek" import "$tmp/t.trace")
m=$(run mtrace /usr/bin/mtrace "$tmp/t.trace")
printf '%-28s %9s %9d\n' "leek import" "${l% *}" $(( ${l#* } / 1024 ))
printf '%-28s %9s %9d\n' "mtrace (glibc's Perl script)" "${m% *}" $(( ${m#* } / 1024 ))
awk -v a="${m% *}" -v b="${l% *}" 'BEGIN { printf "mtrace / leek import: %.1fx the time\n", a / b }'
# The same leaks: leek's table rows and the script's, as "address size" in hex.
perl -ne 'printf "%x %x\n", hex($1), $2 if /^(0x\w+) +(\d+) /' "$tmp/out.leek" | sort >"$tmp/a"
perl -ne 'printf "%x %x\n", hex($1), hex($2) if /^(0x\w+) +(0x\w+) /' "$tmp/out.mtrace" |
  sort >"$tmp/b"
if cmp -s "$tmp/a" "$tmp/b"; then
  echo "same leaks: $(wc -l <"$tmp/a")"
else
  echo "the leaks differ: $(wc -l <"$tmp/a") against $(wc -l <"$tmp/b")"; exit 1
fi
