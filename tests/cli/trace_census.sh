#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# trace_census.sh POKELAB: run the demo with --trace and --trace-json, then
# check that the deferral series' census pipelines, run on the text trace,
# print the counts of the demo's own "trace: counters:" line, that nothing
# was dropped or left as .tmp, and that the JSON has one track per CPU.
set -u
pokelab=$1
cpus=4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

if ! "$pokelab" demo --cpus $cpus --flips 4 --trace "$dir/trace.txt" \
		--trace-json "$dir/trace.json" >"$dir/out" 2>&1; then
	echo "demo failed:" >&2
	cat "$dir/out" >&2
	exit 1
fi
fail() {
	echo "$*" >&2
	cat "$dir/out" >&2
	exit 1
}
[ -s "$dir/trace.txt" ] && [ -s "$dir/trace.json" ] || fail "trace files missing"
[ -z "$(ls -A "$dir" | grep -v -x -e trace.txt -e trace.json -e out)" ] || fail "temporary file left behind: $(ls -A "$dir")"
grep -q '^trace: [0-9]* events written, 0 dropped' "$dir/out" || fail "events dropped"

line=$(grep '^trace: counters:' "$dir/out")
ipis=$(echo "$line" | sed -n 's/^trace: counters: \([0-9]*\) IPI sends.*/\1/p')
csds=$(echo "$line" | sed -n 's/.*, \([0-9]*\) CSDs queued.*/\1/p')
[ -n "$ipis" ] && [ -n "$csds" ] && [ "$csds" -gt 0 ] || fail "no counters line: $line"

got_ipi=$(grep callback "$dir/trace.txt" | awk '{ print $(NF) }' | sort | uniq -c |
	  awk '{ print $1, $2 }')
got_csd=$(grep csd_queue "$dir/trace.txt" | awk '{ print $(NF-1) }' | sort | uniq -c |
	  awk '{ print $1, $2 }')
want_ipi="$ipis callback=generic_smp_call_function_single_interrupt+0x0"
want_csd="$csds func=do_sync_core"
[ "$got_ipi" = "$want_ipi" ] || fail "IPI census: got '$got_ipi', want '$want_ipi'"
[ "$got_csd" = "$want_csd" ] || fail "CSD census: got '$got_csd', want '$want_csd'"

tracks=$(grep -o '"name":"thread_name"' "$dir/trace.json" | wc -l)
[ "$tracks" -eq $cpus ] || fail "$tracks thread_name tracks for $cpus CPUs"
echo "census: $got_ipi; $got_csd; $tracks tracks"
exit 0
