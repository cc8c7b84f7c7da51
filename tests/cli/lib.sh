# SPDX-License-Identifier: GPL-2.0-only
#
# lib.sh: sourced by the CLI test scripts (". "$(dirname "$0")/lib.sh""):
# $pokelab from the first argument, a scratch $dir removed at exit, and
# fail MSG, which prints MSG and the tail of every output kept in $dir, and
# same_as_report, which compares a text trace with trace-cmd's report.
set -u
pokelab=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

fail() {
	echo "$*" >&2
	for f in "$dir"/*.out "$dir/out" "$dir/err"; do
		[ -f "$f" ] && { echo "--- $f" >&2; tail -20 "$f" >&2; }
	done
	exit 1
}

# same_as_report TEXT REPORT: REPORT (trace-cmd report of the .dat) is TEXT
# line for line; the text may end with drops after a CPU's last event, which
# trace-cmd cannot show (a slow host, a sanitizer build: the rings overflow)
same_as_report() {
	n=$(wc -l <"$2")
	head -n "$n" "$1" | cmp -s - "$2" || return 1
	! tail -n +"$((n + 1))" "$1" | grep -qv '^CPU:[0-9]* \[[0-9]* EVENTS DROPPED\]$'
}
