#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# orderly_stop.sh POKELAB: SIGINT during a long demo or run isolation and
# SIGTERM during a torture run and a demo writing trace.dat stop them in
# order (SIGINT a torture run too, and one with --ops once its progress
# line is out): the summary so far is printed with
# "interrupted after", the trace is written whole, and the exit status is
# 128 + the signal. The signal is sent once the run is under way (its first
# batch line, or its first status line, is out).
. "$(dirname "$0")/lib.sh"
# wait_for FILE PATTERN PID: until a line matches (or the run ended).
wait_for() {
	while kill -0 "$3" 2>/dev/null && ! grep -qs "$2" "$1"; do
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
# the checks of the flips made, said after the stop, and no PASS for a run cut short
sed -n '/^demo: interrupted after/,$p' "$dir/demo.out" | grep -q '^check: stale calls' ||
	fail "demo: no checks of the flips made after its 'interrupted after' line"
grep -q '^verdict: INTERRUPTED after [0-9]* flips: none on the flips not made$' "$dir/demo.out" ||
	fail "demo: no 'verdict: INTERRUPTED' line"
grep -q '^verdict: PASS' "$dir/demo.out" && fail "demo: verdict PASS for a run it cut"
grep -q 'csd_queue_cpu' "$dir/t.txt" || fail "demo: the trace was not written"
# the timeline of an interrupted run says it was cut, and by what
stop_run demo-tl INT 130 'took' demo --cpus 2 --flips 100000 --timeline "$dir/t.svg"
grep -q 'interrupted (SIGINT): the run was cut where the picture ends' "$dir/t.svg" ||
	fail "demo --timeline: the picture of an interrupted run does not say it was cut"

# SIGTERM with a trace.dat and a text trace of the same run: trace-cmd reads
# the .dat file to its end, and it holds exactly what the text holds
if command -v trace-cmd >/dev/null; then
	stop_run demo-dat TERM 143 'took' demo --cpus 2 --flips 100000 --trace "$dir/s.dat" \
		--trace "$dir/s.txt"
	grep -q '^demo: interrupted after [0-9]* of 100000 flips (SIGTERM)' "$dir/demo-dat.out" ||
		fail "demo-dat: no 'interrupted after' line"
	trace-cmd report "$dir/s.dat" >"$dir/s.report" 2>"$dir/s.err" ||
		fail "demo-dat: trace-cmd report failed: $(cat "$dir/s.err")"
	same_as_report "$dir/s.txt" "$dir/s.report" ||
		fail "demo-dat: the .dat and the text trace differ"
	grep -q 'phase=done' "$dir/s.report" || fail "demo-dat: no batch completed in the trace"
	tail -1 "$dir/s.report" | grep -q 'phase=done' ||
		fail "demo-dat: the trace does not end with a completed batch"
	# two signals back to back: whichever way they land, exit 130, and each
	# output is absent or complete, with no temporary file left behind
	mkdir "$dir/two"
	"$pokelab" demo --cpus 2 --flips 100000 --trace "$dir/two/t.dat" --trace "$dir/two/t.txt" \
		>"$dir/two.out" 2>&1 &
	pid=$!
	wait_for "$dir/two.out" took $pid
	kill -INT $pid
	kill -INT $pid
	wait $pid
	rc=$?
	[ $rc -eq 130 ] || fail "two signals: exit status $rc, expected 130"
	[ -z "$(ls -A "$dir/two" | grep -v -x -e t.dat -e t.txt)" ] ||
		fail "two signals: left behind: $(ls -A "$dir/two")"
	if [ -e "$dir/two/t.dat" ]; then
		trace-cmd report "$dir/two/t.dat" >/dev/null 2>&1 || fail "two signals: t.dat unreadable"
	fi
else
	fail "trace-cmd not found: run tools/install-deps.sh"
fi

# GNU timeout signals the child, then its process group: two SIGINTs a moment
# apart are one Ctrl-C (issue 35): the summary and INTERRUPTED, never "exiting
# now". Sent 50 ms apart, so that the first is taken before the second comes
# (two pending SIGINTs would merge in the host kernel and prove nothing), to a
# run that cannot stop in order (its first batch's drain waits forever for a
# ref the INT3 handler never puts back): it ends on the first signal alone.
"$pokelab" torture --cpus 3 --duration 60 pokelab.busted=refs-leak-put >"$dir/twice.out" 2>&1 &
pid=$!
wait_for "$dir/twice.out" '^torture: seed' $pid
sleep 0.5
kill -INT $pid
sleep 0.05
kill -INT $pid
wait $pid
rc=$?
[ $rc -eq 130 ] || fail "SIGINT twice in 50 ms: exit status $rc, expected 130"
grep -q '^pokelab: second signal' "$dir/twice.out" &&
	fail "SIGINT twice in 50 ms: the second copy was taken as a second signal"
grep -q '^torture: INTERRUPTED after .* (SIGINT)' "$dir/twice.out" ||
	fail "SIGINT twice in 50 ms: no 'INTERRUPTED after' line"
# the stop line says what it does: a copy within 0.5 s is the same Ctrl-C
grep -q '^pokelab: stopping after the operation in progress (another Ctrl-C after 0\.5 s exits at once)$' \
	"$dir/twice.out" || fail "SIGINT: the stop line does not say that a copy within 0.5 s is one"
# (timeout -s INT and -s TERM themselves on a wedged run: torture_wedge_refs_leak_put_sig*)
# and on runs that stop in order, as a script stops them: one stop, the summary, the
# trace.dat written whole (timeout's own status is 124; --preserve-status gives pokelab's)
if command -v trace-cmd >/dev/null; then
	timeout --preserve-status -s INT 3 "$pokelab" demo --cpus 2 --flips 100000 \
		--trace "$dir/to.dat" >"$dir/timeout-demo.out" 2>&1
	rc=$?
	[ $rc -eq 130 ] || fail "timeout -s INT 3 demo: exit status $rc, expected 130"
	grep -q 'exiting now' "$dir/timeout-demo.out" &&
		fail "timeout -s INT 3 demo: taken as two signals"
	grep -q '^demo: interrupted after [0-9]* of 100000 flips (SIGINT)' \
		"$dir/timeout-demo.out" || fail "timeout -s INT 3 demo: no 'interrupted after' line"
	grep -q "^pokelab: wrote $dir/to.dat (--trace)\$" "$dir/timeout-demo.out" ||
		fail "timeout -s INT 3 demo: the trace.dat not said written"
	trace-cmd report "$dir/to.dat" >/dev/null 2>&1 ||
		fail "timeout -s INT 3 demo: trace.dat unreadable"
fi
timeout --preserve-status -s INT 3 "$pokelab" torture --cpus 3 --duration 20 \
	>"$dir/timeout-torture.out" 2>&1
rc=$?
[ $rc -eq 130 ] || fail "timeout -s INT 3 torture: exit status $rc, expected 130"
grep -q 'exiting now' "$dir/timeout-torture.out" &&
	fail "timeout -s INT 3 torture: taken as two signals"
grep -q '^torture: INTERRUPTED after .* (SIGINT)' "$dir/timeout-torture.out" ||
	fail "timeout -s INT 3 torture: no 'INTERRUPTED after' line"

stop_run torture TERM 143 '^torture: seed' torture --cpus 3 --duration 600
grep -q '^torture: INTERRUPTED after .* (SIGTERM), seed [0-9]*: .* 0 violations so far$' \
	"$dir/torture.out" || fail "torture: no 'INTERRUPTED after' line"
! grep -q '^torture: SUCCESS' "$dir/torture.out" || fail "torture: SUCCESS for a run it cut"
grep -q '^xmc: model of cross-modifying code' "$dir/torture.out" || fail "torture: no verdict"
# Ctrl-C, the way a user stops it: INTERRUPTED, never SUCCESS, and 128 + SIGINT
stop_run torture-int INT 130 '^torture: seed' torture --duration 60
grep -q '^torture: INTERRUPTED after .* (SIGINT), seed [0-9]*: ' "$dir/torture-int.out" ||
	fail "torture (SIGINT): no 'INTERRUPTED after' line"
grep -q '^torture: SUCCESS' "$dir/torture-int.out" &&
	fail "torture (SIGINT): SUCCESS for a run it cut"
# --ops, which no clock ends, says how far it is every few seconds; stopped, it has no digest
stop_run torture-ops INT 130 '^torture: [0-9]* s: [0-9]* of [0-9]* decisions ([0-9]*%)$' \
	torture --seed 7 --ops 1000000000
grep -q '^decision digest: none: the run stopped early' "$dir/torture-ops.out" ||
	fail "torture --ops (SIGINT): a digest, or no word of it, for a run cut short"
grep -q '^torture: INTERRUPTED after ' "$dir/torture-ops.out" ||
	fail "torture --ops (SIGINT): no 'INTERRUPTED after' line"
stop_run isolation INT 130 'ct_defer=off: load' run isolation --cpus 3 --seconds 600
grep -q '^run isolation: interrupted (SIGINT) during ct_defer=off; ct_defer=v7 not run' \
	"$dir/isolation.out" || fail "run isolation: no 'interrupted' line"
grep -q '^run isolation: ct_defer=off (interrupted): ' "$dir/isolation.out" ||
	fail "run isolation: no summary of the variant it stopped"
grep -q '^result: ' "$dir/isolation.out" && fail "run isolation: claimed a result when interrupted"

# a stopped benchmark reports what it measured, and nothing for what it did not
stop_run bench INT 130 '^Iter' bench ipi --iters 1000
grep -q '^Interrupted after [1-9][0-9]* of 1000 iterations (SIGINT)' "$dir/bench.out" ||
	fail "bench: no 'Interrupted after' line"
grep -q 'not measured (interrupted)' "$dir/bench.out" || fail "bench: the pairs not run not said"
grep -q 'ratio 0\.000' "$dir/bench.out" && fail "bench: a zero ratio for a pair not measured"
grep -q '^bench ipi: interrupted (SIGINT)' "$dir/bench.out" || fail "bench: no interrupted line"

# a stopped bpf-stats makes no claim from half a comparison; its modes,
# interleaved flip by flip, stop at most one flip apart
stop_run bpf-stats INT 130 'refs=global' run bpf-stats --cpus 3 --flips 100000
n='\([0-9]*\)' of='of 100000 + 100000 flips (SIGINT)'
ran=$(sed -n "s/^run bpf-stats: interrupted after $n + $n $of.*/\1 \2/p" "$dir/bpf-stats.out")
[ -n "$ran" ] || fail "run bpf-stats: no 'interrupted after' line"
g=${ran% *} p=${ran#* }
[ $((g - p)) -le 1 ] && [ $((p - g)) -le 1 ] ||
	fail "run bpf-stats: $g global and $p percpu flips, more than one apart"
grep -q '^check:' "$dir/bpf-stats.out" && fail "run bpf-stats: a check for an interrupted run"
grep -q 'FAIL' "$dir/bpf-stats.out" && fail "run bpf-stats: FAIL for an interrupted run"

# a command that cannot stop in order (timeline, reading a FIFO no writer opens)
# exits at the signal, saying so, and writes nothing
mkfifo "$dir/nowriter"
"$pokelab" timeline "$dir/nowriter" -o "$dir/nw.svg" >"$dir/tl.out" 2>&1 &
pid=$!
sleep 1
kill -INT $pid
wait $pid
rc=$?
[ $rc -eq 130 ] || fail "timeline: exit $rc at SIGINT, expected 130"
grep -q '^pokelab: interrupted (SIGINT): exiting; an output not yet complete is not written$' \
	"$dir/tl.out" || fail "timeline: no interrupted line"
[ ! -e "$dir/nw.svg" ] || fail "timeline: an interrupted run wrote its -o file"
exit 0
