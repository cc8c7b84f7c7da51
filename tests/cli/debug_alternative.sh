#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# debug_alternative.sh POKELAB: "pokelab demo debug-alternative" prints the
# site table with disassembly, and clearcpuid=popcnt flips the hweight site
# from the POPCNT replacement to the original CALL.
pokelab=$1
out=$(mktemp)
trap 'rm -f "$out"' EXIT

fail()
{
	echo "debug_alternative: $*" >&2
	cat "$out" >&2
	exit 1
}

"$pokelab" demo --cpus 2 --flips 1 debug-alternative >"$out" 2>&1 || fail "demo failed"
grep -q 'alt: site .* pokelab_site_hweight+0x0 len 5: feat 4\*32+23 (popcnt) .*: replacement' "$out" ||
	grep -q 'pokelab_site_hweight+0x0 len 5: no entry applies' "$out" ||
	fail "no hweight site line"
grep -q 'final_insn:' "$out" || fail "no final_insn lines"
grep -q 'call \*0x' "$out" || fail "no disassembly of the DIRECT_CALL site"

"$pokelab" demo --cpus 2 --flips 1 debug-alternative clearcpuid=popcnt >"$out" 2>&1 ||
	fail "demo with clearcpuid=popcnt failed"
grep -q 'pokelab_site_hweight+0x0 len 5: no entry applies: original' "$out" ||
	fail "clearcpuid=popcnt did not flip the hweight site"
exit 0
