#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# refs16.sh [POKELAB]: cases 000/001 on a machine with 16 real cores, the first
# place the case's false sharing of a global refcount can show in latency.
# Runs `pokelab run bpf-stats --cpus 16` (refs=global and refs=percpu
# interleaved flip by flip, one machine per round) and `pokelab bench scale`,
# and leaves both outputs and the machine's description under $OUT (or
# ./refs16-out).
# Needs a built pokelab (default build/tools/pokelab) and no other load.
# Meant for the device machine (`run` tool, one call, ~2 minutes):
#	run: sh tools/device/refs16.sh build/tools/pokelab
set -eu
P=${1:-build/tools/pokelab}
O=${OUT:-./refs16-out}
mkdir -p "$O"
[ -x "$P" ] || { echo "refs16.sh: no pokelab at $P (build it first)" >&2; exit 2; }
{
	echo "date: $(date -u +%FT%TZ)"
	echo "nproc: $(nproc)"
	lscpu 2>/dev/null | grep -E 'Model name|^CPU\(s\)|Thread|Core|Socket|NUMA node\(s\)' || true
	uname -r
} >"$O/machine.txt"
PUS=$(nproc)
if [ "$PUS" -lt 16 ]; then
	echo "refs16.sh: this machine has $PUS PUs; the run needs 16 to mean anything" >&2
fi
"$P" run --quiet bpf-stats --cpus 16 --flips 40 --rounds 4 >"$O/bpf-stats-16.txt" 2>&1
"$P" bench scale --plot "$O/scale.svg" >"$O/scale.txt" 2>&1
grep -E 'nr_entries=|refs-line|^host|check:' "$O/bpf-stats-16.txt"
tail -12 "$O/scale.txt"
