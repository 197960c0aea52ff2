#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `rtune report` end to end on a generated fleet (JSON profiles in directories plus an rtune store with runs): every
# planted outlier named with its cause in the table, JSON and CSV; the HTML page well-formed and self-contained; bad
# inputs named one per line on stderr and skipped; exit codes 0 / 1 (nothing usable) / 2 (usage); the default store.
# usage: test_report_cli.sh RTUNE REPORT_FLEET_GEN SRC_DIR
set -euo pipefail
rtune=$1 gen=$2 src=$3
now=1780000000
t=$(mktemp -d /tmp/rtune-report-cli.XXXXXX)
trap 'rm -rf "$t"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
check_rc() { # expected actual what
  [ "$1" = "$2" ] || fail "$3: exit $2, expected $1"
}

"$gen" json "$t/fleet" 42 3 30 4 $now > "$t/planted"
"$gen" store "$t/fleet/rack.db" rack 6 $now
[ "$(wc -l < "$t/planted")" = 12 ] || fail "generator planted $(wc -l < "$t/planted") outliers, expected 12"

# --- the table: every planted outlier with its cause ---
rc=0; "$rtune" report --now $now "$t/fleet" > "$t/out.txt" 2> "$t/err.txt" || rc=$?
check_rc 0 $rc "report on a good fleet"
[ ! -s "$t/err.txt" ] || fail "stderr not empty on a good fleet: $(cat "$t/err.txt")"
grep -q "^rtune report: 96 nodes in 4 groups" "$t/out.txt" || fail "summary line: $(head -1 "$t/out.txt")"
while read -r host cause; do
  grep -q "^  OUTLIER NODE $host: $cause" "$t/out.txt" || fail "table: $host not reported with $cause"
done < "$t/planted"
grep -q "^  OUTLIER NODE rack-0: .*remote_numa_calibration" "$t/out.txt" ||
  fail "store node rack-0 not flagged remote_numa_calibration"
grep -q "DRIFT rack-1 mlx5_0/1 inline_threshold: 64 now" "$t/out.txt" || fail "drift of rack-1 not reported"
# no other node is an outlier (rack-1's drift is planted too)
grep -o "OUTLIER NODE [^:]*" "$t/out.txt" | awk '{print $3}' | sort -u > "$t/flagged"
# one line per node: a node is listed once however many of its entries are outliers
[ "$(grep -c "OUTLIER NODE" "$t/out.txt")" = "$(wc -l < "$t/flagged")" ] || fail "a node listed more than once"
{ awk '{print $1}' "$t/planted"; echo rack-0; echo rack-1; } | sort -u > "$t/expected"
diff "$t/expected" "$t/flagged" > /dev/null || fail "flagged nodes differ from planted: $(diff "$t/expected" "$t/flagged" | tr '\n' ' ')"

# --- JSON ---
"$rtune" report --json --now $now "$t/fleet" > "$t/out.json"
python3 - "$t/out.json" "$t/planted" <<'EOF' || fail "JSON output"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["schema"] == {"name": "rtune-report", "version": "2.0"}, doc["schema"]
assert doc["node_count"] == 96 and len(doc["groups"]) == 4
assert sum(g["node_count"] for g in doc["groups"]) == 96
found = {(o["hostname"], o["cause"]) for o in doc["outliers"]}
for line in open(sys.argv[2]):
    host, cause = line.split()
    assert (host, cause) in found, (host, cause)
for g in doc["groups"]:
    for s in g["slots"]:
        assert s["recommended"] is not None and s["inline_threshold"]["n"] == s["entries"]
assert [d["hostname"] for d in doc["drift"]] == ["rack-1"]
EOF

# --- CSV ---
"$rtune" report --csv --now $now "$t/fleet" > "$t/out.csv"
python3 - "$t/out.csv" <<'EOF' || fail "CSV output"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
assert len(rows) == 90 * 2 + 6, len(rows)
assert {r["cause"] for r in rows if r["outlier_metrics"]} >= {"remote_numa_calibration", "different_mps",
    "different_firmware", "low_confidence", "stale_profile"}
assert all(r["latency_ns"] for r in rows if r["hostname"].startswith("rack-"))
# the run's evidence, as a 1.3 profile would carry it
assert all(r["latency_kind"] == "pingpong" and r["latency_inline_ns"] and r["latency_noinline_ns"] and r["mops_at_n1"]
           and r["noise_pct"] for r in rows if r["hostname"].startswith("rack-"))
EOF

# --- HTML: well-formed, self-contained, charts (distributions and the store's curves) ---
rc=0; "$rtune" report --now $now --html "$t/report.html" "$t/fleet" > /dev/null || rc=$?
check_rc 0 $rc "report --html"
python3 "$src/tests/unit/report/check_html.py" "$t/report.html" 14 "rtune fleet report" "knee N=16" \
  "threshold 48 B" "remote_numa_calibration" || fail "HTML page"
if command -v xmllint > /dev/null; then
  tail -n +2 "$t/report.html" | xmllint --noout - || fail "xmllint: HTML page not well-formed"
fi

# --- bad inputs among good ones: each named once on stderr, skipped, the rest reported ---
mkdir -p "$t/bad/deeper" "$t/empty"
sed 's/"version":"1.0"/"version":"2.0"/' "$(ls "$t"/fleet/g0/*.json | head -1)" > "$t/bad/newer.json"
printf 'SQLite format 3\0garbage garbage garbage garbage garbage garbage garbage garbage' > "$t/bad/deeper/corrupt.db"
printf '{"schema": {"name": "rtune-profile", "version": "1.0"}, "entries": [' > "$t/bad/truncated.json"
rc=0; "$rtune" report --now $now "$t/fleet" "$t/bad" "$t/empty" > "$t/out2.txt" 2> "$t/err2.txt" || rc=$?
check_rc 0 $rc "report with bad inputs among good ones"
grep -q "^rtune report: 96 nodes" "$t/out2.txt" || fail "good inputs not all reported beside bad ones"
grep -q "newer.json.*schema version 2.0 is not supported" "$t/err2.txt" || fail "newer schema not named"
grep -q "corrupt.db.*not a database" "$t/err2.txt" || fail "corrupt store not named"
grep -q "truncated.json.*line" "$t/err2.txt" || fail "truncated JSON not named"
grep -q "empty.*holds no profiles" "$t/err2.txt" || fail "empty directory not named"
[ "$(wc -l < "$t/err2.txt")" = 4 ] || fail "expected 4 stderr lines, got: $(cat "$t/err2.txt")"

# --- nothing usable: exit 1; usage: exit 2 ---
rc=0; "$rtune" report "$t/empty" > /dev/null 2> "$t/err3.txt" || rc=$?
check_rc 1 $rc "empty directory only"
grep -q "no usable profile" "$t/err3.txt" || fail "no 'no usable profile' line"
rc=0; "$rtune" report "$t/bad" > /dev/null 2>&1 || rc=$?
check_rc 1 $rc "only bad inputs"
"$gen" store "$t/runs-only.db" runs 2 $now
sqlite3 "$t/runs-only.db" "DELETE FROM profiles"
rc=0; "$rtune" report "$t/runs-only.db" > /dev/null 2> "$t/err7.txt" || rc=$?
check_rc 1 $rc "a store with runs but no profile"
grep -q "runs-only.db: store holds no profiles" "$t/err7.txt" || fail "profile-less store not named: $(cat "$t/err7.txt")"
mkfifo "$t/fifo"
rc=0; timeout 20 "$rtune" report "$t/fifo" > /dev/null 2> "$t/err6.txt" || rc=$?
check_rc 1 $rc "a FIFO named as input (must not block)"
grep -q "fifo: not a regular file" "$t/err6.txt" || fail "FIFO not named: $(cat "$t/err6.txt")"
rc=0; "$rtune" report --json --csv "$t/fleet" > /dev/null 2>&1 || rc=$?
check_rc 2 $rc "--json --csv"
rc=0; "$rtune" report --frobnicate > /dev/null 2>&1 || rc=$?
check_rc 2 $rc "unknown option"
rc=0; "$rtune" report --z abc "$t/fleet" > /dev/null 2>&1 || rc=$?
check_rc 2 $rc "--z abc"

# --- group profiles: one per hardware group, rtune-profile 1.3 marked as a group profile; not nodes when read back ---
rc=0; "$rtune" report --now $now --group-profiles "$t/groups" "$t/fleet" > /dev/null 2> "$t/err6.txt" || rc=$?
check_rc 0 $rc "--group-profiles"
[ "$(ls "$t/groups" | grep -c '^hw-.*\.json$')" -ge 4 ] || fail "group profiles: $(ls "$t/groups" | tr '\n' ' ')"
python3 - "$t/groups" <<'EOF' || fail "group profile documents"
import json, os, sys
for f in os.listdir(sys.argv[1]):
    d = json.load(open(os.path.join(sys.argv[1], f)))
    assert d["schema"] == {"name": "rtune-profile", "version": "1.3"}, d["schema"]
    assert d["group"]["node_count"] >= 1 and d["group"]["id"].replace(":", "-") + ".json" == f, (f, d["group"])
    assert d["entries"] and all(e["group"]["basis_nodes"] >= 1 for e in d["entries"])
EOF
rc=0; "$rtune" report "$t/groups" > /dev/null 2> "$t/err7.txt" || rc=$?
check_rc 1 $rc "report over group profiles only"
grep -q "a group profile (of [0-9]* nodes), not a node's profile" "$t/err7.txt" || fail "group profile read as a node"
: > "$t/gp-file"
rc=0; "$rtune" report --now $now --group-profiles "$t/gp-file" "$t/fleet" > /dev/null 2> "$t/err8.txt" || rc=$?
check_rc 1 $rc "--group-profiles into a regular file"
grep -q "not a directory" "$t/err8.txt" || fail "--group-profiles FILE not named: $(cat "$t/err8.txt")"

# --- the default store ($RTUNE_DB) ---
rc=0; RTUNE_DB="$t/fleet/rack.db" "$rtune" report --now $now > "$t/out4.txt" 2>&1 || rc=$?
check_rc 0 $rc "default store"
grep -q "^rtune report: 6 nodes in 1 group" "$t/out4.txt" || fail "default store: $(head -1 "$t/out4.txt")"
rc=0; RTUNE_DB="$t/none.db" "$rtune" report > /dev/null 2> "$t/err5.txt" || rc=$?
check_rc 1 $rc "missing default store"
grep -q "no store at" "$t/err5.txt" || fail "missing store not named: $(cat "$t/err5.txt")"

[ "$fails" = 0 ] || { echo "test_report_cli: $fails failure(s)" >&2; exit 1; }
echo "test_report_cli: ok"
