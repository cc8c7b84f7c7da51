#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# run.sh SRC [TREE] [PATCH...]: boot faults, named by the model before any
# crash (docs/testing.md, "The model at boot"). Each PATCH (default: every
# tests/bootfaults/NN-*.patch) is a wrong change to code that runs at boot,
# as a developer's patch would be. It is applied to TREE, a copy of this
# tree with its own build directory, pokelab is rebuilt, and
#
#	timeout 60 pokelab torture --duration 1 --seed 1
#
# must exit 1 (the panic, not a crash's status or a timeout), print the
# patch's "names:" line after "xmc: " (the rule, the CPU and the site),
# then "Kernel panic - not syncing: xmc:", with no fatal-signal line, Oops
# or BUG before the first xmc: line, never reach the run (no "torture: seed"
# line), and end in torture's verdict, last: "torture: FAILURE (seed 1): the
# machine did not boot". The patch is taken off again after its run, and at
# exit.
#
# TREE left out: a copy of SRC's tracked files (as they are in SRC's work
# tree) in a temporary directory with a build directory set up there,
# removed at the end. A full build: minutes, so not in the default suite
# (meson test -C build --setup bootfaults --suite bootfaults). Given a TREE
# with build/ set up, only what each patch touches is rebuilt. Prints one
# line per patch; exits 1 if any missed, 2 if the tree does not build.
set -u
src=$(realpath "$1")
shift
tree=
case "${1:-}" in
*.patch | "") ;;
*) tree=$(realpath "$1"); shift ;;
esac
[ $# -gt 0 ] || set -- "$src"/tests/bootfaults/[0-9]*.patch
out=$(mktemp)
applied=
scratch=
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup()
{
	[ -z "$applied" ] || patch -d "$tree" -p1 -R -s -f <"$applied" >/dev/null 2>&1
	rm -f "$out"
	[ -z "$scratch" ] || rm -rf "$scratch"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -z "$tree" ]; then
	scratch=$(mktemp -d "${TMPDIR:-/tmp}/pokelab-bootfaults.XXXXXX")
	tree=$scratch
	git -C "$src" ls-files -z | (cd "$src" && tar --null -T - -cf -) | tar -C "$tree" -xf - ||
		{ echo "run.sh: cannot copy $src" >&2; exit 2; }
	meson setup "$tree/build" >"$out" 2>&1 || { cat "$out"; exit 2; }
fi
ninja -C "$tree/build" tools/pokelab >"$out" 2>&1 || { cat "$out"; exit 2; }
pokelab=$tree/build/tools/pokelab
missed=0

for p in "$@"; do
	p=$(realpath "$p")
	name=$(basename "$p" .patch)
	names=$(sed -n 's/^names: //p' "$p")
	patch -d "$tree" -p1 -s -f <"$p" >"$out" 2>&1 ||
		{ cat "$out"; echo "run.sh: $p does not apply to $tree" >&2; exit 2; }
	applied=$p
	ninja -C "$tree/build" tools/pokelab >"$out" 2>&1 || { cat "$out"; exit 2; }
	timeout 60 "$pokelab" torture --duration 1 --seed 1 >"$out" 2>&1
	rc=$?
	first=$(grep -m1 -n '^xmc: ' "$out" | cut -d: -f1)
	crash=$(grep -m1 -n -E '^(pokelab: fatal signal|Oops:|kernel BUG at)' "$out" | cut -d: -f1)
	ok=yes
	[ $rc -eq 1 ] || ok="exit $rc"
	[ -n "$first" ] || ok="no xmc: line"
	grep -qF "xmc: $names" "$out" || ok="no line 'xmc: $names'"
	[ -z "$crash" ] || [ -z "$first" ] || [ "$crash" -gt "$first" ] ||
		ok="a crash first: $(sed -n "${crash}p" "$out")"
	grep -q '^Kernel panic - not syncing: xmc: ' "$out" || ok="no panic line"
	! grep -q '^torture: seed' "$out" || ok="the machine booted"
	tail -n 1 "$out" | grep -q '^torture: FAILURE (seed 1): the machine did not boot: ' ||
		ok="the last line is not torture's FAILURE verdict"
	verdict=named
	[ "$ok" = yes ] || verdict="MISSED ($ok)"
	printf '%s: %s, exit %s: %s\n' "$name" "$verdict" "$rc" \
		"$(grep -m1 '^xmc: ' "$out" | cut -c1-160)"
	[ "$ok" = yes ] || { missed=$((missed + 1)); tail -20 "$out" >&2; }
	patch -d "$tree" -p1 -R -s -f <"$p" >/dev/null 2>&1
	applied=
done
# the tree as it was: the correct boot again (pokelab rebuilt without the last patch)
ninja -C "$tree/build" tools/pokelab >"$out" 2>&1 || { cat "$out"; exit 2; }
exit $((missed > 0))
