#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Guest half of the rxe report test (tests/rxe/report.sh boots it twice: a plain guest and one with two NUMA nodes).
# Reports the guest's devices, calibrates rxe0 pinned to the first CPU of every NUMA node, and writes one JSON profile
# per calibration (tests/rxe/report_profile.py: the real node/device facts and run, naive decisions while `rtune tune`
# does not exist) into PROFDIR; devices and runs go to WORKDIR. Both live in the repo share so the host can read them.
# usage: report-guest.sh LABEL WORKDIR PROFDIR
set -uo pipefail
B=${RTUNE_BUILD_DIR:?}
rtune=$B/cli/rtune
here=$(cd "$(dirname "$0")" && pwd)
label=$1 out=$2 prof=$3
mkdir -p "$out" "$prof"
# both guests share the host's root (and so its machine-id): the hostname tells the nodes apart
hostname "rxe-$label" 2> /dev/null || true
"$rtune" devices --json > "$out/devices.json" || { echo "FAIL: rtune devices --json"; exit 1; }
echo "guest $label: $(ls -d /sys/devices/system/node/node[0-9]* | wc -l) NUMA node(s), cpus $(cat /sys/devices/system/cpu/online)"
for nd in /sys/devices/system/node/node[0-9]*; do
  id=${nd##*node}
  cpu=$(cut -d, -f1 "$nd/cpulist" | cut -d- -f1)
  [ -n "$cpu" ] || continue
  run=-
  if RTUNE_DB=/tmp/$label.db timeout 150 "$rtune" calibrate -d "${RTUNE_VM_DEV:-rxe0}" --quick --budget 10 --ops send \
       --qp-type rc --cpu "$cpu" --no-samples --out "$out/run-node$id.json" > "$out/calibrate-node$id.log" 2>&1; then
    run=$out/run-node$id.json
  else
    echo "guest $label: calibrate on CPU $cpu failed, synthetic decisions: $(tail -2 "$out/calibrate-node$id.log")"
  fi
  python3 "$here/report_profile.py" "$out/devices.json" "$run" "rxe-$label-cpu$cpu" "$prof/$label-cpu$cpu.json" ||
    { echo "FAIL: report_profile.py"; exit 1; }
done
