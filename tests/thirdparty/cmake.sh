#!/usr/bin/env bash
# tests/thirdparty/cmake.sh: a cmake configure and a `make -j2` build of a generated C project,
# everything launched by `leek run`, so that cmake, make, gcc, cc1, as, collect2 and ld are all
# profiled through the LD_PRELOAD they inherit.
#
# The project is a shared library of generated C files, one source that a cmake script writes at
# build time, and a program that prints a checksum of every function in the library. Each mode
# builds it in the same directory, so the build must give what plain gives: every object, the
# library and the program byte for byte, and the program's output. Every profile (hundreds, one
# per process) must read. It must never build or write outside its scratch directory.
#
# LK_QUICK=1 generates 20 library files instead of 100.

# shellcheck source=tests/thirdparty/lib.sh
source "$(dirname "$0")/lib.sh"
lk_need_build
lk_apt cmake make gcc libc6-dev || { echo "cmake: cannot install cmake, make and gcc" >&2; exit 1; }

if ((LK_QUICK)); then nfiles=20; else nfiles=100; fi
limit=900 # seconds for a configure or a build
unset LEEK_PERIOD MAKEFLAGS MFLAGS
export LC_ALL=C

src=$lk_scratch/src
build=$lk_scratch/build

# gen_project: the sources, a pure function of nfiles.
gen_project() {
	local i j
	mkdir -p "$src/lib" "$src/include"
	cat >"$src/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.13)
project(leekcalc C)
set(CMAKE_C_STANDARD 11)
file(GLOB LIB_SOURCES ${CMAKE_SOURCE_DIR}/lib/*.c)
add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/table.c
	COMMAND ${CMAKE_COMMAND} -DOUT=${CMAKE_BINARY_DIR}/table.c -P ${CMAKE_SOURCE_DIR}/table.cmake
	DEPENDS ${CMAKE_SOURCE_DIR}/table.cmake)
add_library(calc SHARED ${LIB_SOURCES} ${CMAKE_BINARY_DIR}/table.c)
target_include_directories(calc PUBLIC ${CMAKE_SOURCE_DIR}/include)
target_compile_options(calc PRIVATE -Wall)
add_executable(calcsum main.c)
target_link_libraries(calcsum calc)
EOF
	cat >"$src/table.cmake" <<'EOF'
set(body "#include <stdint.h>\nconst uint32_t calc_table[256] = {\n")
set(v 2166136261)
foreach(i RANGE 255)
	math(EXPR v "(${v} * 16777619 + ${i}) % 4294967296")
	string(APPEND body "\t${v}u,\n")
endforeach()
string(APPEND body "};\n")
file(WRITE ${OUT} "${body}")
EOF
	{
		echo '#include <stddef.h>'
		echo '#include <stdint.h>'
		echo 'extern const uint32_t calc_table[256];'
		echo 'typedef uint64_t (*calc_fn)(uint64_t);'
		for ((i = 0; i < nfiles; i++)); do echo "uint64_t calc_$i(uint64_t x);"; done
		echo 'extern const calc_fn calc_all[];'
		echo 'extern const size_t calc_count;'
	} >"$src/include/calc.h"
	for ((i = 0; i < nfiles; i++)); do
		{
			echo '#include <stdlib.h>'
			echo '#include <string.h>'
			echo '#include "calc.h"'
			echo "struct item_$i { uint64_t key; uint32_t weight; char name[24]; };"
			echo "static const struct item_$i items_${i}[] = {"
			for ((j = 0; j < 16; j++)); do
				echo "	{ $(((i * 7919 + j * 104729) % 1000003))u, $((j * 31 + i)), \"item-$i-$j\" },"
			done
			echo '};'
			echo "static int cmp_$i(const void *a, const void *b)"
			echo '{'
			echo "	const struct item_$i *x = a, *y = b;"
			echo '	return (x->key > y->key) - (x->key < y->key);'
			echo '}'
			echo "uint64_t calc_$i(uint64_t x)"
			echo '{'
			echo "	size_t n = sizeof(items_$i) / sizeof(items_${i}[0]);"
			echo "	struct item_$i *v = malloc(sizeof(items_$i));"
			echo '	if (!v)'
			echo '		return 0;'
			echo "	memcpy(v, items_$i, sizeof(items_$i));"
			echo '	for (size_t k = 0; k < n; k++)'
			echo "		v[k].key ^= x * $((2 * i + 1))u + calc_table[(k + $i) & 255];"
			echo "	qsort(v, n, sizeof(v[0]), cmp_$i);"
			echo '	uint64_t h = 1469598103934665603u;'
			echo '	for (size_t k = 0; k < n; k++)'
			echo '		h = (h ^ v[k].key ^ v[k].weight ^ (uint64_t)strlen(v[k].name)) * 1099511628211u;'
			echo '	free(v);'
			echo '	return h;'
			echo '}'
		} >"$src/lib/mod$(printf %03d "$i").c"
	done
	{
		echo '#include "calc.h"'
		echo 'const calc_fn calc_all[] = {'
		for ((i = 0; i < nfiles; i++)); do echo "	calc_$i,"; done
		echo '};'
		echo 'const size_t calc_count = sizeof(calc_all) / sizeof(calc_all[0]);'
	} >"$src/lib/all.c"
	cat >"$src/main.c" <<'EOF'
#include <inttypes.h>
#include <stdio.h>
#include "calc.h"

int main(void)
{
	uint64_t sum = 0;

	for (uint64_t round = 0; round < 64; round++)
		for (size_t i = 0; i < calc_count; i++)
			sum = sum * 31 + calc_all[i](sum ^ round);
	printf("%zu functions, checksum %016" PRIx64 "\n", calc_count, sum);
	return 0;
}
EOF
}

# leek_run MODE CMD...: CMD under `leek run` in MODE (plain: CMD alone), quiet unless it fails.
leek_run() {
	local mode=$1
	shift
	case $mode in
	plain) timeout --kill-after=10 $limit "$@" ;;
	default) timeout --kill-after=10 $limit "$LEEK" run -o "$lk_scratch/prof-$mode/leek.%e.%p.lk" \
		--no-compress -- "$@" ;;
	exact) timeout --kill-after=10 $limit "$LEEK" run --period 1 \
		-o "$lk_scratch/prof-$mode/leek.%e.%p.lk" --no-compress -- "$@" ;;
	esac
}

# built: a line per file the build made (objects, library, program) with its hash.
built() {
	(cd "$build" && find . -type f \( -name '*.o' -o -name '*.so' -o -name calcsum \) \
		-exec sha256sum {} + | sort -k2)
}

gen_project
plain_out='' plain_built=''
for mode in plain "${LK_MODES[@]}"; do
	rm -rf "$build"
	[[ $mode == plain ]] || mkdir -p "$lk_scratch/prof-$mode"
	log=$lk_scratch/$mode.log
	t0=$SECONDS
	leek_run "$mode" cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release >"$log" 2>&1
	rc=$?
	if ((rc != 0)); then
		lk_fail "cmake configure [$mode] ($((SECONDS - t0)) s)" "exit $rc: $(tail -n 3 "$log" | tr '\n' ' ')"
	else
		lk_pass "cmake configure [$mode] ($((SECONDS - t0)) s)"
	fi
	lk_profiles_read "cmake configure" "$mode"
	[[ $mode == plain ]] || mkdir -p "$lk_scratch/prof-$mode"
	t0=$SECONDS
	leek_run "$mode" make -C "$build" -j2 >>"$log" 2>&1
	rc=$?
	secs=$((SECONDS - t0))
	out=$(timeout --kill-after=10 60 "$build/calcsum" 2>&1)
	files=$(built)
	nbuilt=$(wc -l <<<"$files")
	if [[ $mode == plain ]]; then
		plain_out=$out plain_built=$files
		if ((rc != 0)) || [[ $out != "$nfiles functions, checksum "* ]]; then
			lk_fail "make -j2 [$mode] ($secs s)" "exit $rc, program says '$out': $(tail -n 3 "$log" | tr '\n' ' ')"
		else
			lk_pass "make -j2 [$mode] ($secs s, $nbuilt files built; $out)"
		fi
		continue
	fi
	if ((rc == 124 || rc == 137)); then
		lk_fail "make -j2 [$mode] ($secs s)" "hung: killed by timeout"
	elif ((rc != 0)); then
		lk_fail "make -j2 [$mode] ($secs s)" "exit $rc: $(grep -m3 -iE 'error|leek' "$log" | tr '\n' ' ')"
	elif [[ $out != "$plain_out" ]]; then
		lk_fail "make -j2 [$mode] ($secs s)" "the program says '$out', plain '$plain_out'"
	elif [[ $files != "$plain_built" ]]; then
		lk_fail "make -j2 [$mode] ($secs s)" "built files differ from plain: $(diff <(echo "$plain_built") \
			<(echo "$files") | grep -m3 '^[<>]' | tr '\n' ' ')"
	else
		lk_pass "make -j2 [$mode] ($secs s, $nbuilt files identical to plain; $out)"
	fi
	lk_profiles_read "make -j2" "$mode"
done

lk_summary
