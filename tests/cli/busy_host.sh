#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# busy_host.sh POKELAB: a figure taken beside a busy loop on every PU says
# the host was busy instead of a verdict (tools/hostload.h): run recursion
# puts "not judged: host busy" in the x86 row and leaves out the comparison
# with the mail; bench model marks its goal not judged.
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
echo "busy host named: run recursion and bench model"
