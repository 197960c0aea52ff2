# SPDX-License-Identifier: MIT
# Thin entry points over CMake. Each target does all set-up on a fresh Debian 12 machine (as root: missing packages are
# installed with apt-get; otherwise the exact apt-get line is printed and make stops).
#   make check   build and run every test: unit tier and Soft-RoCE (rxe) tier
#   make demo    the main job end to end: devices, calibrate, tune, store, export (in the Soft-RoCE VM without a device)
#   make bench   the benchmarks, as ratios measured in one run
#   make hardening  sanitizer (ASan+UBSan, TSan) test runs, clang-tidy, cppcheck and a bounded fuzz run (scripts/hardening)
BUILD ?= build
WERROR ?= ON
CMAKE_FLAGS ?=

.PHONY: all deps configure build check unit rxe demo bench hardening clean

all: build

deps:
	@scripts/install-deps

configure: deps
	@cmake -S . -B $(BUILD) -DRTUNE_WERROR=$(WERROR) $(CMAKE_FLAGS) > $(BUILD).configure.log 2>&1 || \
		{ cat $(BUILD).configure.log; exit 1; }
	@rm -f $(BUILD).configure.log

build: configure
	@cmake --build $(BUILD) -j$$(nproc)

check: build
	@ctest --test-dir $(BUILD) --output-on-failure

unit: build
	@ctest --test-dir $(BUILD) -L unit --output-on-failure

rxe: build
	@ctest --test-dir $(BUILD) -L rxe --output-on-failure

demo: build
	@scripts/demo $(BUILD)

bench: build
	@scripts/bench $(BUILD)

hardening: deps
	@scripts/hardening

clean:
	rm -rf $(BUILD)
