#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Stability measurement (not a test, asserts nothing): RUNS (default 6) loopback `rtune calibrate --budget 20 --seed i`
# in one guest session, each followed by `rtune tune --json --dry-run`, their JSON written to OUT (default
# $RTUNE_BUILD_DIR/stability). Summarise with tests/rxe/stability_summary.py OUT.
# usage: tests/rxe/run-in-vm tests/rxe/calibrate-stability.sh   (RTUNE_STAB_OUT, RTUNE_STAB_RUNS override)
set -uo pipefail
B=${RTUNE_BUILD_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/build}
out=${RTUNE_STAB_OUT:-$B/stability}
runs=${RTUNE_STAB_RUNS:-6}
mkdir -p "$out"
export RTUNE_DB=/tmp/stab.db
for i in $(seq 1 "$runs"); do
  t0=$(date +%s.%N)
  "$B/cli/rtune" calibrate -d "${RTUNE_VM_DEV:-rxe0}" --budget 20 --seed "$i" --out "$out/run$i.json" > "$out/run$i.txt" 2> "$out/run$i.err"
  rc=$?
  t1=$(date +%s.%N)
  echo "run $i: exit $rc, process $(python3 -c "print(round($t1 - $t0, 2))") s"
  "$B/cli/rtune" tune --json --dry-run > "$out/tune$i.json" 2> "$out/tune$i.err" || echo "tune $i exited $?"
done
