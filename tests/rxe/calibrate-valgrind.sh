#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# rxe tier: `rtune calibrate` (a complete loopback run: latency grid, signaling sweep, CQ moderation, store, JSON) and
# `rtune serve` (one client, then exit) under valgrind memcheck: no definite or indirect leak, no memory error.
set -uo pipefail
B=${RTUNE_BUILD_DIR:?}
rtune=$B/cli/rtune
dev=${RTUNE_VM_DEV:-rxe0}
addr=${RTUNE_VM_ADDR:?}
fail=0
vg=(valgrind -q --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect
    --error-exitcode=99 --fair-sched=yes)

echo "== calibrate under valgrind"
"${vg[@]}" --log-file=/tmp/vg-cal.log $rtune calibrate -d "$dev" --quick --budget 90 --sizes 1,8,64 --sq-depth 32 \
  --db /tmp/vg.db --out /tmp/vg.json > /tmp/vg-cal.out 2>&1
rc=$?
cat /tmp/vg-cal.out | tail -3
cat /tmp/vg-cal.log
[ $rc -eq 0 ] || { echo "FAIL: calibrate under valgrind exited $rc"; fail=1; }
# The grid's completeness is rxe_calibrate's job: under valgrind on an emulated CPU the budget may run out before the
# whole signaling sweep (the engine then says so in the run's notes), so only consistency and completion are checked.
python3 "$(dirname "$0")/calibrate_check.py" /tmp/vg.json --status complete --ud --db /tmp/vg.db || fail=1

echo "== serve under valgrind (one client)"
"${vg[@]}" --log-file=/tmp/vg-srv.log $rtune serve --bind "$addr" --port 18610 --once > /tmp/vg-srv.out 2>&1 &
srv=$!
for i in $(seq 1 30); do
  grep -q listening /tmp/vg-srv.out 2>/dev/null && break
  sleep 1
done
$rtune calibrate --peer "$addr:18610" --quick --budget 15 --sizes 1,64 --no-store --out /tmp/vg-peer.json \
  > /dev/null 2> /tmp/vg-peer.err || { echo "FAIL: calibrate against valgrind'ed serve: $(cat /tmp/vg-peer.err)"; fail=1; }
wait $srv
rc=$?
cat /tmp/vg-srv.out /tmp/vg-srv.log
[ $rc -eq 0 ] || { echo "FAIL: serve under valgrind exited $rc"; fail=1; }

[ $fail -eq 0 ] && echo "PASS: calibrate valgrind" || echo "FAIL: calibrate valgrind"
exit $fail
