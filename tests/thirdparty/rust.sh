#!/usr/bin/env bash
# tests/thirdparty/rust.sh: a Rust program on the system allocator, built with Debian's rustc,
# under leek.
#
# Rust's std allocates with malloc, realloc, free and, for alignments above 16, posix_memalign.
# src/main.rs grows vectors, strings and hash maps from 8 threads, allocates 64- and 4096-byte
# aligned boxed slices and frees vectors in another thread than the one that allocated them, and
# prints a deterministic checksum. It passes in a mode when stdout, stderr and the exit status
# equal the plain run's, nothing hangs, the aligned allocations of its probe_aligned are all in
# the profile (exact mode) or estimated within 4 sigma (default period), and every profile reads.
# It builds with plain `rustc -O -g` (no cargo, no crates, no network) and must never leave a
# process running or write outside its scratch directory.
#
# LK_QUICK=1 runs 300 rounds per thread instead of 2000.

# shellcheck source=tests/thirdparty/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tests/thirdparty/src/same.sh
source "$(dirname "$0")/src/same.sh"
lk_need_build
lk_apt rustc gcc libc6-dev python3 || { echo "rust: cannot install rustc" >&2; exit 1; }

# Debian's rustc by its package, whatever else (rustup) is on the PATH.
rustc=$(dpkg -L rustc | grep -m1 '/bin/rustc$')
[[ -x $rustc ]] || { echo "rust: no rustc in the rustc package" >&2; exit 1; }

rounds=2000
((LK_QUICK)) && rounds=300

cd "$lk_scratch" || exit 1
timeout --kill-after=10 600 "$rustc" -O -g --edition 2021 -o rustmain "$LK_SAME_SRC/main.rs" ||
	{ echo "rust: rustc failed" >&2; exit 1; }
echo "rust: $("$rustc" --version)"

cmd=(./rustmain "$rounds")
if lk_same_plain rust checksum 300 "${cmd[@]}"; then
	n=$(lk_same_value probe_allocs)
	size=$(lk_same_value probe_size)
	for mode in "${LK_MODES[@]}"; do
		LEEK_SEED=1 lk_same rust "$mode" 600 "${cmd[@]}"
		lk_same_site rust "$mode" rustmain 'probe_aligned' "$n" "$size"
		lk_profiles_read rust "$mode"
	done
fi
lk_summary
