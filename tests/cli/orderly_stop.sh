#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# orderly_stop.sh POKELAB: SIGINT during a long demo or run isolation and
# SIGTERM during a torture run stop them in order: the summary so far is printed with
# "interrupted after", the trace is written whole, and the exit status is
# 128 + the signal. The signal is sent once the run is under way (its first
# batch line, or its first status line, is out).
set -u
pokelab=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() {
	echo "$*" >&2
	for f in "$dir"/*.out; do echo "--- $f" >&2; tail -5 "$f" >&2; done
	exit 1
}
# wait_for FILE PATTERN PID: until a line matches (or the run ended).
wait_for() {
	while kill -0 "$3" 2>/dev/null && ! grep -q "$2" "$1"; do
		sleep 0.05
	done
}

# stop_run NAME SIGNAL STATUS READY-PATTERN ARGS...: start pokelab ARGS, send
# SIGNAL once READY-PATTERN is out, and expect exit STATUS.
stop_run() {
	name=$1 sig=$2 want=$3 ready=$4
	shift 4
	"$pokelab" "$@" >"$dir/$name.out" 2>&1 &
	pid=$!
	wait_for "$dir/$name.out" "$ready" $pid
	kill -"$sig" $pid
	wait $pid
	rc=$?
	[ $rc -eq "$want" ] || fail "$name: exit status $rc after SIG$sig, expected $want"
}

stop_run demo INT 130 'took' demo --cpus 2 --flips 100000 --trace "$dir/t.txt"
grep -q '^demo: interrupted after [0-9]* of 100000 flips (SIGINT)' "$dir/demo.out" ||
	fail "demo: no 'interrupted after' line"
grep -q '^verdict:' "$dir/demo.out" || fail "demo: no verdict for the flips made"
grep -q 'csd_queue_cpu' "$dir/t.txt" || fail "demo: the trace was not written"

stop_run torture TERM 143 '^torture: seed' torture --cpus 3 --duration 600
grep -q '^torture: interrupted after .* (SIGTERM)' "$dir/torture.out" ||
	fail "torture: no 'interrupted after' line"
grep -q '^xmc: model of cross-modifying code' "$dir/torture.out" || fail "torture: no verdict"
stop_run isolation INT 130 'ct_defer=off: load' run isolation --cpus 3 --seconds 600
grep -q '^run isolation: interrupted (SIGINT)' "$dir/isolation.out" ||
	fail "run isolation: no 'interrupted' line"
grep -q '^result: ' "$dir/isolation.out" || fail "run isolation: no report"
exit 0
