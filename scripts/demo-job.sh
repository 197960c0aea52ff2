#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The demo itself, run by `make demo` (on the host's device or in the Soft-RoCE guest) and by the rxe_demo test: lists
# the devices, calibrates the first one, tunes the inline threshold and signaling interval from the run, stores the
# profile, exports it for applications, runs an example application that sends with it, records what an unmodified
# application sends with the probe and tunes for it, and ends with the fleet report. Store and exports are kept in $RTUNE_BUILD_DIR/demo/.
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

# a RoCE port needs a GID index for ibv_rc_pingpong: take the IPv4-mapped RoCE v2 one rtune devices reports
gid=$("$rtune" devices --no-probe --json | python3 -c '
import json, sys
d = json.load(sys.stdin)["devices"][0]
gids = d["ports"][0]["gids"] if d["ports"] else []
v4 = [g["index"] for g in gids if "ffff:" in g["gid"] and "v2" in (g["type"] or "")]
print(v4[0] if v4 else "")')
dev=$("$rtune" devices --no-probe --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["devices"][0]["name"])')
step "rtune probe: what an unmodified application (ibv_rc_pingpong, 64 B messages) really sends"
pp=(ibv_rc_pingpong -d "$dev" -n 500 -s 64 ${gid:+-g "$gid"})
"${pp[@]}" > "$out/pingpong-server.log" 2>&1 &
server=$!
sleep 1
"$rtune" probe --name pingpong -- "${pp[@]}" localhost
wait "$server"

step "rtune tune --app pingpong (the threshold weighted by what the application sends)"
"$rtune" tune --app pingpong

step "rtune report --html (the fleet view, here a fleet of one node)"
"$rtune" report --html "$out/report.html"
echo "report page: $out/report.html"

echo
echo "demo: done; store $RTUNE_DB, profile $out/profile.json, run $out/run.json, report $out/report.html"
