#!/usr/bin/env bash
# tests/thirdparty/node.sh: Debian's Node.js running a worker_threads program under leek.
#
# src/worker.js starts 4 worker threads that allocate Buffers (malloc'd and calloc'd by node's
# ArrayBuffer allocator, outside V8's heap), JSON and zlib streams, and prints a deterministic
# digest. It passes in a mode when stdout, stderr and the exit status equal the plain run's,
# nothing hangs, the program's big Buffers are among what leek saw through
# NodeArrayBufferAllocator::Allocate* (all of them in exact mode, an estimate of at least their
# bytes less 4 sigma at the default period), and every profile reads. It must never leave a node
# process running or write outside its scratch directory.
#
# LK_QUICK=1 runs 10 rounds per worker instead of 100. Exact mode is slow here whatever the
# rounds: node makes about half a million allocations before it runs a line of the program, and
# those under JIT-compiled frames take leek's slow unwinding path.
# LK_NODE=PATH runs another node binary instead of the nodejs package's (a machine whose nodejs
# package is not Debian's can check Debian's this way).

# shellcheck source=tests/thirdparty/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tests/thirdparty/src/same.sh
source "$(dirname "$0")/src/same.sh"
lk_need_build
lk_apt nodejs python3 || { echo "node: cannot install nodejs" >&2; exit 1; }

node=${LK_NODE:-$(dpkg -L nodejs | grep -m1 '/bin/node$')}
[[ -x $node ]] || { echo "node: no node binary in the nodejs package" >&2; exit 1; }
if [[ -n ${LK_NODE:-} ]]; then
	echo "node: $node $("$node" --version) (LK_NODE)"
else
	echo "node: $node $("$node" --version) (package nodejs $(dpkg-query -W -f='${Version}' nodejs))"
fi

rounds=100
((LK_QUICK)) && rounds=10

cd "$lk_scratch" || exit 1
cmd=("$node" "$LK_SAME_SRC/worker.js" "$rounds")
if lk_same_plain node checksum 300 "${cmd[@]}"; then
	n=$(lk_same_value big_buffers)
	size=$(lk_same_value big_size)
	for mode in "${LK_MODES[@]}"; do
		LEEK_SEED=1 lk_same node "$mode" 900 "${cmd[@]}"
		lk_same_site node "$mode" "$(basename "$node")" 'NodeArrayBufferAllocator::Allocate' "$n" "$size" min
		lk_profiles_read node "$mode"
	done
fi
lk_summary
