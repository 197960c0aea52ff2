#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run inside a guest by the smoke tests: the guest is its own node. hostname and /etc/hostname are NAME, /etc/hosts
# resolves it, /etc/machine-id is 32 hex digits, the one run-in-vm keeps for this guest, and not the host's.
set -uo pipefail
name=$1 ctl=${RTUNE_VM_CTL:-/run/rtune-ctl} fails=0
bad() { echo "FAIL: guest identity: $*"; fails=$((fails + 1)); }
mid=$(cat /etc/machine-id 2>/dev/null)
[ "$(hostname)" = "$name" ] || bad "hostname is '$(hostname)', not '$name'"
[ "$(cat /etc/hostname 2>/dev/null)" = "$name" ] || bad "/etc/hostname is '$(cat /etc/hostname 2>/dev/null)'"
getent hosts "$name" > /dev/null || bad "/etc/hosts does not resolve '$name'"
[[ $mid =~ ^[0-9a-f]{32}$ ]] || bad "/etc/machine-id '$mid' is not 32 hex digits"
[ "$mid" = "$(cat "$ctl/machine-id")" ] || bad "/etc/machine-id is not the guest's own"
[ "$mid" != "$(cat "$ctl/host-machine-id")" ] || bad "/etc/machine-id is the host's"
[ "$fails" = 0 ] || exit 1
echo "ok guest identity: hostname $name, machine-id $mid (not the host's)"
