#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# safe_files.sh POKELAB: an output is written to a fresh file and renamed
# into place. A symlink planted where the old writer put its temporary file
# (t.txt.tmp -> victim) is neither followed nor removed; the trace arrives
# whole; nothing else is left in the directory.
. "$(dirname "$0")/lib.sh"
echo keep >"$dir/victim"
ln -s "$dir/victim" "$dir/t.txt.tmp"
"$pokelab" demo --cpus 2 --flips 2 --trace "$dir/t.txt" >"$dir/out" 2>&1 || fail "demo failed"
[ "$(cat "$dir/victim")" = keep ] || fail "the symlink's target was written"
[ -L "$dir/t.txt.tmp" ] || fail "the planted symlink was removed"
grep -q 'csd_queue_cpu' "$dir/t.txt" || fail "the trace is missing or empty"
left=$(ls -A "$dir" | grep -v -x -e victim -e t.txt.tmp -e t.txt -e out)
[ -z "$left" ] || fail "left behind: $left"
# An existing trace is replaced, not written through, when it is a symlink: refused.
ln -s "$dir/victim" "$dir/l.txt"
"$pokelab" demo --cpus 2 --flips 2 --trace "$dir/l.txt" >"$dir/out" 2>&1 && fail "a symlink target was accepted"
[ "$(cat "$dir/victim")" = keep ] || fail "the symlink's target was written"

# A symlink planted at the output's name during the run is not replaced either.
"$pokelab" demo --cpus 2 --flips 100000 --trace "$dir/late.txt" >"$dir/late.out" 2>&1 &
pid=$!
while kill -0 $pid 2>/dev/null && ! grep -qs took "$dir/late.out"; do sleep 0.05; done
ln -s "$dir/victim" "$dir/late.txt"
kill -INT $pid
wait $pid
[ -L "$dir/late.txt" ] || fail "a symlink planted during the run was replaced"
[ "$(cat "$dir/victim")" = keep ] || fail "the late symlink's target was written"
grep -q "late.txt' exists and is not a regular file" "$dir/late.out" ||
	fail "the refused output was not reported"
rm "$dir/late.txt" "$dir/late.out"

# A 254-byte name (NAME_MAX is 255) is written: the temporary name must fit too.
long=$(printf 'a%.0s' $(seq 250)).txt
"$pokelab" demo --cpus 2 --flips 2 --trace "$dir/$long" >"$dir/out" 2>&1 || fail "a 254-byte name failed"
grep -q 'csd_queue_cpu' "$dir/$long" || fail "the trace with a 254-byte name is missing"
# A 256-byte name is refused before boot: one line, exit 2.
"$pokelab" demo --cpus 2 --flips 2 --trace "$dir/a$long.x" >"$dir/out" 2>&1
rc=$?
[ $rc -eq 2 ] && [ "$(wc -l <"$dir/out")" -eq 1 ] || fail "a 256-byte name: exit $rc"

# run isolation checks its --trace-dir files before it boots: a planted symlink is refused.
mkdir "$dir/td"
ln -s "$dir/victim" "$dir/td/trace-off.txt"
"$pokelab" run isolation --quiet --cpus 3 --seconds 0.2 --trace-dir "$dir/td" >"$dir/out" 2>&1
rc=$?
[ $rc -eq 2 ] || fail "run isolation --trace-dir with a symlink: exit $rc, expected 2"
grep -q 'smp: Brought up' "$dir/out" && fail "run isolation booted before refusing --trace-dir"
[ "$(cat "$dir/victim")" = keep ] || fail "the symlink's target was written"
exit 0
