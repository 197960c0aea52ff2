#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Two-guest smoke, node A: serves ibv_rc_pingpong and rping on its own rxe0 for node B across the link.
set -euo pipefail
bash "$(dirname "$0")/guest-identity.sh" rtune-guest-a
ibv_rc_pingpong -d rxe0 -g 1 -n 100 > /tmp/srv.log 2>&1 || { cat /tmp/srv.log; echo "FAIL: pingpong server"; exit 1; }
cat /tmp/srv.log
grep -q '100 iters' /tmp/srv.log || { echo "FAIL: pingpong server incomplete"; exit 1; }
timeout 60 rping -s -a "$RTUNE_VM_ADDR" -C 10 -v > /tmp/rping.log 2>&1 || { cat /tmp/rping.log; echo "FAIL: rping server"; exit 1; }
echo "PASS: node A served pingpong and rping"
