#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Install, idempotently, every Debian 12 package that pokelab's build, tests and
# tools need. Run as root (or through sudo). Prints what it installs; exits
# non-zero with a message naming the problem when it cannot.

set -euo pipefail

PACKAGES=(
	meson ninja-build pkg-config g++ cmake
	libhwloc-dev liburcu-dev libfmt-dev
	libgtest-dev libgmock-dev libbenchmark-dev
	libzydis-dev libzycore-dev libcli11-dev nlohmann-json3-dev
	gawk libcairo2-dev libfontconfig-dev
	trace-cmd librsvg2-bin tmux
	python3 python3-unidiff
	parallel
)

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
