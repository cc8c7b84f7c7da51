#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# campaign.sh POKELAB CAMPAIGN: tools/campaign (docs/testing.md, "Campaigns").
# The merge's table from hand-made records (per policy: runs, hours,
# failures, interrupted, first reports; a replay command under each
# failure; lines that are not records skipped and named); a local campaign
# of 4 runs of 2 s under GNU parallel -j 2, two of them BUSTED, whose table,
# records and replay commands are checked, and whose records merge into the
# same table; a one-run mutation sweep (--busted); a job list longer than a
# pipe holds; bad input refused.
# Counts only: the wall time is the host's.
. "$(dirname "$0")/lib.sh"
campaign=$2
pokelab=$(realpath "$pokelab")
command -v parallel >/dev/null ||
	fail "GNU parallel is not installed (tools/install-deps.sh installs it)"

# row TABLE POLICY RUNS HOURS FAILURES INTERRUPTED REPORTS: TABLE has that row
row() {
	grep -qE "^\| $2 +\| +$3 \| +$4 \| +$5 \| +$6 \| $7 \|$" "$1" ||
		fail "no row '$2 $3 $4 $5 $6 $7' in $1: $(cat "$1")"
}

# The merge, on records as torture and campaign write them (one lost run, one interrupted).
python3 - "$dir/m.jsonl" <<'EOF'
import json, sys
F = {'format': 'pokelab-torture-result/1'}
no = {'params': []}
recs = [
	dict(F, host='a', seed=1, options=no, verdict='SUCCESS', duration_s=1800),
	dict(F, host='b', seed=2, options=no, verdict='FAILURE', duration_s=1800,
	     first_report='xmc: torn fetch: CPU 1 at x',
	     argv=['pokelab', 'torture', '--seed', '2']),
	dict(F, host='a', seed=3, options=no, verdict='INTERRUPTED', duration_s=900),
	'not a record',
	{'seed': 4},
	dict(F, host='b', seed=1, options={'ct_defer': 'v7', 'nohz_full': '2-3', 'params': []},
	     verdict='SUCCESS', duration_s=3600),
	dict(F, host='b', seed=2, policy='v7', verdict='FAILURE', lost=True, duration_s=0,
	     reason='no record: killed after the 140 s timeout',
	     argv=['pokelab', 'torture', '--seed', '2', '--ct-defer', 'v7']),
]
with open(sys.argv[1], 'w') as f:
	for r in recs:
		f.write((r if isinstance(r, str) else json.dumps(r)) + '\n')
EOF
"$campaign" merge "$dir/m.jsonl" >"$dir/merge.out" 2>"$dir/merge.err" &&
	fail "the merge passed failures"
row "$dir/merge.out" default 3 1.25 1 1 "torn fetch x1"
row "$dir/merge.out" v7 2 1.00 1 0 "no record: killed after the 140 s timeout x1"
grep -q '^campaign: 5 runs, 2.25 run-hours on 2 hosts (a, b); 2 failures$' "$dir/merge.out" ||
	fail "the merge's summary: $(cat "$dir/merge.out")"
grep -qx '    pokelab torture --seed 2' "$dir/merge.out" || fail "no replay of default seed 2"
grep -qx '    pokelab torture --seed 2 --ct-defer v7' "$dir/merge.out" ||
	fail "no replay of v7 seed 2"
[ "$(grep -c 'not a torture result record, skipped' "$dir/merge.err")" -eq 2 ] ||
	fail "the bad lines were not named: $(cat "$dir/merge.err")"
grep -q 'm.jsonl:4: not a torture' "$dir/merge.err" || fail "line 4 not named"

# A local campaign: seeds 1-2 x {default, no-sync-2}, 2 s each, two at a time.
r=$dir/c.jsonl
"$campaign" run --pokelab "$pokelab" --seeds 1-2 --durations 2 --policies default \
	--policy 'broken:pokelab.busted=no-sync-2' -j 2 --results "$r" >"$dir/run.out" 2>&1
[ $? -eq 1 ] || fail "the campaign with BUSTED runs did not exit 1"
row "$dir/run.out" default 2 '0\.00' 0 0 -
row "$dir/run.out" broken 2 '0\.00' 2 0 "torn fetch x2"
grep -q '^campaign: 4 runs, .* 2 failures$' "$dir/run.out" || fail "the summary"
grep -q '^campaign: 4 of 4 runs done' "$dir/run.out" || fail "no progress lines"
[ "$(wc -l <"$r")" -eq 4 ] || fail "expected 4 records in $r"
# every failure: its first report, then its replay command, which is this pokelab's
for s in 1 2; do
	replay="    $pokelab torture --seed $s --duration 2 --cpus [0-9]* pokelab.busted=no-sync-2"
	grep -A1 "^  broken, seed $s, on .*: FAILURE: xmc: torn fetch: CPU" "$dir/run.out" |
		grep -qx "$replay" || fail "no replay of broken seed $s"
done
# the records: the campaign's policy, job number, the console's last lines for a failure
python3 - "$r" <<'EOF' || fail "the records"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert sorted((r['policy'], r['seed'], r['verdict']) for r in recs) == [
	('broken', 1, 'FAILURE'), ('broken', 2, 'FAILURE'),
	('default', 1, 'SUCCESS'), ('default', 2, 'SUCCESS')], recs
assert sorted(r['job'] for r in recs) == [1, 2, 3, 4]
assert all(r.get('console_tail') for r in recs if r['verdict'] == 'FAILURE')
assert all(r['options']['duration'] == 2 for r in recs)
EOF
# merged again, the same rows
"$campaign" merge "$r" >"$dir/merge2.out" 2>&1
row "$dir/merge2.out" default 2 '0\.00' 0 0 -
row "$dir/merge2.out" broken 2 '0\.00' 2 0 "torn fetch x2"

# The mutation sweep's way: a BUSTED variant named by the model passes.
"$campaign" run --pokelab "$pokelab" --busted no-sync-2 --seeds 1 --durations 2 -j 2 \
	--results "$dir/mut.jsonl" >"$dir/mut.out" 2>&1 || fail "the mutation campaign failed"
grep -qE '^\| `no-sync-2` \| \(defaults\) \| 1/1 runs: torn fetch \|$' "$dir/mut.out" ||
	fail "the mutation row: $(cat "$dir/mut.out")"

# A job list longer than a pipe holds (64 KiB) with jobs that print more than one holds
# (a stand-in pokelab: a FAILURE record and 12 long console lines each): parallel reads
# its jobs from a file, as it needs them, while the campaign reads what the jobs print.
cat >"$dir/fake" <<'EOF'
#!/bin/sh
while [ $# -gt 0 ]; do [ "$1" = --results ] && f=$2; shift; done
echo '{"format":"pokelab-torture-result/1","verdict":"FAILURE","duration_s":1}' >>"$f"
for i in 1 2 3 4 5 6 7 8 9 10 11 12; do printf 'console %04096d\n' $i; done
exit 1
EOF
chmod +x "$dir/fake"
pad=pokelab.pad=$(printf 'x%.0s' $(seq 8000))
timeout 60 "$campaign" run --pokelab "$dir/fake" --seeds 1-20 --durations 1 -j 2 \
	--results "$dir/big.jsonl" -- "$pad" >"$dir/big.out" 2>&1
[ $? -eq 1 ] || fail "a campaign of 160 KiB of jobs printing 1 MiB did not finish"
[ "$(wc -l <"$dir/big.jsonl")" -eq 20 ] ||
	fail "the long campaign: $(wc -l <"$dir/big.jsonl") records"

# Bad input: one line, exit 2, nothing run.
printf 'not ours\n' >"$dir/other"
for bad in "--results $dir/other" "--seeds x" "--policies nosuch" "--busted nosuch" \
	   "--policy nocolon" "-j 0"; do
	# shellcheck disable=SC2086
	"$campaign" run --pokelab "$pokelab" $bad >"$dir/bad.out" 2>&1
	rc=$?
	[ $rc -eq 2 ] || fail "$bad: exit $rc, expected 2"
	[ "$(wc -l <"$dir/bad.out")" -eq 1 ] ||
		fail "$bad: expected one line: $(cat "$dir/bad.out")"
done
[ "$(cat "$dir/other")" = "not ours" ] || fail "another program's file was written"
exit 0
