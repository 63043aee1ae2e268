#!/usr/bin/env bash
# guard-threads.sh: what guard mode costs a program whose threads all sample often, side by side
# for one or more builds of libleek.so (before and after a change). Run by hand; never a pass/fail
# test.
#
#   bench/guard-threads.sh [LIB...]          (default: build/src/preload/libleek.so)
#   ROUNDS=5 bench/guard-threads.sh /tmp/build-base/src/preload/libleek.so build/src/preload/libleek.so
#
# The program is the cgo program of tests/thirdparty/go.sh (tests/thirdparty/src/cgo/main.go: 8
# goroutines of small mallocs and frees, with pure-Go work between, over the threads of Go's
# scheduler), built here offline with Debian's Go, run as `./cgomain GOROUNDS`. Its configurations,
# for each period P of PERIODS: "base" (LEEK_PERIOD=P) and "guard" (LEEK_PERIOD=P LEEK_GUARD=64),
# both with LEEK_SEED=1, under each LIB. Every round runs every (LIB, configuration) once, in a new
# random order, for ROUNDS rounds; each run's stdout must equal the plain run's (its checksum) and
# its status be 0, or the script stops.
#
# Output: the median wall time of each (LIB, configuration) and its spread [min-max], and for each
# LIB and P the median over the rounds of each round's ratio guard / base (the two runs of a ratio
# are in the same round, so a burst of load slows both). Then one `strace -f -c` run of each
# (LIB, guard at P): its futex calls (threads that wait for lk_lock sleep on it) and mprotect
# calls (guard mode's: two a guarded sample and free). The load average is printed first and
# last: quote it with the numbers, and rerun when it is high.
#
# Knobs (environment):
#   ROUNDS    rounds (default 3: the slowest configuration took 47 s a run before the mprotect
#             calls left lk_lock)
#   GOROUNDS  the program's rounds a goroutine (default 300: tests/thirdparty's LK_QUICK)
#   PERIODS   LEEK_PERIOD values (default "16384 4096")
#   GUARD     LEEK_GUARD (default 64, the count docs/performance.md quotes)
#   STRACE    0 skips the strace runs (default 1)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
libs=("$@")
((${#libs[@]})) || libs=(build/src/preload/libleek.so)
for i in "${!libs[@]}"; do
	libs[i]=$(realpath "${libs[i]}")
	[[ -f ${libs[i]} ]] || { echo "guard-threads: no ${libs[i]}" >&2; exit 1; }
done
rounds=${ROUNDS:-3} gorounds=${GOROUNDS:-300} periods=(${PERIODS:-16384 4096}) guard=${GUARD:-64}
go=$(command -v go || true)
[[ -x $go ]] || { echo "guard-threads: needs Go (apt-get install golang-go)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp tests/thirdparty/src/cgo/main.go "$tmp/"
(cd "$tmp" && GOCACHE=$tmp/gocache GOPATH=$tmp/gopath GO111MODULE=off GOPROXY=off GOFLAGS='' \
	CGO_ENABLED=1 "$go" build -o cgomain main.go)
"$tmp/cgomain" "$gorounds" >"$tmp/plain.out"

echo "load: $(cut -d' ' -f1-3 /proc/loadavg); tree $(git -C "$root" rev-parse --short HEAD); ./cgomain $gorounds"
for i in "${!libs[@]}"; do echo "lib $i: ${libs[i]}"; done

# One run: its wall seconds on stdout. $1 lib index, $2 period, $3 base|guard.
run() {
	local env=(LEEK_SEED=1 LEEK_PERIOD="$2" LEEK_OUTPUT="$tmp/p.%p.lk" LD_PRELOAD="${libs[$1]}")
	[[ $3 == guard ]] && env+=(LEEK_GUARD="$guard")
	local t0 t1
	t0=$(date +%s.%N)
	env "${env[@]}" "$tmp/cgomain" "$gorounds" >"$tmp/run.out" 2>"$tmp/run.err" ||
		{ echo "guard-threads: lib $1 $2 $3 failed:" >&2; cat "$tmp/run.err" >&2; exit 1; }
	t1=$(date +%s.%N)
	cmp -s "$tmp/plain.out" "$tmp/run.out" ||
		{ echo "guard-threads: lib $1 $2 $3: not the plain run's output" >&2; exit 1; }
	rm -f "$tmp"/p.*.lk*
	echo "$t1 - $t0" | bc -l
}

cases=()
for i in "${!libs[@]}"; do
	for p in "${periods[@]}"; do
		cases+=("$i $p base" "$i $p guard")
	done
done
: >"$tmp/times"
for ((r = 1; r <= rounds; r++)); do
	while read -r c; do
		# shellcheck disable=SC2086
		echo "$r $c $(run $c)" >>"$tmp/times"
	done < <(printf '%s\n' "${cases[@]}" | shuf)
done

median() { sort -g | awk '{v[NR] = $1} END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
printf '\n%-4s %7s %-6s %9s %19s\n' lib period mode "median s" "[min-max]"
for c in "${cases[@]}"; do
	read -r i p m <<<"$c"
	awk -v i="$i" -v p="$p" -v m="$m" '$2 == i && $3 == p && $4 == m {print $5}' "$tmp/times" >"$tmp/one"
	printf '%-4s %7s %-6s %9.2f %19s\n' "$i" "$p" "$m" "$(median <"$tmp/one")" \
		"[$(sort -g "$tmp/one" | head -1 | xargs printf '%.2f')-$(sort -g "$tmp/one" | tail -1 | xargs printf '%.2f')]"
done
printf '\n%-4s %7s %18s\n' lib period "guard/base median"
for i in "${!libs[@]}"; do
	for p in "${periods[@]}"; do
		awk -v i="$i" -v p="$p" '$2 == i && $3 == p { t[$1, $4] = $5; n[$1] = 1 }
			END { for (r in n) print t[r, "guard"] / t[r, "base"] }' "$tmp/times" >"$tmp/one"
		printf '%-4s %7s %18.2f\n' "$i" "$p" "$(median <"$tmp/one")"
	done
done

if [[ ${STRACE:-1} != 0 ]] && command -v strace >/dev/null; then
	printf '\n%-4s %7s %10s %10s\n' lib period futex mprotect
	for i in "${!libs[@]}"; do
		for p in "${periods[@]}"; do
			env LEEK_SEED=1 LEEK_PERIOD="$p" LEEK_GUARD="$guard" LEEK_OUTPUT="$tmp/p.%p.lk" \
				LD_PRELOAD="${libs[i]}" strace -f -c -o "$tmp/strace" -e trace=futex,mprotect \
				"$tmp/cgomain" "$gorounds" >/dev/null
			rm -f "$tmp"/p.*.lk*
			calls() { awk -v s="$1" '$NF == s { print $4 }' "$tmp/strace"; }
			printf '%-4s %7s %10s %10s\n' "$i" "$p" "$(calls futex)" "$(calls mprotect)"
		done
	done
fi
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
