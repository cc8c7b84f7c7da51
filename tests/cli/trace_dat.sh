#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# trace_dat.sh POKELAB: one demo run writes its trace as text and as
# trace.dat; Debian's trace-cmd reads the .dat file and prints exactly the
# text output (every event, the drops, the symbols), its --cpu and -F
# filters work, and the case's census pipelines give the same counts on
# both. Then with rings small enough to drop events, the drops are in both
# where trace-cmd shows them. Needs trace-cmd (tools/install-deps.sh).
. "$(dirname "$0")/lib.sh"
command -v trace-cmd >/dev/null || fail "trace-cmd not found: run tools/install-deps.sh"

census() {	# the case's pipelines: by callback, and by function queued
	grep callback "$1" | awk '{ print $(NF) }' | sort | uniq -c
	grep csd_queue "$1" | awk '{ print $(NF-1) }' | sort | uniq -c
}

# 4 CPUs, two isolated: every event type, from 3 writers and the IPI handlers
"$pokelab" demo --cpus 4 --nohz-full 3 --flips 6 --trace "$dir/t.txt" --trace "$dir/t.dat" \
	'trace_event=*:*' >"$dir/demo.out" 2>&1 || fail "demo failed: $(tail -3 "$dir/demo.out")"
trace-cmd report "$dir/t.dat" >"$dir/r.txt" 2>"$dir/r.err" || fail "trace-cmd report failed: $(cat "$dir/r.err")"
same_as_report "$dir/t.txt" "$dir/r.txt" ||
	fail "trace-cmd report differs from the text output: $(diff "$dir/r.txt" "$dir/t.txt" | head -5)"
for ev in ipi_send_cpumask csd_queue_cpu csd_function_entry csd_function_exit user_enter user_exit \
	text_poke text_poke_batch int3_emulate ct_work_flush; do
	grep -q " $ev: " "$dir/r.txt" || fail "no $ev event in trace-cmd report"
done
grep -q 'callsite=on_each_cpu_cond_mask+0x' "$dir/r.txt" || fail "callsite= not resolved by trace-cmd"
census "$dir/r.txt" >"$dir/c1"
census "$dir/t.txt" >"$dir/c2"
[ -s "$dir/c1" ] && cmp -s "$dir/c1" "$dir/c2" || fail "census differs: $(cat "$dir/c1" "$dir/c2")"

# trace-cmd's filters
trace-cmd report --cpu 2 "$dir/t.dat" | grep -v '^cpus=' >"$dir/cpu2"
[ -s "$dir/cpu2" ] || fail "report --cpu 2 printed nothing"
grep -qv ' \[002\] ' "$dir/cpu2" && fail "report --cpu 2 printed another CPU's event"
want=$(grep -c ' csd_queue_cpu: ' "$dir/t.txt")
got=$(trace-cmd report -F 'csd_queue_cpu' "$dir/t.dat" | grep -c ' csd_queue_cpu: ')
[ "$got" -eq "$want" ] && [ "$want" -gt 0 ] || fail "-F csd_queue_cpu: $got events, text has $want"
trace-cmd report -F 'csd_queue_cpu' "$dir/t.dat" | grep -v '^cpus=' | grep -qv csd_queue_cpu &&
	fail "-F csd_queue_cpu printed other events"

# a longer run with every event from 4 CPUs: what the recorder merges stays
# in time order, and trace-cmd still prints exactly the text
"$pokelab" demo --cpus 4 --flips 200 --trace "$dir/l.txt" --trace "$dir/l.dat" 'trace_event=*:*' \
	>"$dir/long.out" 2>&1 || fail "the 200-flip demo failed: $(tail -3 "$dir/long.out")"
in_order() {	# FILE: event timestamps never decrease; prints the first that does
	awk '$2 ~ /^\[[0-9]+\]$/ { t = $3; sub(/:$/, "", t); n++
		if (t + 0 < last + 0) { print NR": "$0; bad = 1; exit } last = t }
		END { exit bad || n < 1000 }' "$1"
}
in_order "$dir/l.txt" >"$dir/order" || fail "timestamps go back (or too few events): $(cat "$dir/order")"
# the check itself fires on two lines swapped
awk 'NR == 500 { held = $0; next } NR == 900 { print; print held; next } { print }' "$dir/l.txt" \
	>"$dir/swapped.txt"
in_order "$dir/swapped.txt" >/dev/null && fail "the time-order check passed a swapped trace"
trace-cmd report "$dir/l.dat" >"$dir/lr.txt" 2>/dev/null
same_as_report "$dir/l.txt" "$dir/lr.txt" ||
	fail "200 flips: trace-cmd report differs: $(diff "$dir/lr.txt" "$dir/l.txt" | head -5)"

# drops: trace_buf_size=2K rings overflow; trace-cmd shows each drop where the text does
"$pokelab" demo --cpus 3 --flips 6 --trace "$dir/d.txt" --trace "$dir/d.dat" 'trace_event=*:*' \
	trace_buf_size=2K >"$dir/drop.out" 2>&1 || fail "demo with drops failed"
grep -q 'pokelab: trace: CPU [0-9]* dropped [1-9]' "$dir/drop.out" || fail "no drops shown on stderr"
trace-cmd report "$dir/d.dat" >"$dir/dr.txt" 2>/dev/null || fail "trace-cmd could not read d.dat"
grep -q '^CPU:[0-9]* \[[0-9]* EVENTS DROPPED\]' "$dir/dr.txt" || fail "trace-cmd shows no drop"
# every drop is in the text once: its DROPPED lines add up to what stderr counted
shown=$(sed -n 's/^CPU:[0-9]* \[\([0-9]*\) EVENTS DROPPED\]$/\1/p' "$dir/d.txt" | awk '{ s += $1 } END { print s + 0 }')
said=$(sed -n 's/^pokelab: trace: CPU [0-9]* dropped \([0-9]*\) events.*/\1/p' "$dir/drop.out" |
	awk '{ s += $1 } END { print s + 0 }')
[ "$shown" -eq "$said" ] || fail "the text shows $shown dropped events, stderr counted $said"
same_as_report "$dir/d.txt" "$dir/dr.txt" ||
	fail "with drops, trace-cmd report differs: $(diff "$dir/dr.txt" "$dir/d.txt" | head -5)"
trace-cmd report --stat "$dir/d.dat" | grep -q '^dropped events: [1-9]' ||
	fail "report --stat shows no dropped events"
exit 0
