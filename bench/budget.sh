#!/usr/bin/env bash
# budget.sh: the memory and time `leek report` and `leek dump --summary` take to read a few
# kilobytes of zstd that claim BLOCKS live blocks (tests/lib/build-profile.c's pb_live), under the
# default memory budget and under --max-memory LIMIT (src/cli/base/budget.h). docs/performance.md
# ("Reading profiles") quotes it; docs/design.md ("Reading a profile") explains the budget. Peak
# RSS is GNU time's; the times are timings of one run each, on whatever else the machine does:
# compare the memory, and the times only roughly. Run by hand only.
#
#   bench/budget.sh [BUILD_DIR [BLOCKS]]        (default: build 20000000)
#   LIMIT=64M bench/budget.sh /tmp/build-old    a build without --max-memory says so and goes on
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
blocks=${2:-20000000}
limit=${LIMIT:-256M}

leek=$(realpath "$build/src/cli/leek")
[ -x /usr/bin/time ] || { echo "GNU time is needed: apt-get install -y time" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -D_GNU_SOURCE -I tests/lib -I src/common -I include -o "$tmp/gen" bench/budget-profile.c \
  tests/lib/build-profile.c tests/lib/z-build.c -lzstd -lz
"$tmp/gen" "$blocks" "$tmp/live.lk.zst"

for args in "report" "report --max-memory $limit" "report old --age 0" "dump --summary" \
            "dump --summary --max-memory $limit"; do
  # shellcheck disable=SC2086 # args is words
  /usr/bin/time -f "%M KiB peak RSS, %e s wall, %U s user, %S s system, exit %x" \
    "$leek" $args "$tmp/live.lk.zst" >/dev/null 2>"$tmp/err" || true
  echo "leek $args FILE: $(tail -n 1 "$tmp/err")"
  grep -v -e "^Command exited" -e "warning: no trailer" "$tmp/err" | head -n -1 | head -n 2 |
    sed "s/^/    /"
done
