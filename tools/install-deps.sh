#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Install, idempotently, the Debian 12 packages that pokelab needs. Run as root
# (or through sudo). Prints what it installs; exits non-zero with a message
# naming the problem when it cannot.
#
#	install-deps.sh demo	what `make demo` needs: the build of the pokelab command
#	install-deps.sh [all]	that and what the tests and tools need (`make check`)
#
# The demo's set is the smaller on purpose: on a bare 2-vCPU machine the
# first run's apt part is a third of its time (docs/performance.md, "First
# run"), and GoogleTest, trace-cmd, rsvg-convert, tmux and GNU parallel are
# for the tests alone.

set -euo pipefail

DEMO_PACKAGES=(
	meson ninja-build pkg-config g++ cmake python3
	libhwloc-dev liburcu-dev libfmt-dev
	libzydis-dev libzycore-dev libcli11-dev nlohmann-json3-dev
	libcairo2-dev libfontconfig-dev
)
CHECK_PACKAGES=(
	libgtest-dev libgmock-dev libbenchmark-dev
	gawk trace-cmd librsvg2-bin tmux
	python3-unidiff
	parallel
)

case "${1:-all}" in
demo)	PACKAGES=("${DEMO_PACKAGES[@]}") ;;
all)	PACKAGES=("${DEMO_PACKAGES[@]}" "${CHECK_PACKAGES[@]}") ;;
*)	echo "install-deps: ${1}: expected \"demo\" (the demo's packages) or \"all\" (the default)" >&2
	exit 2 ;;
esac

die() {
	echo "install-deps: $*" >&2
	exit 1
}

missing=()
for p in "${PACKAGES[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done

if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all ${#PACKAGES[@]} packages already installed"
	exit 0
fi

echo "install-deps: installing: ${missing[*]}"

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null 2>&1 ||
		die "need root to install ${missing[*]}: run as root or install sudo"
	SUDO="sudo"
fi

command -v apt-get >/dev/null 2>&1 ||
	die "apt-get not found: this script supports Debian 12 (bookworm) only"

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq || die "apt-get update failed (no network to the Debian mirror?)"
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" ||
	die "apt-get install failed for: ${missing[*]}"

echo "install-deps: done"
