#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# python_help.sh POKELAB: the commands written in Python (where,
# port-patch: argparse) help and refuse as the C++ ones (CLI11) do
# (docs/cli.md, tools/portlib/clihelp.py): the same headings, the -h,--help
# line to the letter, each option's text at column 30 and folded there, a
# bad argument one line "pokelab: ...", exit 2. And pokelab --help-all, the
# help of every command, lists the boot parameters once, not per command.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/leaves.sh"

"$pokelab" demo --help >"$dir/c.help" || fail "demo --help: exit $?"
helpline=$(grep -- '^  -h,--help ' "$dir/c.help")
allline=$(sed -n '/^  --help-all /,/^  --[a-z]/p' "$dir/c.help" | sed '$d')
for c in where port-patch; do
	"$pokelab" $c --help >"$dir/help" 2>"$dir/err" || fail "pokelab $c --help: exit $?"
	[ ! -s "$dir/err" ] || fail "pokelab $c --help: wrote on stderr"
	# argparse's words are gone
	grep -Eq '^usage:|^options:|^positional arguments:|show this help message' "$dir/help" &&
		fail "pokelab $c --help: argparse's headings: $(head -3 "$dir/help")"
	# the description, then Usage: PROG CMD [OPTIONS] ... and a blank line, as CLI11 draws it
	sed -n '1,/^$/p' "$dir/help" | tail -2 | head -1 |
		grep -Eq "^Usage: [^ ]*pokelab $c \[OPTIONS\] [a-z]+\.\.\.$" ||
		fail "pokelab $c --help: no CLI11 Usage: line after the description"
	grep -qx 'Positionals:' "$dir/help" || fail "pokelab $c --help: no Positionals:"
	grep -qx 'Options:' "$dir/help" || fail "pokelab $c --help: no Options:"
	grep -qxF -- "$helpline" "$dir/help" || fail "pokelab $c --help: not demo's -h,--help line"
	sed -n '/^  --help-all /,/^  --[a-z]/p' "$dir/help" | sed '$d' >"$dir/all"
	[ "$(cat "$dir/all")" = "$allline" ] || fail "pokelab $c --help: not demo's --help-all lines"
	# every option's text at column 30, its continuations too
	bad=$(sed -n '/^Options:$/,/^$/p' "$dir/help" | awk '
		/^  -/ && match(substr($0, 3), /  +/) && 2 + RSTART + RLENGTH != 31 { print }
		/^   / && !/^ {30}[^ ]/ { print }')
	[ -z "$bad" ] || fail "pokelab $c --help: a text not at column 30: $bad"
	wide=$(awk 'length($0) > 100' "$dir/help")
	[ -z "$wide" ] || fail "pokelab $c --help: wider than 100 columns: $wide"
	# --help-all is --help, as on timeline, which takes no boot parameters
	"$pokelab" $c --help-all >"$dir/all" 2>&1 || fail "pokelab $c --help-all: exit $?"
	cmp -s "$dir/all" "$dir/help" || fail "pokelab $c --help-all is not its --help"
	# errors: one line, pokelab's prefix, exit 2
	usage_line $c --zzzzzz x
	grep -Fqx "pokelab: --zzzzzz: unknown option of $c; see 'pokelab $c --help'" "$dir/err" ||
		fail "pokelab $c --zzzzzz: $(cat "$dir/err")"
	usage_line $c
	grep -Eq "^pokelab: $c: no [A-Z]+ given; expected pokelab $c " "$dir/err" ||
		fail "pokelab $c: $(cat "$dir/err")"
	usage_line $c --upstream
	grep -Fqx 'pokelab: --upstream: no value given; expected --upstream DIR' "$dir/err" ||
		fail "pokelab $c --upstream: $(cat "$dir/err")"
done

# the boot parameters once in pokelab --help-all, naming the commands that take them
"$pokelab" --help-all >"$dir/all" 2>&1 || fail "pokelab --help-all: exit $?"
[ "$(grep -c '^Boot parameters' "$dir/all")" -eq 1 ] ||
	fail "pokelab --help-all: not one list of boot parameters"
grep -q '^Boot parameters of demo, bench, torture and explain ' "$dir/all" ||
	fail "pokelab --help-all: the list does not name the commands that take them"
for p in nr_cpus= nohz_full= pokelab.busted= trace_event=; do
	[ "$(grep -c "^  $p" "$dir/all")" -eq 1 ] || fail "pokelab --help-all: $p not once"
done
# and where's and port-patch's help under their names, as the tools draw it,
# 2 columns in like the others', within 100 columns (docs/cli.md)
for c in where port-patch; do
	"$pokelab" "$c" --help >"$dir/own" 2>&1
	sed -n "/^$c\$/,/^[^ ]/p" "$dir/all" >"$dir/under"
	for o in $(sed -n -E 's/^  (-[a-zA-Z],)?(--[a-z][a-z-]*).*/\2/p' "$dir/own"); do
		grep -Eq "^    (-[a-zA-Z],)?$o( |\$)" "$dir/under" ||
			fail "pokelab --help-all: $c's $o not under $c"
	done
done
awk 'length > 100 { bad = 1 } END { exit bad }' "$dir/all" ||
	fail "pokelab --help-all: a line past 100 columns"
echo "where and port-patch help and refuse as the other commands do"
exit 0
