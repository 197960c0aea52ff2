#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# rxe tier, hardening (issue 8): verbs resources exhausted on a real device.
#  1. `rtune calibrate` with RLIMIT_MEMLOCK 0 and CAP_IPC_LOCK dropped (root ignores the limit otherwise), so
#     ibv_reg_mr fails: exit 1 with one clear line naming the failing verbs call, no run left "running" in the store,
#     and under valgrind no definite/indirect leak and no memory error (every verbs resource released on that path).
#  2. The same limit on ibv_rc_pingpong under the probe: the application's own failure is exactly what it is without
#     the probe (same exit code), the probe does not crash and writes no file for a process without posts.
#  3. calibrate with RLIMIT_MEMLOCK of one page: the first endpoint's one-page buffer registers, the second's does not
#     (ENOMEM, where a limit of 0 gives EPERM) - the first endpoint (PD, CQs, MR, QPs) must be released on that path
#     too (valgrind), one line, no run left running.
#  4. A send queue exhausted (verbs_exhaust sq: an RC QP whose sends cannot complete, posted until ENOMEM), with and
#     without the probe: the same result line (accepted >= queue size, then ENOMEM, errno and bad_wr as the provider
#     left them), and the probe counts exactly that one SQ-full refusal.
#  5. QP creation exhausted (verbs_exhaust qp under RLIMIT_AS: mapping the next send queue fails), with and without
#     the probe: ibv_create_qp fails the same way, nothing crashes.
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

echo "== 3. calibrate with the second memory registration failing (RLIMIT_MEMLOCK 4 KiB)"
rm -f /tmp/h3.db
( ulimit -l 4; exec "${nolock[@]}" "${vg[@]}" --log-file=/tmp/h3-vg.log "$rtune" calibrate -d "$dev" --quick \
  --budget 10 --db /tmp/h3.db ) > /tmp/h3.out 2> /tmp/h3.err
rc=$?
cat /tmp/h3.err; cat /tmp/h3-vg.log
[ $rc -ne 99 ] || bad "valgrind found leaks or memory errors when the second registration fails"
[ $rc -eq 1 ] && ok "calibrate exits 1" || bad "calibrate exited $rc (want 1)"
[ "$(grep -c '^rtune' /tmp/h3.err)" -eq 1 ] && grep -q 'memory region' /tmp/h3.err && ok "one line naming the memory region" ||
  bad "not one line naming the memory region"
if [ -f /tmp/h3.db ]; then
  [ "$(sqlite3 /tmp/h3.db "SELECT count(*) FROM runs WHERE status = 'running'")" = 0 ] && ok "no run left running" ||
    bad "a run left running"
fi

ex=$B/tests/unit/hardening/verbs_exhaust
echo "== 4. a send queue exhausted, with and without the probe"
mkdir -p /tmp/h4 && rm -f /tmp/h4/*
"$ex" sq "$dev" > /tmp/h4.plain 2>&1; rc_plain=$?
RTUNE_PROBE_OUT=/tmp/h4/p.%p.json LD_PRELOAD=$lib "$ex" sq "$dev" > /tmp/h4.probed 2>&1; rc_probed=$?
cat /tmp/h4.plain /tmp/h4.probed
[ $rc_plain -eq 0 ] && ok "the send queue filled (at least its size), then ENOMEM" || bad "without the probe: exit $rc_plain"
cmp -s /tmp/h4.plain /tmp/h4.probed && [ $rc_probed -eq $rc_plain ] && ok "the same result with the probe" ||
  bad "the probe changed what the application saw"
python3 - /tmp/h4/p.*.json <<'PY2' && ok "the probe counted the one SQ-full refusal" || bad "the probe's count of SQ-full refusals"
import json, sys
d = json.load(open(sys.argv[1]))
qps = [q for q in d["qps"] if q.get("post_calls")]
assert len(qps) == 1, qps
q = qps[0]
print("probe: post_calls %d, sq_full %d" % (q["post_calls"], q["errors"]["sq_full"]))
assert q["errors"]["sq_full"] == 1
PY2

echo "== 5. QP creation exhausted (RLIMIT_AS), with and without the probe"
vlim=$(( $(awk '/VmSize/ {print $2}' /proc/self/status) + 131072 ))
( ulimit -v $vlim; exec "$ex" qp "$dev" ) > /tmp/h5.plain 2>/tmp/h5.plain.err; rc_plain=$?
( ulimit -v $vlim; exec env RTUNE_PROBE_OUT=/tmp/h4/q.%p.json LD_PRELOAD=$lib "$ex" qp "$dev" ) > /tmp/h5.probed \
  2>/tmp/h5.probed.err; rc_probed=$?
echo "without: $(cat /tmp/h5.plain) $(cat /tmp/h5.plain.err); with: $(cat /tmp/h5.probed) $(cat /tmp/h5.probed.err)"
[ $rc_plain -eq 0 ] && ok "ibv_create_qp ran out under RLIMIT_AS" || bad "QP creation did not run out (exit $rc_plain)"
cmp -s /tmp/h5.plain /tmp/h5.probed && [ $rc_probed -eq $rc_plain ] && ok "the same failure with the probe" ||
  bad "the probe changed how QP creation failed (exit $rc_probed)"

[ $fail -eq 0 ] && echo "PASS: rxe hardening" || echo "FAIL: rxe hardening"
exit $fail
