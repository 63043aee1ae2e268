#!/usr/bin/env bash
# tests/thirdparty/stress-ng.sh: Debian's stress-ng stressors that hit what a preloaded allocator
# can break (processes, threads, signals, loaded libraries), with --verify, under leek.
#
# Each stressor runs a bounded number of bogo operations in the three modes. It passes in a mode
# when stress-ng exits as it did plain, logs no failure or error that it did not log plain (a
# machine without /sys makes it say "no CPUs found" either way), completes every operation it
# was asked for (a skipped stressor or one cut short by its timeout fails), does not hang, and
# every profile its processes wrote reads. exec and spawn refuse to run as root, so they run as
# nobody; they exec stress-ng with an empty environment, so leek sees the process creation side
# (clone, vfork, posix_spawn with threads around) but not the programs they start. The sigsegv
# stressor faults on purpose: leek must leave its handler alone. It must never leave a stress-ng
# process behind or write outside its scratch directory.
#
# The pthread stressor is left out: stress-ng 0.15.06's never joins the last thread it creates and
# hands every thread a pointer into its own stack frame, so that thread dies of SIGSEGV in
# stress-ng's code whenever it first runs after the stressor has returned. Anything that makes
# the process take a little longer to leave lets it: plain stress-ng whose _exit waits 1 ms
# fails 10 runs of 100 under load (docs/compatibility.md). tests/preload/tlsdtor.c and
# tests/preload/exitrace.c cover the thread creation, teardown and exit that it exercised.
#
# LK_QUICK=1 runs every stressor with a third of the operations (about half a minute).

# shellcheck source=tests/thirdparty/lib.sh
source "$(dirname "$0")/lib.sh"
lk_need_build
lk_apt stress-ng util-linux || { echo "stress-ng: cannot install stress-ng" >&2; exit 1; }

# name | stressor options (the op count is full-mode; quick divides it by 3) | run as nobody
stressors=(
	"malloc|--malloc 2 --malloc-pthreads 2 --malloc-bytes 256k --malloc-ops 100000|"
	"fork|--fork 2 --fork-max 4 --fork-ops 2000|"
	"vfork|--vfork 2 --vfork-max 4 --vfork-ops 2000|"
	"clone|--clone 1 --clone-ops 400|"
	"exec|--exec 2 --exec-max 4 --exec-method all --exec-ops 150|nobody"
	"exec-vfork|--exec 1 --exec-max 2 --exec-fork-method vfork --exec-ops 100|nobody"
	"spawn|--spawn 2 --spawn-ops 150|nobody"
	"dynlib|--dynlib 1 --dynlib-ops 300|"
	"sigq|--sigq 2 --sigq-ops 100000|"
	"sigsegv|--sigsegv 2 --sigsegv-ops 100000|"
	"exit-group|--exit-group 2 --exit-group-ops 150|"
)

work=$lk_scratch/work
mkdir -p "$work"
# The nobody runs need to reach the library, write their profiles and stress-ng's temp files.
chmod 755 "$lk_scratch"
chmod 1777 "$work"
cd "$work" || exit 1

# ops_done YAML STRESSOR: the bogo-ops stress-ng reported for STRESSOR, or nothing.
ops_done() {
	awk -v s="$2" '$1 == "-" && $2 == "stressor:" { cur = $3 }
		$1 == "bogo-ops:" && cur == s { print $2; exit }' "$1" 2>/dev/null
}

# new_errors NAME MODE OUT: the failure and error lines of OUT, without their pids, that the plain
# run of NAME did not print too (a machine without /sys, say, makes stress-ng complain either way).
new_errors() {
	local plain=$work/$1.plain.errors
	grep -E '(fail|error):' "$3" | sed -E 's/\[[0-9]+\]//g' | sort -u >"$work/$1.$2.errors"
	[[ $2 == plain ]] && return 0
	comm -23 "$work/$1.$2.errors" "$plain"
}

# run_one NAME MODE OPTS USER: runs one stressor and checks its result against the plain one.
declare -A plain_rc
run_one() {
	local name=$1 mode=$2 opts=$3 user=$4 out=$work/$1.$2.out yaml=$work/$1.$2.yaml
	local stressor=${name%-vfork} want rc t0 t1 ndone pre=()
	want=$(grep -o -- "--$stressor-ops [0-9]*" <<<"$opts" | awk '{print $2}')
	((LK_QUICK)) && opts=${opts/--$stressor-ops $want/--$stressor-ops $((want / 3))} && want=$((want / 3))
	[[ $user == nobody ]] && pre=(setpriv --reuid=65534 --regid=65534 --clear-groups --)
	if [[ $mode != plain ]]; then
		mkdir -p "$lk_scratch/prof-$mode"
		chmod 1777 "$lk_scratch/prof-$mode"
	fi
	rm -f "$yaml"
	t0=$(date +%s%N)
	# shellcheck disable=SC2086
	lk_with "$mode" "${pre[@]}" timeout --kill-after=10 300 stress-ng $opts --verify --seed 1 \
		--metrics-brief --timeout 240 --temp-path "$work" --yaml "$yaml" >"$out" 2>&1
	rc=$?
	t1=$(date +%s%N)
	ndone=$(ops_done "$yaml" "$stressor")
	local what="$name [$mode] ($(((t1 - t0) / 1000000)) ms, ${ndone:-0}/$want ops)"
	[[ $mode == plain ]] && plain_rc[$name]=$rc
	if ((rc == 124 || rc == 137)); then
		lk_fail "$what" "hung: killed by timeout"
	elif ((rc != 0)); then # plain must exit 0 too, so this is "not as plain"
		lk_fail "$what" "exit $rc, plain ${plain_rc[$name]:-?}: $(grep -m2 -E 'fail|error' "$out" | tr '\n' ' ')"
	elif [[ -n $(new_errors "$name" "$mode" "$out") ]]; then
		lk_fail "$what" "$(new_errors "$name" "$mode" "$out" | head -n 3 | tr '\n' ' ')"
	elif ! grep -q 'successful run completed' "$out"; then
		lk_fail "$what" "no 'successful run completed': $(tail -n 2 "$out" | tr '\n' ' ')"
	elif [[ -z $ndone ]] || ((ndone < want)); then
		lk_fail "$what" "did ${ndone:-no} operations of $want (skipped or timed out)"
	else
		lk_pass "$what"
	fi
	lk_profiles_read "$name" "$mode"
}

for entry in "${stressors[@]}"; do
	IFS='|' read -r name opts user <<<"$entry"
	for mode in plain "${LK_MODES[@]}"; do
		run_one "$name" "$mode" "$opts" "$user"
	done
done

lk_summary
