#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# mutations.sh POKELAB MODULE.o [SEEDS] [DURATION] [JOBS]: the mutation sweep.
# Every BUSTED variant that `pokelab torture --help` lists, with the options
# it lists beside it, under seeds 1..SEEDS (5) for --duration DURATION (20):
# each run must end in FAILURE with an xmc: line naming the CPU (and the
# site, the range or the fence), or (the wedges) a lockup report naming the
# stuck CPU, before any crash notice, so that no kind is caught only by a
# crash, a knob check or a timeout. The runs are a local
# campaign (tools/campaign run --busted all, docs/testing.md "Campaigns"):
# JOBS at once (default: one per core) under GNU parallel, so the sweep's
# wall time divides by the cores. Prints one row per variant (the table of
# docs/testing.md), a replay command under every run that missed, and fails
# if any did.
#
# Variants whose catching run is not torture (the upstream patterns of
# docs/testing.md, judged by their own test) are listed in ELSEWHERE.
# Not in the default setup: meson test -C build --setup mutation --suite mutation.
set -u
pokelab=$1
module=$2
seeds=${3:-5}
duration=${4:-20}
jobs=${5:-$(nproc)}
campaign=$(dirname "$0")/../../tools/campaign
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# variant: the test that catches it instead of torture
declare -A ELSEWHERE=(
	[dispatcher-live-half]="test_bpf BpfDispatcherLiveHalf (torture runs no dispatcher)"
)

skip=()
for v in "${!ELSEWHERE[@]}"; do
	skip+=(--skip "$v")
done
"$campaign" run --pokelab "$pokelab" --module "$module" --busted all "${skip[@]}" \
	--seeds "1-$seeds" --durations "$duration" -j "$jobs" --results "$dir/results.jsonl"
rc=$?
for v in "${!ELSEWHERE[@]}"; do
	printf '| `%s` | - | %s |\n' "$v" "${ELSEWHERE[$v]}"
done
[ $rc -ne 2 ] || { echo "mutations.sh: the campaign refused its arguments" >&2; exit 1; }
[ $rc -eq 0 ] || { echo "mutations.sh: runs missed (each above, with its replay)" >&2; exit 1; }
echo "mutations.sh: every variant named by the model in $seeds of $seeds seeds" \
	"(--duration $duration)"
