# SPDX-License-Identifier: GPL-2.0-only
#
# lib.sh: sourced by the CLI test scripts (". "$(dirname "$0")/lib.sh""):
# $pokelab from the first argument, a scratch $dir removed at exit, and
# fail MSG, which prints MSG and the tail of every output kept in $dir.
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
