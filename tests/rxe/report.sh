#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# rxe tier of `rtune report` (runs on the host; boots two guests one after the other): a plain guest (1 NUMA node) and
# a guest booted with `run-in-vm --numa 2`, each calibrating rxe0 for real pinned to the first CPU of every NUMA node,
# tuning the run and keeping the store (tests/rxe/report-guest.sh; a JSON profile from the node's real facts when
# calibrate or tune fails). Then `rtune report` over all of it must put the plain guest and the two-NUMA guest in
# different groups (the NUMA layout is part of the hardware class), keep the two-NUMA guest's two calibrations (CPU 0
# on node 0, CPU 1 on node 1) together in one group, record each calibration's CPU NUMA node, give latency and rate at
# the chosen settings, and draw the runs' curves in the HTML page. rxe0 is a software device without a NUMA node, so
# a calibration cannot be judged NUMA-remote here; that path is covered by the unit tests.
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
"$here/run-in-vm" --timeout 400 --numa 2 "$here/report-guest.sh" numa2 "$out/numa2" "$out/profiles/numa2" ||
  bad "two-NUMA guest failed"
ls "$out"/profiles/*/* > /dev/null 2>&1 || { echo "FAIL: no profiles written"; exit 1; }

"$rtune" report --json "$out/profiles" > "$out/report.json" 2> "$out/report.err" ||
  bad "rtune report exited $?: $(cat "$out/report.err")"
"$rtune" report --csv "$out/profiles" > "$out/report.csv" 2> /dev/null || bad "rtune report --csv failed"
"$rtune" report "$out/profiles" || true
[ ! -s "$out/report.err" ] || bad "inputs skipped: $(cat "$out/report.err")"
"$rtune" report --html "$out/report.html" "$out/profiles" > /dev/null || bad "rtune report --html failed"
if ls "$out"/profiles/*/*.db > /dev/null 2>&1; then
  # stores hold the runs: the page must draw their curves with the threshold and the knee marked
  python3 "$here/../unit/report/check_html.py" "$out/report.html" 4 "rtune fleet report" "latency vs size" "knee N=" ||
    bad "HTML page"
else
  python3 "$here/../unit/report/check_html.py" "$out/report.html" 2 "rtune fleet report" || bad "HTML page"
fi
python3 "$here/report_check.py" "$out" || fail=1
[ "$fail" = 0 ] && echo "rxe report: ok"
exit $fail
