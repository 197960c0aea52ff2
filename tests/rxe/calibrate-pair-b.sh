#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Two-guest calibrate, node B: `rtune calibrate --peer` against node A's `rtune serve` across the link (two devices).
# 1. a small grid with enough budget completes with every planned RC point and the whole sweep, marked two-node,
#    stored; 2. the default grid with --budget 20 over this slow emulated link still ends within its budget, complete,
#    and says in its notes when the budget did not cover the plan.
set -uo pipefail
B=${RTUNE_BUILD_DIR:?}
rtune=$B/cli/rtune
chk="python3 $(dirname "$0")/calibrate_check.py"
fail=0

# run NAME BUDGET ARGS...: calibrate against A (waiting, bounded, for its server), checks exit 0 and the wall time
run() {
  local name=$1 budget=$2 ok=0 rc t0 t1 wall
  shift 2
  for i in $(seq 1 60); do   # a refusal (server not up yet) is immediate
    t0=$(date +%s.%N)
    $rtune calibrate --peer "$RTUNE_VM_PEER_ADDR" --budget "$budget" --db /tmp/pair.db --out "/tmp/$name.json" "$@" \
      > "/tmp/$name.txt" 2> "/tmp/$name.err"
    rc=$?
    t1=$(date +%s.%N)
    if [ $rc -eq 0 ]; then ok=1; break; fi
    grep -q "refused" "/tmp/$name.err" || break
    sleep 1
  done
  cat "/tmp/$name.err"; head -2 "/tmp/$name.txt"
  python3 -c "import json; p=json.load(open('/tmp/$name.json'))['params']; p.pop('sizes', None); print(p)"
  [ $ok -eq 1 ] || { echo "FAIL: $name: calibrate --peer exited $rc"; fail=1; return; }
  wall=$(python3 -c "print(round($t1 - $t0, 2))")
  python3 - "$wall" "$budget" "$name" <<'PY' || { echo "FAIL: $name over budget"; fail=1; }
import json, sys
wall, budget, name = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
r = json.load(open("/tmp/%s.json" % name))
run_s = (r["ended_ns"] - r["started_ns"]) / 1e9
print("%s: run %.2f s, process %.2f s, for --budget %g" % (name, run_s, wall, budget))
sys.exit(0 if run_s <= budget * 1.1 + 1 and wall <= budget * 1.5 + 5 else 1)
PY
}

run full 60 --quick --sizes 1,64,512 --sq-depth 64
$chk /tmp/full.json --status complete --mode two-node --complete-grid --db /tmp/pair.db || fail=1
grep -q "\"peer\": \"$RTUNE_VM_PEER_ADDR\"" /tmp/full.json || { echo "FAIL: peer not recorded"; fail=1; }

run small 20 --quick
$chk /tmp/small.json --status complete --mode two-node --db /tmp/pair.db || fail=1
python3 - <<'PY' || fail=1
import json, sys
r = json.load(open("/tmp/small.json"))
planned = 2 * 2 * 2 * len(r["params"]["sizes"])
got = len([p for p in r["latency"] if p["msg_bytes"] in r["params"]["sizes"]])
note = r["params"].get("notes", "")
print("small grid: %d of %d planned latency points, %d rate points; notes: %s" % (got, planned, len(r["rate"]), note))
if got < planned and "budget too small" not in note:
    print("FAIL: points missing but the notes do not say the budget was too small")
    sys.exit(1)
PY
[ $fail -eq 0 ] && echo "PASS: node B calibrated against node A" || echo "FAIL: pair calibrate"
exit $fail
