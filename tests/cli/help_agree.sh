#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# help_agree.sh POKELAB: every --help in one style, its defaults and ranges
# the same from command to command (issue 35, item 8; docs/cli.md):
#  - --help-all on a command that takes boot parameters lists them all;
#  - a value of one kind has one name: FILE, FILE.svg, FILE.o, DIR, never
#    CLI11's TEXT:FILE;
#  - --timeline-window has one range, --seconds one type;
#  - --cpus says its default, and why where it is not the allowed PUs;
#  - a scenario does not list an option it only refuses (--timeline of run
#    alternatives and run recursion, the old --defer of run isolation);
#  - "seed" is a random seed only: a scenario reproduces a case.
# The commands and scenarios are read from the help itself, as
# help_width.sh does.
. "$(dirname "$0")/lib.sh"

subcommands() {
	sed -n '/^Subcommands:$/,/^$/p' | sed -n 's/^  \([a-z][a-z0-9_-]*\) .*/\1/p'
}

# option OPT < HELP: OPT's entry, its folded lines joined by one space
option() {
	awk -v opt="$1" '
		$1 == opt || index($1, opt ",") == 1 || index($1, "," opt) { on = 1; s = $0; next }
		on && /^ {20,}/ { sub(/^ +/, " "); s = s $0; next }
		on { exit }
		END { if (s != "") print s }'
}

leaves=""
for c in $("$pokelab" --help | subcommands); do
	subs=$("$pokelab" "$c" --help | subcommands)
	if [ -z "$subs" ]; then
		leaves="$leaves $c"
		continue
	fi
	for s in $subs; do
		leaves="$leaves $c:$s"
	done
done
[ -n "$leaves" ] || fail "no command in pokelab --help"

n=0
for l in $leaves; do
	set -- $(echo "$l" | tr : ' ')
	# every command that draws its help as CLI11 does (where and port-patch: clihelp.py)
	"$pokelab" "$@" --help >"$dir/help" 2>&1 || continue
	grep -q '^Usage: .*\[OPTIONS\]' "$dir/help" || continue
	n=$((n + 1))

	# one name per kind of value
	bad=$(grep -E '^  [^ ].* TEXT:(FILE|DIR)' "$dir/help")
	[ -z "$bad" ] || fail "pokelab $* --help: a value named by CLI11's type: $bad"
	for o in --trace --trace-json --results; do
		e=$(option $o <"$dir/help")
		[ -z "$e" ] || echo "$e" | grep -Eq "^ +$o FILE " ||
			fail "pokelab $* --help: $o does not take FILE: $e"
	done
	for o in --timeline --plot; do
		e=$(option $o <"$dir/help")
		[ -z "$e" ] || echo "$e" | grep -Eq "^ +$o FILE\.svg " ||
			fail "pokelab $* --help: $o does not take FILE.svg: $e"
	done

	# one range for --timeline-window, one type for --seconds
	e=$(option --timeline-window <"$dir/help")
	[ -z "$e" ] || echo "$e" | grep -q -- '--timeline-window FLOAT:0.001\.\.3600 ' ||
		fail "pokelab $* --help: --timeline-window's range is not 0.001..3600: $e"
	e=$(option --seconds <"$dir/help")
	[ -z "$e" ] || echo "$e" | grep -q -- '--seconds FLOAT:' ||
		fail "pokelab $* --help: --seconds is not a decimal number: $e"

	# --cpus: the common default, or another one with its reason
	e=$(option --cpus <"$dir/help")
	if [ -n "$e" ]; then
		echo "$e" |
			grep -Eq 'default: the allowed PUs, at least 2\)|default: [^)]*, not [^)]*: ' ||
			fail "pokelab $* --help: --cpus gives no default, or not why: $e"
	fi

	# defaults in one form, a set of choices shown, no second blank line
	bad=$(grep -E '\(default [^:]|; default [0-9]' "$dir/help")
	[ -z "$bad" ] || fail "pokelab $* --help: a default not written (default: X): $bad"
	e=$(option --trace-format <"$dir/help")
	[ -z "$e" ] || echo "$e" | grep -q -- '--trace-format TEXT:{' ||
		fail "pokelab $* --help: --trace-format does not show its choices: $e"
	awk 'p == "" && $0 == "" && NR > 1 { exit 1 } { p = $0 }' "$dir/help" ||
		fail "pokelab $* --help: two blank lines in a row"
	# --cpus of a command that boots with parameters: one wording for its twin
	e=$(option --cpus <"$dir/help")
	if [ -n "$e" ] && grep -q '^  params ' "$dir/help"; then
		echo "$e" | grep -q '; boot parameter nr_cpus=' ||
			fail "pokelab $* --help: --cpus does not say it is nr_cpus=: $e"
	fi

	# --help-all: the leaf's help, and the boot parameters where it takes them
	"$pokelab" "$@" --help-all >"$dir/all" 2>&1 || fail "pokelab $* --help-all: exit $?"
	head -n "$(wc -l <"$dir/help")" "$dir/all" | cmp -s - "$dir/help" ||
		fail "pokelab $* --help-all does not start with its --help"
	if grep -q '^  params ' "$dir/help"; then
		grep -q '^Boot parameters' "$dir/all" ||
			fail "pokelab $* --help-all: no boot parameters"
		for p in nr_cpus= nohz_full= pokelab.busted= trace_event=; do
			grep -q "^  $p" "$dir/all" || fail "pokelab $* --help-all: no $p"
		done
		bad=$(grep -E '\(default [^:]|; default [0-9]' "$dir/all")
		[ -z "$bad" ] || fail "pokelab $* --help-all: a default not written (default: X): $bad"
		wide=$(awk 'length($0) > 100' "$dir/all")
		[ -z "$wide" ] || fail "pokelab $* --help-all: lines wider than 100 columns: $wide"
	fi
done
[ $n -ge 8 ] || fail "only $n commands' help read"

# --help-all gives a command's own boot default beside the program's, from
# the value its --help states: torture boots at least 4 CPUs, csdlock_debug=1
"$pokelab" torture --help >"$dir/help"
"$pokelab" torture --help-all >"$dir/all"
least=$(option --cpus <"$dir/help" | sed -n 's/.*default: the PUs, at least \([0-9]*\),.*/\1/p')
[ -n "$least" ] || fail "pokelab torture --help: --cpus does not say its least count"
grep "^  nr_cpus=" "$dir/all" | grep -q "; torture: the PUs, at least $least)" ||
	fail "pokelab torture --help-all: nr_cpus= does not give torture's default (at least $least)"
d=$(option params <"$dir/help" | sed -n 's/.*boots with csdlock_debug=\([01]\) .*/\1/p')
[ -n "$d" ] || fail "pokelab torture --help: no csdlock_debug= it boots with"
grep "^  csdlock_debug=" "$dir/all" | grep -q "(default: [^)]*; torture: $d," ||
	fail "pokelab torture --help-all: csdlock_debug= does not give torture's default ($d)"
"$pokelab" --help-all | grep "^  nr_cpus=" | grep -q "torture: the PUs, at least $least" ||
	fail "pokelab --help-all: nr_cpus= does not give torture's default"
# a boot parameter a command refuses is marked so, naming the option to give
for p in nr_cpus= pokelab.ct_defer=; do
	"$pokelab" explain int3-batch "${p}4" >/dev/null 2>&1 && fail "explain took $p"
	"$pokelab" explain --help-all | grep "^  $p" | grep -q ': refused here: use --' ||
		fail "pokelab explain --help-all lists $p, which explain refuses, as taken"
done

# the README's spectre_v2= forms are the boot table's
readme="$(dirname "$0")/../../README.md"
forms=$("$pokelab" demo --help-all | sed -n 's/^  spectre_v2=\([^:]*\):.*/\1/p')
[ -n "$forms" ] || fail "pokelab demo --help-all: no spectre_v2="
tr '\n' ' ' <"$readme" | grep -qF "\`spectre_v2=$forms\`" ||
	fail "README.md does not give spectre_v2=$forms"

# options a scenario only refuses are not listed
for s in alternatives recursion; do
	"$pokelab" run "$s" --help | grep -q -- '--timeline' &&
		fail "pokelab run $s --help lists --timeline, which it refuses"
done
"$pokelab" run isolation --help | grep -q -- '--defer' &&
	fail "pokelab run isolation --help lists --defer (the option is --ct-defer)"
# a seed is a random seed; the kernel result a scenario reproduces is a case
"$pokelab" run --help-all | grep -n 'seed [0-9][0-9][0-9]' &&
	fail "pokelab run --help-all calls a case a seed"
"$pokelab" run isolation --help | grep -q '^case 003: ' ||
	fail "pokelab run isolation --help does not name its case"
echo "the help of $n commands agrees"
exit 0
