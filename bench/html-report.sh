#!/usr/bin/env bash
# html-report.sh: how big `leek report --format html` pages get and how fast Chromium shows them,
# on the two shapes that matter: a long profile with few stacks (bench/workload-alloc.c 4: 12.5
# million allocations in exact mode, as bench/report-throughput.sh makes it) and a wide one
# (bench/workload-stacks.c: 131 072 distinct stacks, a flame tree of 655 371 frames before
# pruning).
#
#   bench/html-report.sh [BUILD_DIR]      (default: build; ROUNDS=3)
#
# For each profile: the time and peak RSS of `leek report` in text and in HTML (GNU time), the
# page's size, and, from headless Chromium through tests/report/browse.py (medians of ROUNDS
# loads): the load event (parsing the page and its 350 KB of libraries included), the page's own
# drawing (report.js: tables, chart, first flame graph), the flame graph of a moment after a click
# (leek.showMoment) and a search. Timings, not counts: run by hand on an idle machine, never in CI.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${ROUNDS:-3}
leek=$(realpath "$build/src/cli/leek")
[ -x "$leek" ] ||
  { echo "no leek in '$build': meson setup $build && ninja -C $build" >&2; exit 1; }
command -v chromium >/dev/null ||
  { echo "chromium is not installed (apt-get install chromium)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -g -o "$tmp/workload-alloc" bench/workload-alloc.c
cc -O2 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -o "$tmp/workload-stacks" \
  bench/workload-stacks.c

median() { sort -g | awk '{ v[NR] = $1 }
  END { printf "%.0f\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

measure() { # NAME PROGRAM ARGS...
  local name=$1 profile; shift
  "$leek" run --period 1 -o "$tmp/$name.%p.lk" -- "$@" >/dev/null 2>&1
  profile=$(ls "$tmp/$name".*.lk.zst)
  /usr/bin/time -f "%e %M" -o "$tmp/t.text" "$leek" report -o "$tmp/$name.txt" "$profile"
  /usr/bin/time -f "%e %M" -o "$tmp/t.html" \
    "$leek" report --format html -o "$tmp/$name.html" "$profile"
  for i in $(seq "$rounds"); do
    python3 tests/report/browse.py "$tmp/$name.html" \
      'eval=performance.getEntriesByType("navigation")[0].loadEventEnd' 'eval=leek.renderMs' \
      'eval=(() => { const t = performance.now(); leek.showMoment(20);
                     return performance.now() - t; })()' \
      'eval=(() => { const t = performance.now(); leek.search("e");
                     return performance.now() - t; })()' \
      'eval=leek.state().nodes' |
      python3 -c 'import json, sys; print(*json.load(sys.stdin)["results"])'
  done >"$tmp/$name.browse"
  printf '%s: report text %s s %s KiB, html %s s %s KiB; page %s bytes, %s nodes; ' \
    "$name" $(cat "$tmp/t.text") $(cat "$tmp/t.html") "$(stat -c %s "$tmp/$name.html")" \
    "$(awk '{ print $5 }' "$tmp/$name.browse" | head -1)"
  printf 'load %s ms, draw %s ms, moment %s ms, search %s ms\n' \
    "$(awk '{ print $1 }' "$tmp/$name.browse" | median)" \
    "$(awk '{ print $2 }' "$tmp/$name.browse" | median)" \
    "$(awk '{ print $3 }' "$tmp/$name.browse" | median)" \
    "$(awk '{ print $4 }' "$tmp/$name.browse" | median)"
}

measure alloc "$tmp/workload-alloc" 4
measure stacks "$tmp/workload-stacks" 17
