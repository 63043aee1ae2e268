#!/usr/bin/env bash
# tests/thirdparty/git.sh: git repacking, collecting garbage, checking and walking a generated
# repository under leek.
#
# The repository (thousands of commits and files, merges and tags) is generated from a fixed seed
# with `git fast-import`, plain. Each mode then works on its own copy of it: a single-threaded
# `repack -a -d -f` (its pack must be byte-identical to plain's: git's delta search is
# deterministic on one thread), a two-threaded one and `gc --aggressive` (the same objects as
# plain), `fsck --full --strict` (clean, as plain), and `log --stat`, `blame` and `archive`
# (the same bytes as plain). Every profile the git processes wrote (gc runs several) must read.
# It must never touch a repository outside its scratch directory.
#
# LK_QUICK=1 generates a smaller repository (400 files, 600 commits instead of 2500 and 3000).

# shellcheck source=tests/thirdparty/lib.sh
source "$(dirname "$0")/lib.sh"
lk_need_build
lk_apt git mawk || { echo "git: cannot install git" >&2; exit 1; }

if ((LK_QUICK)); then files=400 commits=600; else files=2500 commits=3000; fi
limit=900 # seconds for one git command; exact mode takes about 1.3 times plain
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_AUTHOR_DATE=@1700000000 \
	GIT_COMMITTER_DATE=@1700000000 LC_ALL=C TZ=UTC

# gen.awk (below): a fast-import stream, from a Park-Miller generator with a fixed seed (its
# products stay below 2^53, so any awk computes the same stream).
gen_stream() {
	awk -v F="$files" -v C="$commits" '
function rnd(n) { seed = (seed * 16807) % 2147483647; return seed % n }
function word() { return words[rnd(nwords) + 1] }
function line(i,   s, k, n) { n = 3 + rnd(9); s = "l" i ":"; for (k = 0; k < n; k++) s = s " " word(); return s }
function path(f) { return sprintf("src/d%02d/f%05d.%s", f % 40, f, (f % 3) ? "c" : "txt") }
function newfile(f,   n, i) { n = 20 + rnd(100); len[f] = n; for (i = 1; i <= n; i++) text[f, i] = line(i); alive[f] = 1 }
function edit(f,   k, i, at) {
	for (k = 0; k < 1 + rnd(4); k++) text[f, 1 + rnd(len[f])] = line(rnd(1000))
	if (rnd(3) == 0) { at = 1 + rnd(len[f]); for (i = len[f]; i >= at; i--) text[f, i + 1] = text[f, i]; text[f, at] = line(at); len[f]++ }
	if (rnd(4) == 0 && len[f] > 5) { at = 1 + rnd(len[f]); for (i = at; i < len[f]; i++) text[f, i] = text[f, i + 1]; len[f]-- }
}
function emit(f,   i) { print "M 100644 inline " path(f); print "data <<EOT"; for (i = 1; i <= len[f]; i++) print text[f, i]; print "EOT" }
function header(ref, c, msg) {
	print "commit " ref; print "mark :" c
	printf "author A U Thor <author%d@example.com> %d +0000\n", rnd(7), 1700000000 + c * 3600
	printf "committer C O Mitter <committer@example.com> %d +0000\n", 1700000000 + c * 3600
	print "data <<EOT"; print msg; print "EOT"
}
BEGIN {
	seed = 12345
	nwords = split("alloc free heap arena sample stack frame page chunk block lock thread fork exec signal module record profile period bytes", words)
	for (f = 0; f < F; f++) newfile(f)
	nf = F
	header("refs/heads/main", 1, "initial import of " F " files")
	for (f = 0; f < F; f++) emit(f)
	main = 1
	for (c = 2; c <= C; c++) {
		if (c % 100 == 50) { # a side branch of five commits, merged back
			from = main
			for (s = 0; s < 5; s++) {
				header("refs/heads/side", c, "side work " c); print "from :" from
				k = rnd(nf); if (alive[k]) { edit(k); emit(k); touched[k] = 1 }
				from = c; c++
			}
			header("refs/heads/main", c, "merge side into main at " c)
			print "from :" main; print "merge :" from
			for (k in touched) emit(k)
			delete touched
			main = c
			continue
		}
		header("refs/heads/main", c, "change " c ": " word() " " word() "\n\nbody of change " c)
		print "from :" main
		for (k = 0; k < 1 + rnd(8); k++) { f = rnd(nf); if (alive[f]) { edit(f); emit(f) } }
		if (rnd(20) == 0) { newfile(nf); emit(nf); nf++ }
		if (rnd(50) == 0) { f = rnd(nf); if (alive[f]) { print "D " path(f); alive[f] = 0 } }
		main = c
		if (c % 200 == 0) {
			print "tag v" c; print "from :" c
			printf "tagger T <t@example.com> %d +0000\n", 1700000000 + c * 3600
			print "data <<EOT"; print "release " c; print "EOT"
		}
	}
}'
}

gen=$lk_scratch/gen.git
git init -q --bare -b main "$gen" || exit 1
t0=$SECONDS
if ! gen_stream | git -C "$gen" fast-import --quiet; then
	echo "git: cannot generate the repository" >&2
	exit 1
fi
nobj=$(git -C "$gen" count-objects -v | awk '$1 == "in-pack:" { print $2 }')
echo "# generated: $(git -C "$gen" rev-list --count --all) commits, $nobj objects," \
	"$(git -C "$gen" ls-tree -r main | wc -l) files at main, in $((SECONDS - t0)) s"
blame_path=$(git -C "$gen" log --format= --name-only main | sort | uniq -c | sort -k1,1nr -k2 |
	awk 'NR == 1 { print $2 }') # the most edited file
tag=v$((commits / 2 - commits / 2 % 200)) # a tag about halfway

# Results of each step in plain mode, by step name, to compare the other modes with.
declare -A plain_res

# result_of STEP REPO OUT: what must equal plain's after STEP (OUT holds git's stdout).
result_of() {
	local step=$1 repo=$2 out=$3 packs
	case $step in
	repack-1thread)
		packs=("$repo"/objects/pack/*.pack)
		echo "${#packs[@]} pack(s) $(cat "${packs[@]}" | sha256sum | cut -c1-16)"
		;;
	repack-2threads | gc-aggressive)
		packs=("$repo"/objects/pack/*.pack)
		echo "${#packs[@]} pack(s), objects $(git -C "$repo" cat-file --batch-all-objects \
			--batch-check | sort | sha256sum | cut -c1-16)" \
			"$(git -C "$repo" count-objects -v | awk '$1 == "in-pack:" { print $2 }')"
		;;
	*) echo "$(wc -c <"$out") bytes $(sha256sum <"$out" | cut -c1-16)" ;;
	esac
}

# run_step STEP MODE REPO GITARGS...: runs one git command under leek in MODE and checks that it
# exits 0 and its result equals plain's.
run_step() {
	local step=$1 mode=$2 repo=$3 rc t0 res
	shift 3
	local out=$lk_scratch/$mode.$step.out
	t0=$SECONDS
	lk_with "$mode" timeout --kill-after=10 $limit git -C "$repo" "$@" >"$out" 2>"$out.err"
	rc=$?
	res=$(result_of "$step" "$repo" "$out")
	local what="git $step [$mode] ($((SECONDS - t0)) s: $res)"
	if [[ $mode == plain ]]; then
		plain_res[$step]=$res
		if ((rc != 0)); then
			lk_fail "$what" "exit $rc: $(head -c 300 "$out.err")"
		elif [[ $step == fsck && -s $out ]]; then
			lk_fail "$what" "the generated repository is not clean: $(head -c 300 "$out")"
		elif [[ $step == repack-* && $res != "1 pack(s)"* ]]; then
			lk_fail "$what" "not one pack"
		else
			lk_pass "$what"
		fi
		return
	fi
	if ((rc == 124 || rc == 137)); then
		lk_fail "$what" "hung: killed by timeout"
	elif ((rc != 0)); then
		lk_fail "$what" "exit $rc: $(head -c 300 "$out.err")"
	elif [[ $res != "${plain_res[$step]}" ]]; then
		lk_fail "$what" "differs from plain (${plain_res[$step]})"
	else
		lk_pass "$what"
	fi
	lk_profiles_read "git $step" "$mode"
}

for mode in plain "${LK_MODES[@]}"; do
	repo=$lk_scratch/$mode.git
	git init -q --bare -b main "$repo" && cp -a "$gen"/objects "$gen"/refs "$repo"/ &&
		{ [[ ! -e $gen/packed-refs ]] || cp "$gen"/packed-refs "$repo"/; } || exit 1
	run_step repack-1thread "$mode" "$repo" repack -a -d -f -q --window=50 --depth=50 --threads=1
	run_step repack-2threads "$mode" "$repo" repack -a -d -f -q --window=50 --depth=50 --threads=2
	run_step gc-aggressive "$mode" "$repo" gc -q --aggressive --prune=now
	run_step fsck "$mode" "$repo" fsck --full --strict --no-dangling
	run_step log-stat "$mode" "$repo" log --stat --format=fuller --all
	run_step blame "$mode" "$repo" blame -w -M -C --line-porcelain main -- "$blame_path"
	run_step archive "$mode" "$repo" archive --format=tar "$tag"
	rm -rf "$repo"
done

lk_summary
