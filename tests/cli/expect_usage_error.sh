#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# expect_usage_error.sh PROGRAM ARGS...: PROGRAM must exit with status 2
# and print exactly one line, on stderr, and nothing on stdout.
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
"$@" >"$out" 2>"$err"
rc=$?
if [ "$rc" -ne 2 ]; then
	echo "expected exit status 2, got $rc: $*" >&2
	cat "$err" >&2
	exit 1
fi
if [ "$(wc -l <"$err")" -ne 1 ] || [ -s "$out" ]; then
	echo "expected one line on stderr and nothing on stdout: $*" >&2
	cat "$out" "$err" >&2
	exit 1
fi
cat "$err"
exit 0
