#!/usr/bin/env bash
# tests/thirdparty/cpython.sh: CPython's own regression tests (Debian's libpython3.11-testsuite)
# under leek: threads, fork, subprocess, signals, multiprocessing with its three start methods,
# mmap, gc, ctypes and the compression libraries.
#
# Each module runs plain first; a module that fails, crashes or is skipped plain is excluded and
# counted as skipped (the pass rule is "the same result as a plain run", so a broken module proves
# nothing).
# Then it runs in default and in exact mode, and its result must equal the plain one: the overall
# verdict, the number of test cases, and the exact list of the cases skipped, failed or in error
# (from --junit-xml). Every profile written by every Python process (the test runner, its
# subprocesses, the fork, forkserver and spawn children) must read.
#
# It uses /usr/bin/python3.11 only, never a python3.11 from PATH (a pyenv shim is not the
# interpreter under test), and it must never leave a test process running: each module runs under
# `timeout`, which kills the whole process group.
#
# LK_QUICK=1 runs a subset that fits CI (about 40 s per mode on 2 cores, 2 minutes in all):
# threading, signal without the slow siginterrupt/itimer/pending classes, subprocess's POSIX
# class, a multiprocessing subset per start method, zlib, gc and mmap. The whole set takes about
# 20 minutes. LK_KEEP=1 also keeps a copy of every profile that did not read.

source "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3.11

# One line per module: "LABEL|ARGS", ARGS being what follows `-m test`. The label names the
# result in the output; the patterns after -m/-i pick test classes (regrtest's glob match).
full_modules=(
	"threading|test_threading"
	"thread|test_thread"
	"threadsignals|test_threadsignals"
	"threading_local|test_threading_local"
	"fork1|test_fork1"
	"wait3|test_wait3"
	"wait4|test_wait4"
	"subprocess|test_subprocess"
	"signal|test_signal"
	"faulthandler|test_faulthandler"
	"posix|test_posix"
	"os|test_os"
	"select|test_select"
	"multiprocessing_fork|test_multiprocessing_fork"
	"multiprocessing_forkserver|test_multiprocessing_forkserver"
	"multiprocessing_spawn|test_multiprocessing_spawn"
	"mmap|test_mmap"
	"gc|test_gc"
	"weakref|test_weakref"
	"ctypes|test_ctypes"
	"zlib|test_zlib"
	"bz2|test_bz2"
	"lzma|test_lzma"
	"gzip|test_gzip"
	"zipfile|test_zipfile"
	"zipimport|test_zipimport"
	"tarfile|test_tarfile"
)
quick_modules=(
	"threading|test_threading"
	"signal-subset|test_signal -i SiginterruptTest -i PendingSignalsTests -i ItimerTest"
	"subprocess-posix|test_subprocess -m POSIXProcessTestCase"
	"multiprocessing_fork-subset|test_multiprocessing_fork -m WithProcessesTestProcess -m WithProcessesTestPool -m WithProcessesTestQueue -m WithProcessesTestLock -m TestForkAwareThreadLock"
	"multiprocessing_forkserver-pool|test_multiprocessing_forkserver -m WithProcessesTestPool"
	"multiprocessing_spawn-pool|test_multiprocessing_spawn -m WithProcessesTestPool"
	"mmap|test_mmap"
	"gc|test_gc"
	"zlib|test_zlib"
)
if ((LK_QUICK)); then
	modules=("${quick_modules[@]}")
	limit=300
else
	modules=("${full_modules[@]}")
	limit=1500
fi

lk_need_build
lk_guard_too
[[ -x $PY ]] || lk_apt python3.11 || { echo "cpython: cannot install python3.11" >&2; exit 1; }
lk_apt libpython3.11-testsuite || { echo "cpython: cannot install libpython3.11-testsuite" >&2; exit 1; }

# run_module MODE LABEL ARGS: one regrtest run; leaves $lk_scratch/LABEL.MODE.{log,xml,res}, where
# .res is the result to compare, and returns regrtest's exit status (124/137: timed out).
run_module() {
	local mode=$1 label=$2 args=$3 out=$lk_scratch/$2.$1 rc
	rm -f "$out.xml"
	# shellcheck disable=SC2046,SC2086 # lk_env and ARGS are words on purpose
	(cd "$lk_scratch/cwd" && TMPDIR=$lk_scratch/tmp timeout --kill-after=10 "$limit" \
		env -u PYTHONPATH -u PYTHONHOME -u PYTHONSTARTUP \
		$(lk_env "$mode") "$PY" -m test --timeout $((limit - 30)) --junit-xml "$out.xml" \
		$args) >"$out.log" 2>&1
	rc=$?
	summarize "$out" "$rc" >"$out.res"
	return "$rc"
}

# summarize OUT RC: the comparable result of a run, as text: regrtest's verdict line, its exit
# status, the number of test cases, and every case that did not simply pass, sorted.
summarize() {
	local out=$1 rc=$2
	echo "exit $rc"
	grep -m1 '^Tests result:' "$out.log" || echo "Tests result: (none)"
	[[ -s $out.xml ]] || { echo "junit: (none)"; return; }
	"$PY" -I - "$out.xml" <<-'EOF'
		import sys, xml.etree.ElementTree as ET
		root = ET.parse(sys.argv[1]).getroot()
		cases, odd = 0, []
		for tc in root.iter("testcase"):
		    cases += 1
		    for kind in ("skipped", "failure", "error"):
		        if tc.find(kind) is not None:
		            odd.append(f"{kind} {tc.get('name')}")
		print(f"cases {cases}")
		print("\n".join(sorted(odd)))
	EOF
}

# wait_writers MODE: waits (at most 60 s) until every process that wrote a profile in MODE has
# exited. A test run returns while some of its processes are still on their way out (the
# forkserver leaves when the runner's socket closes): reading a profile whose process is still
# creating it would blame leek for a header that is only not stored yet.
wait_writers() {
	local f pid state deadline=$((SECONDS + 60)) busy
	while ((SECONDS < deadline)); do
		busy=0
		for f in "$lk_scratch/prof-$1"/*.lk; do
			[[ -e $f ]] || continue
			pid=${f%.lk}
			pid=${pid##*.}
			state=$(sed 's/.*) //;s/ .*//' "/proc/$pid/stat" 2>/dev/null) || continue
			[[ $state == Z ]] || busy=1
		done
		((busy)) || return 0
		sleep 0.2
	done
	echo "     (processes still running after 60 s; their profiles are read as they are)"
}

# keep_unreadable LABEL MODE: before lk_profiles_read clears the mode's directory, each profile
# that does not read is copied to $lk_scratch/unreadable/ (LK_KEEP=1 keeps it) and its own error
# printed, with how long ago it was last written and whether its process is still alive.
keep_unreadable() {
	local f pid dest=$lk_scratch/unreadable/$1.$2
	for f in "$lk_scratch/prof-$2"/*.lk; do
		[[ -e $f ]] || continue
		"$LEEK" dump --summary "$f" >/dev/null 2>"$lk_scratch/one.err" && continue
		mkdir -p "$dest"
		cp "$f" "$dest/"
		pid=${f%.lk}
		pid=${pid##*.}
		echo "     $(basename "$f"): $(head -c 200 "$lk_scratch/one.err"); $(stat -c %s "$f") bytes," \
			"written $(($(date +%s) - $(stat -c %Y "$f")))s ago, process $([[ -e /proc/$pid ]] && echo alive || echo gone)"
	done
}

mkdir -p "$lk_scratch/cwd" "$lk_scratch/tmp"
excluded=0
for spec in "${modules[@]}"; do
	label=${spec%%|*}
	args=${spec#*|}
	t0=$SECONDS
	run_module plain "$label" "$args"
	rc=$?
	res=$lk_scratch/$label.plain.res
	if ((rc != 0)) || ! grep -q '^Tests result: SUCCESS$' "$res" || ! grep -q '^cases [1-9]' "$res"; then
		excluded=$((excluded + 1))
		lk_skip "cpython $label" "fails or is skipped without leek (exit $rc, $(grep -m1 '^Tests result' "$res"))"
		continue
	fi
	cases=$(sed -n 's/^cases //p' "$res")
	skipped=$(grep -c '^skipped ' "$res")
	echo "     $label: plain ${cases} cases, ${skipped} skipped, $((SECONDS - t0))s"
	for mode in "${LK_MODES[@]}"; do
		t0=$SECONDS
		run_module "$mode" "$label" "$args"
		rc=$?
		if ((rc == 124 || rc == 137)); then
			lk_fail "cpython $label [$mode]" "timed out after ${limit}s ($(tail -n 3 "$lk_scratch/$label.$mode.log" | tr '\n' ' '))"
		elif diff -q "$res" "$lk_scratch/$label.$mode.res" >/dev/null; then
			lk_pass "cpython $label [$mode] same result as plain ($cases cases, $((SECONDS - t0))s)"
		else
			lk_fail "cpython $label [$mode]" "result differs from plain: $(diff "$res" "$lk_scratch/$label.$mode.res" | grep '^[<>]' | head -n 8 | tr '\n' ' ')"
			tail -n 30 "$lk_scratch/$label.$mode.log" | sed 's/^/     | /'
		fi
		wait_writers "$mode"
		keep_unreadable "$label" "$mode"
		lk_profiles_read "cpython $label" "$mode"
	done
done
((excluded < ${#modules[@]})) || lk_fail "cpython" "every module was excluded: nothing was compared"
echo "cpython: $excluded of ${#modules[@]} modules excluded (fail or skipped without leek)"
lk_summary
