#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# rxe tier for `rtune calibrate` / `rtune serve` in one guest:
#  1. loopback calibrate on rxe0 (--quick --budget 20) completes within its budget, stores the run, and its --out JSON
#     has every planned point of both opcodes, inline and not, RC and UD, and the whole signaling sweep, consistent;
#  2. serve + calibrate --peer as two processes (rdma_cm), run marked two-node;
#  3. SIGINT during a run: one clear line, exit 1, JSON and stored run marked interrupted;
#  4. the peer killed (-9) mid-run: one clear line, bounded, exit 1, run marked failed;
#  5. serve stops cleanly on SIGTERM; bad conditions (unknown device, port not present) give their exit codes.
set -uo pipefail
B=${RTUNE_BUILD_DIR:?}
rtune=$B/cli/rtune
chk="python3 $(dirname "$0")/calibrate_check.py"
dev=${RTUNE_VM_DEV:-rxe0}
addr=${RTUNE_VM_ADDR:?}
fail=0
bad() { echo "FAIL: $*"; fail=1; }
export RTUNE_DB=/tmp/cal.db

echo "== 1. loopback calibrate"
t0=$(date +%s.%N)
$rtune calibrate -d "$dev" --quick --budget 20 --out /tmp/loop.json > /tmp/loop.txt 2> /tmp/loop.err
rc=$?
t1=$(date +%s.%N)
wall=$(python3 -c "print(round($t1 - $t0, 2))")
cat /tmp/loop.err; head -5 /tmp/loop.txt; tail -4 /tmp/loop.txt
[ $rc -eq 0 ] || bad "loopback calibrate exited $rc"
# the run itself (started_ns..ended_ns) keeps the budget; the process around it (loading, the store) gets some slack
python3 - "$wall" <<'PY' || bad "loopback calibrate over its budget"
import json, sys
r = json.load(open("/tmp/loop.json"))
run_s = (r["ended_ns"] - r["started_ns"]) / 1e9
wall = float(sys.argv[1])
p = r["params"]
print("run %.2f s (latency %.2f s in %d rounds, sweep %.2f s), process %.2f s, for --budget 20" % (
    run_s, p.get("latency_s", 0), p.get("latency_rounds", 0), p.get("signaling_s", 0), wall))
sys.exit(0 if run_s <= 20 * 1.1 + 1 and wall <= 20 * 1.5 + 5 else 1)
PY
$chk /tmp/loop.json --status complete --mode loopback --ud --complete-grid --db /tmp/cal.db || fail=1
grep -q "stored as run" /tmp/loop.txt || bad "no 'stored as run' line"

echo "== 2. serve + calibrate --peer in one guest"
$rtune serve --bind "$addr" --port 18600 > /tmp/serve.log 2>&1 &
srv=$!
sleep 2
$rtune calibrate --peer "$addr:18600" --quick --budget 15 --out /tmp/peer.json --no-store > /tmp/peer.txt 2> /tmp/peer.err
rc=$?
cat /tmp/peer.err
[ $rc -eq 0 ] || bad "calibrate --peer exited $rc"
$chk /tmp/peer.json --status complete --mode two-node --complete-grid || fail=1
# a second client on the same server: it cleaned up after the first
$rtune calibrate --peer "$addr:18600" --quick --budget 8 --sizes 1,64 --ops write --out /tmp/peer2.json --no-store \
  > /dev/null 2> /tmp/peer2.err || bad "second client of the same server failed: $(cat /tmp/peer2.err)"
kill -TERM $srv
wait $srv
rc=$?
cat /tmp/serve.log
[ $rc -eq 0 ] || bad "serve exited $rc on SIGTERM"
[ "$(grep -c 'finished' /tmp/serve.log)" -eq 2 ] || bad "serve did not log two finished clients"
grep -q "stopped after 2 client" /tmp/serve.log || bad "serve did not stop cleanly"

echo "== 3. SIGINT mid-run"
$rtune calibrate -d "$dev" --budget 60 --out /tmp/int.json > /tmp/int.txt 2> /tmp/int.err &
cal=$!
sleep 8
kill -INT $cal
t0=$(date +%s)
wait $cal
rc=$?
t1=$(date +%s)
cat /tmp/int.err
[ $rc -eq 1 ] || bad "interrupted calibrate exited $rc, expected 1"
[ $((t1 - t0)) -le 10 ] || bad "calibrate took $((t1 - t0))s to stop after SIGINT"
grep -q "interrupted" /tmp/int.err || bad "no 'interrupted' line"
[ "$(grep -c . /tmp/int.err)" -le 2 ] || bad "more than a line or two on stderr after SIGINT"
$chk /tmp/int.json --status interrupted --mode loopback --db /tmp/cal.db || fail=1

echo "== 4. peer killed mid-run"
$rtune serve --bind "$addr" --port 18601 > /tmp/serve2.log 2>&1 &
srv=$!
sleep 2
$rtune calibrate --peer "$addr:18601" --budget 60 --out /tmp/kill.json > /tmp/kill.txt 2> /tmp/kill.err &
cal=$!
sleep 10
kill -9 $srv
t0=$(date +%s)
wait $cal
rc=$?
t1=$(date +%s)
wait $srv 2>/dev/null
cat /tmp/kill.err
[ $rc -eq 1 ] || bad "calibrate with a killed peer exited $rc, expected 1"
[ $((t1 - t0)) -le 20 ] || bad "calibrate took $((t1 - t0))s to notice the dead peer"
grep -Eq "peer|completion error|responder" /tmp/kill.err || bad "the error line does not name the peer"
$chk /tmp/kill.json --status failed --mode two-node --db /tmp/cal.db || fail=1

echo "== 5. one CPU for both sides (client and loopback responder yield)"
# (--json: the run on stdout, nothing else there)
taskset -c 0 $rtune calibrate -d "$dev" --quick --budget 10 --sizes 1,64 --ops send --qp-type rc --no-store \
  --json > /tmp/one.json 2> /tmp/one.err || bad "single-cpu calibrate failed: $(cat /tmp/one.err)"
$chk /tmp/one.json --status complete --complete-grid || fail=1
grep -q "share one cpu" /tmp/one.json || bad "single-cpu run does not say that both sides shared the cpu"

echo "== 6. bad conditions"
$rtune calibrate -d nosuchdev --no-store > /dev/null 2> /tmp/e1; rc=$?
cat /tmp/e1
[ $rc -eq 2 ] && grep -q "$dev" /tmp/e1 || bad "unknown device: exit $rc, expected 2 with the device list"
$rtune calibrate -d "$dev" -i 2 --no-store > /dev/null 2> /tmp/e2; rc=$?
cat /tmp/e2
[ $rc -eq 2 ] || bad "absent port: exit $rc, expected 2"
$rtune calibrate -d "$dev" --sizes 1,100000 --no-store > /dev/null 2> /tmp/e3; rc=$?
cat /tmp/e3
[ $rc -eq 2 ] && grep -q "max inline" /tmp/e3 || bad "size above max inline: exit $rc, expected 2"
$rtune calibrate -d "$dev" --numa remote --no-store > /dev/null 2> /tmp/e5; rc=$?
cat /tmp/e5
[ $rc -eq 2 ] && grep -q "NUMA" /tmp/e5 || bad "--numa remote without a NUMA node: exit $rc, expected 2"
timeout 20 $rtune calibrate --peer "$addr:18999" --quick --no-store > /dev/null 2> /tmp/e4; rc=$?
cat /tmp/e4
[ $rc -eq 1 ] && [ "$(grep -c . /tmp/e4)" -eq 1 ] || bad "no server: exit $rc, expected 1 with one line"

[ $fail -eq 0 ] && echo "PASS: calibrate" || echo "FAIL: calibrate"
exit $fail
