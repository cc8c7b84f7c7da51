#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# explain.sh POKELAB: `pokelab explain` (docs/explain.md). --list names the
# topics; int3-batch shows each site's disassembly before, during (INT3)
# and after the batch and at least one CPU inside the handler with a ref
# held, and what it says each CPU did is what the run's own trace recorded;
# so does int3-handler; apply-alternatives follows CPUID and clearcpuid=;
# static-call's trampoline follows each update; --timeline draws each
# machine; under tmux, --step waits at each step and goes on at Enter, and
# Ctrl-C stops the topic in order.
. "$(dirname "$0")/lib.sh"
# unwrap FILE: FILE with each item explain wrapped at 100 columns on one line again (a
# line indented 2 more than an indented line before it that does not end in ':')
unwrap() {
	awk '{ n = match($0, /[^ ]/) - 1 }
		NR > 1 && pn > 0 && n == pn + 2 && p !~ /:$/ { p = p " " substr($0, n + 1); next }
		{ if (NR > 1) print p; p = $0; pn = n } END { if (NR) print p }' "$1"
}
"$pokelab" explain --list >"$dir/list" || fail "explain --list failed"
for t in static-key int3-batch int3-handler refs deferral apply-alternatives static-call; do
	grep -q "^$t " "$dir/list" || fail "--list lacks $t"
done

"$pokelab" explain int3-batch --cpus 4 --trace "$dir/t.txt" >"$dir/out" 2>"$dir/err" ||
	fail "explain int3-batch failed ($?)"
grep -q '^  before 0x[0-9a-f]* <.*>: 0f 1f 44 00 00   nop' "$dir/out" || fail "no NOP before"
grep -q '^  during 0x[0-9a-f]* <.*>: cc .*  int3$' "$dir/out" || fail "no INT3 during"
grep -q '^  after 0x[0-9a-f]* <.*>: e9 .*  jmp ' "$dir/out" || fail "no JMP after"
passed='^The checker saw 0 problems in [1-9][0-9]* text writes, .*: PASS\.$'
grep -q "$passed" "$dir/out" || fail "the checker did not pass"
! grep -q '^ *xmc: ' "$dir/out" || fail "the model's counters line without --verbose"
# the probe holds exactly one CPU in the handler, its own ref taken (percpu: 1 + 1)
held='inside smp_text_poke_int3_handler() with a ref held, held there by a probe: '
caught=$(sed -n "s/^  CPU \([0-9]*\): $held.*/\1/p" "$dir/out")
[ "$(echo "$caught" | wc -w)" -eq 1 ] || fail "not one CPU held inside the handler: '$caught'"
flat=$(tr '\n' ' ' <"$dir/out" | tr -s ' ')
echo "$flat" |
	grep -q "by a probe: it trapped on the INT3 at 0x[0-9a-f]* <.*>; its refs count reads 2 " ||
	fail "the held CPU's site or refs count (2) not shown"
# a sample (held) and the snapshots are labelled as such
for l in 'snapshot during phase 2, after the release' 'snapshot at the start of phase 3' \
	 'snapshot at return'; do
	grep -q "^  $l:$" "$dir/out" || fail "int3-batch: no '$l:' label"
done
# every CPU's INT3 count is the trace's; a CPU shown in the handler trapped in the trace
for cpu in 1 2 3; do
	said=$(sed -n "s/^  CPU $cpu: \([0-9]*\) INT3 traps* emulated in the batch$/\1/p" "$dir/out")
	traced=$(grep -c "\[00$cpu\] .* int3_emulate:" "$dir/t.txt")
	[ -n "$said" ] && [ "$said" -eq "$traced" ] ||
		fail "CPU $cpu: explain says ${said:-nothing}, the trace has $traced INT3 emulations"
done
for cpu in $caught; do
	grep -q "\[00$cpu\] .* int3_emulate:" "$dir/t.txt" ||
		fail "CPU $cpu shown in the handler, but no int3_emulate of it in the trace"
done

# int3-handler: what it says each CPU's traps did is what the run's trace recorded
"$pokelab" explain int3-handler --cpus 4 --trace "$dir/h.txt" >"$dir/h" 2>"$dir/err" ||
	fail "explain int3-handler failed ($?)"
grep -q '^  during 0x[0-9a-f]* <.*>: cc .*  int3$' "$dir/h" || fail "int3-handler: no INT3 shown"
held='inside smp_text_poke_int3_handler() between steps 3 and 6, held there by a probe: '
[ "$(grep -c "^  CPU [1-3]: $held" "$dir/h")" -eq 1 ] ||
	fail "int3-handler: not one CPU held inside the handler"
for cpu in 1 2 3; do
	said=$(sed -n "s/^  CPU $cpu: \([0-9]*\) INT3 traps* emulated in the batch$/\1/p" "$dir/h")
	traced=$(grep -c "\[00$cpu\] .* int3_emulate:" "$dir/h.txt")
	[ -n "$said" ] && [ "$said" -eq "$traced" ] ||
		fail "int3-handler CPU $cpu: says ${said:-nothing}, the trace has $traced"
done
grep -q "$passed" "$dir/h" || fail "int3-handler: the checker did not pass"

# apply-alternatives: the POPCNT site follows the CPU's CPUID, and clearcpuid= turns it off
"$pokelab" explain apply-alternatives --cpus 2 >"$dir/aa" 2>"$dir/err" ||
	fail "explain apply-alternatives failed ($?)"
if grep -q 'feature 4\*32+23 (popcnt): the CPU has it -> applies' "$dir/aa"; then
	grep -q '= 8 through the POPCNT instruction$' "$dir/aa" || fail "popcnt: not the POPCNT path"
else
	grep -q '= 8 through the call to __sw_hweight32' "$dir/aa" || fail "no popcnt: not the call"
fi
"$pokelab" explain apply-alternatives --cpus 2 clearcpuid=popcnt >"$dir/ab" 2>"$dir/err" ||
	fail "explain apply-alternatives clearcpuid=popcnt failed ($?)"
grep -q 'feature 4\*32+23 (popcnt): the CPU lacks it -> does not apply' "$dir/ab" ||
	fail "clearcpuid=popcnt: the entry still applies"
grep -q '= 8 through the call to __sw_hweight32' "$dir/ab" || fail "clearcpuid=popcnt: not the call"

# a run of NOPs is one line, its count and length agreeing (1-byte NOPs: x N is N bytes)
awk 'p && /  90 +nop$/ { bad = 1 } { p = /  90 +nop$/ } END { exit bad }' "$dir/aa" ||
	fail "apply-alternatives: two 90 nop lines in a row"
grep -q ' 90 x\([0-9]*\)  *nop (\1 bytes)$' "$dir/aa" ||
	fail "apply-alternatives: no folded NOP run"
grep -q '^The checker had nothing to check: no text was written while it watched\.$' "$dir/aa" ||
	fail "apply-alternatives: no checker line"

# static-call: the trampoline's JMP follows each update, and the callers see each target
"$pokelab" explain static-call --cpus 3 >"$dir/sc" 2>"$dir/err" || fail "explain static-call failed ($?)"
unwrap "$dir/sc" >"$dir/sc1"
grep -q '^  now .*<__SCT__pokelab_explain_call>: e9 .* <pokelab_explain_call_a>$' "$dir/sc1" ||
	fail "static-call: not a JMP to a before the update"
grep -q '^  during .*<__SCT__pokelab_explain_call>: cc .*  int3$' "$dir/sc1" ||
	fail "static-call: no INT3 during the update"
grep -q '^  after .*: e9 .* <pokelab_explain_call_b>$' "$dir/sc1" || fail "static-call: no JMP to b"
grep -q '^  after .*: e9 .* <__static_call_return0>$' "$dir/sc1" || fail "static-call: no RET0 JMP"
grep -q '^  CPU 1: [1-9][0-9]* calls reached a, [1-9][0-9]* b, [1-9][0-9]* returned 0$' "$dir/sc1" ||
	fail "static-call: CPU 1 did not see all three targets"

# --timeline: one section per machine the topic boots (refs boots two)
"$pokelab" explain refs --cpus 3 --timeline "$dir/refs.svg" >"$dir/r" 2>"$dir/err" ||
	fail "explain refs --timeline failed ($?)"
[ "$(grep -c '<g class="section"' "$dir/refs.svg")" -eq 2 ] || fail "explain refs: not 2 sections"
grep -q 'pokelab explain refs: nr_cpus=3 pokelab.refs=percpu' "$dir/refs.svg" ||
	fail "explain refs: no percpu section title"
command -v rsvg-convert >/dev/null && { rsvg-convert -o "$dir/refs.png" "$dir/refs.svg" ||
	fail "rsvg-convert cannot render explain's timeline"; }

# refs: the readers write each other's refs line under global, hardly under percpu
"$pokelab" explain refs --cpus 4 >"$dir/refs" 2>"$dir/err" || fail "explain refs failed ($?)"
line=$(grep '^  writes by CPUs 1-3 to a refs line another CPU wrote last: global ' "$dir/refs") ||
	fail "explain refs: no comparison line"
g=$(echo "$line" | sed 's/.*global \([0-9]*\), percpu.*/\1/')
p=$(echo "$line" | sed 's/.*percpu \([0-9]*\)$/\1/')
[ "$g" -gt "$p" ] || fail "explain refs: global $g not above percpu $p"
# the probe holds every reader at once: the one global count reads 1 + 3, each per-CPU one 1 + 1
flat=$(tr '\n' ' ' <"$dir/refs" | tr -s ' ')
for n in 4 2; do
	echo "$flat" | grep -q "held 3 CPUs inside the handler at once; the refs count each sees: \
CPU 1 reads $n, CPU 2 reads $n, CPU 3 reads $n " ||
		fail "explain refs: the held CPUs do not all read $n"
done
[ "$(grep -c "$passed" "$dir/refs")" -eq 2 ] || fail "explain refs: a checker failed"

# deferral: the isolated CPU gets the IPIs under off, the work bit and a flush at entry
# under v7 and v7-tlbi, neither under v8 (kernel_cr3_loaded read 0)
"$pokelab" explain deferral --cpus 4 >"$dir/defer0" 2>"$dir/err" || fail "explain deferral failed ($?)"
unwrap "$dir/defer0" >"$dir/defer"
sed -n '/^Step 1: pokelab.ct_defer=off:/,/^Step 2:/p' "$dir/defer" |
	grep -q '^  CPU 3: 3 IPIs reached it .* state: none;' || fail "deferral off: not 3 IPIs"
for p in v7 v7-tlbi; do
	sed -n "/^Step [0-9]: pokelab.ct_defer=$p:/,/^The checker/p" "$dir/defer" >"$dir/p"
	grep -q '^  CPU 3: 0 IPIs reached it .* state: SYNC;' "$dir/p" || fail "deferral $p: no work bit"
	grep -q '^  CPU 3 made a system call: 1 deferred flush ran' "$dir/p" ||
		fail "deferral $p: no flush at entry"
done
sed -n '/^Step 4: pokelab.ct_defer=v8:/,$p' "$dir/defer" |
	grep -q '^  CPU 3: 0 IPIs reached it .* state: none; kernel_cr3_loaded 0$' ||
	fail "deferral v8: not 0 IPIs with kernel_cr3_loaded 0"
[ "$(grep -c "$passed" "$dir/defer")" -eq 4 ] || fail "explain deferral: a checker failed"

# --verbose adds the model's counters line, wrapped like the rest
"$pokelab" explain static-key --cpus 3 --verbose >"$dir/sk" 2>"$dir/err" ||
	fail "explain static-key --verbose failed ($?)"
grep -q '^  xmc: model of cross-modifying code' "$dir/sk" || fail "--verbose: no counters line"
grep -q "$passed" "$dir/sk" || fail "--verbose: no checker line"

# no line of any topic's output (and --list) is wider than 100 columns
for t in $(sed -n 's/^\([a-z0-9-]*\) .*/\1/p' "$dir/list"); do
	case $t in
	int3-batch) f=out ;; int3-handler) f=h ;; apply-alternatives) f=aa ;; static-call) f=sc ;;
	refs) f=refs ;; deferral) f=defer0 ;; static-key) f=sk ;;
	*) f=new-$t; "$pokelab" explain "$t" --cpus 4 >"$dir/$f" 2>"$dir/err" ||
		fail "explain $t failed ($?)" ;;
	esac
	[ -s "$dir/$f" ] || fail "explain $t: no output"
	awk -v t="$t" 'length > 100 { print "explain " t ": " length " columns: " $0; bad = 1 }
		END { exit bad }' "$dir/$f" || fail "explain $t: a line over 100 columns"
done
awk 'length > 100 { bad = 1 } END { exit bad }' "$dir/list" "$dir/ab" "$dir/r" ||
	fail "explain --list or a run: a line over 100 columns"

# --step under tmux: one step on screen, Enter, the next
command -v tmux >/dev/null || fail "tmux missing (tools/install-deps.sh)"
sock="$dir/tmux"
tmux -S "$sock" new-session -d -x 200 -y 60 -s explain \
	"\"$pokelab\" explain static-key --step --cpus 3; echo EXIT=\$?; sleep 60" ||
	fail "tmux did not start"
trap 'for s in "$dir"/tmux*; do tmux -S "$s" kill-server 2>/dev/null; done; rm -rf "$dir"' EXIT
screen() { tmux -S "$sock" capture-pane -p -t explain -S -200; }
wait_for() {	# wait_for PATTERN: up to 30 s
	i=0
	while ! screen | grep -q "$1"; do
		i=$((i + 1))
		[ "$i" -lt 300 ] || { screen >"$dir/out"; fail "tmux: never showed '$1'"; }
		sleep 0.1
	done
}
wait_for 'Enter for the next step'
screen | grep -q '^Step 1: ' || fail "tmux: no step 1"
sleep 0.5
! screen | grep -q '^Step 2: ' || fail "tmux: step 2 came without Enter"
for n in 2 3; do
	tmux -S "$sock" send-keys -t explain Enter
	wait_for "^Step $n: "
done
wait_for '^EXIT=0$'
# in_tmux NAME ARGS...: pokelab ARGS under --step in a tmux server of its own (the last
# one may still be going away), waiting at its first prompt
in_tmux() {
	tmux -S "$sock" kill-server 2>/dev/null
	sock="$dir/tmux-$1"
	shift
	tmux -S "$sock" new-session -d -x 200 -y 60 -s explain \
		"\"$pokelab\" $*; echo EXIT=\$?; sleep 60" || fail "tmux did not start"
	wait_for 'Enter for the next step'
}

# Ctrl-C at a step: the CPUs stop, the machine shuts down, exit 130, no half-written file
in_tmux cc explain static-key --step --cpus 3 --timeline "$dir/cc.svg"
tmux -S "$sock" send-keys -t explain C-c
wait_for '^explain static-key: stopped (SIGINT) after step 1: the CPUs stopped'
wait_for '^EXIT=130$'
[ ! -e "$dir/cc.svg" ] || fail "Ctrl-C left a --timeline file"

# Ctrl-C at int3-batch's first prompt, after which the batch's phases are steps: the
# batch runs to its end (text_mutex is held) with its steps unsaid, and the stop line
# names the step the stop came at
in_tmux batch explain int3-batch --step --cpus 3
tmux -S "$sock" send-keys -t explain C-c
wait_for '^EXIT=130$'
screen | grep -q '^explain int3-batch: stopped (SIGINT) after step 1: the batch in progress ran to its end' ||
	{ screen >"$dir/out"; fail "int3-batch: no stop line after step 1"; }
! screen | grep -q '^Step 2: ' || { screen >"$dir/out"; fail "int3-batch: steps shown after Ctrl-C"; }
echo "explain: int3-batch CPUs in the handler:" $caught"; --step waited at each step"
exit 0
