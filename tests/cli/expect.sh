#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# expect.sh STATUS PATTERN PROGRAM ARGS...: PROGRAM must exit with STATUS,
# and its output (stdout and stderr) must match the extended regular
# expression PATTERN (empty: anything). A usage error (STATUS 2) must also
# be exactly one line, on stderr, starting with "pokelab: ", with nothing on
# stdout.
status=$1
pattern=$2
shift 2
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
"$@" >"$out" 2>"$err"
rc=$?
fail() {
	echo "$*" >&2
	echo "--- stdout" >&2
	cat "$out" >&2
	echo "--- stderr" >&2
	cat "$err" >&2
	exit 1
}
[ "$rc" -eq "$status" ] || fail "expected exit status $status, got $rc"
if [ "$status" -eq 2 ]; then
	if [ "$(wc -l <"$err")" -ne 1 ] || [ -s "$out" ]; then
		fail "expected one line on stderr and nothing on stdout"
	fi
	# one prefix for every usage error, whichever command or option it is about
	grep -q '^pokelab: ' "$err" || fail "expected the line to start with 'pokelab: '"
fi
if [ -n "$pattern" ] && ! cat "$out" "$err" | grep -Eq -- "$pattern"; then
	fail "no line matches '$pattern'"
fi
tail -n 3 "$out" "$err" 2>/dev/null | grep -v '^==>' | grep -v '^$' | tail -n 3
exit 0
