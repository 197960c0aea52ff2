#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Two-guest smoke, node B: ibv_rc_pingpong and rping against node A across the link; checks the devices are distinct.
set -euo pipefail
bash "$(dirname "$0")/guest-identity.sh" rtune-guest-b
ok=0
for i in $(seq 1 30); do   # bounded: wait for A's server
  if ibv_rc_pingpong -d rxe0 -g 1 -n 100 "$RTUNE_VM_PEER_ADDR" > /tmp/cli.log 2>&1; then ok=1; break; fi
  sleep 1
done
cat /tmp/cli.log
[ "$ok" = 1 ] && grep -q '100 iters' /tmp/cli.log || { echo "FAIL: pingpong client"; exit 1; }
ok=0
for i in $(seq 1 30); do
  if timeout 60 rping -c -a "$RTUNE_VM_PEER_ADDR" -C 10 -v > /tmp/rping.log 2>&1; then ok=1; break; fi
  sleep 1
done
tail -2 /tmp/rping.log
[ "$ok" = 1 ] && grep -q 'ping data' /tmp/rping.log || { echo "FAIL: rping client"; exit 1; }
echo "PASS: node B reached node A over RDMA"
