#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# torture_partial.sh POKELAB: a torture run the model could not follow
# whole ends "SUCCESS, PARTIAL" saying what cut its verdict short and what
# would make it whole, from what the model counted (docs/cli.md), not a
# bare count: pokelab.xmc_capacity=2 keeps 2 writes per operation, so every
# batch passes it; the line names that limit and the parameter to drop.
# 20 decisions per CPU (--ops): the same run whatever the clock.
. "$(dirname "$0")/lib.sh"

"$pokelab" torture --ops 20 --seed 1 --cpus 2 pokelab.xmc_capacity=2 >"$dir/out" 2>&1 ||
	fail "torture with pokelab.xmc_capacity=2: exit $?"
line=$(grep '^torture: SUCCESS' "$dir/out")
[ -n "$line" ] || fail "torture with pokelab.xmc_capacity=2: no SUCCESS line"
why='the model judged all but [0-9]+ windows or values past its capacity'
limit='[0-9]+ writes past the 2 an operation keeps'
hint='for a whole verdict, run it again without pokelab.xmc_capacity=2 \(it lowered the writes an operation keeps from 16384\)'
echo "$line" | grep -Eq "^torture: SUCCESS, PARTIAL \(seed 1\): $why: $limit; $hint$" ||
	fail "torture with pokelab.xmc_capacity=2: not what cut it short and the hint: $line"
grep -Eq '^xmc: .* -> PASS, PARTIAL: [0-9]+ windows or values past its capacity not judged$' \
	"$dir/out" || fail "torture with pokelab.xmc_capacity=2: the model's line is not PARTIAL"

# the parameter: a value out of range is refused before the boot
"$pokelab" torture --ops 1 pokelab.xmc_capacity=0 >"$dir/out" 2>&1
[ $? -eq 2 ] || fail "pokelab.xmc_capacity=0: not refused"
grep -q '^pokelab.*pokelab.xmc_capacity=0: expected pokelab.xmc_capacity=N, ' "$dir/out" ||
	fail "pokelab.xmc_capacity=0: $(cat "$dir/out")"
echo "a PARTIAL torture says what cut it short and what would make it whole"
exit 0
