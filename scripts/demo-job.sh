#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The demo itself, run by `make demo` (on the host's device or in the Soft-RoCE guest) and by the rxe_demo test: lists
# the devices, calibrates the first one, tunes the inline threshold and signaling interval from the run, stores the
# profile, exports it for applications and runs an example application that sends with it. Store and exports are kept in $RTUNE_BUILD_DIR/demo/.
set -euo pipefail
rtune=$RTUNE_BUILD_DIR/cli/rtune
out=$RTUNE_BUILD_DIR/demo
mkdir -p "$out"
export RTUNE_DB=$out/rtune.db
budget=${RTUNE_DEMO_BUDGET:-30}

step() { printf '\n== %s\n' "$*"; }

step "rtune devices"
"$rtune" devices

step "rtune calibrate --budget $budget (loopback on the first device)"
"$rtune" calibrate --budget "$budget" --out "$out/run.json"

step "rtune tune (decisions and their reasons, stored as this node's profile)"
"$rtune" tune

step "rtune show"
"$rtune" show

step "rtune export (JSON profile for applications, shell lines for existing stacks)"
"$rtune" export -o "$out/profile.json"
"$rtune" export --format env --profile "$out/profile.json"

step "an application using the profile through librtune (inline below the threshold, signal every N, no ENOMEM)"
"$RTUNE_BUILD_DIR/examples/rt_send_example" --profile "$out/profile.json" -n 2000 -s 8,64,256

echo
echo "demo: done; store $RTUNE_DB, profile $out/profile.json, run $out/run.json"
