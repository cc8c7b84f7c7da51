#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# timeline.sh POKELAB: `pokelab demo --timeline` and `pokelab timeline`
# (docs/timeline.md). The demo's SVG must render with rsvg-convert, hold one
# lane per CPU and, for every batch of the run's trace, its four phases;
# its IPI arrows must add up to the IPIs the trace sent (40 CPUs: 2 to a
# lane, with a note); the picture drawn back from the text trace and from
# the trace.dat of the same run must be the same file (saying that the
# default trace_event= has no INT3 trap; recorded with their event, the
# demo's own); a BUSTED torture run marks its violation on the CPU it names;
# `run bpf-stats --timeline` draws each of its two machines.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/timeline_lib.sh"
# axis_ok SVG: the time axis is regular: its labels share one unit, and each is a whole
# multiple of one step, the smallest difference between neighbours (breaks skip ticks)
axis_ok() {
	grep -o 'text-anchor="middle">+[0-9.]* [a-z]*<' "$1" | sed 's/.*>+//; s/<$//' >"$dir/axis"
	[ "$(wc -l <"$dir/axis")" -ge 3 ] || fail "$1: fewer than 3 ticks on the time axis"
	[ "$(awk '{print $2}' "$dir/axis" | sort -u | wc -l)" -eq 1 ] ||
		fail "$1: time axis in several units: $(tr '\n' ' ' <"$dir/axis")"
	awk '{ v[NR] = $1 }
	     END { step = 0
		   for (i = 2; i <= NR; i++)
			if (v[i] <= v[i - 1]) exit 1
			else if (!step || v[i] - v[i - 1] < step) step = v[i] - v[i - 1]
		   for (i = 1; i <= NR; i++) {
			k = v[i] / step
			if (k - int(k + 0.5) > 1e-6 || int(k + 0.5) - k > 1e-6) exit 1
		   } }' "$dir/axis" ||
		fail "$1: time axis not regular: $(tr '\n' ' ' <"$dir/axis")"
}
command -v rsvg-convert >/dev/null || fail "rsvg-convert missing (tools/install-deps.sh)"
"$pokelab" demo --cpus 4 --flips 3 --nohz-full 3 --timeline "$dir/t.svg" \
	--trace "$dir/t.txt" --trace "$dir/t.dat" >"$dir/out" 2>"$dir/err" ||
	fail "demo --timeline failed ($?)"
rsvg-convert -o "$dir/t.png" "$dir/t.svg" || fail "rsvg-convert cannot render the SVG"
[ "$(head -c 8 "$dir/t.png" | od -An -c | tr -d ' ')" = "211PNG\r\n032\n" ] ||
	fail "rsvg-convert wrote no PNG"

lanes=$(grep -c '<g class="lane" data-cpu="[0-3]" data-cpus="1">' "$dir/t.svg")
[ "$lanes" -eq 4 ] || fail "$lanes lanes for 4 CPUs"
batches=$(grep -c 'text_poke_batch: .* phase=done$' "$dir/t.txt")
[ "$batches" -gt 0 ] || fail "no batch in the trace"
for p in begin int3 tails first_bytes; do
	n=$(grep -c "class=\"phase phase-$p\"" "$dir/t.svg")
	[ "$n" -eq "$batches" ] || fail "phase $p: $n bands for $batches batches"
done
# one arrow per (sender, receiver) and pixel: their counts add up to the trace's targets
sent=$(grep ipi_send_cpumask "$dir/t.txt" | sed 's/.*cpumask=\([0-9a-f,]*\) .*/\1/' |
	gawk -F, '{ v = strtonum("0x" $NF); while (v) { n += v % 2; v = int(v / 2) } } END { print n + 0 }')
drawn=$(grep -o '<g class="ipi ipi-[a-z]*" [^>]*data-n="[0-9]*"' "$dir/t.svg" |
	sed 's/.*data-n="//; s/"//' | awk '{ n += $1 } END { print n + 0 }')
[ "$sent" -gt 0 ] && [ "$drawn" -eq "$sent" ] || fail "IPIs: $drawn drawn, $sent in the trace"
# the isolated CPU spends the run in user mode and runs its deferred flushes at entry
grep -q '<rect class="user" data-cpu="3"' "$dir/t.svg" || fail "no user-mode span on CPU 3"
grep -q '<path class="flush" data-cpu="3"' "$dir/t.svg" || fail "no deferred flush on CPU 3"

"$pokelab" timeline "$dir/t.txt" -o "$dir/a.svg" --title run >"$dir/a.out" ||
	fail "timeline of the text trace failed"
# the picture is named as every written file is, once in place
grep -qxF "pokelab: wrote $dir/a.svg (--output)" "$dir/a.out" ||
	fail "timeline: no 'pokelab: wrote $dir/a.svg (--output)'"
"$pokelab" timeline "$dir/t.dat" -o "$dir/b.svg" --title run >"$dir/b.out" ||
	fail "timeline of the trace.dat failed"
cmp -s "$dir/a.svg" "$dir/b.svg" || fail "text and trace.dat give different pictures"
n=$(grep -c 'class="phase phase-int3"' "$dir/a.svg")
[ "$n" -eq "$batches" ] || fail "timeline TRACE: $n phase-1 bands for $batches batches"
# the INT3 traps: the default trace_event= leaves out their event (a trap each), and the
# picture drawn back says so; recorded with it, it marks as many as the demo's own (the
# triangles' data-n add up to the traps)
header "$dir/b.svg" note |
	grep -q '^no INT3 trap marked: the trace holds no pokelab:int3_emulate event' ||
	fail "timeline TRACE: no note that the default trace has no INT3 trap"
int3s() {
	grep -o '<path class="int3" [^>]*data-n="[0-9]*"' "$1" | sed 's/.*data-n="//; s/"//' |
		awk '{ n += $1 } END { print n + 0 }'
}
"$pokelab" demo --cpus 4 --flips 3 --nohz-full 3 --timeline "$dir/i.svg" --trace "$dir/i.dat" \
	trace_event=ipi,csd,text_poke_batch,int3_emulate >"$dir/i.out" 2>&1 ||
	fail "demo --trace with int3_emulate failed"
"$pokelab" timeline "$dir/i.dat" -o "$dir/id.svg" >"$dir/id.out" || fail "timeline i.dat failed"
traps=$(int3s "$dir/i.svg")
[ "$traps" -gt 0 ] || fail "the demo's timeline marks no INT3 trap"
[ "$(int3s "$dir/id.svg")" -eq "$traps" ] ||
	fail "timeline TRACE: $(int3s "$dir/id.svg") INT3 traps marked, the demo's own $traps"
! grep -q 'no INT3 trap marked' "$dir/id.svg" || fail "timeline TRACE: a note of no INT3 event"
rsvg-convert -o "$dir/a.png" "$dir/a.svg" || fail "rsvg-convert cannot render timeline TRACE"
# past --max-marks marks: the whole run as density, a bar per lane and pixel column, that
# counts every IPI target and INT3 trap of the trace, over a window around a batch drawn
# mark by mark
"$pokelab" timeline "$dir/t.txt" -o "$dir/dn.svg" --max-marks 10 >"$dir/dn.out" ||
	fail "timeline --max-marks 10 failed"
grep -q '<rect class="window" ' "$dir/dn.svg" || fail "density: no window boxed"
[ "$(grep -c 'class="phase phase-int3"' "$dir/dn.svg")" -ge 1 ] || fail "density: no batch drawn"
sum() {	# sum KIND: the data-n of the density paths of KIND
	grep -o "<path class=\"density density-$1\" [^>]*data-n=\"[0-9]*\"" "$dir/dn.svg" |
		sed 's/.*data-n="//; s/"//' | awk '{ n += $1 } END { print n + 0 }'
}
[ "$(sum ipi)" -eq "$sent" ] || fail "density: $(sum ipi) IPIs received, $sent sent"
traps=$(grep -c ' int3_emulate:' "$dir/t.txt")	# none with the default trace_event=
[ "$(sum int3)" -eq "$traps" ] ||
	fail "density: $(sum int3) INT3 traps drawn, $traps in the trace"
header "$dir/dn.svg" note |
	grep -q 'marks, more than 10: .* drawn in detail, around batch .*; above, the whole run as' ||
	fail "density: no note"
legend_ok "$dir/dn.svg"
rsvg-convert -o "$dir/dn.png" "$dir/dn.svg" || fail "rsvg-convert cannot render the density"
# a BUSTED torture run: its violation is marked on the CPU the model names
"$pokelab" torture --duration 5 --cpus 4 pokelab.busted=no-sync-2 --timeline "$dir/b.svg" \
	>"$dir/tort" 2>&1 && fail "BUSTED torture passed"
cpu=$(sed -n 's/^xmc: [a-z ]*: CPU \([0-9]*\) .*/\1/p' "$dir/tort" | head -1)
[ -n "$cpu" ] || fail "BUSTED torture: no violation line"
grep -q "<g class=\"violation\" data-cpu=\"$cpu\">" "$dir/b.svg" ||
	fail "the timeline does not mark CPU $cpu's violation"
rsvg-convert -o "$dir/b.png" "$dir/b.svg" || fail "rsvg-convert cannot render the torture timeline"
# its title: the command line, the seed it ran with, the machine line; the legend says what
# the dashed line is
seed=$(sed -n 's/^torture: seed \([0-9]*\),.*/\1/p' "$dir/tort")
[ -n "$seed" ] || fail "torture: no seed line"
cmd='pokelab torture --duration 5 --cpus 4 pokelab.busted=no-sync-2 --timeline [^<]*b.svg'
grep -q ">$cmd, seed $seed<" "$dir/b.svg" ||
	fail "torture timeline: no command line and seed $seed in the title"
grep -q '>machine: 4 CPUs on ' "$dir/b.svg" || fail "torture timeline: no machine line"
grep -q 'data-kind="violation".*the dashed line its time on every lane' "$dir/b.svg" ||
	fail "torture timeline: the legend does not say what the dashed line is"
legend_ok "$dir/b.svg"
legend_ok "$dir/t.svg"
axis_ok "$dir/t.svg"
# run --timeline: every machine the scenario boots, one section each (2 rounds, both
# modes interleaved in each)
"$pokelab" run bpf-stats --quiet --cpus 4 --flips 4 --timeline "$dir/run.svg" >"$dir/run.out" ||
	fail "run bpf-stats --timeline failed"
[ "$(grep -c '<g class="section"' "$dir/run.svg")" -eq 2 ] || fail "run bpf-stats: not 2 sections"
# the case of docs/reproduction.md it reproduces (a "seed" is torture's random seed)
cases=$("$pokelab" run --help | sed -n 's/^ *bpf-stats  *case \([0-9/]*\):.*/\1/p')
cmd='pokelab run bpf-stats --quiet --cpus 4 --flips 4 --timeline [^<]*run.svg'
[ -n "$cases" ] && grep -q "<text class=\"command\" [^>]*>$cmd, case $cases<" "$dir/run.svg" ||
	fail "run bpf-stats: no command line and case '$cases' over the sections"
[ "$(grep -c 'class="phase phase-int3"' "$dir/run.svg")" -gt 0 ] || fail "run bpf-stats: no batch"
rsvg-convert -o "$dir/run.png" "$dir/run.svg" || fail "rsvg-convert cannot render run's timeline"

# more CPUs than lanes: 40 CPUs, 2 to a lane, and a note that says so
"$pokelab" demo --cpus 40 --flips 1 --timeline "$dir/g.svg" >"$dir/g.out" 2>&1 ||
	fail "demo --cpus 40 --timeline failed"
[ "$(grep -c '<g class="lane" data-cpu="[0-9]*" data-cpus="2">' "$dir/g.svg")" -eq 20 ] ||
	fail "40 CPUs: not 20 lanes of 2"
header "$dir/g.svg" note | grep -q '40 CPUs, 2 to a lane' ||
	fail "40 CPUs: no note on the grouped lanes"
rsvg-convert -o "$dir/g.png" "$dir/g.svg" || fail "rsvg-convert cannot render the grouped timeline"
# No break inside a batch: a phase 1 of 20 ms with no event in it is drawn to scale, the
# 80 ms between the two batches is the one break (its phase bar is never cut by a gap)
{
	echo cpus=2
	b=' pokelab-1 [000]' i='ipi_send_cpu: cpu=1 callsite=on_each_cpu_cond_mask+0x18'
	i="$i callback=generic_smp_call_function_single_interrupt+0x0"
	for t0 in 1.0 1.1; do
		for ev in "00000:text_poke_batch: nr_entries=2 phase=begin" \
			  "00001:text_poke_batch: nr_entries=2 phase=int3" "00010:$i" \
			  "20000:text_poke_batch: nr_entries=2 phase=tails" "20010:$i" \
			  "20020:text_poke_batch: nr_entries=2 phase=first_bytes" "20030:$i" \
			  "20040:text_poke_batch: nr_entries=2 phase=done"; do
			echo "$b ${t0}${ev%%:*}: ${ev#*:}"
		done
	done
} >"$dir/slow.txt"
"$pokelab" timeline "$dir/slow.txt" -o "$dir/slow.svg" >"$dir/slow.out" 2>&1 ||
	fail "timeline of a slow batch failed"
gaps=$(grep -o '<g class="gap" data-ns="[0-9]*"' "$dir/slow.svg" | sed 's/.*ns="//; s/"//' |
	tr '\n' ' ')
[ "$gaps" = "79960000 " ] ||
	fail "slow batch: breaks of $gaps ns; expected only the 79960000 between the batches"
axis_ok "$dir/slow.svg"
# What is not a trace says what it is, in one line, exit status 2.
"$pokelab" demo --cpus 2 --flips 1 --trace-json "$dir/t.json" >/dev/null 2>&1 ||
	fail "demo --trace-json failed"
head -c 3000 "$dir/t.dat" >"$dir/cut.dat"
for c in "t.json:JSON (a --trace-json file?)" "cut.dat:truncated or corrupt" \
	 ".:a directory"; do
	f=${c%%:*} want=${c#*:}
	"$pokelab" timeline "$dir/$f" -o "$dir/no.svg" >"$dir/bad.out" 2>&1
	rc=$?
	[ "$rc" -eq 2 ] && [ "$(wc -l <"$dir/bad.out")" -eq 1 ] &&
		grep -qF "$want" "$dir/bad.out" || fail "timeline $f: rc $rc, $(cat "$dir/bad.out")"
done
# explain: the command line over the sections; the 20 ms between the two flips, with no
# event, is a labelled break, not 20 ms of empty lanes; --timeline-gap 0 draws it to scale
"$pokelab" explain static-key --cpus 3 --timeline "$dir/sk.svg" >"$dir/sk.out" 2>&1 ||
	fail "explain static-key --timeline failed"
cmd='pokelab explain static-key --cpus 3 --timeline [^<]*sk.svg'
grep -q "<text class=\"command\" [^>]*>$cmd<" "$dir/sk.svg" ||
	fail "explain timeline: no command line"
ns=$(grep -o '<g class="gap" data-ns="[0-9]*"' "$dir/sk.svg" | sed 's/.*ns="//; s/"//' |
	sort -n | tail -1)
[ -n "$ns" ] && [ "$ns" -ge 20000000 ] || fail "explain timeline: no break of 20 ms or more ($ns)"
ell=$(printf '\342\200\246')
grep -q ">$ell [0-9.]* ms $ell<" "$dir/sk.svg" || fail "explain timeline: no '... N ms ...' label"
header "$dir/sk.svg" note | grep -q 'with no event drawn as \(a break\|breaks\) (not to scale)' ||
	fail "explain timeline: the note does not say time was compressed"
legend_ok "$dir/sk.svg"
axis_ok "$dir/sk.svg"
! grep -q 'data-kind="user"\|data-kind="flush"' "$dir/sk.svg" ||
	fail "explain timeline: legend items for marks it has none of"
"$pokelab" explain static-key --cpus 3 --timeline "$dir/sk0.svg" --timeline-gap 0 \
	>"$dir/sk0.out" 2>&1 || fail "explain static-key --timeline-gap 0 failed"
! grep -q 'class="gap"' "$dir/sk0.svg" || fail "--timeline-gap 0: a break drawn"
rsvg-convert -o "$dir/sk.png" "$dir/sk.svg" || fail "rsvg-convert cannot render the breaks"

echo "timeline: 4 lanes, $batches batches x 4 phases, $drawn IPIs"
exit 0
