#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `cmake --install`, staged with DESTDIR: the unit, the udev rule, the configuration, the rules and the DaemonSet are
# installed; the installed unit runs the installed binary with the installed configuration; a reinstall keeps an
# operator's edited agent.conf.
set -euo pipefail
build=$1 prefix=$2 bindir=$3 conf=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
DESTDIR=$tmp cmake --install "$build" > "$tmp.log" 2>&1 || { cat "$tmp.log"; rm -f "$tmp.log"; exit 1; }
rm -f "$tmp.log"
root=$tmp$prefix
for f in lib/systemd/system/rtune-agent.service lib/udev/rules.d/90-rtune-agent.rules \
         share/rtune/deploy/prometheus/rtune-rules.yml share/rtune/deploy/prometheus/rtune-rules.test.yml \
         share/rtune/deploy/kubernetes/rtune-agent-daemonset.yaml share/rtune/deploy/agent.conf.example; do
  [ -f "$root/$f" ] || { echo "not installed: $f"; exit 1; }
done
[ -f "$tmp$conf" ] || { echo "not installed: $conf"; exit 1; }
[ -x "$tmp$bindir/rtune" ] || { echo "not installed: $bindir/rtune"; exit 1; }
unit=$root/lib/systemd/system/rtune-agent.service
grep -qx "ExecStart=$bindir/rtune agent --config $conf" "$unit" ||
  { echo "unit's ExecStart is not the installed binary and config: $(grep ExecStart "$unit")"; exit 1; }
if grep -qE '@[A-Z_]+@' "$unit"; then echo "unconfigured @VAR@ left in the unit"; exit 1; fi
grep -q 'SYSTEMD_WANTS}+="rtune-agent.service"' "$root/lib/udev/rules.d/90-rtune-agent.rules"
echo "# edited by the operator" >> "$tmp$conf"
DESTDIR=$tmp cmake --install "$build" > /dev/null
grep -q "edited by the operator" "$tmp$conf" || { echo "a reinstall replaced the operator's $conf"; exit 1; }
echo "ok: installed under $tmp$prefix"
