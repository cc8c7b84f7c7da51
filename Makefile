# SPDX-License-Identifier: GPL-2.0-only
#
# Two entry points:
#   make demo   install what the demo needs, build the pokelab command into build/, run the demo
#   make check  install everything, build with the tests, run the whole test suite
#
# The demo's first run is held to 3 minutes on a bare 2-vCPU Debian 12 machine
# (docs/performance.md, "First run"): it installs only the packages of the
# command (tools/install-deps.sh demo) and configures build/ without the
# GoogleTest suites and with line tables only; `make check` installs the rest
# and turns the suites on.

BUILD ?= build

.PHONY: demo check deps deps-demo setup setup-demo build

# Install with $(1) = demo or all; without root or sudo, assume it is done.
define install_deps
	@if [ "$$(id -u)" -eq 0 ] || command -v sudo >/dev/null 2>&1; then \
		bash tools/install-deps.sh $(1); \
	else \
		echo "make: not root and no sudo; assuming the packages of tools/install-deps.sh $(1) are installed"; \
	fi
endef

deps:
	$(call install_deps,all)

deps-demo:
	$(call install_deps,demo)

# A build/ made by `make demo` has the tests off: turn them on.
setup: deps
	@if [ ! -f $(BUILD)/build.ninja ]; then \
		meson setup $(BUILD); \
	elif meson introspect --buildoptions $(BUILD) | \
	     python3 -c 'import json,sys; sys.exit(not any(o["name"] == "tests" and o["value"] == "disabled" for o in json.load(sys.stdin)))'; then \
		meson configure $(BUILD) -Dtests=enabled; \
	fi

# Line tables only (-g1, after meson's -g): backtraces, perf and addr2line keep
# file:line, gdb loses the locals; a third less compile CPU (docs/performance.md,
# "First run"). `meson setup build` by hand, as the tutorial does, keeps full -g.
setup-demo: deps-demo
	@if [ ! -f $(BUILD)/build.ninja ]; then meson setup -Dtests=disabled -Dcpp_args=-g1 $(BUILD); fi

build: setup
	ninja -C $(BUILD)

# only what the demo runs: the pokelab command (the tests build with `make check`)
demo: setup-demo
	ninja -C $(BUILD) tools/pokelab
	$(BUILD)/tools/pokelab demo

check: build
	meson test -C $(BUILD) --print-errorlogs
