#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# rxe tier, hardening (issue 8): verbs resources exhausted on a real device.
#  1. `rtune calibrate` with RLIMIT_MEMLOCK 0 and CAP_IPC_LOCK dropped (root ignores the limit otherwise), so
#     ibv_reg_mr fails: exit 1 with one clear line naming the failing verbs call, no run left "running" in the store,
#     and under valgrind no definite/indirect leak and no memory error (every verbs resource released on that path).
#  2. The same limit on ibv_rc_pingpong under the probe: the application's own failure is exactly what it is without
#     the probe (same exit code), the probe does not crash and writes no file for a process without posts.
set -uo pipefail
B=${RTUNE_BUILD_DIR:?}
rtune=$B/cli/rtune
lib=$B/probe/preload/librtune_probe.so
dev=${RTUNE_VM_DEV:-rxe0}
A=${RTUNE_VM_ADDR:?}
fail=0
bad() { echo "FAIL: $*"; fail=1; }
ok() { echo "ok   $*"; }
# no CAP_IPC_LOCK, no locked memory
nolock=(setpriv --inh-caps=-ipc_lock --bounding-set=-ipc_lock --)
vg=(valgrind -q --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect
    --error-exitcode=99)

echo "== 1. calibrate with ibv_reg_mr failing (RLIMIT_MEMLOCK 0)"
( ulimit -l 0; exec "${nolock[@]}" "${vg[@]}" --log-file=/tmp/h-vg.log "$rtune" calibrate -d "$dev" --quick \
  --budget 10 --db /tmp/h.db --out /tmp/h.json ) > /tmp/h.out 2> /tmp/h.err
rc=$?
cat /tmp/h.err; cat /tmp/h-vg.log
[ $rc -ne 99 ] || bad "valgrind found leaks or memory errors on the ibv_reg_mr failure path"
if [ $rc -eq 1 ]; then ok "calibrate exits 1"; else bad "calibrate exited $rc (want 1)"; fi
n=$(grep -c '^rtune' /tmp/h.err)
[ "$n" -eq 1 ] && ok "one error line" || bad "$n error lines"
grep -qi 'reg_mr\|memory region\|register' /tmp/h.err && ok "the error names the memory registration" ||
  bad "the error does not say that registering memory failed"
if [ -f /tmp/h.db ]; then
  running=$(sqlite3 /tmp/h.db "SELECT count(*) FROM runs WHERE status = 'running'" 2>&1)
  [ "$running" = 0 ] && ok "no run left running in the store" || bad "store: $running runs left running"
  [ "$(sqlite3 /tmp/h.db 'PRAGMA integrity_check')" = ok ] && ok "store integrity" || bad "store damaged"
fi

echo "== 2. an application whose ibv_reg_mr fails, with and without the probe"
run_pp() { # run_pp PRELOAD: prints the client's exit code
  local pre=$1 srv rc
  ( ulimit -l 0; exec "${nolock[@]}" env ${pre:+LD_PRELOAD=$pre} RTUNE_PROBE_OUT=/tmp/hp/p.%p.json \
    timeout 30 ibv_rc_pingpong -d "$dev" -g 1 -n 10 -s 8 ) > /tmp/hpp.srv 2>&1 &
  srv=$!
  sleep 1
  ( ulimit -l 0; exec "${nolock[@]}" env ${pre:+LD_PRELOAD=$pre} RTUNE_PROBE_OUT=/tmp/hp/p.%p.json \
    timeout 30 ibv_rc_pingpong -d "$dev" -g 1 -n 10 -s 8 "$A" ) > /tmp/hpp.cli 2>&1
  rc=$?
  kill $srv 2>/dev/null; wait $srv 2>/dev/null
  echo $rc
}
mkdir -p /tmp/hp
plain=$(run_pp "")
probed=$(run_pp "$lib")
echo "ibv_rc_pingpong exit without probe $plain, with probe $probed"; tail -2 /tmp/hpp.cli
[ "$plain" = "$probed" ] && ok "same exit code with the probe" || bad "the probe changed the application's exit code"
[ "$probed" -lt 128 ] && ok "no crash under the probe" || bad "crash under the probe (exit $probed)"
grep -q 'rtune-probe' /tmp/hpp.cli && bad "the probe printed: $(grep rtune-probe /tmp/hpp.cli)" || ok "probe silent"

[ $fail -eq 0 ] && echo "PASS: rxe hardening" || echo "FAIL: rxe hardening"
exit $fail
