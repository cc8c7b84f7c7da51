#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# line_order.sh POKELAB: stdout and stderr to one pipe or file never share
# a line (issue 35): the boot's "smp: Brought up" line (stderr) begins a
# line of its own, never lands inside a line of debug-alternative's
# disassembly (stdout), and every disassembly line is whole. A written
# file is named after the run's verdict (docs/cli.md): torture's timeline.
. "$(dirname "$0")/lib.sh"
for i in 1 2 3; do
	"$pokelab" demo --cpus 2 --flips 2 debug-alternative clearcpuid=popcnt >"$dir/out" 2>&1 ||
		fail "demo debug-alternative failed"
	grep -q '^smp: Brought up' "$dir/out" || fail "run $i: no line starting 'smp: Brought up'"
	grep -q '.smp: Brought up' "$dir/out" && fail "run $i: 'smp: Brought up' inside a line"
	grep -q 'smp: Brought up .* CPUs\?.*[^.]smp:' "$dir/out" && fail "run $i: two lines in one"
done
"$pokelab" torture --duration 1 --timeline "$dir/t.svg" >"$dir/tout" 2>&1 ||
	fail "torture --duration 1 --timeline failed"
verdict=$(grep -n -m1 '^torture: SUCCESS' "$dir/tout" | cut -d: -f1)
wrote=$(grep -n -m1 '^pokelab: wrote .*t.svg (--timeline)$' "$dir/tout" | cut -d: -f1)
[ -n "$verdict" ] && [ -n "$wrote" ] && [ "$wrote" -gt "$verdict" ] ||
	fail "torture names its --timeline file at line ${wrote:-none}, the verdict is at ${verdict:-none}"
exit 0
