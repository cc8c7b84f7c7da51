# SPDX-License-Identifier: GPL-2.0-only
#
# Sourced by the timeline tests (timeline.sh, timeline_kinds.sh) after lib.sh.

# legend_ok SVG: each legend item's mark is drawn, and each kind drawn is in the legend
legend_ok() {
	for k in $(grep -o '<g class="legend" data-kind="[a-z0-9_-]*"' "$1" |
		   sed 's/.*kind="//; s/"//'); do
		case $k in
		phase-*) c="phase $k" ;; density-*) c="density $k" ;; ipi-*) c="ipi $k" ;;
		*) c=$k ;;
		esac
		grep -q "class=\"$c\"" "$1" || fail "$1: legend item $k, but none drawn"
	done
	for c in user idle flush int3 lost violation gap ipi-sync ipi-tlb ipi-other ipi-unknown \
		 density-ipi density-int3 density-flush; do
		case $c in ipi-*) m="ipi $c" ;; density-*) m="density $c" ;; *) m=$c ;; esac
		! grep -q "class=\"$m\"" "$1" || grep -q "<g class=\"legend\" data-kind=\"$c\"" "$1" ||
			fail "$1: $c drawn, not in the legend"
	done
}

# header SVG title|note [SEP]: each section's title (the text over its lanes at 16 px) or
# note (the rest of that text), its lines joined by SEP, a space if not given: one line per
# section, however the picture's width wrapped them
header() {
	awk -v c="$2" -v sep="${3- }" '
		/<g class="section"/ { if (n) print s; s = ""; n = 0; h = 1 }
		/<g class="lane"/ { h = 0 }
		h && /^<text / && (c == "title") == (index($0, "font-size=\"16\"") > 0) {
			t = $0; sub(/^<text [^>]*>/, "", t); sub(/<\/text>$/, "", t)
			s = s (n++ ? sep : "") t }
		END { if (n) print s }' "$1"
}
