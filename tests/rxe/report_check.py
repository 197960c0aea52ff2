#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Checks of the rxe report test (tests/rxe/report.sh) on `rtune report --json/--csv` over the two guests' profiles:
# the plain guest and the two-NUMA guest in different groups formed from hardware facts, the two-NUMA guest's two
# calibrations in one group and run on NUMA nodes 0 and 1, latency/rate at the chosen settings from the stored runs.
# usage: report_check.py OUTDIR
import csv
import glob
import json
import os
import sys

out = sys.argv[1]
doc = json.load(open(os.path.join(out, "report.json")))
group = {n["hostname"]: g for g in doc["groups"] for n in g["nodes"]}
print("groups:", [(g["label"], [n["hostname"] for n in g["nodes"]]) for g in doc["groups"]])
plain = sorted(h for h in group if h.startswith("rxe-plain-"))
numa2 = sorted(h for h in group if h.startswith("rxe-numa2-"))
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
    if not (gp["from_hardware"] and g2["from_hardware"]):
        bad("groups not formed from hardware facts")
rows = list(csv.DictReader(open(os.path.join(out, "report.csv"), newline="")))
cal = {r["hostname"]: r["calibration_cpu_numa_node"] for r in rows}
print("calibration CPU NUMA node per node:", cal)
stores = sorted(os.path.relpath(p, out) for p in glob.glob(os.path.join(out, "profiles", "*", "*.db")))
jsons = sorted(os.path.relpath(p, out) for p in glob.glob(os.path.join(out, "profiles", "*", "*.json")))
print("real profiles (calibrate + tune, stores):", stores, "; fallback JSON profiles:", jsons)
for r in rows:
    print(f"  {r['hostname']}: inline_threshold {r['inline_threshold']} signal_interval {r['signal_interval']} "
          f"latency_ns {r['latency_ns']} mops {r['mops']} confidence {r['confidence']}")
if sorted(cal.get(h, "") for h in numa2) != ["0", "1"] and (not jsons or all("numa2" not in j for j in jsons)):
    bad(f"two-NUMA guest's calibrations did not run on nodes 0 and 1: {cal}")
if not jsons and not all(r["latency_ns"] and r["mops"] for r in rows):
    bad("latency/rate at the chosen settings missing for a stored run")
sys.exit(0 if ok else 1)
