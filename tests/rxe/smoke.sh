#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Proves the Soft-RoCE tier: ibv_devices shows rxe0, its port is active, and ibv_rc_pingpong between two processes on
# rxe0 passes in both directions; the guest is its own node (hostname rtune-guest, its own machine-id, not the host's).
set -euo pipefail
bash "$(dirname "$0")/guest-identity.sh" rtune-guest
ibv_devices | tee /tmp/devs
grep -q rxe0 /tmp/devs || { echo "FAIL: ibv_devices does not show rxe0"; exit 1; }
ibv_devinfo -d rxe0 | grep -q PORT_ACTIVE || { echo "FAIL: rxe0 port not active"; exit 1; }
ibv_rc_pingpong -d rxe0 -g 1 -n 100 > /tmp/srv.log 2>&1 &
srv=$!
sleep 1
ibv_rc_pingpong -d rxe0 -g 1 -n 100 "$RTUNE_VM_ADDR" | tee /tmp/cli.log
wait "$srv"
cat /tmp/srv.log
grep -q '100 iters' /tmp/cli.log && grep -q '100 iters' /tmp/srv.log || { echo "FAIL: pingpong did not complete"; exit 1; }
echo "PASS: rxe smoke"
