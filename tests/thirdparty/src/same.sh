# tests/thirdparty/src/same.sh: one program, run plain and under leek, must behave the same
# (sourced by jvm.sh, node.sh, go.sh and rust.sh after lib.sh, never run).
#
# The program prints a deterministic result. lk_same_plain runs it without leek and checks that
# the run itself is sound (exit 0, the expected last line), so that a broken toolchain can never
# make the comparisons pass. lk_same MODE runs it in MODE and checks that stdout, stderr and the
# exit status are byte for byte the plain run's and that it ends within its timeout; then
# lk_same_site checks that leek saw the allocations the program says it made (site_check.py), and
# lk_profiles_read that every profile reads. It must never run anything outside $lk_scratch.

# shellcheck shell=bash
# shellcheck disable=SC2154 # lk_scratch and LEEK come from lib.sh

LK_SAME_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# lk_same_run MODE TIMEOUT CMD...: runs CMD in MODE, output in $lk_scratch/same.MODE.{out,err,rc}.
# Prints the time taken in ms.
lk_same_run() {
	local mode=$1 limit=$2 t0 t1
	shift 2
	t0=$(date +%s%N)
	lk_with "$mode" timeout --kill-after=10 "$limit" "$@" \
		>"$lk_scratch/same.$mode.out" 2>"$lk_scratch/same.$mode.err"
	echo $? >"$lk_scratch/same.$mode.rc"
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000))
}

# lk_same_plain NAME LAST TIMEOUT CMD...: the reference run. Passes when CMD exits 0 and its last
# line of stdout starts with LAST. Returns non-zero when it did not, and the caller stops: there is
# nothing to compare against.
lk_same_plain() {
	local name=$1 last=$2 limit=$3 ms rc
	shift 3
	ms=$(lk_same_run plain "$limit" "$@")
	rc=$(cat "$lk_scratch/same.plain.rc")
	if [[ $rc != 0 ]] || ! tail -n 1 "$lk_scratch/same.plain.out" | grep -q "^$last"; then
		lk_fail "$name [plain] ($ms ms)" "exit $rc: $(tail -c 300 "$lk_scratch/same.plain.err")"
		return 1
	fi
	lk_pass "$name [plain] ($ms ms): $(tail -n 1 "$lk_scratch/same.plain.out")"
}

# lk_same NAME MODE TIMEOUT CMD...: CMD in MODE behaves as it did plain.
lk_same() {
	local name=$1 mode=$2 limit=$3 ms rc prc what
	shift 3
	ms=$(lk_same_run "$mode" "$limit" "$@")
	rc=$(cat "$lk_scratch/same.$mode.rc")
	prc=$(cat "$lk_scratch/same.plain.rc")
	what="$name [$mode] ($ms ms)"
	if ((rc == 124 || rc == 137)); then
		lk_fail "$what" "hung: killed after ${limit}s"
	elif [[ $rc != "$prc" ]]; then
		lk_fail "$what" "exit $rc, plain $prc: $(tail -c 300 "$lk_scratch/same.$mode.err")"
	elif ! cmp -s "$lk_scratch/same.plain.out" "$lk_scratch/same.$mode.out"; then
		lk_fail "$what" "stdout differs: $(diff "$lk_scratch/same.plain.out" "$lk_scratch/same.$mode.out" | head -n 6 | tr '\n' ' ')"
	elif ! cmp -s "$lk_scratch/same.plain.err" "$lk_scratch/same.$mode.err"; then
		lk_fail "$what" "stderr differs: $(diff "$lk_scratch/same.plain.err" "$lk_scratch/same.$mode.err" | head -n 6 | tr '\n' ' ')"
	else
		lk_pass "$what: same output and exit status"
	fi
}

# lk_same_value KEY: the number the plain run printed on its line "KEY NUMBER".
lk_same_value() {
	awk -v k="$1" '$1 == k { print $2; exit }' "$lk_scratch/same.plain.out"
}

# lk_same_site NAME MODE EXE REGEX N SIZE [min]: the profile written by the process whose
# executable is named EXE shows N allocations of SIZE bytes through a frame matching REGEX: exactly
# in exact mode, within 4 sigma at the default period; with "min", at least those (site_check.py
# says why these bounds).
lk_same_site() {
	local name=$1 mode=$2 exe=$3 regex=$4 n=$5 size=$6 min=${7:-} files msg
	[[ $mode == plain ]] && return 0
	files=("$lk_scratch/prof-$mode/leek.$exe".*.lk)
	if [[ ${#files[@]} != 1 || ! -e ${files[0]} ]]; then
		lk_fail "$name [$mode] allocations seen" "want one leek.$exe.*.lk, found ${#files[@]}"
	elif msg=$(python3 "$LK_SAME_SRC/site_check.py" "$LEEK" "${files[0]}" "$regex" "$n" "$size" ${min:+"$min"}); then
		lk_pass "$name [$mode] allocations seen: $msg"
	else
		lk_fail "$name [$mode] allocations seen" "$msg"
	fi
}
