#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# option_twice.sh POKELAB: an option that takes one value, given twice, is
# refused by one rule on every command, the Python ones (where,
# port-patch) too: one line naming the option and both values, saying it
# may be given once, exit 2 (docs/cli.md), not CLI11's "At Most 1 required
# but received 2". Each command's first option with a value read from its
# help, given twice its lowest value (valid, so that the only fault is the
# repetition).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/leaves.sh"

check_twice() {
	# --opt UINT:LO..HI, FLOAT:LO..HI, TEXT:{FIRST,...}, DIR: the option and a value it takes
	pick=$(sed -n '/^Options:$/,/^$/p' "$dir/help" | grep -v 'more than once' | sed -n -E '
		s/^  (-[a-z],)?(--[a-z][a-z0-9-]*) (UINT|FLOAT):([0-9.]+)\.\..*/\2 \4/p
		s/^  (-[a-z],)?(--[a-z][a-z0-9-]*) TEXT:\{([^,}]+)[,}].*/\2 \3/p
		s/^  (-[a-z],)?(--[a-z][a-z0-9-]*) DIR .*/\2 ./p' | head -1)
	[ -n "$pick" ] || return 1
	set -- "$@" $pick $pick
	opt=$(echo "$pick" | cut -d' ' -f1)
	val=$(echo "$pick" | cut -d' ' -f2)
	usage_line "$@"
	grep -Fqx "pokelab: $opt: given twice ($val and $val); it may be given once" "$dir/err" ||
		fail "pokelab $*: not the line of an option given twice: $(cat "$dir/err")"
	return 0
}
each_leaf_fn=check_twice
each_leaf
[ $n -ge 10 ] || fail "only $n commands checked"

# the = form, three times; a short option's long name
usage_line demo --flips 2 --flips=3 --flips 4
grep -Fqx 'pokelab: --flips: given 3 times (2, 3 and 4); it may be given once' "$dir/err" ||
	fail "demo --flips three times: $(cat "$dir/err")"
usage_line timeline t.dat -o a.svg --output b.svg
grep -Fqx 'pokelab: --output: given twice (a.svg and b.svg); it may be given once' "$dir/err" ||
	fail "timeline -o twice: $(cat "$dir/err")"
# an option that may be given more than once still may
"$pokelab" demo --trace t.txt --trace t.dat --help >/dev/null 2>&1 ||
	fail "demo --trace given twice is refused"
echo "an option given twice: one line, by one rule, on $n commands"
exit 0
