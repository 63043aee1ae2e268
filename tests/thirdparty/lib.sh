# tests/thirdparty/lib.sh: what the third-party runners share (sourced, never run).
#
# Each runner in this folder puts a program or a suite that nobody here wrote in front of
# libleek, in three modes: plain (no leek), default (the default period) and exact (every
# allocation, LEEK_PERIOD=1); the runners that call lk_guard_too (cpython, redis, jvm, go) also in
# guard mode (LEEK_GUARD=64 at LEEK_PERIOD=16384: see lk_env). A check passes when the result
# equals the plain run's, nothing hangs and every profile written reads with `leek dump`, and in
# guard mode has no ERROR record (`leek report errors` says "no errors caught": none is real).
# A runner ends with the harness's line "N passed, N failed, N skipped" and exits non-zero if
# anything failed. It must never leave a server running or touch anything outside its scratch
# directory and the Debian packages it installs.
#
# Environment:
#   LK_BUILD    build directory holding leek and libleek.so (default: build/, built if missing)
#   LK_QUICK=1  the subset CI runs (each runner says what it drops)
#   LK_KEEP=1   keep the scratch directory
#   LK_MODES    the leek modes to run, as words (default: "default exact", and guard where the
#               runner calls lk_guard_too): LK_MODES=guard runs guard mode alone

LK_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
LK_BUILD=${LK_BUILD:-$LK_ROOT/build}
LEEK=$LK_BUILD/src/cli/leek
LIBLEEK=$LK_BUILD/src/preload/libleek.so
LK_QUICK=${LK_QUICK:-0}
lk_modes_given=${LK_MODES:+1}
read -ra LK_MODES <<<"${LK_MODES:-default exact}"

lk_passed=0
lk_failed=0
lk_skipped=0
lk_apt_updated=0

lk_scratch=$(mktemp -d /tmp/leek-3p.XXXXXX)
lk_cleanup() { [[ ${LK_KEEP:-0} == 1 ]] || rm -rf "$lk_scratch"; }
trap lk_cleanup EXIT

# lk_need_build: build leek if the build directory has none.
lk_need_build() {
	[[ -x $LEEK && -f $LIBLEEK ]] && return 0
	"$LK_ROOT/scripts/setup" "$LK_BUILD" >/dev/null || { echo "thirdparty: build failed" >&2; exit 1; }
}

# lk_apt PKG...: install the Debian packages that are missing (apt-get update once).
lk_apt() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed' || missing+=("$p")
	done
	((${#missing[@]})) || return 0
	local sudo=
	((EUID == 0)) || sudo=sudo
	if ((!lk_apt_updated)); then
		$sudo apt-get update -qq >/dev/null || return 1
		lk_apt_updated=1
	fi
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
		"${missing[@]}" >/dev/null
}

lk_pass() { lk_passed=$((lk_passed + 1)); echo "ok   $1"; }
lk_skip() { lk_skipped=$((lk_skipped + 1)); echo "skip $1${2:+: $2}"; }
lk_fail() { lk_failed=$((lk_failed + 1)); echo "FAIL $1${2:+: $2}"; }

# lk_guard_too: this runner runs guard mode after the others (unless LK_MODES chose the modes).
lk_guard_too() { [[ -n $lk_modes_given ]] || LK_MODES+=(guard); }

# lk_env MODE: the environment words that put leek in front of a command in MODE ("plain" gives
# none). Profiles go to $lk_scratch/prof-MODE/, one directory per mode.
lk_env() {
	local mode=$1 dir=$lk_scratch/prof-$1
	case $mode in
	plain) return 0 ;;
	default) ;;
	exact) echo "LEEK_PERIOD=1" ;;
	# 64 slots, the default of --guard; a period of 16 KiB, 32 times the default's rate, samples
	# a 100-byte block with chance 0.6% and a 4000-byte one with 22% (1 - exp(-s/T)), so that the
	# slots and their quarantine turn over many times in a short run. Each guarded sample costs
	# two mprotect calls under leek's lock (docs/performance.md, "Guard mode"): at 4 KiB the cgo
	# program took 38 s instead of 3.
	guard) echo "LEEK_GUARD=64 LEEK_PERIOD=16384" ;;
	*) echo "lk_env: unknown mode $mode" >&2; return 1 ;;
	esac
	mkdir -p "$dir"
	echo "LD_PRELOAD=$LIBLEEK" "LEEK_OUTPUT=$dir/leek.%e.%p.lk"
}

# lk_with MODE CMD...: run CMD with leek in front of it in MODE (plain: without).
lk_with() {
	local mode=$1
	shift
	# shellcheck disable=SC2046
	env $(lk_env "$mode") "$@"
}

# lk_profiles_read NAME MODE: every profile written in MODE reads with `leek dump --summary`, and
# there is at least one. Clears the mode's directory for the next command.
lk_profiles_read() {
	local name=$1 mode=$2 dir=$lk_scratch/prof-$2 f n=0 bad=
	[[ $mode == plain ]] && return 0
	rm -f "$lk_scratch/dump.err"
	for f in "$dir"/*.lk "$dir"/*.lk.zst; do
		[[ -e $f ]] || continue
		n=$((n + 1))
		"$LEEK" dump --summary "$f" >/dev/null 2>"$lk_scratch/dump.1" && continue
		bad+=" $(basename "$f")"
		[[ -s $lk_scratch/dump.err ]] || cp "$lk_scratch/dump.1" "$lk_scratch/dump.err" # the first error
	done
	local errs=0 out extra=
	if [[ $mode == guard ]]; then # no error that guard mode or the frees found: none is real
		extra=", no ERROR records"
		for f in "$dir"/*.lk "$dir"/*.lk.zst; do
			[[ -e $f ]] || continue
			out=$("$LEEK" report errors "$f" 2>&1)
			grep -qx "no errors caught" <<<"$out" && continue
			errs=$((errs + 1))
			((errs == 1)) && head -n 20 <<<"$out" | sed 's/^/     | /'
		done
	fi
	rm -rf "$dir"
	if ((n == 0)); then
		lk_fail "$name [$mode] profile" "no profile written"
	elif [[ -n $bad ]]; then
		lk_fail "$name [$mode] profile" "unreadable:$bad ($(head -c 300 "$lk_scratch/dump.err"))"
	elif ((errs)); then
		lk_fail "$name [$mode] profile" "$errs of $n profiles with ERROR records (none is real)"
	else
		lk_pass "$name [$mode] profile ($n read$extra)"
	fi
}

# lk_summary: the harness line, and the exit status.
lk_summary() {
	echo "$lk_passed passed, $lk_failed failed, $lk_skipped skipped"
	((lk_failed == 0))
}
