#!/usr/bin/env bash
# growth-sim.sh: builds bench/growth-sim.c against the growth verdict of this tree
# (src/cli/profile/profile-growth.c), with the simulator it shares with test-growth-alarms
# (tests/lib/growth-sim.c), and runs it: simulated days of bench/leak-latency.sh's
# service, their false "growing" verdicts and the delay to see the leak (docs/sampling.md
# section 11). No clock and no process: the numbers depend on the arguments alone.
#
#   bench/growth-sim.sh DAYS EVERY_S [LEAK_B_S [SEED [POOL_BYTES TURNOVER_B_S]]]
#   bench/growth-sim.sh 200 600                                 (the fixture, watch's default)
#   bench/growth-sim.sh 200 600 17476 1 1073741824 298262       (a 1 GiB cache, 1 h entries)
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -D_GNU_SOURCE -I src/cli/profile -I src/cli/read -I src/cli -I src/common -I include \
	-I tests/lib -o "$tmp/growth-sim" bench/growth-sim.c tests/lib/growth-sim.c \
	src/cli/profile/profile-growth.c -lm
"$tmp/growth-sim" "$@"
