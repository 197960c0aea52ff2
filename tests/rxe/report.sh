#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# rxe tier of `rtune report` (runs on the host; boots two guests one after the other): a plain guest (1 NUMA node) and
# a guest booted with `run-in-vm --numa 2`, each calibrating rxe0 for real (pinned to the first CPU of every NUMA
# node; tests/rxe/report-guest.sh) and writing JSON profiles with the hardware object. Then `rtune report` over both
# guests' profiles must put the plain guest and the two-NUMA guest in different groups (the NUMA layout is part of the
# hardware class), keep the two-NUMA guest's two calibrations (CPU 0 on node 0, CPU 1 on node 1) together in one
# group, record each calibration's CPU NUMA node, and render the HTML page. rxe0 is a software device without a NUMA
# node, so a calibration cannot be judged NUMA-remote here; that path is covered by the unit tests.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
B=${RTUNE_BUILD_DIR:?}
rtune=$B/cli/rtune
out=$B/rxe-report
fail=0
bad() { echo "FAIL: $*"; fail=1; }
rm -rf "$out"
mkdir -p "$out"
"$here/run-in-vm" --timeout 400 "$here/report-guest.sh" plain "$out/plain" "$out/profiles/plain" || bad "plain guest failed"
"$here/run-in-vm" --timeout 400 --numa 2 "$here/report-guest.sh" numa2 "$out/numa2" "$out/profiles/numa2" || bad "two-NUMA guest failed"
ls "$out"/profiles/*/*.json > /dev/null 2>&1 || { echo "FAIL: no profiles written"; exit 1; }

"$rtune" report --json "$out/profiles" > "$out/report.json" 2> "$out/report.err" || bad "rtune report exited $?: $(cat "$out/report.err")"
"$rtune" report "$out/profiles" || true
[ ! -s "$out/report.err" ] || bad "inputs skipped: $(cat "$out/report.err")"
"$rtune" report --html "$out/report.html" "$out/profiles" > /dev/null || bad "rtune report --html failed"
python3 "$here/../unit/report/check_html.py" "$out/report.html" 2 "rtune fleet report" || bad "HTML page"
python3 - "$out" <<'EOF' || fail=1
import glob, json, os, sys
out = sys.argv[1]
doc = json.load(open(os.path.join(out, "report.json")))
group = {n["hostname"]: g for g in doc["groups"] for n in g["nodes"]}
print("groups:", [(g["label"], [n["hostname"] for n in g["nodes"]]) for g in doc["groups"]])
plain = [h for h in group if h.startswith("rxe-plain-")]
numa2 = [h for h in group if h.startswith("rxe-numa2-")]
ok = True
def bad(msg):
    global ok
    print("FAIL:", msg)
    ok = False
if len(plain) != 1 or len(numa2) != 2:
    bad(f"expected 1 plain and 2 two-NUMA nodes, got {plain} {numa2}")
else:
    gp, g2 = group[plain[0]], group[numa2[0]]
    if gp["id"] == g2["id"]:
        bad("plain and two-NUMA guests in the same group")
    if group[numa2[1]]["id"] != g2["id"]:
        bad("the two-NUMA guest's two calibrations in different groups")
    if "1 NUMA node" not in gp["label"] or "2 NUMA nodes" not in g2["label"]:
        bad(f"group labels do not name the NUMA layouts: {gp['label']!r} / {g2['label']!r}")
# the calibrations ran where they were pinned: node 0 and node 1 in the two-NUMA guest
cal = {}
for p in glob.glob(os.path.join(out, "profiles", "numa2", "*.json")):
    d = json.load(open(p))
    e = d["entries"][0]
    cal[d["node"]["hostname"]] = (e.get("calibration") or {}).get("cpu_numa_node")
    print(p, "reason:", e["reasons"][0]["code"], "threshold", e["inline_threshold"], "N", e["signal_interval"],
          "calibration", e.get("calibration"))
real = all(json.load(open(p))["entries"][0]["reasons"][0]["code"] == "rxe_test_naive"
           for p in glob.glob(os.path.join(out, "profiles", "*", "*.json")))
print("decisions from real calibration runs" if real else "NOTE: some decisions are synthetic (calibrate failed)")
if real and sorted(cal.values()) != [0, 1]:
    bad(f"two-NUMA guest's calibrations did not run on nodes 0 and 1: {cal}")
sys.exit(0 if ok else 1)
EOF
[ "$fail" = 0 ] && echo "rxe report: ok"
exit $fail
