# SPDX-License-Identifier: GPL-2.0-only
#
# Two entry points:
#   make demo   install what is missing, build the pokelab command into build/, run the demo
#   make check  install what is missing, build, run the whole test suite

BUILD ?= build

.PHONY: demo check deps setup build

deps:
	@if [ "$$(id -u)" -eq 0 ] || command -v sudo >/dev/null 2>&1; then \
		bash tools/install-deps.sh; \
	else \
		echo "make: not root and no sudo; assuming the packages of tools/install-deps.sh are installed"; \
	fi

setup: deps
	@if [ ! -f $(BUILD)/build.ninja ]; then meson setup $(BUILD); fi

build: setup
	ninja -C $(BUILD)

# only what the demo runs: the pokelab command (the tests build with `make check`)
demo: setup
	ninja -C $(BUILD) tools/pokelab
	$(BUILD)/tools/pokelab demo

check: build
	meson test -C $(BUILD) --print-errorlogs
