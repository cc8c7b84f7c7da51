#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# run.sh TREE PATCH [SEED...]: one small wrong change to the port, at a spot
# no BUSTED switch marks, as a developer prototyping a patch would make it;
# the model must name it (docs/testing.md, "Wrong patches at other spots").
#
# TREE is a scratch work tree of this branch with a build directory set up
# once (git worktree add --detach /tmp/mut HEAD; meson setup /tmp/mut/build),
# or this tree itself (the patch is taken off again at the end and pokelab
# rebuilt without it). PATCH (tests/mutations/NN-*.patch) is
# applied with git apply, pokelab is rebuilt, and for each SEED (default
# 1 2 3)
#
#	timeout 60 pokelab torture --duration 20 --seed SEED [the patch's options]
#
# must exit 1 (FAILURE) with an xmc: line naming a CPU (the mutation
# sweep's catch, tools/campaign's CATCH) before any crash notice. MODULE in
# the patch's options is TREE's build/tests/modules/pokelab_test_mod.o,
# with its companions built beside it. Prints one line per run and its
# FAILURE line; exits 1 if any run missed. A patch whose header has a
# "first rule: ERE" line must be named by a rule that ERE matches (its first
# xmc: line). KEEP=DIR keeps each run's output there as NAME-seedN.txt.
set -u
tree=$1
patch=$(realpath "$2")
shift 2
seeds=${*:-1 2 3}
out=$(mktemp)
applied=0
# the patch off again, and pokelab rebuilt without it
trap 'rm -f "$out"; [ $applied = 1 ] && git -C "$tree" apply -R "$patch" &&
	nice ninja -C "$tree/build" -j2 tools/pokelab >/dev/null' EXIT

opts=$(sed -n 's/^torture options: //p' "$patch")
[ "$opts" = "(defaults)" ] && opts=
want=$(sed -n 's/^first rule: //p' "$patch")
case "$opts" in
*MODULE*)
	ninja -C "$tree/build" tests/modules/pokelab_test_mod.o tests/modules/pokelab_provider_mod.o \
		tests/modules/pokelab_consumer_mod.o tests/modules/pokelab_init_mod.o >/dev/null ||
		{ echo "run.sh: the test modules do not build" >&2; exit 2; }
	opts=$(echo "$opts" | sed "s|MODULE|$tree/build/tests/modules/pokelab_test_mod.o|")
	;;
esac
git -C "$tree" apply "$patch" || { echo "run.sh: $patch does not apply to $tree" >&2; exit 2; }
applied=1
nice ninja -C "$tree/build" -j2 tools/pokelab >"$out" 2>&1 || { cat "$out"; exit 2; }
pokelab=$tree/build/tools/pokelab
name=$(basename "$patch" .patch)
missed=0

for seed in $seeds; do
	# shellcheck disable=SC2086
	timeout 60 "$pokelab" torture --duration 20 --seed "$seed" $opts >"$out" 2>&1
	rc=$?
	first=$(grep -n -m1 -E '^xmc: [A-Za-z0-9 →-]+: CPU [0-9]+' "$out")
	crash=$(grep -n -m1 -E '^(pokelab: fatal signal|kernel BUG|Oops)' "$out")
	ok=yes
	[ $rc -eq 1 ] || ok="exit $rc"
	[ -n "$first" ] || ok="no xmc: line naming a CPU"
	grep -q "^torture: FAILURE (seed $seed): " "$out" || ok="no FAILURE line"
	if [ -n "$want" ] && ! echo "$first" | grep -Eq -- "$want"; then
		ok="first xmc: line is not \"$want\""
	fi
	if [ -n "$crash" ] && [ -n "$first" ] && [ "${crash%%:*}" -lt "${first%%:*}" ]; then
		ok="crash before the report: ${crash#*:}"
	fi
	printf '%s seed %s: %s, exit %s: %s\n' "$name" "$seed" \
		"$([ "$ok" = yes ] && echo named || echo "MISSED ($ok)")" "$rc" "${first#*:}"
	grep -m1 '^torture: FAILURE' "$out"
	[ -n "${KEEP:-}" ] && cp "$out" "$KEEP/$name-seed$seed.txt"
	[ "$ok" = yes ] || { missed=$((missed + 1)); tail -20 "$out" >&2; }
done
[ $missed -eq 0 ]
