#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `systemd-analyze verify` on deploy/systemd/rtune-agent.service (configured with ExecStart at the built rtune):
# no error and no warning about the unit (an unknown or misspelt key is only a warning). Then the same check on a
# copy with a misspelt key must complain, so the test can fail. 77: systemd-analyze is not installed.
set -euo pipefail
unit=$1
command -v systemd-analyze >/dev/null || { echo "systemd-analyze missing (apt-get install systemd)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$unit" "$tmp/rtune-agent.service"
out=$(systemd-analyze verify "$tmp/rtune-agent.service" 2>&1) || { echo "verify failed: $out"; exit 1; }
if echo "$out" | grep -q 'rtune-agent'; then echo "verify warned: $out"; exit 1; fi
grep -q '^Type=notify$' "$unit"
grep -q '^WatchdogSec=' "$unit"
grep -q '^ProtectSystem=strict$' "$unit"
grep -q '^NoNewPrivileges=yes$' "$unit"
grep -q '^LimitMEMLOCK=infinity$' "$unit"
grep -q '^DeviceAllow=char-infiniband_verbs rw$' "$unit"
mkdir "$tmp/bad"
sed 's/^ProtectHome=yes/ProtectHomee=yes/' "$unit" > "$tmp/bad/rtune-agent.service"
bad=$(systemd-analyze verify "$tmp/bad/rtune-agent.service" 2>&1 || true)
echo "$bad" | grep -q "ProtectHomee" || { echo "verify did not notice a misspelt key: $bad"; exit 1; }
echo "ok: $unit verifies"
