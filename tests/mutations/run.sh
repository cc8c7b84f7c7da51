#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# run.sh TREE PATCH [SEED...]: one wrong patch to a form torture runs (a Jcc
# emulated with the wrong condition, a 2-byte site written in one store, a
# tracepoint moved into the EQS), as a kernel developer's would be, named by
# the cross-modifying-code model.
#
# TREE is a work tree of this branch with a build directory set up (a scratch
# one: git worktree add --detach /tmp/forms HEAD; meson setup /tmp/forms/build;
# or a clean checkout's own). PATCH (tests/mutations/NN-*.patch) is applied to
# it with git apply, pokelab is rebuilt, and for each SEED (default 1 2 3)
#
#	timeout 60 pokelab torture --duration 20 --seed SEED [the patch's options]
#
# must exit 1 with FAILURE and a first xmc: line naming what the patch
# header's "named by:" says (an ERE: one of the rules), before any crash.
# The patch is taken off again (and pokelab rebuilt) at the end. Prints
# one line per run with the first xmc: line; exits 1 if any run missed.
# KEEP=DIR keeps each run's output there as NAME-seedN.txt.
set -u
tree=$1
patch=$(realpath "$2")
shift 2
seeds=${*:-1 2 3}
out=$(mktemp)
trap 'rm -f "$out"; git -C "$tree" apply -R "$patch" 2>/dev/null && ninja -C "$tree/build" tools/pokelab >/dev/null' EXIT

opts=$(sed -n 's/^torture options: //p' "$patch")
[ "$opts" = "(defaults)" ] && opts=
want=$(sed -n 's/^named by: //p' "$patch")
git -C "$tree" apply "$patch" || { echo "run.sh: $patch does not apply to $tree" >&2; exit 2; }
ninja -C "$tree/build" tools/pokelab >"$out" 2>&1 || { cat "$out"; exit 2; }
pokelab=$tree/build/tools/pokelab
name=$(basename "$patch" .patch)
missed=0

for seed in $seeds; do
	# shellcheck disable=SC2086
	timeout 60 "$pokelab" torture --duration 20 --seed "$seed" $opts >"$out" 2>&1
	rc=$?
	first=$(grep -m1 '^xmc: ' "$out")
	ok=yes
	[ $rc -eq 1 ] || ok="exit $rc"
	[ -n "$first" ] || ok="no xmc: line"
	echo "$first" | grep -Eq -- "$want" || ok="first xmc: line is not \"$want\""
	grep -q "^torture: FAILURE (seed $seed): " "$out" || ok="no FAILURE line"
	# named before any crash (torture's death hook says which came first)
	grep -q 'crashed (above); the model reported nothing before it' "$out" &&
		ok="crashed before the model spoke"
	printf '%s seed %s: %s, exit %s: %s\n' "$name" "$seed" \
		"$([ "$ok" = yes ] && echo named || echo "MISSED ($ok)")" "$rc" "$first"
	[ -n "${KEEP:-}" ] && cp "$out" "$KEEP/$name-seed$seed.txt"
	[ "$ok" = yes ] || { missed=$((missed + 1)); tail -20 "$out" >&2; }
done
[ $missed -eq 0 ]
