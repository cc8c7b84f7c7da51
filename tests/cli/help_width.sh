#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# help_width.sh POKELAB: no line of any --help is wider than 100 columns:
# pokelab's own, --help-all, every command's, every scenario's of run. The
# commands and scenarios are read from the help itself, so a new one is
# checked without a change here.
. "$(dirname "$0")/lib.sh"

# the names listed under "Subcommands:" in a help text
subcommands() {
	sed -n '/^Subcommands:$/,/^$/p' | sed -n 's/^  \([a-z][a-z0-9_-]*\) .*/\1/p'
}

# check ARGS...: pokelab ARGS --help exits 0 and fits in 100 columns
check() {
	"$pokelab" "$@" --help >"$dir/out" 2>"$dir/err" || fail "pokelab $* --help: exit $?"
	[ -s "$dir/out" ] || fail "pokelab $* --help: no help"
	wide=$(awk 'length($0) > 100 { print length($0) ": " $0 }' "$dir/out")
	[ -z "$wide" ] || fail "pokelab $* --help: lines wider than 100 columns:
$wide"
	# an option's text folds under its description column, never back to column 2
	# (demo's --refs, whose name fills the column: issue 35)
	back=$(sed -n '/^Options:$/,/^$/p' "$dir/out" | grep '^  [^ -]')
	[ -z "$back" ] || fail "pokelab $* --help: an option's text folded to column 2:
$back"
	n=$((n + 1))
}

n=0
check
"$pokelab" --help-all >"$dir/out" 2>&1 || fail "pokelab --help-all: exit $?"
wide=$(awk 'length($0) > 100 { print length($0) ": " $0 }' "$dir/out")
[ -z "$wide" ] || fail "pokelab --help-all: lines wider than 100 columns:
$wide"
cmds=$("$pokelab" --help | subcommands)
[ -n "$cmds" ] || fail "pokelab --help lists no command"
for c in $cmds; do
	check "$c"
	for s in $("$pokelab" "$c" --help | subcommands); do
		check "$c" "$s"
	done
done
# a tab would be wider on a terminal than awk counts it
"$pokelab" --help-all | grep -q "$(printf '\t')" && fail "a tab in --help-all"
echo "every --help ($n of them) fits in 100 columns"
exit 0
