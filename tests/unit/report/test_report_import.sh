#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Keeps docs/report.md true: profiles imported into a store keep their hardware (device rows, calibration facts), so
# `rtune report STORE` gives the same nodes, hardware groups, per-group node counts and outliers with their causes as
# `rtune report` over the JSON files themselves, on a generated fleet with planted outliers.
# usage: test_report_import.sh RTUNE REPORT_FLEET_GEN
set -euo pipefail
rtune=$1 gen=$2
now=1780000000
t=$(mktemp -d /tmp/rtune-report-import.XXXXXX)
trap 'rm -rf "$t"' EXIT
"$gen" json "$t/fleet" 42 3 30 4 $now > "$t/planted"
find "$t/fleet" -name '*.json' -print0 | xargs -0 "$rtune" import --db "$t/fleet.db" > /dev/null
"$rtune" report --json --now $now "$t/fleet" > "$t/files.json"
"$rtune" report --json --now $now "$t/fleet.db" > "$t/store.json"
python3 - "$t/files.json" "$t/store.json" "$t/planted" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
groups = lambda d: sorted((g["id"], g["node_count"]) for g in d["groups"])
outliers = lambda d: sorted((o["hostname"], o["cause"]) for o in d["outliers"])
assert a["node_count"] == b["node_count"] == 90, (a["node_count"], b["node_count"])
assert all(g["id"].startswith("hw:") for g in b["groups"]), "store groups not by hardware class: %s" % groups(b)
assert groups(a) == groups(b), "groups differ: files %s, store %s" % (groups(a), groups(b))
assert outliers(a) == outliers(b), "outliers differ: %s" % (set(outliers(a)) ^ set(outliers(b)))
planted = {tuple(l.split()) for l in open(sys.argv[3])}
assert planted <= set(outliers(b)), "planted outliers missing from the store's report: %s" % (planted - set(outliers(b)))
print("ok report over the imported store: %d nodes, %d hardware groups, %d outliers, as over the files"
      % (b["node_count"], len(b["groups"]), len(b["outliers"])))
PY
echo "PASS: report over an imported store"
