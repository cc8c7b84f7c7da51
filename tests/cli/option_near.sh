#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# option_near.sh POKELAB: an unknown option one edit or a prefix away from
# a known one is answered with it, by one rule on every command, the
# Python ones (where, port-patch) too: "pokelab: --cpu: unknown option of
# demo; did you mean --cpus?", exit 2 (docs/cli.md). Each command's first
# option after --help-all is typed short of its last letter, with two
# letters swapped, and with a letter added; an option near none points to
# the command's --help.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/leaves.sh"

# near ARGS... TYPED KNOWN: pokelab ARGS TYPED names KNOWN among its guesses
near() {
	eval "typed=\${$(($# - 1))} known=\${$#}"
	args=$(echo "$@" | awk '{ NF -= 2; print }')
	usage_line $args "$typed"
	re="^pokelab: $typed: unknown option of [a-z -]+; did you mean (.*, )?$known( or |,|\\?)"
	grep -Eq "$re" "$dir/err" ||
		fail "pokelab $args $typed: no 'did you mean $known': $(cat "$dir/err")"
}

check_near() {
	opt=$(sed -n '/^Options:$/,/^$/p' "$dir/help" | grep -v -e '--help' |
		sed -n -E 's/^  (-[a-zA-Z],)?(--[a-z][a-z0-9-]{3,})( .*)?$/\2/p' | head -1)
	[ -n "$opt" ] || return 1
	near "$@" "$(echo "$opt" | sed 's/.$//')" "$opt"
	near "$@" "$(echo "$opt" | sed -E 's/^--(.)(.)/--\2\1/')" "$opt"
	near "$@" "${opt}x" "$opt"
	usage_line "$@" --zzzzzz
	grep -Fqx "pokelab: --zzzzzz: unknown option of $*; see 'pokelab $* --help'" "$dir/err" ||
		fail "pokelab $* --zzzzzz: $(cat "$dir/err")"
	return 0
}
each_leaf_fn=check_near
each_leaf
[ $n -ge 10 ] || fail "only $n commands checked"

# the newcomer's own, a value after =, and a prefix of three
usage_line demo --cpu 4
grep -Fqx 'pokelab: --cpu: unknown option of demo; did you mean --cpus?' "$dir/err" ||
	fail "demo --cpu 4: $(cat "$dir/err")"
usage_line run isolation --cpu=4
grep -Fqx 'pokelab: --cpu: unknown option of run isolation; did you mean --cpus?' "$dir/err" ||
	fail "run isolation --cpu=4: $(cat "$dir/err")"
usage_line demo --timelin t.svg
want='--timeline, --timeline-window or --timeline-gap?'
grep -Fqx "pokelab: --timelin: unknown option of demo; did you mean $want" "$dir/err" ||
	fail "demo --timelin: $(cat "$dir/err")"
echo "an unknown option: its near ones named, by one rule, on $n commands"
exit 0
