#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# v8_label.sh POKELAB: wherever pokelab offers or shows ct_defer=v8, it says
# what v8 is here: "v8: pokelab's reconstruction of an RFC, not posted
# code" (docs/context_tracking.md). The --help of every command that takes
# --ct-defer (read from --help-all), explain deferral's text for v8, and
# the machine line of a run under v8.
. "$(dirname "$0")/lib.sh"

label="v8: pokelab's reconstruction of an RFC, not posted code"

# has FILE WHAT: FILE holds the label, lines joined (help text wraps)
has() {
	tr '\n' ' ' <"$1" | tr -s ' ' | grep -qF "$label" || fail "$2 does not say: $label"
}

n=0
"$pokelab" --help-all >"$dir/all" 2>&1 || fail "pokelab --help-all: exit $?"
for cmd in demo torture explain "run isolation"; do
	# shellcheck disable=SC2086
	"$pokelab" $cmd --help >"$dir/out" 2>&1 || fail "pokelab $cmd --help: exit $?"
	grep -q -- '--ct-defer' "$dir/out" || fail "pokelab $cmd --help: no --ct-defer"
	has "$dir/out" "pokelab $cmd --help"
	n=$((n + 1))
done
# no other command takes --ct-defer without being checked here
takes=$(grep -c -- '--ct-defer' "$dir/all")
[ "$takes" -ge "$n" ] || fail "pokelab --help-all: $takes --ct-defer options, $n checked"

"$pokelab" explain deferral --cpus 3 --ct-defer v8 >"$dir/out" 2>&1 ||
	fail "pokelab explain deferral --ct-defer v8: exit $?"
has "$dir/out" "explain deferral --ct-defer v8"
# the machine line, wrapped as explain wraps its text
tr '\n' ' ' <"$dir/out" | tr -s ' ' | grep -qF "ct_defer v8 ($label)" ||
	fail "the machine line under ct_defer=v8 does not say: ct_defer v8 ($label)"
echo "v8 labelled in $n commands' --help, explain's text and the machine line"
