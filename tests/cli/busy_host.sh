#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# busy_host.sh POKELAB: a figure taken beside a busy loop on every PU says
# the host was busy instead of a verdict (tools/hostload.h): run recursion
# puts "not judged: host busy" in the x86 row and leaves out the comparison
# with the mail; bench model marks its goal not judged; run bpf-stats marks
# each pair ratio not judged and still checks its counts.
. "$(dirname "$0")/lib.sh"

pids=
for i in $(seq "$(nproc)"); do
	sh -c 'while :; do :; done' &
	pids="$pids $!"
done
trap 'kill $pids 2>/dev/null; rm -rf "$dir"' EXIT

"$pokelab" run recursion --seconds 1 >"$dir/rec.out" 2>&1 || fail "run recursion failed"
grep -q '^host BUSY: ' "$dir/rec.out" || fail "run recursion: no 'host BUSY' line"
grep -q 'x86 claim.*not judged: host busy' "$dir/rec.out" ||
	fail "run recursion: the x86 row is judged on a busy host"
! grep -q '^This machine is x86-64' "$dir/rec.out" || fail "run recursion: compared with the mail anyway"

"$pokelab" bench model --cpus 2 --iters 2 >"$dir/model.out" 2>&1 || fail "bench model failed"
grep -q '^host BUSY: ' "$dir/model.out" || fail "bench model: no 'host BUSY' line"
grep -q '^Not judged: host busy' "$dir/model.out" || fail "bench model: goal judged on a busy host"
"$pokelab" run --quiet bpf-stats --cpus 4 --flips 8 >"$dir/refs.out" 2>&1 ||
	fail "run bpf-stats failed"
grep -q '^host BUSY: ' "$dir/refs.out" || fail "run bpf-stats: no 'host BUSY' line"
grep -q '^  nr_entries=164 global/percpu .*not judged: host busy$' "$dir/refs.out" ||
	fail "run bpf-stats: the 164-entry ratio is judged on a busy host"
grep -q 'global/percpu .*, not judged: host busy' "$dir/refs.out" ||
	fail "run bpf-stats: the claim table judges a ratio on a busy host"
grep -q '^check: .* -> PASS$' "$dir/refs.out" || fail "run bpf-stats: the counts' check failed"
echo "busy host named: run recursion, bench model and run bpf-stats"
