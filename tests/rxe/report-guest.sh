#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Guest half of the rxe report test (tests/rxe/report.sh boots it twice: a plain guest and one with two NUMA nodes).
# For the first CPU of every NUMA node: calibrates rxe0 pinned to that CPU, tunes the run (`rtune tune`) and copies the
# store (node, device, run with its curves and environment, profile) into PROFDIR as one node "rxe-LABEL-cpuN". When
# calibrate or tune fails, a JSON profile is written instead (tests/rxe/report_profile.py: the real node and device
# facts, decisions from the run's medians or synthetic) and the fallback is said on stdout. Work files go to WORKDIR.
# Both directories live in the repo share so the host can read them.
# usage: report-guest.sh LABEL WORKDIR PROFDIR
set -uo pipefail
B=${RTUNE_BUILD_DIR:?}
rtune=$B/cli/rtune
here=$(cd "$(dirname "$0")" && pwd)
label=$1 out=$2 prof=$3
mkdir -p "$out" "$prof"
"$rtune" devices --json > "$out/devices.json" || { echo "FAIL: rtune devices --json"; exit 1; }
echo "guest $label: $(ls -d /sys/devices/system/node/node[0-9]* | wc -l) NUMA node(s), cpus $(cat /sys/devices/system/cpu/online)"
for nd in /sys/devices/system/node/node[0-9]*; do
  id=${nd##*node}
  cpu=$(cut -d, -f1 "$nd/cpulist" | cut -d- -f1)
  [ -n "$cpu" ] || continue
  # every guest shares the host's root (and so its machine-id): one hostname per calibration tells the nodes apart
  hostname "rxe-$label-cpu$cpu" 2> /dev/null || true
  db=/tmp/$label-cpu$cpu.db
  run=-
  if RTUNE_DB=$db timeout 150 "$rtune" calibrate -d "${RTUNE_VM_DEV:-rxe0}" --quick --budget 10 --ops send \
       --qp-type rc --cpu "$cpu" --no-samples --out "$out/run-cpu$cpu.json" > "$out/calibrate-cpu$cpu.log" 2>&1; then
    run=$out/run-cpu$cpu.json
    if RTUNE_DB=$db "$rtune" tune > "$out/tune-cpu$cpu.log" 2>&1 && sqlite3 "$db" ".backup '$prof/$label-cpu$cpu.db'"; then
      echo "guest $label: CPU $cpu (NUMA node $id): calibrated, tuned, store $prof/$label-cpu$cpu.db"
      continue
    fi
    echo "guest $label: rtune tune failed on CPU $cpu's run, JSON profile from the run's medians: $(tail -2 "$out/tune-cpu$cpu.log")"
  else
    echo "guest $label: calibrate on CPU $cpu failed, synthetic decisions: $(tail -2 "$out/calibrate-cpu$cpu.log")"
  fi
  python3 "$here/report_profile.py" "$out/devices.json" "$run" "rxe-$label-cpu$cpu" "$prof/$label-cpu$cpu.json" ||
    { echo "FAIL: report_profile.py"; exit 1; }
done
