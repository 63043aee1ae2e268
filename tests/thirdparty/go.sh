#!/usr/bin/env bash
# tests/thirdparty/go.sh: a cgo program built with Debian's Go, under leek.
#
# Go's own heap never calls malloc, and a pure-Go binary is static, which no LD_PRELOAD library can
# profile. cgo makes the binary dynamic and puts C's malloc, calloc, realloc and free under
# goroutines that the scheduler moves between threads, with Go's preemption signals arriving in C
# code. src/cgo/main.go does that from 8 goroutines, with pure-Go work in between, and prints a
# deterministic checksum. It passes in a mode when stdout, stderr and the exit status equal the
# plain run's, nothing hangs, the allocations of its probe_malloc are all in the profile (exact
# mode) or estimated within 4 sigma (default period, and guard mode's 16K: lib.sh), and every
# profile reads, without an ERROR record in guard mode (docs/design.md, "Guard mode": Go sets its
# SIGSEGV handler with raw system calls and forwards C code's faults to leek's). The build is
# offline (GOPROXY=off, no modules, only the standard library), with its caches in the scratch
# directory. It must never leave a process running or write outside its scratch directory.
#
# Go exits with the exit_group system call, not libc's exit(), so leek's exit handler never runs
# and the profile has no trailer: `leek report` reads it to its last record and says so.
#
# LK_QUICK=1 runs 300 rounds per goroutine instead of 3000.

# shellcheck source=tests/thirdparty/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tests/thirdparty/src/same.sh
source "$(dirname "$0")/src/same.sh"
lk_need_build
lk_guard_too
lk_apt golang-go gcc libc6-dev python3 || { echo "go: cannot install golang-go" >&2; exit 1; }

go=$(dpkg -L golang-go | grep -m1 '/bin/go$')
[[ -x $go ]] || { echo "go: no go binary in golang-go" >&2; exit 1; }

rounds=3000
((LK_QUICK)) && rounds=300

mkdir -p "$lk_scratch/cgo"
cp "$LK_SAME_SRC/cgo/main.go" "$lk_scratch/cgo/"
cd "$lk_scratch/cgo" || exit 1
export GOCACHE=$lk_scratch/gocache GOPATH=$lk_scratch/gopath GO111MODULE=off GOPROXY=off GOFLAGS='' CGO_ENABLED=1
timeout --kill-after=10 600 "$go" build -o cgomain main.go || { echo "go: build failed" >&2; exit 1; }

if ldd ./cgomain | grep -q 'libc\.so'; then
	lk_pass "go: the cgo binary is dynamic ($("$go" version | awk '{print $3}'))"
else
	lk_fail "go: the cgo binary is dynamic" "ldd: $(ldd ./cgomain 2>&1 | head -n 1)"
fi

cmd=(./cgomain "$rounds")
if lk_same_plain go checksum 300 "${cmd[@]}"; then
	n=$(lk_same_value probe_allocs)
	size=$(lk_same_value probe_size)
	for mode in "${LK_MODES[@]}"; do
		LEEK_SEED=1 lk_same go "$mode" 600 "${cmd[@]}"
		lk_same_site go "$mode" cgomain '^probe_malloc$' "$n" "$size"
		lk_profiles_read go "$mode"
	done
fi
lk_summary
