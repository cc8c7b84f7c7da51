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
exit 0
