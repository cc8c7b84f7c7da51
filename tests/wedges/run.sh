#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# run.sh TREE PATCH [SEED...]: one wedging change to the port, as a kernel
# developer's wrong patch would be, caught by the lockup detectors.
#
# TREE is a scratch work tree of this branch with a build directory set up
# once (git worktree add --detach /tmp/wedge HEAD; meson setup /tmp/wedge/build).
# PATCH (tests/wedges/NN-*.patch) is applied to it with git apply, pokelab
# is rebuilt, and for each SEED (default 1 2 3)
#
#	timeout 120 pokelab torture --duration 20 --seed SEED [the patch's options]
#
# must exit 1 with a lockup report naming the stuck CPU, the wait and its
# holder at the port's FILE:LINE, within 20 s + 2 x watchdog_thresh + 3 s
# (the documented bound, docs/testing.md). With SIGNALS=1 the first seed is
# also stopped with timeout -s INT 3 and -s TERM 3 (the child, then its
# group), with the detectors off (nowatchdog lockdep.prove_locking=0) so that
# the wedge outlives the signal: INTERRUPTED, exit 130 and 143. The patch is
# taken off again at the end. Prints one line per run; exits 1 if any run
# missed.
set -u
tree=$1
patch=$(realpath "$2")
shift 2
seeds=${*:-1 2 3}
duration=20
bound=$((duration + 2 * 5 + 3))
out=$(mktemp)
trap 'rm -f "$out"; git -C "$tree" apply -R "$patch" 2>/dev/null' EXIT

opts=$(sed -n 's/^torture options: //p' "$patch")
[ "$opts" = "(defaults)" ] && opts=
case "$opts" in
*MODULE*)
	ninja -C "$tree/build" tests/modules/pokelab_test_mod.o tests/modules/pokelab_provider_mod.o \
		tests/modules/pokelab_consumer_mod.o tests/modules/pokelab_init_mod.o >/dev/null ||
		{ echo "run.sh: the test modules do not build" >&2; exit 2; }
	opts=$(echo "$opts" | sed "s|MODULE|$tree/build/tests/modules/pokelab_test_mod.o|")
	;;
esac
git -C "$tree" apply "$patch" || { echo "run.sh: $patch does not apply to $tree" >&2; exit 2; }
ninja -C "$tree/build" tools/pokelab >"$out" 2>&1 || { cat "$out"; exit 2; }
pokelab=$tree/build/tools/pokelab
name=$(basename "$patch" .patch)
missed=0

for seed in $seeds; do
	t0=$(date +%s.%N)
	# shellcheck disable=SC2086
	timeout 120 "$pokelab" torture --duration $duration --seed "$seed" $opts >"$out" 2>&1
	rc=$?
	secs=$(echo "$(date +%s.%N) - $t0" | bc)
	first=$(grep -m1 -E '^(watchdog: BUG: soft lockup - CPU#[0-9]+|INFO: task CPU#[0-9]+ blocked|rcu: INFO: .* detected stalls|lockdep: WARNING: possible (recursive|circular) locking|csd: BUG: non-responsive CSD lock on CPU#[0-9]+)' "$out")
	ok=yes
	[ $rc -eq 1 ] || ok="exit $rc"
	[ -n "$first" ] || ok="no report"
	grep -q "^torture: FAILURE (seed $seed): " "$out" || ok="no FAILURE line"
	[ "$(echo "$secs < $bound" | bc)" -eq 1 ] || ok="ended after $secs s, bound $bound s"
	# the wait (or both acquisitions) at the port's FILE:LINE, and the CPU holding it up
	grep -Eq '^(watchdog|csd|lockdep|rcu):? .*[a-z0-9_/]+\.cpp:[0-9]+' "$out" || ok="no FILE:LINE"
	grep -Eq '(CPU#[0-9]+.*(took it|did not let go|must run it|release it)|held by CPU#[0-9]+|^rcu: 	[0-9]+-\.\.\.: |^lockdep: CPU#[0-9]+ is trying)' "$out" ||
		ok="no holder"
	printf '%s seed %s: %s, exit %s, %.1f s: %s\n' "$name" "$seed" \
		"$([ "$ok" = yes ] && echo caught || echo "MISSED ($ok)")" "$rc" "$secs" "$first"
	[ "$ok" = yes ] || { missed=$((missed + 1)); tail -20 "$out" >&2; }
done

if [ "${SIGNALS:-0}" = 1 ]; then
	set -- $seeds
	for sig in INT TERM; do
		# shellcheck disable=SC2086
		timeout --preserve-status -s $sig 3 "$pokelab" torture --duration $duration --seed "$1" \
			$opts nowatchdog lockdep.prove_locking=0 >"$out" 2>&1
		rc=$?
		want=130
		[ $sig = TERM ] && want=143
		ok=yes
		[ $rc -eq $want ] || ok="exit $rc"
		grep -q "^torture: INTERRUPTED after .* (SIG$sig)" "$out" || ok="no INTERRUPTED line"
		grep -q '^pokelab: second signal' "$out" && ok="taken as a second signal"
		grep -q "^torture: SIG$sig and the CPUs did not stop" "$out" || ok="not wedged at the signal"
		printf '%s seed %s SIG%s: %s, exit %s: %s\n' "$name" "$1" $sig \
			"$([ "$ok" = yes ] && echo stopped || echo "MISSED ($ok)")" "$rc" \
			"$(grep -m1 '^torture: INTERRUPTED' "$out")"
		[ "$ok" = yes ] || { missed=$((missed + 1)); tail -20 "$out" >&2; }
	done
fi
[ $missed -eq 0 ]
