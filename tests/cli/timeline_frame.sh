#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# timeline_frame.sh POKELAB: what frames a timeline (docs/timeline.md). A
# title and a note wider than the picture wrap to its width, in as many
# lines as they need, and the lanes start under the last one: a demo of
# 128 CPUs, every other one isolated, has a command line and a machine
# line of a few hundred characters. Past --max-marks, the overview strip's
# rows are labelled with their CPUs as the lanes are (one CPU to a row, or
# four), and the strip with the span of the run it draws.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/timeline_lib.sh"
command -v rsvg-convert >/dev/null || fail "rsvg-convert missing (tools/install-deps.sh)"

# 1. The header: a line of 1280 px holds at most about 240 characters at 11 px, 190 at 16
odd=$(seq -s, 1 2 127)
"$pokelab" demo --cpus 128 --flips 1 --nohz-full "$odd" --timeline "$dir/h.svg" \
	--trace "$dir/h.txt" >"$dir/h.out" 2>&1 || fail "demo --cpus 128 --timeline failed"
rsvg-convert -o "$dir/h.png" "$dir/h.svg" || fail "rsvg-convert cannot render the SVG"
nl='
'
header "$dir/h.svg" title "$nl" >"$dir/title"
header "$dir/h.svg" note "$nl" >"$dir/note"
[ "$(wc -l <"$dir/title")" -ge 2 ] || fail "a title of $(wc -c <"$dir/title") bytes in one line"
[ "$(wc -l <"$dir/note")" -ge 3 ] ||
	fail "a note of $(wc -c <"$dir/note") bytes in fewer than 3 lines"
awk -v t="$dir/title" '{ max = FILENAME == t ? 190 : 240 }
	length($0) > max { print FILENAME ": " length($0) " characters: " $0; bad = 1 }
	END { exit bad }' "$dir/title" "$dir/note" >"$dir/long.out" || fail "a header line too long"
# nothing lost: the lines hold the command line, and the note each of its parts
want="pokelab demo --cpus 128 --flips 1 --nohz-full $odd --timeline $dir/h.svg --trace $dir/h.txt"
[ "$(header "$dir/h.svg" title | tr -d ' ')" = "$(echo "$want" | tr -d ' ')" ] ||
	fail "the title's lines are not the command line: $(header "$dir/h.svg" title)"
for part in "machine: 128 CPUs on " "nohz_full=$odd;" "128 CPUs, 4 to a lane"; do
	header "$dir/h.svg" note | tr -d ' ' | grep -qF "$(echo "$part" | tr -d ' ')" ||
		fail "the note's lines lack '$part'"
done
# the header's height follows its lines: the first lane starts under the last
last=$(awk '/<g class="lane"/ { exit }
	   /^<text / && match($0, / y="[0-9.]*"/) { y = substr($0, RSTART + 4, RLENGTH - 5) }
	   END { print y }' "$dir/h.svg")
lane=$(grep -o '<g class="lane" data-cpu="0" [^>]*><rect [^>]*y="[0-9.]*"' "$dir/h.svg" |
	sed 's/.*y="//; s/"//')
[ -n "$last" ] && [ -n "$lane" ] && awk -v a="$last" -v b="$lane" 'BEGIN { exit !(b > a + 4) }' ||
	fail "the first lane (y $lane) does not start under the note's last line (y $last)"

# 2. The overview strip: its rows labelled as the lanes, the strip with the run's span
"$pokelab" demo --cpus 4 --flips 3 --nohz-full 3 --trace "$dir/t.txt" >"$dir/t.out" 2>&1 ||
	fail "demo --trace failed"
for c in "t:4:1" "h:32:4"; do
	f=${c%%:*} rows=$(echo "$c" | cut -d: -f2) per=${c##*:}
	"$pokelab" timeline "$dir/$f.txt" -o "$dir/$f-dn.svg" --max-marks 10 >"$dir/$f-dn.out" ||
		fail "timeline $f.txt --max-marks 10 failed"
	rsvg-convert -o "$dir/$f-dn.png" "$dir/$f-dn.svg" || fail "rsvg-convert: $f-dn.svg"
	grep -q '<rect class="window" ' "$dir/$f-dn.svg" || fail "$f-dn.svg: no overview"
	# each row: its first CPU, how many, its label
	grep -o '<g class="overview-lane" data-cpu="[0-9]*" data-cpus="[0-9]*">.*</g>' \
		"$dir/$f-dn.svg" |
		sed 's/.*data-cpu="\([0-9]*\)" data-cpus="\([0-9]*\)".*>\([^<]*\)<\/text><\/g>$/\1 \2 \3/' \
		>"$dir/rows"
	awk -v per="$per" '{ want = per == 1 ? "CPU " $1 : "CPUs " $1 "-" $1 + per - 1
			     if ($2 != per || substr($0, index($0, $3)) != want || $1 != (NR - 1) * per)
				{ print "row " NR ": " $0 ", expected " want; bad = 1 } }
			   END { exit bad || NR == 0 }' "$dir/rows" >"$dir/rows.out" ||
		fail "$f-dn.svg: overview rows not labelled as the lanes: $(head -3 "$dir/rows.out")"
	[ "$(wc -l <"$dir/rows")" -eq "$rows" ] ||
		fail "$f-dn.svg: $(wc -l <"$dir/rows") overview rows labelled, $rows lanes"
	# the strip spans the run the note gives
	run=$(header "$dir/$f-dn.svg" note | sed -n "s/.* of the run's \([0-9.]* [mun]*s\) drawn.*/\1/p")
	[ -n "$run" ] && grep -q "<text class=\"overview-title\" [^>]*>the whole run, +0 to +$run, " \
		"$dir/$f-dn.svg" || fail "$f-dn.svg: the strip is not labelled with the run's +0 to +$run"
done
echo "timeline frame: $(wc -l <"$dir/title") title and $(wc -l <"$dir/note") note lines;" \
     "the overview's rows labelled"
exit 0
