#!/usr/bin/env bash
# tests/thirdparty/jvm.sh: Debian's OpenJDK 17 running a many-threaded Java program under leek.
#
# The JVM is the hardest ordinary host a preloaded allocator meets: dozens of threads, malloc from
# its compilers, GC and class loading, and SIGSEGV used on purpose (implicit null checks in
# compiled code, safepoint polls, stack banging) with its own handlers. src/Main.java exercises all
# of that (32 threads, collections, strings, direct ByteBuffers, caught NullPointerExceptions, a
# caught StackOverflowError, System.gc()) and prints a deterministic checksum. It passes in a mode
# when stdout, stderr and the exit status equal the plain run's, nothing hangs, the direct buffers'
# mallocs (through Unsafe_AllocateMemory0) are all in the profile (exact mode) or estimated within
# 4 sigma (default period, and guard mode's 16K: lib.sh), and every profile reads, without an
# ERROR record in guard mode, where the JVM's own SIGSEGVs pass through leek's handler to its own.
# It must never leave a JVM running or write outside its scratch directory.
#
# LK_QUICK=1 runs 40 rounds per thread instead of 200.

# shellcheck source=tests/thirdparty/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tests/thirdparty/src/same.sh
source "$(dirname "$0")/src/same.sh"
lk_need_build
lk_guard_too
lk_apt openjdk-17-jdk-headless python3 || { echo "jvm: cannot install openjdk-17-jdk-headless" >&2; exit 1; }

# Debian's JDK by its package, whatever else is on the PATH.
java=$(dpkg -L openjdk-17-jre-headless | grep -m1 '/bin/java$')
javac=$(dpkg -L openjdk-17-jdk-headless | grep -m1 '/bin/javac$')
[[ -x $java && -x $javac ]] || { echo "jvm: no java/javac in openjdk-17" >&2; exit 1; }

rounds=200
((LK_QUICK)) && rounds=40

mkdir -p "$lk_scratch/classes"
cd "$lk_scratch" || exit 1
timeout --kill-after=10 300 "$javac" -d classes "$LK_SAME_SRC/Main.java" ||
	{ echo "jvm: javac failed" >&2; exit 1; }

cmd=("$java" -Xmx256m -cp classes Main "$rounds")
if lk_same_plain jvm checksum 300 "${cmd[@]}"; then
	n=$(($(lk_same_value threads) * rounds))
	size=$(($(lk_same_value direct_bytes) / n))
	for mode in "${LK_MODES[@]}"; do
		LEEK_SEED=1 lk_same jvm "$mode" 900 "${cmd[@]}"
		lk_same_site jvm "$mode" java '^Unsafe_AllocateMemory0$' "$n" "$size"
		lk_profiles_read jvm "$mode"
	done
fi
lk_summary
