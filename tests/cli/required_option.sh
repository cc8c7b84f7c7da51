#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# required_option.sh POKELAB: a required option or argument left out is
# one line that says what it takes and the command's whole form, and for an
# option an example built on the command line given (docs/cli.md), not
# CLI11's "--output is required": pokelab timeline TRACE without -o, the
# newcomer's case. An unknown option beside a missing one is named first.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/leaves.sh"

form='pokelab timeline TRACE --output FILE.svg'
usage_line timeline t.dat
ex='e.g. pokelab timeline t.dat --output t.svg'
grep -Fqx "pokelab: timeline: no --output given (the SVG to write); expected $form, $ex" "$dir/err" ||
	fail "timeline t.dat: $(cat "$dir/err")"
usage_line timeline --title 'a b' t.dat
grep -Fq "e.g. pokelab timeline --title 'a b' t.dat --output t.svg" "$dir/err" ||
	fail "timeline --title 'a b' t.dat: not the command line given: $(cat "$dir/err")"
usage_line timeline -o t.svg
grep -Eq "^pokelab: timeline: no trace given \(the trace: .*\); expected $form$" "$dir/err" ||
	fail "timeline -o t.svg: $(cat "$dir/err")"
usage_line timeline t.dat --outptu t.svg
grep -Fqx 'pokelab: --outptu: unknown option of timeline; did you mean --output?' "$dir/err" ||
	fail "timeline t.dat --outptu t.svg: $(cat "$dir/err")"
echo "a required option left out: what it takes and an example"
exit 0
