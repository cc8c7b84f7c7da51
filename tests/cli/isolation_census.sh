#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# isolation_census.sh POKELAB: a short `pokelab run isolation` (case 003).
# It must exit 0, and the cover letter's pipelines, run here on the traces
# it kept (filtered to the isolated CPUs), must show do_sync_core CSDs with
# ct_defer=off and none with v7, do_flush_tlb_all and do_kernel_range_flush
# CSDs in both, and IPIs to the isolated CPUs in both; with v7-tlbi and v8
# (v7 28-31 and v8 gate every kernel TLB flush of the load) no CSD and no
# IPI at all; the cross-modifying-code model passes every policy.
. "$(dirname "$0")/lib.sh"
"$pokelab" run isolation --quiet --cpus 4 --seconds 1 --syscall-ms 2 \
	--ct-defer off,v7,v7-tlbi,v8 --trace-dir "$dir" >"$dir/out" 2>"$dir/err" ||
	fail "run isolation failed ($?)"
[ ! -s "$dir/err" ] || fail "--quiet run wrote to stderr"
ok=' trace events dropped: 0 / 0; pipelines match the snapshot: yes$'
[ "$(grep -c "$ok" "$dir/out")" -eq 3 ] || fail "drops or a census mismatch"
for p in off v7 v7-tlbi v8; do
	grep -q "^cross-modifying-code model, ct_defer=$p: xmc: .* 0 violations -> PASS$" "$dir/out" ||
		fail "ct_defer=$p: the cross-modifying-code model did not pass"
done
[ "$(grep -c 'claim reproduced$' "$dir/out")" -eq 3 ] || fail "a policy's claim not reproduced"
# the census commands name the traces it kept, each said written (issue 35)
grep -q "^\$ grep csd_queue $dir/trace-v7.txt | " "$dir/out" ||
	fail "no census command on the kept trace $dir/trace-v7.txt"
grep -q "^pokelab: wrote $dir/trace-off.txt (--trace-dir)$" "$dir/out" ||
	fail "the kept trace-off.txt not said written"
# without --trace-dir the traces were temporary: no command that could not be run
"$pokelab" run isolation --quiet --cpus 3 --seconds 0.2 --ct-defer off,v7 >"$dir/tmp.out" 2>&1 ||
	fail "run isolation without --trace-dir failed ($?)"
grep -q 'grep csd_queue' "$dir/tmp.out" && fail "a grep command for a trace it did not keep"
grep -q '^csd_queue_cpu events by func, ct_defer=v7 ' "$dir/tmp.out" ||
	fail "no census without --trace-dir"

count() {	# count FILE PIPELINE-FIELD NAME
	n=$(grep "$2" "$1" | awk -v f="$2" '{ print (f == "csd_queue" ? $(NF-1) : $(NF)) }' |
	    sort | uniq -c | awk -v k="$3" '$2 == k { print $1 }')
	echo "${n:-0}"
}
for p in off v7; do
	[ -s "$dir/trace-$p.txt" ] || fail "trace-$p.txt missing"
	for f in do_flush_tlb_all do_kernel_range_flush; do
		n=$(count "$dir/trace-$p.txt" csd_queue "func=$f")
		[ "$n" -gt 0 ] || fail "ct_defer=$p: no $f CSDs to isolated CPUs"
	done
	n=$(count "$dir/trace-$p.txt" callback \
		  "callback=generic_smp_call_function_single_interrupt+0x0")
	[ "$n" -gt 0 ] || fail "ct_defer=$p: no IPIs to isolated CPUs"
	# Only isolated CPUs (2-3 of 4) are targets in the filtered trace.
	if grep csd_queue "$dir/trace-$p.txt" | grep -qv ' cpu=[23] '; then
		fail "ct_defer=$p: a CSD to a housekeeping CPU in the filtered trace"
	fi
done
off=$(count "$dir/trace-off.txt" csd_queue func=do_sync_core)
v7=$(count "$dir/trace-v7.txt" csd_queue func=do_sync_core)
[ "$off" -gt 0 ] || fail "ct_defer=off: no do_sync_core CSDs to isolated CPUs"
[ "$v7" -eq 0 ] || fail "ct_defer=v7: $v7 do_sync_core CSDs to isolated CPUs"
grep -q 'csd_queue do_sync_core .*| '"$off / 0"' ' "$dir/out" ||
	fail "table disagrees with the trace"
for p in v7-tlbi v8; do
	[ -f "$dir/trace-$p.txt" ] || fail "trace-$p.txt missing"
	n=$(grep -c 'csd_queue\|callback' "$dir/trace-$p.txt")
	[ "$n" -eq 0 ] || fail "ct_defer=$p: $n CSDs or IPIs to isolated CPUs"
done
# The lazy purge runs where v7.3 runs it: drain_vmap_work on CPU 0's kworker.
grep -Eq '^Where the TLB flushes came from \(off / v7-tlbi\): [0-9]+ / [0-9]+ vmap purges, [1-9][0-9]* / [1-9][0-9]* of them drain_vmap_work' "$dir/out" ||
	fail "no flush came from the kworker's drain_vmap_work"
echo "isolation census: do_sync_core $off -> $v7"
exit 0
