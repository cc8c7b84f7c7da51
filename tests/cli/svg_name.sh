#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# svg_name.sh POKELAB: every option that writes an SVG (each command's
# FILE.svg in its help: --timeline, --plot, timeline -o) refuses a name
# that does not end in .svg, by one check, in one line naming the name and
# FILE.svg, exit 2, before anything boots (docs/cli.md): "--timeline x.png"
# wrote SVG into x.png. The options are read from the help itself.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/leaves.sh"

nsvg=0
check_svg() {
	# what else the command needs to get as far as the name: timeline its trace
	extra=""
	grep -q '^  trace TEXT REQUIRED' "$dir/help" && extra="$dir/none.txt"
	for opt in $(sed -n '/^Options:$/,/^$/p' "$dir/help" |
		     sed -n -E 's/^  (-[a-z],)?(--[a-z][a-z0-9-]*) FILE\.svg( .*)?$/\2/p'); do
		for bad in x.png t.svg.txt svg; do
			usage_line "$@" $extra "$opt" "$dir/$bad"
			why="not a .svg name, and what it writes is SVG; expected $opt FILE.svg"
			grep -Fqx "pokelab: $opt: $dir/$bad: $why" "$dir/err" ||
				fail "pokelab $* $opt $bad: $(cat "$dir/err")"
			[ ! -e "$dir/$bad" ] || fail "pokelab $* $opt $bad: wrote $bad"
		done
		nsvg=$((nsvg + 1))
	done
	return 0
}
each_leaf_fn=check_svg
each_leaf
# demo, torture, explain, run bpf-stats and isolation, bench, timeline
[ $nsvg -ge 7 ] || fail "only $nsvg options that write an SVG checked"
# upper case is still the name of an SVG: refused later only for the missing trace
usage_line timeline "$dir/none.txt" -o "$dir/T.SVG"
grep -q 'not a .svg name' "$dir/err" && fail "timeline -o T.SVG: refused for its name"
echo "every option that writes an SVG ($nsvg of them) refuses a name not ending in .svg"
exit 0
