#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# kernelshark-shot.sh POKELAB OUT.png: record a short demo as trace.dat
# (every event) and take a screenshot of KernelShark showing it, under
# Xvfb. This is how docs/kernelshark.png was made. Needs Debian's
# kernelshark, xvfb, x11-apps and netpbm (not in tools/install-deps.sh: the
# tests do not need them). KernelShark is run as "nobody" (as root it opens
# a warning dialog first).
set -euo pipefail
pokelab=${1:?usage: kernelshark-shot.sh POKELAB OUT.png}
out=${2:?usage: kernelshark-shot.sh POKELAB OUT.png}
for c in kernelshark Xvfb xwd xwdtopnm pnmtopng runuser; do
	command -v $c >/dev/null || { echo "kernelshark-shot: $c not found" >&2; exit 1; }
done
dir=$(mktemp -d)
trap 'kill $xvfb 2>/dev/null || true; rm -rf "$dir"' EXIT
chmod 755 "$dir"
"$pokelab" demo --cpus 4 --nohz-full 3 --flips 4 --trace "$dir/demo.dat" 'trace_event=*:*' \
	>/dev/null
chmod 644 "$dir/demo.dat"
Xvfb :77 -screen 0 1400x900x24 >/dev/null 2>&1 &
xvfb=$!
sleep 2
runuser -u nobody -- env HOME="$dir" XDG_RUNTIME_DIR="$dir" DISPLAY=:77 \
	timeout 30 kernelshark -geometry 1380x880+0+0 "$dir/demo.dat" >/dev/null 2>&1 &
sleep 12
DISPLAY=:77 xwd -root -silent | xwdtopnm 2>/dev/null | pnmtopng >"$out"
echo "kernelshark-shot: wrote $out"
