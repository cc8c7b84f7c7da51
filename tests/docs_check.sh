#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# docs_check.sh SRCROOT POKELAB: the docs name only what exists.
#  - every path under one of the tree's directories that README.md or a
#    docs/ page names (alternative/int3.cpp, tests/cli/torture.sh, or an
#    include path such as kernel_shim/xmc.h) is a file or directory of the
#    tree;
#    (or one the page itself creates: <!-- tutorial-file: PATH -->);
#  - every --option shown on a line that runs pokelab is one of pokelab's.
set -u
root=$1
pokelab=$2
help=$(mktemp)
bad=$(mktemp)
trap 'rm -f "$help" "$bad"' EXIT

{
	"$pokelab" --help-all
	for s in bpf-stats isolation alternatives recursion; do
		"$pokelab" run "$s" --help
	done
	"$pokelab" bench --help
	"$pokelab" torture --help
} >"$help" 2>&1

for f in "$root/README.md" "$root"/docs/*.md; do
	name=${f#"$root/"}
	# files a page creates (docs/tutorial.md's <!-- tutorial-file: PATH -->)
	made=$(sed -n 's/.*<!-- tutorial-file: \([^ ]*\) -->.*/\1/p' "$f")
	# paths that start a word (not ".../tools/..." inside build/tools/pokelab)
	grep -oE '(^|[^A-Za-z0-9_./-])(kernel_shim|alternative|context_tracking|module|tools|tests|workloads|docs)/[A-Za-z0-9_./*-]*[A-Za-z0-9_*]' "$f" |
		sed -E 's/^[^a-z]//' | sort -u | while read -r p; do
		printf '%s\n' "$made" | grep -qxF "$p" && continue
		case "$p" in
		*'*'*)	# a glob: something must match it
			ls $root/$p >/dev/null 2>&1 && continue ;;
		*)
			[ -e "$root/$p" ] && continue
			# an include path: kernel_shim/xmc.h is kernel_shim/xmc/include/kernel_shim/xmc.h
			{ ls "$root"/*/include/"$p" || ls "$root"/*/*/include/"$p"; } >/dev/null 2>&1 && continue ;;
		esac
		echo "$name: names $p, which is not in the tree" >>"$bad"
	done
	grep -E '(^|[ /`])pokelab (demo|run|reproduce|bench|torture)\b' "$f" |
		grep -oE -- ' --[a-z][a-z-]*' | sort -u | while read -r o; do
		grep -q -- "$o" "$help" || echo "$name: shows pokelab $o, which no command takes" >>"$bad"
	done
done
if [ -s "$bad" ]; then
	cat "$bad" >&2
	exit 1
fi
echo "docs: every path and pokelab option named exists"
