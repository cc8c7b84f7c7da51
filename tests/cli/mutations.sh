#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# mutations.sh POKELAB MODULE.o [SEEDS] [DURATION]: the mutation sweep.
# Every BUSTED variant that `pokelab torture --help` lists, with the options
# it lists beside it, under seeds 1..SEEDS (5) for --duration DURATION (20):
# each run must end in FAILURE with an xmc: line naming the CPU (and the
# site, the range or the fence) before any crash notice, so that no kind is
# caught only by a crash, a knob check or a timeout (the wedges: a lockup
# report naming the stuck CPU). Prints one row per
# variant (the table of docs/testing.md) and fails if any seed missed.
#
# Variants whose catching run is not torture (the upstream patterns of
# docs/testing.md, judged by their own test) are listed in ELSEWHERE.
# Not in the default setup: meson test -C build --setup mutation --suite mutation.
set -u
pokelab=$1
module=$2
seeds=${3:-5}
duration=${4:-20}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# variant: the test that catches it instead of torture
declare -A ELSEWHERE=(
	[dispatcher-live-half]="test_bpf BpfDispatcherLiveHalf (torture runs no dispatcher)"
)

missed=0
rows=0
# a model violation, or (the wedges) a lockup report naming the stuck CPU
violation='^(xmc: [A-Za-z0-9 →-]+: CPU [0-9]+|watchdog: BUG: soft lockup - CPU#[0-9]+|INFO: task CPU#[0-9]+ blocked|rcu: INFO: .* detected stalls|lockdep: WARNING: possible (recursive|circular) locking|csd: BUG: non-responsive CSD lock)'
while IFS= read -r line; do
	name=$(echo "$line" | awk '{print $1}')
	opts=$(echo "$line" | sed -n 's/.*\[with \(.*\)\]$/\1/p' | sed "s|MODULE.o|$module|")
	if [ -n "${ELSEWHERE[$name]:-}" ]; then
		printf '| %-22s | %-40s | %s |\n' "$name" "-" "${ELSEWHERE[$name]}"
		continue
	fi
	caught=0
	kinds=""
	for seed in $(seq 1 "$seeds"); do
		out="$dir/$name.$seed.out"
		# shellcheck disable=SC2086
		timeout $((duration * 4 + 60)) "$pokelab" torture --duration "$duration" \
			--seed "$seed" $opts "pokelab.busted=$name" >"$out" 2>&1
		rc=$?
		first=$(grep -m1 -E "$violation" "$out")
		crash=$(grep -n -m1 -E '^(pokelab: fatal signal|kernel BUG|Oops)' "$out" | cut -d: -f1)
		at=$(grep -n -m1 -E "$violation" "$out" | cut -d: -f1)
		# named before any crash: the report above it, or recalled on the way down
		if [ $rc -ne 0 ] && [ -n "$first" ] &&
		   { [ -z "$crash" ] || [ "$at" -lt "$crash" ] ||
		     grep -q '^xmc: before this crash, the cross-modifying-code model had reported:$' "$out"; }; then
			caught=$((caught + 1))
			k=$(echo "$first" | sed -e 's/^xmc: \([^:]*\):.*/\1/' -e 's/^lockdep: WARNING: //' \
				-e 's/^watchdog: BUG: \(soft lockup\).*/\1/' -e 's/^INFO: task.*/hung task/' \
				-e 's/^rcu: INFO: .*/RCU stall/' -e 's/^csd: BUG: \(.*CSD lock\).*/\1/')
			case ",$kinds," in *",$k,"*) ;; *) kinds="${kinds:+$kinds,}$k" ;; esac
		else
			echo "MISSED: pokelab.busted=$name seed $seed (exit $rc${crash:+, crash at line $crash}${at:+, xmc line $at})" >&2
			tail -5 "$out" >&2
			missed=$((missed + 1))
		fi
	done
	printf '| %-22s | %-40s | %d/%d seeds: %s |\n' "$name" "${opts:-(defaults)}" "$caught" \
		"$seeds" "${kinds:-nothing}"
	rows=$((rows + 1))
done < <("$pokelab" torture --help 2>&1 | sed -n '/^BUSTED variants/,$p' |
	 # a variant's line folded at 100 columns: its continuations joined back to it
	 awk '/^   / { sub(/^ +/, " "); v = v $0; next } { if (v != "") print v; v = $0 }
	      END { if (v != "") print v }' | grep -E '^  [a-z0-9-]+ ')

[ "$rows" -gt 0 ] || { echo "mutations.sh: no BUSTED variants listed by torture --help" >&2; exit 1; }
[ "$missed" -eq 0 ] || { echo "mutations.sh: $missed runs missed" >&2; exit 1; }
echo "mutations.sh: every variant named by the model in $seeds of $seeds seeds (--duration $duration)"
