# SPDX-License-Identifier: GPL-2.0-only
#
# leaves.sh: sourced after lib.sh by the scripts that check one rule on
# every command. leaves prints each command that parses its own options
# ("demo", "run:isolation", "where"), read from the help itself as
# help_width.sh does, so that a command added later is checked too.

# the names listed under "Subcommands:" in a help text
subcommands() {
	sed -n '/^Subcommands:$/,/^$/p' | sed -n 's/^  \([a-z][a-z0-9_-]*\) .*/\1/p'
}

leaves() {
	for c in $("$pokelab" --help | subcommands); do
		subs=$("$pokelab" "$c" --help | subcommands)
		if [ -z "$subs" ]; then
			echo "$c"
			continue
		fi
		for s in $subs; do
			echo "$c:$s"
		done
	done
}

# each_leaf FN: for every command, its help in $dir/help and FN called with
# the command's words (FN returns where a loop would continue); n counts
# the calls that returned 0
each_leaf() {
	n=0
	for l in $(leaves); do
		set -- $(echo "$l" | tr : ' ')
		"$pokelab" "$@" --help >"$dir/help" 2>&1 || continue
		"$each_leaf_fn" "$@" && n=$((n + 1))
	done
	return 0
}

# usage_line ARGS...: pokelab ARGS must exit 2 with one line on stderr that
# starts with "pokelab: ", nothing on stdout (before anything boots); the
# line is left in $dir/err
usage_line() {
	"$pokelab" "$@" >"$dir/out" 2>"$dir/err" </dev/null
	rc=$?
	[ $rc -eq 2 ] || fail "pokelab $*: exit $rc, expected 2"
	[ ! -s "$dir/out" ] || fail "pokelab $*: wrote on stdout"
	[ "$(wc -l <"$dir/err")" -eq 1 ] || fail "pokelab $*: not one line on stderr"
	grep -q '^pokelab: ' "$dir/err" || fail "pokelab $*: the line does not start 'pokelab: '"
}
