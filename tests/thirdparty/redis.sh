#!/usr/bin/env bash
# tests/thirdparty/redis.sh: Debian's redis-server under leek. redis allocates through the system
# jemalloc, counts its memory with malloc_usable_size, and forks for BGSAVE and BGREWRITEAOF,
# whose children write profiles of their own.
#
# In each mode (plain, default, exact, guard: lib.sh) a server on 127.0.0.1, with its own directory in scratch and
# no save points, is driven by pipelined redis-benchmark, must count exactly (INCR and LPUSH on one
# key, N times), then holds a known dataset (DEBUG POPULATE and keys of every type with known
# values). That dataset's DBSIZE and DEBUG DIGEST must equal the plain server's, and stay the
# same after BGSAVE, the AOF rewrite that enabling appendonly starts, BGREWRITEAOF, DEBUG RELOAD,
# DEBUG LOADAOF, and a restart of the server from the RDB that a BGSAVE child wrote. Both servers
# must shut down with status 0, and every profile written (servers and fork children) must read.
#
# It must never leave a server running: an EXIT trap kills the one it started, by its pid.
#
# LK_QUICK=1: 20 000 benchmark requests per test and 20 000 populated keys, instead of 200 000.

source "$(dirname "$0")/lib.sh"

if ((LK_QUICK)); then
	requests=20000
	populate=20000
else
	requests=200000
	populate=200000
fi

lk_need_build
lk_guard_too
lk_apt redis-server redis-tools || { echo "redis: cannot install redis-server" >&2; exit 1; }

server_pid=
stop_server() {
	[[ -n $server_pid ]] || return 0
	kill -KILL "$server_pid" 2>/dev/null
	wait "$server_pid" 2>/dev/null
	server_pid=
}
trap 'stop_server; lk_cleanup' EXIT

port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cli() { timeout --kill-after=5 60 /usr/bin/redis-cli -h 127.0.0.1 -p "$port" "$@"; }

# info FIELD: one field of INFO.
info() { cli INFO | tr -d '\r' | sed -n "s/^$1://p"; }

# start_server MODE DIR: a server in the background under leek in MODE, answering PING.
start_server() {
	local mode=$1 dir=$2 i
	# shellcheck disable=SC2046 # lk_env's words
	(cd "$dir" && exec env $(lk_env "$mode") /usr/bin/redis-server --bind 127.0.0.1 --port "$port" \
		--dir "$dir" --save '' --appendonly no --appenddirname aof --dbfilename dump.rdb \
		--enable-debug-command yes --daemonize no --logfile "$dir/redis.log" \
		--protected-mode yes --lazyfree-lazy-user-flush no) &
	server_pid=$!
	for ((i = 0; i < 300; i++)); do
		# PONG from this server, not from one that took the port meanwhile
		[[ $(cli PING 2>/dev/null) == PONG && $(info process_id) == "$server_pid" ]] && return 0
		kill -0 "$server_pid" 2>/dev/null || break
		sleep 0.1
	done
	return 1
}

# shutdown_server: SHUTDOWN NOSAVE, and the server's exit status (124: it did not exit in 60 s).
shutdown_server() {
	local i rc
	cli SHUTDOWN NOSAVE >/dev/null 2>&1
	for ((i = 0; i < 600; i++)); do
		kill -0 "$server_pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$server_pid" 2>/dev/null; then
		stop_server
		return 124
	fi
	wait "$server_pid"
	rc=$?
	server_pid=
	return "$rc"
}

# wait_field FIELD VALUE: until INFO's FIELD is VALUE (at most 120 s).
wait_field() {
	local i
	for ((i = 0; i < 1200; i++)); do
		[[ $(info "$1") == "$2" ]] && return 0
		sleep 0.1
	done
	return 1
}

# bgsave: BGSAVE, and whether its child saved (one more save, status ok) within 120 s.
bgsave() {
	local saves
	saves=$(info rdb_saves)
	cli BGSAVE >/dev/null
	wait_field rdb_bgsave_in_progress 0 && [[ $(info rdb_last_bgsave_status) == ok &&
		$(info rdb_saves) == $((saves + 1)) ]]
}

# The dataset besides DEBUG POPULATE: one key of each type, with values computed here.
dataset() {
	local i
	for ((i = 0; i < 1000; i++)); do
		echo "RPUSH t:list item-$i"
		echo "HSET t:hash field-$i $((i * i))"
		echo "SADD t:set member-$((i * 7 % 1000))"
		echo "ZADD t:zset $((i % 97)).$i z-$i"
		echo "XADD t:stream $((i + 1))-1 n $i"
		echo "SETBIT t:bits $((i * 13)) 1"
		echo "PFADD t:hll e-$i"
	done
	echo "SET t:big $(head -c 200000 /dev/zero | tr '\0' 'x')"
	echo "SET t:str hello"
	echo "APPEND t:str ,world"
}

# same NAME MODE WHAT VALUE WANT: a check that VALUE is WANT.
same() {
	if [[ $4 == "$5" && -n $4 ]]; then
		lk_pass "redis $1 [$2]"
	else
		lk_fail "redis $1 [$2]" "$3 is '$4', want '$5'"
	fi
}

# check_data NAME MODE: DBSIZE and DEBUG DIGEST equal the plain run's.
check_data() {
	local size digest
	size=$(cli DBSIZE)
	digest=$(cli DEBUG DIGEST)
	same "$1" "$2" "DBSIZE and DIGEST" "$size $digest" "$ref_size $ref_digest"
}

dataset >"$lk_scratch/dataset.txt"
for mode in plain "${LK_MODES[@]}"; do
	t0=$SECONDS
	dir=$lk_scratch/redis-$mode
	mkdir -p "$dir"
	if ! start_server "$mode" "$dir"; then
		lk_fail "redis start [$mode]" "no PONG in 30 s: $(tail -n 5 "$dir/redis.log" 2>/dev/null | tr '\n' ' ')"
		stop_server
		continue
	fi
	mem0=$(info used_memory)

	# Pipelined load on a random keyspace, then INCR and LPUSH on one key each: exact counts.
	if timeout --kill-after=5 600 /usr/bin/redis-benchmark -h 127.0.0.1 -p "$port" -P 16 -n "$requests" \
		-r 100000 -t set,get,hset,lpush,incr --csv >"$dir/bench1.csv" 2>&1 &&
		cli FLUSHALL >/dev/null &&
		timeout --kill-after=5 600 /usr/bin/redis-benchmark -h 127.0.0.1 -p "$port" -P 16 -n "$requests" \
			-t incr,lpush --csv >"$dir/bench2.csv" 2>&1; then
		absent=
		for t in SET GET HSET LPUSH INCR; do
			grep -q "^\"$t\"," "$dir/bench1.csv" || absent+=" $t"
		done
		for t in INCR LPUSH; do
			grep -q "^\"$t\"," "$dir/bench2.csv" || absent+=" $t (one key)"
		done
		if [[ -z $absent ]]; then
			lk_pass "redis benchmark [$mode] ($(grep -o '^"[A-Z]*","[0-9.]*' "$dir/bench1.csv" | tr -d '"' | tr '\n' ' ')requests/s)"
		else
			lk_fail "redis benchmark [$mode]" "no result for$absent"
		fi
	else
		lk_fail "redis benchmark [$mode]" "$(tail -n 3 "$dir/bench1.csv" "$dir/bench2.csv" | tr '\n' ' ')"
	fi
	same "INCR count" "$mode" "counter:__rand_int__" "$(cli GET counter:__rand_int__)" "$requests"
	same "LPUSH count" "$mode" "LLEN mylist" "$(cli LLEN mylist)" "$requests"

	# The known dataset.
	cli FLUSHALL >/dev/null
	cli DEBUG POPULATE "$populate" key 100 >/dev/null
	cli <"$lk_scratch/dataset.txt" >/dev/null
	if [[ $mode == plain ]]; then
		ref_size=$(cli DBSIZE)
		ref_digest=$(cli DEBUG DIGEST)
		echo "     plain dataset: DBSIZE $ref_size, DIGEST $ref_digest"
	else
		check_data "dataset" "$mode"
	fi
	same "values" "$mode" "HGET, ZSCORE, LINDEX, SCARD, BITCOUNT, STRLEN, GET" \
		"$(cli HGET t:hash field-999) $(cli ZSCORE t:zset z-500) $(cli LINDEX t:list 321) $(cli SCARD t:set) $(cli BITCOUNT t:bits) $(cli STRLEN t:big) $(cli GET t:str)" \
		"998001 15.5 item-321 1000 1000 200000 hello,world"

	# BGSAVE: a fork child writes the RDB.
	if bgsave; then
		lk_pass "redis BGSAVE [$mode]"
	else
		lk_fail "redis BGSAVE [$mode]" "status '$(info rdb_last_bgsave_status)', $(info rdb_saves) saves"
	fi
	check_data "after BGSAVE" "$mode"

	# appendonly yes starts an AOF rewrite in a fork child; then BGREWRITEAOF starts another.
	for what in "appendonly yes" BGREWRITEAOF; do
		rewrites=$(info aof_rewrites)
		if [[ $what == BGREWRITEAOF ]]; then
			cli BGREWRITEAOF >/dev/null
		else
			cli CONFIG SET appendonly yes >/dev/null
		fi
		if wait_field aof_rewrite_in_progress 0 && wait_field aof_rewrite_scheduled 0 &&
			[[ $(info aof_last_bgrewrite_status) == ok && $(info aof_enabled) == 1 &&
				$(info aof_rewrites) == $((rewrites + 1)) ]]; then
			lk_pass "redis $what [$mode]"
		else
			lk_fail "redis $what [$mode]" "rewrite status '$(info aof_last_bgrewrite_status)'"
		fi
		check_data "after $what" "$mode"
	done

	cli DEBUG RELOAD >/dev/null
	check_data "after DEBUG RELOAD" "$mode"
	cli DEBUG LOADAOF >/dev/null
	check_data "after DEBUG LOADAOF" "$mode"

	# A last BGSAVE for the restart (appendonly off, so the restart reads the RDB).
	cli CONFIG SET appendonly no >/dev/null
	bgsave || lk_fail "redis BGSAVE before restart [$mode]" "status '$(info rdb_last_bgsave_status)'"

	# Memory accounting through malloc_usable_size: after FLUSHALL, used_memory returns to where
	# it was as closely as without leek. A usable size that differed between allocation and free
	# would leave the counter off by about the size of what was churned (hundreds of MB here).
	cli FLUSHALL >/dev/null
	mem1=$(info used_memory)
	delta=$((mem1 - mem0))
	if [[ $mode == plain ]]; then
		ref_delta=$delta
		echo "     plain used_memory: $mem0 at start, $mem1 after FLUSHALL"
	else
		diff=$((delta - ref_delta))
		if ((diff < 1048576 && diff > -1048576)); then
			lk_pass "redis used_memory [$mode] (after FLUSHALL: ${delta} B from start, plain ${ref_delta} B)"
		else
			lk_fail "redis used_memory [$mode]" "after FLUSHALL ${delta} B from start, plain ${ref_delta} B"
		fi
	fi

	shutdown_server
	same "shutdown" "$mode" "exit status" "$?" 0

	# A restart from the RDB that the BGSAVE child wrote.
	if start_server "$mode" "$dir"; then
		check_data "restart from RDB" "$mode"
		same "restart keys loaded" "$mode" "rdb_last_load_keys_loaded" "$(info rdb_last_load_keys_loaded)" "$ref_size"
		shutdown_server
		same "restart shutdown" "$mode" "exit status" "$?" 0
	else
		lk_fail "redis restart [$mode]" "no PONG in 30 s: $(tail -n 5 "$dir/redis.log" | tr '\n' ' ')"
		stop_server
	fi
	# The log: every fork child (2 BGSAVE, 2 AOF rewrites) ended well, and the warnings
	# (level '#') are the plain server's.
	log=$(grep -c -E 'Background (saving|AOF rewrite) terminated with success' "$dir/redis.log")
	warnings=$(grep ' # ' "$dir/redis.log" | sed 's/^[^#]*# //; s/pid=[0-9]*/pid=N/' | sort | md5sum)
	[[ $mode == plain ]] && ref_warnings=$warnings
	same "log" "$mode" "children ended well, warnings as plain" "$log $warnings" "4 $ref_warnings"
	# One profile per process: the two servers write theirs from the start; the four fork
	# children write one at their first record, which in exact mode is certain.
	if [[ $mode != plain ]]; then
		profiles=$(find "$lk_scratch/prof-$mode" -name '*.lk' | wc -l)
		if [[ $mode == exact ]]; then
			same "profiles per process" "$mode" "profiles" "$profiles" 6
		else
			same "profiles per process" "$mode" "at least 2 profiles" "$((profiles >= 2))" 1
		fi
	fi
	lk_profiles_read "redis" "$mode"
	echo "     redis [$mode]: $((SECONDS - t0))s"
done
lk_summary
