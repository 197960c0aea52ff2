#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Two-guest calibrate, node A: `rtune serve --clients 2` on its own rxe0 for node B across the link (bounded wait).
set -uo pipefail
B=${RTUNE_BUILD_DIR:?}
timeout 500 "$B/cli/rtune" serve --bind "$RTUNE_VM_ADDR" --clients 2 > /tmp/serve.log 2>&1
rc=$?
cat /tmp/serve.log
[ $rc -eq 0 ] || { echo "FAIL: serve exited $rc"; exit 1; }
[ "$(grep -c finished /tmp/serve.log)" -eq 2 ] || { echo "FAIL: the two clients did not finish"; exit 1; }
echo "PASS: node A served two calibrations"
