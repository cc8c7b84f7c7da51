#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# line_order.sh POKELAB: stdout and stderr to one pipe or file never share
# a line (issue 35): the boot's "smp: Brought up" line (stderr) begins a
# line of its own, never lands inside a line of debug-alternative's
# disassembly (stdout), and every disassembly line is whole.
. "$(dirname "$0")/lib.sh"
for i in 1 2 3; do
	"$pokelab" demo --cpus 2 --flips 2 debug-alternative clearcpuid=popcnt >"$dir/out" 2>&1 ||
		fail "demo debug-alternative failed"
	grep -q '^smp: Brought up' "$dir/out" || fail "run $i: no line starting 'smp: Brought up'"
	grep -q '.smp: Brought up' "$dir/out" && fail "run $i: 'smp: Brought up' inside a line"
	grep -q 'smp: Brought up .* CPUs\?.*[^.]smp:' "$dir/out" && fail "run $i: two lines in one"
done
exit 0
