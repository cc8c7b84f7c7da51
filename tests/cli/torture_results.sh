#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# torture_results.sh POKELAB: pokelab torture --results FILE appends one JSON
# line per run (docs/testing.md, "Campaigns"): a run and its record's replay
# command make two whole records and the same decisions; a FAILURE, a
# crash (a fatal signal) and an interrupted run each leave their record; a
# file that is not torture's (a symlink, a directory, a FIFO, another
# program's text, a record cut short) is refused before anything boots and
# left as it was.
. "$(dirname "$0")/lib.sh"
r=$dir/r.jsonl

# field FILE LINE EXPR: a Python expression over the record r on LINE (1-based)
field() {
	python3 -c "import json, sys
r = json.loads(open(sys.argv[1]).readlines()[int(sys.argv[2]) - 1])
print($3)" "$1" "$2"
}
# record FILE LINE: the line itself, for a failure's message
record() {
	sed -n "$2p" "$1"
}

"$pokelab" torture --ops 200 --seed 3 --cpus 2 --results "$r" >"$dir/a.out" 2>&1 ||
	fail "the first run failed"
# the replay command, run as it stands, makes the same decisions; its record is the second
replay=$(field "$r" 1 "r['replay']")
case "$replay" in /*" torture --seed 3 --ops 200 --cpus 2") ;; *) fail "replay: $replay" ;; esac
eval "$replay --results '$r'" >"$dir/replay.out" 2>&1 || fail "the replay failed: $replay"
[ "$(grep '^decision digest' "$dir/a.out")" = "$(grep '^decision digest' "$dir/replay.out")" ] ||
	fail "the replay made other decisions"
[ "$(wc -l <"$r")" -eq 2 ] || fail "expected 2 records, got $(wc -l <"$r")"
# the results file is named once its record is in, as every written file is
grep -qxF "pokelab: wrote $r (--results)" "$dir/a.out" || fail "no 'pokelab: wrote $r (--results)'"
for n in 1 2; do
	o="r['options']"
	want="pokelab-torture-result/1 SUCCESS 3 200 2 0"
	got=$(field "$r" $n "r['format'], r['verdict'], r['seed'], $o['ops'], $o['cpus'],
					r['exit']")
	[ "$got" = "$want" ] || fail "record $n: $(record "$r" $n)"
	c="r['counts']"
	[ "$(field "$r" $n "$c['decisions'], $c['violations'], $c['batches'] > 0, r['crash']")" = \
	  "400 0 True False" ] || fail "record $n's counts: $(record "$r" $n)"
	field "$r" $n "r['version'], r['git'], r['host'], r['start'], r['boot'], r['machine']" |
		grep -q "^0\.1\.0 .* nr_cpus=2 machine: 2 CPUs" ||
		fail "record $n's head: $(record "$r" $n)"
done

# A FAILURE: the first violation is the first report.
"$pokelab" torture --duration 5 --seed 1 --results "$r" pokelab.busted=no-sync-2 \
	>"$dir/f.out" 2>&1 && fail "no-sync-2 passed"
[ "$(field "$r" 3 "r['verdict'], r['exit'], r['options']['params']")" = \
  "FAILURE 1 ['pokelab.busted=no-sync-2']" ] || fail "the FAILURE's record: $(record "$r" 3)"
[ "$(field "$r" 3 "r['first_report']")" = "$(grep -m1 '^xmc: .*: CPU [0-9]' "$dir/f.out")" ] ||
	fail "the first report is not the first violation: $(field "$r" 3 "r['first_report']")"
field "$r" 3 "r['replay']" | grep -q -- '--duration 5 --cpus [0-9]* pokelab.busted=no-sync-2$' ||
	fail "the FAILURE's replay: $(field "$r" 3 "r['replay']")"

# A crash leaves a record from the death hook; an orderly stop, INTERRUPTED.
for sig in SEGV INT; do
	"$pokelab" torture --duration 60 --seed 2 --cpus 2 --results "$r" >"$dir/$sig.out" 2>&1 &
	pid=$!
	while kill -0 $pid 2>/dev/null && ! grep -qs '^torture: seed' "$dir/$sig.out"; do
		sleep 0.05
	done
	sleep 0.5
	kill -$sig $pid
	wait $pid
	echo $? >"$dir/$sig.rc"
done
[ "$(wc -l <"$r")" -eq 5 ] || fail "the crash and the stop: expected 5 records, got $(wc -l <"$r")"
[ "$(field "$r" 4 "r['verdict'], r['crash'], r['reported_before_crash'], r['exit'], r['seed']")" = \
  "FAILURE True False 1 2" ] || fail "the crash's record: $(record "$r" 4)"
[ "$(field "$r" 5 "r['verdict'], r['crash'], r['exit']")" = "INTERRUPTED False 130" ] ||
	fail "the stop's record: $(record "$r" 5)"
[ "$(cat "$dir/INT.rc")" = 130 ] || fail "the stop exited with $(cat "$dir/INT.rc")"

# Refused before the boot, exit 2, the file untouched.
refused() {
	what=$1
	shift
	"$pokelab" torture --ops 10 --cpus 2 --results "$@" >"$dir/out" 2>&1
	rc=$?
	[ $rc -eq 2 ] || fail "$what: exit $rc, expected 2"
	[ "$(wc -l <"$dir/out")" -eq 1 ] || fail "$what: expected one line"
	grep -q '^machine:' "$dir/out" && fail "$what: the machine booted"
	grep -qF -- "$1" "$dir/out" || fail "$what: the line does not name $1"
}
cp "$r" "$dir/keep"
ln -s "$r" "$dir/link"
refused "a symlink" "$dir/link"
mkdir "$dir/d"
refused "a directory" "$dir/d"
mkfifo "$dir/fifo"
refused "a FIFO" "$dir/fifo"
printf 'not ours\n' >"$dir/other"
refused "another program's file" "$dir/other"
grep -q 'is not a torture result record' "$dir/out" || fail "the reason: $(cat "$dir/out")"
[ "$(cat "$dir/other")" = "not ours" ] || fail "another program's file was written"
{ head -n 1 "$r"; head -c 100 "$r"; } >"$dir/cut"
refused "a record cut short" "$dir/cut"
grep -q 'last line is incomplete' "$dir/out" || fail "the reason: $(cat "$dir/out")"
refused "an empty name" ""
cmp -s "$r" "$dir/keep" || fail "the results file changed through a refused link"
exit 0
