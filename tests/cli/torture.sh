#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# torture.sh POKELAB MODE [ARGS...]: short pokelab torture runs.
#
#   busted NAME [ARGS...]	pokelab.busted=NAME must end in FAILURE (exit 1), the
#				first violation line naming the CPU and the site, the
#				next its possible bytes (or its old bytes), and, for a
#				CPU left unsynced or a refs count, a "  why: " line
#				before its port line; NAME "-" for none (a broken
#				policy in ARGS, --ct-defer v5)
#   correct [ARGS...]		the right protocol: SUCCESS (exit 0), 0 violations;
#				with --module, the module loaded, unloaded and run
#   digest			--seed 7 --ops K twice: the same decision digest;
#				--seed 8: another
#   wedge NAME [ARGS...]	pokelab.busted=NAME wedges a CPU: with watchdog_thresh=1
#				the run ends long before its --duration 60 in FAILURE
#				(exit 1), the first report naming the stuck CPU, the
#				wait and its holder at the port's FILE:LINE
#   wedge-signal NAME SIG	the same wedge, stopped by timeout -s SIG (the child,
#				then its group: one stop): INTERRUPTED, exit 128 + SIG,
#				no second signal needed
#   violations			a broken run with more than three violations: three
#				reports in full and "(N more violations not shown ...)"
#				by default, every one with --violations all
set -u
pokelab=$1
mode=$2
shift 2
out=$(mktemp)
trap 'rm -f "$out"' EXIT

fail() {
	echo "$*" >&2
	cat "$out" >&2
	exit 1
}

case "$mode" in
busted)
	name=$1
	shift
	if [ "$name" = - ]; then
		name="none ($*)"
		"$pokelab" torture --duration 5 --seed 1 "$@" >"$out" 2>&1
		rc=$?
	else
		# the run stops at the first violation: the duration bounds only a miss.
		# A race's window is hit by chance: a run in which the model named
		# nothing (a SUCCESS, or the port's own BUG_ON() first) is tried again
		# with the next seed, five seeds at the most (a variant named in 2 of
		# 3 seeds then misses the row 1 time in 243; cr3-loaded-late under
		# v7-tlbi went unnamed in seeds 1-3 once with the box at load 7-9)
		for seed in 1 2 3 4 5; do
			"$pokelab" torture --duration 15 --seed $seed "$@" "pokelab.busted=$name" \
				>"$out" 2>&1
			rc=$?
			grep -qE '^xmc: [A-Za-z0-9 ]+: CPU [0-9]+' "$out" && break
			[ $seed -eq 5 ] || echo "pokelab.busted=$name: not named with seed $seed (exit $rc)"
		done
	fi
	# a fault the kernel itself BUG()s on (a later pass validating what the
	# broken one wrote) may end the run: the model must have named it first
	if grep -q '^xmc: before this crash, the cross-modifying-code model had reported:$' "$out"; then
		[ $rc -ne 0 ] || fail "pokelab.busted=$name: a crash notice with exit 0"
	else
		[ $rc -eq 1 ] || fail "pokelab.busted=$name: expected exit 1, got $rc"
		grep -q '^torture: FAILURE (seed [1-5])' "$out" || fail "pokelab.busted=$name: no FAILURE line"
		# one line ends the run, where the port keeps what failed on it (issue 35);
		# a crash's is written to stdout and to stderr, the same line twice
		tail -n 1 "$out" | grep -q '^torture: FAILURE (seed [1-5]): ' ||
			fail "pokelab.busted=$name: the last line is not the FAILURE line"
		ends=$(grep '^torture: \(violations in\|FAILURE\)' "$out" | sort -u | wc -l)
		[ "$ends" -eq 1 ] ||
			fail "pokelab.busted=$name: more than one line ends the run"
	fi
	line='^xmc: [A-Za-z0-9 ]+: CPU [0-9]+'
	first=$(grep -m1 -E "$line" "$out")
	# a CPU left unsynced, or a refs count gone wrong, says why on the lines after
	if echo "$first" | grep -Eq '^xmc: (torn fetch|stale after return|stale at kernel entry|INT3 without its handler|INT3 before its refs|INT3 refs held past the drain): '; then
		at=$(grep -n -m1 -E "$line" "$out" | cut -d: -f1)
		awk -v at="$at" 'NR > at && /^[^ ]/ { exit } NR > at && /^  why: / { found = 1 }
				 END { exit !found }' "$out" ||
			fail "pokelab.busted=$name: the first violation does not say why"
	fi
	# R2 at entry names the CPU and where it reached instrumentable code (the
	# site only when the model kept the operation's): that is the fault's place
	if echo "$first" | grep -Eq '^xmc: stale at kernel entry: CPU [0-9]+: reached instrumentable code at [^ ]+\+0x[0-9a-f]+ '; then
		echo "pokelab.busted=$name: $first"
		exit 0
	fi
	# the store→load rule names the CPU, the pair and where its load was
	if echo "$first" | grep -q '^xmc: no fence between a store and its load: '; then
		echo "$first" | grep -Eq '^xmc: no fence between a store and its load: CPU [0-9]+: it .* at [^ ]+\+0x[0-9a-f]+ \[0x[0-9a-f]+\] with no full fence between' ||
			fail "pokelab.busted=$name: the fence violation does not name the CPU and the load"
		echo "pokelab.busted=$name: $first"
		exit 0
	fi
	# R3 on the counts: the CPU whose count was still held; a declined or a late trap,
	# the INT3's address
	if echo "$first" | grep -Eq '^xmc: INT3 (refs held past the drain|declined on an armed site|handled after its batch): '; then
		echo "$first" | grep -Eq '^xmc: INT3 (refs held past the drain: CPU [0-9]+: .* read [1-9][0-9]*|(declined on an armed site|handled after its batch): CPU [0-9]+ at (0x[0-9a-f]+|.* \[0x[0-9a-f]+\]))' ||
			fail "pokelab.busted=$name: the INT3 violation does not name the CPU and the count or site"
		echo "pokelab.busted=$name: $first"
		exit 0
	fi
	# R5's stack check, as the way down prints it (signal context: the address alone)
	if echo "$first" | grep -Eq '^xmc: INT3 emulated wrongly: CPU [0-9]+ at 0x[0-9a-f]+: '; then
		echo "pokelab.busted=$name: $first"
		exit 0
	fi
	# the waited cross-call rule names the CPU left, the function, the sender and its port place
	if echo "$first" | grep -q '^xmc: waited call returned early: '; then
		echo "$first" | grep -Eq '^xmc: waited call returned early: CPU [0-9]+ had not ended [^ ]+\(\) when [a-z_]+\(\) on CPU [0-9]+ returned from its wait to [^ ]+$' ||
			fail "pokelab.busted=$name: the cross-call violation does not name the CPU, the function and the sender"
		grep -Eq '^  port: [a-z_]+\(\) at kernel_shim/kernel/smp\.cpp:[0-9]+$' "$out" ||
			fail "pokelab.busted=$name: the cross-call violation does not name the sender's port line"
		echo "pokelab.busted=$name: $first"
		exit 0
	fi
	# the TLB rule names the CPU and the kernel range it touched
	if echo "$first" | grep -q '^xmc: stale TLB: '; then
		echo "$first" | grep -Eq '^xmc: stale TLB: CPU [0-9]+ at .*: touched kernel range \[0x[0-9a-f]+, 0x[0-9a-f]+\)' ||
			fail "pokelab.busted=$name: the stale-TLB violation does not name the CPU and the range"
		echo "pokelab.busted=$name: $first"
		exit 0
	fi
	echo "$first" | grep -Eq "$line at .* \[0x[0-9a-f]+\]" ||
		fail "pokelab.busted=$name: the first violation does not name a CPU and a site"
	# the bytes a CPU could fetch, or (rules on a site's final bytes) its old ones
	grep -A1 -m1 -E "$line" "$out" |
		grep -Eq '^  (possible bytes: (\[[0-9a-f|]+\] ?)+|(old|build): +([0-9a-f]{2} )+ .*)$' ||
		fail "pokelab.busted=$name: the first violation does not show the bytes"
	echo "pokelab.busted=$name: $first"
	;;
correct)
	# a smoke run of the correct protocol: the long runs are docs/testing.md's
	"$pokelab" torture --duration 6 --seed 3 "$@" >"$out" 2>&1
	rc=$?
	[ $rc -eq 0 ] || fail "torture $*: expected exit 0, got $rc"
	# (PARTIAL: the model passed all it could keep; a busy host may overflow it)
	grep -Eq '^torture: SUCCESS(, PARTIAL)? \(seed 3\)' "$out" ||
		fail "torture $*: no SUCCESS line"
	grep -Eq '^xmc: .* 0 violations -> PASS(, PARTIAL: .*)?$' "$out" ||
		fail "torture $*: the model did not pass"
	grep -q '^knobs: all in the state' "$out" || fail "torture $*: a knob did not end as asked"
	! grep -q 'WARNING' "$out" || fail "torture $*: a WARNING"
	! grep -q 'BUG:' "$out" || fail "torture $*: a BUG: report"
	case " $* " in
	*" --module "*)
		grep -Eq '^module .*: [1-9][0-9]* loads?, [1-9][0-9]* unloads?, .*, [1-9][0-9]* static call updates?, [1-9][0-9]* runs? by the CPUs$' "$out" ||
			fail "torture $*: the module was not loaded, unloaded and run"
		;;
	esac
	tail -4 "$out"
	;;
wedge)
	name=$1
	shift
	"$pokelab" torture --duration 60 --seed 1 "$@" watchdog_thresh=1 "pokelab.busted=$name" \
		>"$out" 2>&1
	rc=$?
	[ $rc -eq 1 ] || fail "pokelab.busted=$name: expected exit 1, got $rc"
	grep -q '^torture: FAILURE (seed 1): ' "$out" || fail "pokelab.busted=$name: no FAILURE line"
	# ended by the report, not by its duration
	secs=$(sed -n 's/^torture: \([0-9]*\)\.[0-9] s: .*/\1/p' "$out" | tail -1)
	[ -n "$secs" ] && [ "$secs" -lt 60 ] ||
		fail "pokelab.busted=$name: the run was not ended by its report (${secs:-no} s)"
	first=$(grep -m1 -E '^(watchdog: BUG: soft lockup - CPU#[0-9]+ stuck for [0-9]+s!|INFO: task CPU#[0-9]+ blocked|rcu: INFO: .* detected stalls|lockdep: WARNING: possible (recursive|circular) locking)' "$out")
	[ -n "$first" ] || fail "pokelab.busted=$name: no lockup report"
	case "$first" in
	lockdep:*)
		# both acquisitions, each at the port's FILE:LINE, the taking CPU named
		grep -Eq '^lockdep: CPU#[0-9]+ is trying to acquire lock:$' "$out" &&
			[ "$(grep -cE '^lockdep:  \([a-z_]+\) at [a-z0-9_/]+\.cpp:[0-9]+ in ' "$out")" -ge 2 ] ||
			fail "pokelab.busted=$name: lockdep does not name the CPU and both sites"
		;;
	*)
		# the wait at its FILE:LINE, and the CPU that holds it up
		grep -Eq '^watchdog:   (spinning|blocked) in .* at [a-z0-9_/]+\.cpp:[0-9]+' "$out" ||
			fail "pokelab.busted=$name: the report does not name the wait's FILE:LINE"
		grep -Eq '^watchdog:   .*(CPU#[0-9]+.*(took it|did not let go)|held by CPU#[0-9]+)' "$out" ||
			fail "pokelab.busted=$name: the report does not name the holder"
		;;
	esac
	echo "pokelab.busted=$name: $first"
	;;
wedge-signal)
	name=$1 sig=$2
	timeout --preserve-status -s "$sig" 2 "$pokelab" torture --duration 60 --seed 1 \
		"pokelab.busted=$name" >"$out" 2>&1
	rc=$?
	case "$sig" in INT) want=130 ;; TERM) want=143 ;; *) want=129 ;; esac
	[ $rc -eq $want ] || fail "pokelab.busted=$name, SIG$sig: expected exit $want, got $rc"
	grep -q "^torture: INTERRUPTED after .* (SIG$sig), seed 1: " "$out" ||
		fail "pokelab.busted=$name, SIG$sig: no INTERRUPTED line"
	# one verdict line: the lockup found before the signal is said on it (issue 35)
	[ "$(grep -cE '^torture: (SUCCESS|FAILURE|INTERRUPTED)' "$out")" -eq 1 ] ||
		fail "pokelab.busted=$name, SIG$sig: more than one verdict line"
	grep -q '^torture: SIG'"$sig"' and the CPUs did not stop within 1 s' "$out" ||
		fail "pokelab.busted=$name, SIG$sig: the run was not wedged"
	grep -q '^pokelab: second signal' "$out" &&
		fail "pokelab.busted=$name, SIG$sig: taken as two signals"
	grep -q '^xmc: model of cross-modifying code' "$out" ||
		fail "pokelab.busted=$name, SIG$sig: no summary"
	echo "pokelab.busted=$name, SIG$sig: exit $rc, $(grep '^torture: INTERRUPTED' "$out")"
	;;
violations)
	line='^xmc: [A-Za-z0-9 ]+: CPU [0-9]+'
	total() { sed -n "s/^torture: FAILURE (seed $seed): \\([0-9]*\\) violations*\\(;.*\\)*\$/\\1/p" "$out"; }
	# the run stops soon after its first violation: how many it found by
	# then depends on when the stop came (1 in one CI run of seed 1, 13-16
	# in others), so up to five seeds for one with more than three
	for seed in 1 2 3 4 5; do
		"$pokelab" torture --duration 15 --seed $seed pokelab.busted=no-sync-1 >"$out" 2>&1
		n=$(total)
		[ -n "$n" ] || fail "seed $seed: no FAILURE line with a count of violations"
		[ "$n" -gt 3 ] && break
	done
	[ "$n" -gt 3 ] || fail "seeds 1-5 gave at most $n violations: too few to show the rest counted"
	[ "$(grep -cE "$line" "$out")" -eq 3 ] || fail "default: not three reports in full"
	grep -qxE "\($((n - 3)) more violations? not shown; --violations all prints every one\)" "$out" ||
		fail "default: no line counting the $((n - 3)) reports not shown"
	"$pokelab" torture --duration 15 --seed $seed --violations all pokelab.busted=no-sync-1 \
		>"$out" 2>&1
	n=$(total)
	[ -n "$n" ] || fail "--violations all: no FAILURE line with a count of violations"
	[ "$(grep -cE "$line" "$out")" -eq "$n" ] || fail "--violations all: not all $n reports in full"
	! grep -q 'not shown' "$out" || fail "--violations all: some not shown"
	echo "--violations: 3 shown and the rest counted; all: $n of $n"
	;;
digest)
	d() {
		"$pokelab" torture --seed "$1" --ops 400 >"$out" 2>&1 || fail "--seed $1: exit $?"
		sed -n 's/^decision digest: \([0-9a-f]*\) .*/\1/p' "$out"
	}
	a=$(d 7)
	b=$(d 7)
	c=$(d 8)
	[ -n "$a" ] || fail "no digest printed"
	[ "$a" = "$b" ] || fail "seed 7 gave $a, then $b"
	[ "$a" != "$c" ] || fail "seeds 7 and 8 gave the same digest $a"
	echo "seed 7: $a twice; seed 8: $c"
	;;
*)
	echo "torture.sh: unknown mode $mode" >&2
	exit 2
	;;
esac
exit 0
